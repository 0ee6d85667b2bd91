"""Which kernels the minimal set keeps: segments classified from their fields' names and
values; problem properties never lost; within each problem class the preferred
variants kept, else the nearest one for that class only. Then keep/drop per segment as
the verified commands select it (:func:`segment_decisions`: the facts of a Why)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import AbstractSet, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ..analysis.grammar import short_name
from ..model import ApiModel, Decision, KernelType, Segment, natural
from .coupling import Coupling
from .losses import within
from .standins import SetDispatch
from .synthesis import Kernel

OFF_VALUES = {"f", "no", "0", "false", "none", "s_no"}
#: Categories the policy chooses within (the others are kept whole).
CHOSEN = ("padding", "optional feature", "mask", "deterministic", "tuning")
#: Categories of the problem classes the policy keeps every one of (``needed``: named by
#: the workload).
PROBLEM = ("problem", "subject", "needed")
#: Categories whose variants run the same calls in other ways (padding, tuned tiles and
#: loads): one is dropped wherever the kept ones run every call it ran.
COVERED = ("padding", "tuning")


_NAMED = (("padding", ("pad",)), ("mask", ("mask",)), ("deterministic", ("determin",)),
          ("tuning", ("trload", "max_seq", "maxq")))


def classify(segment: Segment, tile_fields: AbstractSet[str] = frozenset(), api: str = "") -> str:
    """The segment's category (a key of the renderers' ``POLICY``) from its fields' names
    and values; a field the API's name names (``F_pagedkv``) is never optional."""
    names = [short_name(f).lower() for f in segment.fields]
    if names and set(api.lower().split("_")) & set(names):
        return "subject"
    joined = " ".join(names)
    values = {v for combos in segment.values.values() for c in combos for v in c.values()}
    # not 'skip' (skip_min_seqlen_q) for tuning: the dispatcher tests it against the call's
    # flag, a feature a call asks for
    for category, words in _NAMED:
        if any(word in joined for word in words):
            return category
    if names and all(n in ("hdim", "dtype", "mode") for n in names):
        return "problem"
    if names and all("tile" in f.lower() or f.split(".")[-1] in tile_fields for f in segment.fields):
        return "tile"
    if values and values & OFF_VALUES and len(segment.fields) == 1 and \
            not all(v.lstrip("-").isdigit() for v in values):
        return "optional feature"
    return "other"


def _pad_level(value: str) -> int:
    """0: no padding (full tiles), 1: a moderate alignment (> 1), 2: fully padded."""
    lowered = value.lower()
    return 0 if lowered in OFF_VALUES else 1 if lowered.isdigit() and int(lowered) > 1 else 2


def _on_fields(combo: Dict[str, str]) -> int:
    return sum(1 for v in combo.values() if v.lower() not in OFF_VALUES and v != "-1")


def preference(category: str, segment: Segment, present: Counter) -> Dict[str, int]:
    """Rank of each present token: 0 preferred, higher = further from the policy."""
    tokens = [t for t in segment.tokens if present.get(t)]
    combos = {t: segment.values.get(t) or [{}] for t in tokens}
    if category == "padding":
        levels = {t: tuple(max(_pad_level(c.get(f, "f")) for c in combos[t])
                           for f in segment.fields) for t in tokens}
        moderate = {i for lv in levels.values() for i, level in enumerate(lv) if level == 1}
        top = tuple(max(lv[i] for lv in levels.values()) for i in range(len(segment.fields)))
        ranks = {}
        for token, lv in levels.items():
            full_where_moderate = any(lv[i] == 2 for i in moderate)
            fully_padded = len(tokens) > 1 and lv == top and any(top)
            ranks[token] = sum(lv) + 1 if full_where_moderate or fully_padded else 0
        return ranks
    if category in ("optional feature", "deterministic", "tuning"):
        ranks = {t: min(_on_fields(c) for c in combos[t]) for t in tokens}
        return ranks if 0 in ranks.values() else {t: 0 for t in tokens}
    if category == "mask":
        off = [t for t in tokens if any(_on_fields(c) == 0 for c in combos[t])]
        masked = sorted((t for t in tokens if t not in off), key=lambda t: (-present[t], t))
        keep = set(off + masked[:1])
        return {t: 0 if t in keep else 1 for t in tokens}
    return {t: 0 for t in tokens}


