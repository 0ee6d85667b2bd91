"""The labels of a kernel name's segments, from the fields that write them
(``F_pipeline.F_spad`` ... -> ``pad``), each naming one segment."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from os.path import commonprefix
from typing import Dict, List, Sequence, Tuple

from ..model import Segment

__all__ = ["disambiguate_labels", "segment_label", "short_name"]

GENERIC_LEAF_NAMES = {"tag", "name", "kind", "type", "value"}


def short_name(path: str) -> str:
    """``F_pipeline.F_spad`` -> ``spad``; ``F_pipeline.tag`` -> ``pipeline``."""
    parts = [p[2:] if p.startswith("F_") else p for p in path.split(".")]
    if len(parts) > 1 and parts[-1] in GENERIC_LEAF_NAMES:
        return parts[-2]
    return parts[-1]


def _shared(fields: Sequence[str]) -> Tuple[List[str], str, str, str]:
    """(short names, their common start, their common ending, the one owner or "")."""
    names = [short_name(f) for f in fields]
    owners = {short_name(f.rpartition(".")[0]) if "." in f else "" for f in fields}
    return (names, commonprefix(names), commonprefix([n[::-1] for n in names])[::-1],
            owners.pop() if len(owners) == 1 else "")


def segment_label(fields: Sequence[str]) -> str:
    names, prefix, suffix, owner = _shared(fields)
    if len(names) == 1:
        return names[0]
    if len(suffix) >= 3:
        return suffix  # a shared word: spad, skpad, dpad, dvpad -> "pad"
    common = prefix or suffix
    if common:
        return "%s %s" % (owner, common) if owner else common
    return "+".join(names)


def _specific_label(fields: Sequence[str]) -> str:
    """The label with the fields' shared ending added: ``F_rm0``, ``F_rn0``, ``F_rk0``
    -> ``tile r0`` (``""`` when the fields share no ending)."""
    names, prefix, suffix, owner = _shared(fields)
    if len(names) < 2 or not suffix or not prefix \
            or len(prefix) + len(suffix) >= min(len(n) for n in names):
        return ""
    return ("%s %s%s" % (owner, prefix, suffix)).strip()


def disambiguate_labels(segments: List[Segment]) -> None:
    """Make each label name one segment: labels that repeat take their fields' shared
    ending where that tells them apart (``tile r0``, ``tile r1``), else a number
    (``tile r 1``, ``tile r 2``)."""
    for segment in segments:
        segment.label = "literal" if segment.literal else re.sub(r" \d+$", "", segment.label)
    seen = Counter(segment.label for segment in segments)
    repeated: Dict[str, List[Segment]] = defaultdict(list)
    for segment in segments:
        if seen[segment.label] > 1 and not segment.literal:
            repeated[segment.label].append(segment)
    for group in repeated.values():
        specific = [_specific_label(s.fields) for s in group]
        if all(specific) and len(set(specific)) == len(specific) and not set(specific) & set(seen):
            for segment, label in zip(group, specific):
                segment.label = label
                seen[label] = 1
    seen = Counter(segment.label for segment in segments)
    counters: Dict[str, int] = defaultdict(int)
    for segment in segments:
        if seen[segment.label] > 1:
            counters[segment.label] += 1
            segment.label = "%s %d" % (segment.label, counters[segment.label])
