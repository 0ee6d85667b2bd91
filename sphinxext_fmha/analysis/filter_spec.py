"""How ``-f`` reaches each kernel sub-type, from the fnmatch calls the probe's marker
runs observed (:class:`~sphinxext_fmha.model.FilterSpec`)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Dict, List, Optional, Sequence, Tuple

from ..model import FilterPart, FilterSpec, KernelType
from .probe_script import MARKER

__all__ = ["class_of_name", "read_filter_spec"]


def class_of_name(kernel_types: Sequence[KernelType], name_to_class: Dict[str, str]):
    """Which sub-type a name tested by fnmatch belongs to: a listed kernel's own
    class, else the sub-type whose leading literal segment is the longest prefix
    (names of kernels that a later rule drops are tested too)."""
    prefixes = []
    for kernel_type in kernel_types:
        if kernel_type.segments and kernel_type.segments[0].literal:
            for token in kernel_type.segments[0].tokens:
                prefixes.append((len(token), token, kernel_type.class_name))
    prefixes.sort(reverse=True)

    def classify(name: str) -> str:
        if name in name_to_class:
            return name_to_class[name]
        for _, token, class_name in prefixes:
            if token and name.startswith(token):
                return class_name
        return ""

    return classify


def _per_class(summary: dict, classify) -> Dict[str, Dict[str, int]]:
    if "raw" not in summary:
        return summary["per_class"]
    per_class: Dict[str, Dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for pattern, name in summary["raw"]:
        per_class[classify(name)][pattern] += 1
    return per_class


def read_filter_spec(observed: dict, classes: List[str], classify) -> Tuple[FilterSpec, Dict[str, int]]:
    calls = _per_class(observed["fnmatch_calls"], classify)
    marker_filter = observed["marker_filter"]
    api_part = marker_filter.split(",")[0]
    parts = api_part.split("@")
    spec = FilterSpec()
    positions: Dict[str, int] = {}
    seen_patterns = {p for per in calls.values() for p in per}
    spec.cli_split = None if any(MARKER.format("next-api") in p for p in seen_patterns) else ","
    whole = api_part if spec.cli_split else marker_filter
    applies: Dict[int, List[str]] = defaultdict(list)
    for class_name in classes:
        patterns = calls.get(class_name, {})
        for pattern in patterns:
            if pattern in (whole, marker_filter, api_part):
                positions[class_name] = 0
            elif pattern in parts:
                spec.api_split = "@"
                positions[class_name] = parts.index(pattern)
        if class_name in positions:
            applies[positions[class_name]].append(class_name)
        else:
            spec.unfiltered_types.append(class_name)
    single = _per_class(observed.get("single_part_calls", {"per_class": {}}), classify)
    empty_parts = _per_class(observed.get("empty_parts_calls", {"per_class": {}}), classify)
    empty_filter = _per_class(observed.get("empty_filter_calls", {"per_class": {}}), classify)

    def reaching(per_class: Dict[str, Dict[str, int]], class_names: List[str]) -> Optional[str]:
        # The pattern fnmatch receives; no call at all: the part is not applied.
        seen = {p for c in class_names for p in per_class.get(c, {})}
        return sorted(seen)[0] if seen else None

    for position in sorted(applies):
        classes_here = sorted(applies[position])
        spec.parts.append(FilterPart(
            position=position, applies_to=classes_here,
            missing_becomes=reaching(single, classes_here) if position > 0 else None,
            empty_becomes=reaching(empty_parts, classes_here) if spec.api_split else None))
    if "empty_filter_calls" in observed:
        spec.when_empty = {c: reaching(empty_filter, [c]) for c in sorted(positions)}
    normcase = observed.get("normcase", "Aa/")
    spec.fnmatch_lowercases = normcase[:2] == "aa"
    spec.fnmatch_backslashes = normcase[2:] == "\\"
    # Trait-wise filtering repeats the same multi-part call pattern trait after trait;
    # one multi-part group at the boundary of two per-class loops proves nothing.
    groups = observed["fnmatch_calls"]["groups"]
    shapes = Counter(tuple(p for p, _ in g) for g in groups if len(g) > 1)
    spec.drops = "trait" if shapes and shapes.most_common(1)[0][1] >= 2 else "kernel"
    return spec, positions
