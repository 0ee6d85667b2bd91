"""What a call that loses a dropped variant asks for, beside what the loss says.

The first sentence of a dropped variant's loss (made in ``render/``) names the calls
that lose it: the dispatch terms every dropped kernel of the variant is reached under
and no kept kernel of its sub-type is (``has_logits_soft_cap``; ``bias_type ==
bias_enum::alibi``). Where no such term exists (a padding variant: the kept ones are
reached under its terms too), none is said.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Sequence, Set

from ..model import Decision
from .synthesis import Kernel

__all__ = ["note_call_terms"]


def note_call_terms(decisions: Sequence[Decision], kernels: Sequence[Kernel], kept: Set[str],
                    conditions: Mapping[str, Sequence[str]],
                    labels: Mapping[str, List[str]]) -> None:
    """Add ``calls`` to the loss facts of each dropped token that has them."""
    if not conditions:
        return
    kept_terms: Dict[str, Set[str]] = {}
    for kernel in kernels:
        if kernel.file in kept:
            kept_terms.setdefault(kernel.kernel_type, set()).update(
                conditions.get(kernel.file, ()))
    for decision in decisions:
        if decision.kernel_type not in labels or decision.follows:
            continue
        index = labels[decision.kernel_type].index(decision.segment)
        theirs = kept_terms.get(decision.kernel_type, set())
        for token, facts in decision.loss_facts.items():
            if facts.get("not_needed") or facts.get("follows"):
                continue
            lost = [k for k in kernels if k.kernel_type == decision.kernel_type
                    and k.tokens[index] == token and k.file not in kept]
            terms = [list(conditions.get(k.file, ())) for k in lost]
            if not terms or not all(terms):
                continue
            common = set(terms[0]).intersection(*terms[1:])
            facts["calls"] = [t for t in terms[0] if t in common and t not in theirs]
