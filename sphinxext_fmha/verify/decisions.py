"""Keep/drop per segment, as the kernels the verified commands select have them: the
facts the renderers make a decision's Why from (the policy's category, a partial keep's
values, what the set does that the rule does not say)."""

from __future__ import annotations

from collections import Counter
from typing import Dict, List, Optional, Sequence, Set

from ..model import ApiModel, Decision, natural
from .coupling import Coupling
from .losses import within
from .policy import CHOSEN, COVERED, PROBLEM, Plan
from .synthesis import Kernel

__all__ = ["segment_decisions"]


def segment_decisions(model: ApiModel, kernels: Sequence[Kernel], union: Set[str],
                      plan: Plan, coupling: Optional[Coupling], never: Set[str]
                      ) -> List[Decision]:
    """Keep/drop per segment as the union has them; partial keeps with the problem
    values they are kept with."""
    decisions: List[Decision] = []
    for kernel_type in model.kernel_types:
        name = kernel_type.class_name
        own = [k for k in kernels if k.kernel_type == name]
        chosen = [k for k in own if k.file in union]
        follows = coupling.primary if coupling and name in coupling.followers else ""
        problem = [i for i, s in enumerate(kernel_type.segments)
                   if plan.categories.get((name, s.label)) in PROBLEM]
        for index, segment in enumerate(kernel_type.segments):
            if segment.literal or segment.constant:  # one token: nothing to decide
                continue
            key = (name, segment.label)
            category = plan.categories.get(key, "other")
            full = Counter(k.tokens[index] for k in own)
            kept = Counter(k.tokens[index] for k in chosen)
            order = [t for t in segment.tokens if full.get(t)]
            decision = Decision(kernel_type=name, segment=segment.label,
                                fields=list(segment.fields), category=category,
                                keep=[t for t in order if kept.get(t)],
                                drop=[t for t in order if not kept.get(t)],
                                follows=follows)
            if follows:
                # a value only some kept kernels of the main type bring along is kept
                # with those values only (2.8.3 fwd_splitkv: the combine kernels' _npad
                # with dtype _fp8, 3 of 27): said as for a partial keep of the main type
                for token in decision.keep:
                    if kept[token] < full[token]:
                        kept_with = _follower_kept_with(kernel_type, own, chosen, index,
                                                        token, problem)
                        if kept_with:
                            decision.partial.append({"token": token, "kept_with": kept_with,
                                                     "dropped": True})
            elif category in CHOSEN:
                ranks = plan.ranks.get(key, {})
                for token in decision.keep:
                    if ranks.get(token, 0) > 0:
                        kept_with = _kept_with(kernel_type, chosen, index, token, problem)
                        decision.partial.append({
                            "token": token, "kept_with": kept_with,
                            "dropped": _dropped_elsewhere(kernel_type, own, index, token,
                                                          kept_with)})
                if decision.partial and category in COVERED:
                    pass  # the rule says where a variant goes: the Keep column says where
                elif decision.partial:
                    decision.nearest = "applied" if decision.drop or any(
                        p["dropped"] for p in decision.partial) else "keeps_every_kernel"
            if not follows:
                _outcome(decision, own, plan.keep, index, never)
            decisions.append(decision)
    return decisions


def _outcome(decision: Decision, own: Sequence[Kernel], planned: Set[str], index: int,
             never: Set[str]) -> None:
    """What the rule does not say of the selected set: a kept value no selected kernel
    carries, one the full API never runs, or (keep-all rules) one whose kernels the
    other rules all drop. None when the set is as the rule says."""
    meant = {k.tokens[index] for k in own if k.file in planned}
    decision.unselected = [t for t in decision.drop if t in meant]
    decision.never_run = [t for t in decision.drop if t not in meant
                          and all(k.file in never for k in own if k.tokens[index] == t)]
    if decision.category not in CHOSEN:
        decision.unkept = [t for t in decision.drop
                           if t not in meant and t not in decision.never_run]


def _dropped_elsewhere(kernel_type, own: Sequence[Kernel], index: int, token: str,
                       kept_with: Dict[str, List[str]]) -> bool:
    """Whether a kernel of the sub-type carries ``token`` outside the values it is kept
    with (2.8.3 fwd_splitkv's ``_squant`` exists with dtype ``_fp8`` only: kept with fp8,
    it is dropped nowhere). Without such values ("where nothing else exists"), yes."""
    if not kept_with:
        return True
    labels = [s.label for s in kernel_type.segments]
    where = {labels.index(label): set(values) for label, values in kept_with.items()}
    return any(k.tokens[index] == token and not within(k, where) for k in own)


def _kept_with(kernel_type, chosen: Sequence[Kernel], index: int, token: str,
               problem: Sequence[int]) -> Dict[str, List[str]]:
    """The problem values the token is kept with: one segment whose values explain it
    (every kept kernel with those values carries the token) when there is one."""
    carrying = [k for k in chosen if k.tokens[index] == token]
    differing: Dict[str, List[str]] = {}
    for p in problem:
        values = {k.tokens[p] for k in carrying}
        if values == {k.tokens[p] for k in chosen}:
            continue
        label = kernel_type.segments[p].label
        differing[label] = [t for t in kernel_type.segments[p].tokens if t in values]
        if all(k.tokens[index] == token for k in chosen if k.tokens[p] in values):
            return {label: differing[label]}
    return differing


def _follower_kept_with(kernel_type, own: Sequence[Kernel], chosen: Sequence[Kernel],
                        index: int, token: str, problem: Sequence[int]
                        ) -> Dict[str, List[str]]:
    """The other problem values a follower's token is kept with, where fewer than it
    exists with (2.7.4 combine _squant: _d64, _d128 of _d64/_d128/_d256); else empty."""
    carrying = [k for k in own if k.tokens[index] == token]
    narrower: Dict[int, Set[str]] = {}  # segment -> the values it is kept with
    for p in problem:
        if p == index:
            continue
        kept_values = {k.tokens[p] for k in chosen if k.tokens[index] == token}
        if kept_values != {k.tokens[p] for k in carrying}:
            narrower[p] = kept_values
    # a segment the others imply is not said (the combine _npad kept with dtype _fp8:
    # every fp8 combine kernel has one of the head dimensions it is kept with)
    for p in list(narrower):
        rest = {q: values for q, values in narrower.items() if q != p}
        if all(k.tokens[p] in narrower[p] for k in carrying
               if all(k.tokens[q] in values for q, values in rest.items())):
            del narrower[p]
    return {kernel_type.segments[p].label: sorted(values, key=natural)
            for p, values in narrower.items()}