@dataclass
class Plan:
    """The policy's keep set for the sub-types that decide for themselves."""

    keep: Set[str] = field(default_factory=set)
    categories: Dict[Tuple[str, str], str] = field(default_factory=dict)
    ranks: Dict[Tuple[str, str], Dict[str, int]] = field(default_factory=dict)
    #: (kernel type, segment) -> tokens kept only where the class has nothing better
    relaxed: Dict[Tuple[str, str], Set[str]] = field(default_factory=dict)


def plan_keep_set(model: ApiModel, kernels: Sequence[Kernel], types: Sequence[str],
                  dispatch: Optional[SetDispatch] = None,
                  needed: AbstractSet[Tuple[str, str]] = frozenset()) -> Plan:
    """The keep set. With the full ``dispatch``: never-run kernels left out, padding and
    tuning variants dropped where the kept ones run all their calls. ``needed``:
    (sub-type, segment) a workload names, every value kept as a problem property."""
    tile_fields = {f.name for tile in model.tiles for f in tile.fields}
    never = _never_run(kernels, dispatch.never_run()) if dispatch is not None else set()
    plan = Plan()
    covered: List[Tuple[KernelType, int, List[Kernel]]] = []
    for kernel_type in model.kernel_types:
        segments = kernel_type.segments
        own = [k for k in kernels if k.kernel_type == kernel_type.class_name
               and k.file not in never]
        chosen: List[int] = []
        problem: List[int] = []
        for index, segment in enumerate(segments):
            if segment.literal:
                continue
            key = (kernel_type.class_name, segment.label)
            category = "needed" if key in needed else classify(segment, tile_fields, model.api)
            plan.categories[key] = category
            present = Counter(k.tokens[index] for k in own)
            if category in COVERED and (dispatch is not None or category == "padding"):
                # decided below, by what the dispatch runs
                plan.ranks[key] = {t: 0 for t in present}
                if dispatch is not None and kernel_type.class_name in types:
                    covered.append((kernel_type, index, own))
            else:
                plan.ranks[key] = preference(category, segment, present)
            if category in CHOSEN:
                chosen.append(index)
            elif category in PROBLEM:
                problem.append(index)
        if kernel_type.class_name not in types:
            continue
        _keep_per_class(plan, kernel_type, own, chosen, problem)
    if dispatch is not None and covered:
        others = {k.file for k in kernels if k.kernel_type not in types}
        _drop_covered(plan, covered, dispatch, others)
    return plan


def _never_run(kernels: Sequence[Kernel], never: Mapping[str, object]) -> Set[str]:
    """Never-run kernels but those sharing a name with a run one (``-f`` does not see the
    arch suffix: newest fwd's shadowed gfx950 kernel comes with its gfx9 twin)."""
    running = {k.name for k in kernels if k.file not in never}
    return {k.file for k in kernels if k.file in never and k.name not in running}


def _drop_covered(plan: Plan, covered: Sequence[Tuple[KernelType, int, List[Kernel]]],
                  dispatch: SetDispatch, others: AbstractSet[str]) -> None:
    """Drop each padding or tuning variant, per problem (every arch together), where the
    rest of the set (its own dispatch) runs every call it ran; least padded and most
    specialised first. ``others``: the follower sub-types' kernels."""
    kept = set(plan.keep)
    for kernel_type, index, own in covered:
        segment = kernel_type.segments[index]
        category = plan.categories[(kernel_type.class_name, segment.label)]
        present = Counter(k.tokens[index] for k in own)
        order = preference(category, segment, present)
        sign = 1 if category == "padding" else -1  # padding: least padded first
        problem = [i for i, s in enumerate(kernel_type.segments)
                   if plan.categories.get((kernel_type.class_name, s.label)) in PROBLEM]
        dropped: Set[str] = set()
        for token in sorted(present, key=lambda t: (sign * order.get(t, 0), t)):
            carrying = [k for k in own if k.tokens[index] == token and k.file in kept]
            if not carrying:
                continue
            before = dispatch.view(kept | others)
            candidates = {k.file for k in carrying}
            for _ in range(3):  # classes rarely share calls: settled in one or two rounds
                after = dispatch.view((kept - candidates) | others)
                losing = {_class_of(k, problem) for k in carrying if k.file in candidates
                          and dispatch.loses(k.file, before, after)}
                if not losing:
                    break
                candidates = {k.file for k in carrying if _class_of(k, problem) not in losing}
            else:
                candidates = set()
            kept -= candidates
            dropped |= candidates
        ranks = plan.ranks[(kernel_type.class_name, segment.label)]
        for kernel in own:
            if kernel.file in dropped:
                ranks[kernel.tokens[index]] = 1
    plan.keep = kept


