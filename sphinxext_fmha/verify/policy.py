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
from typing import AbstractSet, Dict, List, Mapping, Sequence, Set, Tuple

from ..analysis.grammar import short_name
from ..model import ApiModel, KernelType, Segment
from .standins import by_subject, compare
from .synthesis import Kernel

__all__ = ["POLICY", "PROBLEM", "Plan", "classify", "padding_by_coverage", "plan_keep_set",
           "preference"]

OFF_VALUES = {"f", "no", "0", "false", "none", "s_no"}
ON_VALUES = {"t", "true", "yes"}

POLICY = {
    "padding": "keep the variants that between them serve every size: a variant is "
               "dropped only where a kept one is reached for every input it is (read from "
               "the dispatch conditions; usually the faster variants for aligned sizes go "
               "and the padded fallback stays)",
    "optional feature": "keep the disabled variant; the feature's kernels are dropped",
    "mask": "keep no-mask plus the most common mask variant",
    "deterministic": "keep the non-deterministic variant",
    "tuning": "keep the general variant of the tuning specialisation",
    "problem": "keep every value (a property of the problem)",
    "subject": "keep every value: the API is named after it",
    "tile": "tiles are not chosen by the filter: the set keeps the tiles of its kernels",
    "other": "keep every value",
}

#: Categories the policy chooses within (the others are kept whole).
CHOSEN = ("padding", "optional feature", "mask", "deterministic", "tuning")
#: Categories that make the problem classes the policy keeps every one of (``needed``:
#: a segment the workload names, see :mod:`.needs`).
PROBLEM = ("problem", "subject", "needed")


def classify(segment: Segment, tile_fields: AbstractSet[str] = frozenset(), api: str = "") -> str:
    """The segment's category (a key of :data:`POLICY`), from its fields' names and
    values; ``api``: the API's name (``pagedkv_prefill``), whose words name a feature
    the API exists for (``F_pagedkv``): never an optional one to drop."""
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


def arch_suffix(kernel: Kernel) -> str:
    stem = kernel.file[:-len(".cpp")] if kernel.file.endswith(".cpp") else kernel.file
    return stem[len("".join(kernel.tokens)):]


def plan_keep_set(model: ApiModel, kernels: Sequence[Kernel], types: Sequence[str],
                  conditions: Mapping[str, Sequence[str]] = {},  # noqa: B006 - read only
                  varying: AbstractSet[str] = frozenset(),
                  needed: AbstractSet[Tuple[str, str]] = frozenset()) -> Plan:
    """The keep set; ``conditions`` (kernel file -> its dispatch terms) decide which
    padding variants serve every size (without them, every padding variant is kept:
    that one serves another's inputs is then not established); ``varying``: kernels
    whose branches differ, never taken to serve another's inputs; ``needed``: (sub-type,
    segment) a workload names, every value of it kept as a problem property."""
    tile_fields = {f.name for tile in model.tiles for f in tile.fields}
    plan = Plan()
    for kernel_type in model.kernel_types:
        segments = kernel_type.segments
        own = [k for k in kernels if k.kernel_type == kernel_type.class_name]
        chosen: List[int] = []
        problem: List[int] = []
        categories = ["literal" if s.literal else "needed"
                      if (kernel_type.class_name, s.label) in needed
                      else classify(s, tile_fields, model.api) for s in segments]
        # the segments a stand-in may differ in besides the one decided: tiles and the
        # implementation choices its dispatch conditions account for (as in losses)
        free = [i for i, c in enumerate(categories) if c in ("tile", "other")]
        for index, segment in enumerate(segments):
            if segment.literal:
                continue
            category = categories[index]
            key = (kernel_type.class_name, segment.label)
            plan.categories[key] = category
            present = Counter(k.tokens[index] for k in own)
            if category == "padding":
                plan.ranks[key] = padding_by_coverage(
                    own, index, free, preference(category, segment, present), conditions,
                    varying)
            else:
                plan.ranks[key] = preference(category, segment, present)
            if category in CHOSEN:
                chosen.append(index)
            elif category in PROBLEM:
                problem.append(index)
        if kernel_type.class_name not in types:
            continue
        _keep_per_class(plan, kernel_type, own, chosen, problem)
    return plan


def padding_by_coverage(own: Sequence[Kernel], index: int, free: Sequence[int],
                        order: Mapping[str, int], conditions: Mapping[str, Sequence[str]],
                        varying: AbstractSet[str]) -> Dict[str, int]:
    """Rank 0 for the padding tokens to keep, 1 for those whose every kernel a kernel of a
    kept token takes all the inputs of: same tokens elsewhere (``free`` segments aside),
    and dispatch terms that add no condition to the kernel's own. Tokens are tried for
    dropping from the least padded (``order``: the old preference, fully padded last)."""
    tokens = sorted({k.tokens[index] for k in own})
    if not conditions or len(tokens) < 2:
        return {t: 0 for t in tokens}
    loose = set(free) | {index}
    by_context: Dict[Tuple, Dict[str, List[Kernel]]] = {}
    for kernel in own:
        context = (arch_suffix(kernel),) + tuple(
            t for i, t in enumerate(kernel.tokens) if i not in loose)
        by_context.setdefault(context, {}).setdefault(kernel.tokens[index], []).append(kernel)
    kept = list(tokens)
    for token in sorted(tokens, key=lambda t: (order.get(t, 0), t)):
        others = [t for t in kept if t != token]
        if token not in kept or not others:
            continue
        if all(_served(kernel, [c for t in others for c in group.get(t, ())], conditions,
                       varying)
               for group in by_context.values() for kernel in group.get(token, ())):
            kept.remove(token)
    return {t: 0 if t in kept else 1 for t in tokens}


def _served(kernel: Kernel, candidates: Sequence[Kernel],
            conditions: Mapping[str, Sequence[str]], varying: AbstractSet[str]) -> bool:
    """Whether one of ``candidates`` is reached for every input ``kernel`` is."""
    terms = conditions.get(kernel.file)
    if not terms:
        return False  # never referenced, or no term shared by its branches: not established
    own = frozenset(terms)
    subjects = by_subject(own)
    for candidate in candidates:
        theirs = conditions.get(candidate.file)
        if not theirs or candidate.file in varying:
            continue
        if compare([t for t in theirs if t not in own], subjects) == ([], [], []):
            return True
    return False


def _keep_per_class(plan: Plan, kernel_type: KernelType, own: Sequence[Kernel],
                    chosen: Sequence[int], problem: Sequence[int]) -> None:
    segments = kernel_type.segments
    ranks = [plan.ranks.get((kernel_type.class_name, s.label), {}) for s in segments]
    classes: Dict[Tuple[str, ...], List[Kernel]] = {}
    for kernel in own:
        key = (arch_suffix(kernel),) + tuple(kernel.tokens[i] for i in problem)
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
