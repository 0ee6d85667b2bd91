"""What a call that loses a dropped variant asks for, beside what the loss says.

The first sentence of a dropped variant's loss (made in ``render/``) names the calls
that lose it: the dispatch terms every dropped kernel of the variant is reached under
and no kept kernel of its sub-type is (``has_logits_soft_cap``; ``bias_type ==
bias_enum::alibi``). Where no such term exists (a padding variant: the kept ones are
reached under its terms too), none is said.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence, Set

from ..model import Decision
from ..schema.token_dispatch import Condition
from .synthesis import Kernel

__all__ = ["note_call_terms"]


def note_call_terms(decisions: Sequence[Decision], kernels: Sequence[Kernel], kept: Set[str],
                    conditions: Mapping[str, Sequence[Condition]],
                    labels: Mapping[str, List[str]]) -> None:
    """Add ``calls`` to the loss facts of each dropped token that has them."""
    if not conditions:
        return
    kept_terms: Dict[str, Set[Condition]] = {}
    lost: Dict[str, List[Kernel]] = {}
    for kernel in kernels:
        if kernel.file in kept:
            kept_terms.setdefault(kernel.kernel_type, set()).update(
                conditions.get(kernel.file, ()))
        else:
            lost.setdefault(kernel.kernel_type, []).append(kernel)
    for decision in decisions:
        if decision.kernel_type not in labels or decision.follows:
            continue
        index = labels[decision.kernel_type].index(decision.segment)
        theirs = kept_terms.get(decision.kernel_type, set())
        # per token, the terms every lost kernel with it has (None: one has none)
        common: Dict[str, Optional[List[Condition]]] = {}
        for kernel in lost.get(decision.kernel_type, ()):
            token = kernel.tokens[index]
            facts = decision.loss_facts.get(token)
            if facts is None or facts.get("not_needed") or facts.get("follows"):
                continue
            terms = conditions.get(kernel.file, ())
            if token not in common:
                common[token] = list(terms) if terms else None
            elif common[token] is not None:
                mine = set(terms)
                common[token] = [t for t in common[token] or () if t in mine] if mine else None
        for token, shared in common.items():
            if shared is not None:
                decision.loss_facts[token]["calls"] = [t for t in shared if t not in theirs]