def _class_of(kernel: Kernel, problem: Sequence[int]) -> Tuple[str, ...]:
    """A problem, every arch together: ``-f`` does not see the arch suffix, so a variant
    dropped on one arch only would come back with its twin."""
    return tuple(kernel.tokens[i] for i in problem)


def _keep_per_class(plan: Plan, kernel_type: KernelType, own: Sequence[Kernel],
                    chosen: Sequence[int], problem: Sequence[int]) -> None:
    segments = kernel_type.segments
    ranks = [plan.ranks.get((kernel_type.class_name, s.label), {}) for s in segments]
    classes: Dict[Tuple[str, ...], List[Kernel]] = {}
    for kernel in own:
        key = (kernel.file.removesuffix(".cpp")[len("".join(kernel.tokens)):],
               *(kernel.tokens[i] for i in problem))
        classes.setdefault(key, []).append(kernel)
    for members in classes.values():
        # Kept: the kernels with the class's best rank on every chosen segment, else
        # (the best values never occur together) those of least total rank.
        best = {i: min(ranks[i].get(k.tokens[i], 0) for k in members) for i in chosen}
        kept = [k for k in members if all(ranks[i].get(k.tokens[i], 0) == best[i] for i in chosen)]
        if not kept:
            total = {k.file: sum(ranks[i].get(k.tokens[i], 0) for i in chosen) for k in members}
            least = min(total.values())
            kept = [k for k in members if total[k.file] == least]
        for kernel in kept:
            plan.keep.add(kernel.file)
            for i in chosen:
                if ranks[i].get(kernel.tokens[i], 0) > 0:
                    plan.relaxed.setdefault((kernel_type.class_name, segments[i].label),
                                            set()).add(kernel.tokens[i])


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
                # a value only some kept main kernels bring along is kept with those values
                # only (2.8.3 fwd_splitkv: the combine kernels' _npad with dtype _fp8)
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
                # (COVERED: the rule says where a variant goes, the Keep column says where)
                if decision.partial and category not in COVERED:
                    decision.nearest = "applied" if decision.drop or any(
                        p["dropped"] for p in decision.partial) else "keeps_every_kernel"
            if not follows:
                _outcome(decision, own, plan.keep, index, never)
            decisions.append(decision)
    return decisions


def _outcome(decision: Decision, own: Sequence[Kernel], planned: Set[str], index: int,
             never: Set[str]) -> None:
    """What the rule does not say of the selected set: a kept value no selected kernel
    carries, one the full API never runs, or (keep-all rules) one the other rules drop."""
    meant = {k.tokens[index] for k in own if k.file in planned}
    decision.unselected = [t for t in decision.drop if t in meant]
    decision.never_run = [t for t in decision.drop if t not in meant
                          and all(k.file in never for k in own if k.tokens[index] == t)]
    if decision.category not in CHOSEN:
        decision.unkept = [t for t in decision.drop
                           if t not in meant and t not in decision.never_run]


def _dropped_elsewhere(kernel_type, own: Sequence[Kernel], index: int, token: str,
                       kept_with: Dict[str, List[str]]) -> bool:
    """Whether a kernel carries ``token`` outside the values it is kept with (2.8.3
    fwd_splitkv's ``_squant`` exists with ``_fp8`` only: dropped nowhere); none: yes."""
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
