"""Which kernels the minimal set keeps: the policy, applied per problem class.

Segments are classified from what the code says about them (field names and values).
Problem properties (head dimension, data type, mode, and the arch suffix) are never
lost: within each problem class the preferred variants are kept, and where a class has
no preferred variant of a segment (group mode only exists fully padded, fp8 only
quantised) the nearest variant is kept for that class only.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import AbstractSet, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ..analysis.grammar import short_name
from ..model import ApiModel, KernelType, Segment
from .standins import SetDispatch
from .synthesis import Kernel

__all__ = ["CHOSEN", "COVERED", "PROBLEM", "Plan", "classify", "plan_keep_set", "preference"]

OFF_VALUES = {"f", "no", "0", "false", "none", "s_no"}

#: Categories the policy chooses within (the others are kept whole).
CHOSEN = ("padding", "optional feature", "mask", "deterministic", "tuning")
#: Categories that make the problem classes the policy keeps every one of (``needed``:
#: a segment the workload names, see :mod:`.needs`).
PROBLEM = ("problem", "subject", "needed")


def classify(segment: Segment, tile_fields: AbstractSet[str] = frozenset(), api: str = "") -> str:
    """The segment's category (a key of the renderers' ``POLICY``) from its fields' names
    and values; a field the API's name names (``F_pagedkv``) is never optional."""
    names = [short_name(f).lower() for f in segment.fields]
    if names and set(api.lower().split("_")) & set(names):
        return "subject"
    joined = " ".join(names)
    values = {v for combos in segment.values.values() for c in combos for v in c.values()}
    if "pad" in joined:
        return "padding"
    if "mask" in joined:
        return "mask"
    if "determin" in joined:
        return "deterministic"
    # 'skip' (skip_min_seqlen_q) is not among these: the dispatcher tests it for
    # equality with the call's flag, so it is a feature a call asks for, not a
    # specialisation of the same work
    if any(k in joined for k in ("trload", "max_seq", "maxq")):
        return "tuning"
    if names and all(n in ("hdim", "dtype", "mode") for n in names):
        return "problem"
    if names and all("tile" in f.lower() or f.split(".")[-1] in tile_fields for f in segment.fields):
        return "tile"
    if values and values & OFF_VALUES and len(segment.fields) == 1 and \
            not all(v.lstrip("-").isdigit() for v in values):
        return "optional feature"
    return "other"


def _pad_level(value: str) -> int:
    """0: no padding (the kernel needs full tiles), 1: padded to a moderate alignment
    (> 1), 2: fully padded (any size; alignment 1 or a plain "true")."""
    lowered = value.lower()
    if lowered in OFF_VALUES:
        return 0
    if lowered.isdigit():
        return 1 if int(lowered) > 1 else 2
    return 2


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
    tuning variants dropped where the kept ones run all their calls; without it every
    padding variant and the general tuning one kept. ``needed``: (sub-type, segment)
    a workload names, every value kept as a problem property."""
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


#: Categories whose variants run the same calls in other ways (padding, tuned tiles and
#: loads): one is dropped wherever the kept ones run every call it ran.
COVERED = ("padding", "tuning")


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
    """A problem, every arch together: ``-f`` sees the name without its arch suffix, so
    a variant dropped on one arch and kept on another would come back with its twin
    (and the set would keep a kernel its own dispatch never runs)."""
    return tuple(kernel.tokens[i] for i in problem)


def _keep_per_class(plan: Plan, kernel_type: KernelType, own: Sequence[Kernel],
                    chosen: Sequence[int], problem: Sequence[int]) -> None:
    segments = kernel_type.segments
    ranks = [plan.ranks.get((kernel_type.class_name, s.label), {}) for s in segments]
    classes: Dict[Tuple[str, ...], List[Kernel]] = {}
    for kernel in own:
        stem = kernel.file[:-len(".cpp")] if kernel.file.endswith(".cpp") else kernel.file
        key = (stem[len("".join(kernel.tokens)):],) + tuple(kernel.tokens[i] for i in problem)
        classes.setdefault(key, []).append(kernel)
    for members in classes.values():
        # Per segment, the best rank this class offers; a kernel is kept when it
        # reaches the best on every chosen segment. If no kernel does (the best
        # values never occur together), keep the kernels of least total rank.
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
