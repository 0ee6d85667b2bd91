"""Derive the filename grammar of each kernel sub-type from probe observations.

The probe (``probe_script.py``) perturbs one field of a real kernel object at a time and
records which ``_``-separated pieces of the kernel name change. Here those influence
ranges become segments:

* fields whose ranges overlap in some kernel write the same segment (the four pad flags
  write one ``_psskddv`` token);
* pieces that no field writes are literal segments (``fmha_fwd``); a field with one
  value in the whole tree still writes its segment (the probe changes it to a made-up
  value), which then has one token (``_r1x4x1``, :attr:`Segment.constant`);
* a field whose change only inserts pieces writes an absent-when-off token (``""``);
  one that inserts in no name of the listing writes nothing here and has no segment;
* the order of segments is the topological order of what every kernel shows.

The grammar is then checked the honest way: every listed name is parsed with nothing
but the token sets, must have exactly one parse, and must re-render identically.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from ..model import Gap, Segment

PIECE_SPLIT = re.compile(r"(?=_)")
GENERIC_LEAF_NAMES = {"tag", "name", "kind", "type", "value"}


def short_name(path: str) -> str:
    """``F_pipeline.F_spad`` -> ``spad``; ``F_pipeline.tag`` -> ``pipeline``."""
    parts = [p[2:] if p.startswith("F_") else p for p in path.split(".")]
    if len(parts) > 1 and parts[-1] in GENERIC_LEAF_NAMES:
        return parts[-2]
    return parts[-1]


def _owner(path: str) -> str:
    parts = path.split(".")
    return short_name(".".join(parts[:-1])) if len(parts) > 1 else ""


def _common_prefix(names: Sequence[str]) -> str:
    first, last = min(names), max(names)
    i = 0
    while i < len(first) and i < len(last) and first[i] == last[i]:
        i += 1
    return first[:i]


def segment_label(fields: Sequence[str]) -> str:
    names = [short_name(f) for f in fields]
    if len(names) == 1:
        return names[0]
    suffix = _common_prefix([n[::-1] for n in names])[::-1]
    prefix = _common_prefix(names)
    if len(suffix) >= 3:
        return suffix  # a shared word: spad, skpad, dpad, dvpad -> "pad"
    common = prefix if prefix else suffix
    owners = {_owner(f) for f in fields}
    owner = owners.pop() if len(owners) == 1 else ""
    if common and owner:
        return "%s %s" % (owner, common)
    if common:
        return common
    return "+".join(names)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: Dict[str, str] = {}

    def find(self, item: str) -> str:
        self.parent.setdefault(item, item)
        while self.parent[item] != item:
            self.parent[item] = self.parent[self.parent[item]]
            item = self.parent[item]
        return item

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


@dataclass
class Grammar:
    """Ordered segments of one kernel sub-type, with a parser over their tokens."""

    segments: List[Segment]
    gaps: List[Gap] = field(default_factory=list)

    def _candidates(self) -> List[List[str]]:
        return [sorted(s.tokens, key=len, reverse=True) for s in self.segments]

    def parses(self, name: str, limit: int = 2) -> List[List[str]]:
        """All token sequences (up to ``limit``) that spell ``name``."""
        candidates = self._candidates()
        found: List[List[str]] = []
        dead = set()

        def walk(index: int, pos: int, acc: List[str]) -> None:
            if len(found) >= limit or (index, pos) in dead:
                return
            if index == len(candidates):
                if pos == len(name):
                    found.append(list(acc))
                return
            before = len(found)
            for token in candidates[index]:
                if name.startswith(token, pos):
                    acc.append(token)
                    walk(index + 1, pos + len(token), acc)
                    acc.pop()
                    if len(found) >= limit:
                        return
            if len(found) == before:
                dead.add((index, pos))

        walk(0, 0, [])
        return found

    def parse(self, name: str) -> Optional[List[str]]:
        """The unique parse of ``name``, or None if there is none or several."""
        found = self.parses(name)
        return found[0] if len(found) == 1 else None


def _group_ranges(influence: Dict[str, List[int]], uf: _UnionFind):
    groups: Dict[str, List[Tuple[int, int]]] = defaultdict(list)
    for path, (start, end) in influence.items():
        groups[uf.find(path)].append((start, end))
    return groups


def _widen_to_values(record: dict, pieces: List[str]) -> Dict[str, List[int]]:
    """Perturbing ``qr`` into ``qr_async`` only shows the inserted ``_async``; where a
    field's own text stands in the name right at its influence, it owns that text."""
    widened = {}
    for path, (start, end) in record.get("influence", {}).items():
        value = record["leaves"].get(path)
        if isinstance(value, str) and len(value) >= 2:
            wanted = PIECE_SPLIT.split("_" + value)[1:]
            size = len(wanted)
            for i in range(max(0, start - size), min(len(pieces) - size, end) + 1):
                if pieces[i:i + size] == wanted and i <= end and i + size >= start:
                    start, end = min(start, i), max(end, i + size)
                    break
        widened[path] = [start, end]
    return widened


def _items_for(record: dict, uf: _UnionFind) -> Optional[List[Tuple[str, int, int]]]:
    """The ordered (item id, start, end) of one kernel name, or None if inconsistent."""
    pieces = PIECE_SPLIT.split(record["name"])
    spans = []
    covered = [None] * len(pieces)
    for group, ranges in _group_ranges(record["widened"], uf).items():
        solid = [r for r in ranges if r[1] > r[0]]
        if solid:
            start, end = min(r[0] for r in solid), max(r[1] for r in solid)
        else:
            start = end = min(r[0] for r in ranges)
        for i in range(start, end):
            if covered[i] is not None:
                return None
            covered[i] = group
        spans.append((group, start, end))
    # An absent token splits the text around it: `_w32x32x16` and `_qr` stay two
    # literals in names where the optional `_o1` between them is missing.
    cuts = {start for _, start, end in spans if start == end}
    i = 0
    while i < len(pieces):
        if covered[i] is None:
            j = i + 1
            while j < len(pieces) and covered[j] is None and j not in cuts:
                j += 1
            spans.append(("", i, j))
            i = j
        else:
            i += 1
    spans.sort(key=lambda s: (s[1], s[2], s[0]))
    # A literal is identified by its text (and which repetition of that text it is),
    # so the same literal in different names is one segment whatever optional
    # tokens come and go around it.
    items = []
    repeats: Dict[str, int] = defaultdict(int)
    for group, start, end in spans:
        if group == "":
            text = "".join(pieces[start:end])
            items.append(("literal:%s#%d" % (text, repeats[text]), start, end))
            repeats[text] += 1
        else:
            items.append((group, start, end))
    return items


def _slots(items: List[Tuple[str, int, int]]) -> List[List[str]]:
    """Group items into ordered slots; absent tokens inserted at the same place
    share a slot, since one name cannot tell their order."""
    slots: List[List[str]] = []
    previous = None
    for node, start, end in items:
        if start == end and previous is not None and previous[1] == previous[2] == start:
            slots[-1].append(node)
        else:
            slots.append([node])
        previous = (node, start, end)
    return slots


def _topological(orders: Iterable[List[List[str]]]) -> Optional[List[str]]:
    edges: Dict[str, set] = defaultdict(set)
    nodes: Dict[str, int] = {}
    for slots in orders:
        for position, slot in enumerate(slots):
            for node in slot:
                nodes[node] = min(nodes.get(node, position), position)
        for before, after in zip(slots, slots[1:]):
            for a in before:
                edges[a].update(after)
    indegree = {n: 0 for n in nodes}
    for a in edges:
        for b in edges[a]:
            indegree[b] += 1
    ready = sorted((n for n, d in indegree.items() if d == 0), key=lambda n: (nodes[n], n))
    result = []
    while ready:
        node = ready.pop(0)
        result.append(node)
        for b in sorted(edges[node]):
            indegree[b] -= 1
            if indegree[b] == 0:
                ready.append(b)
        ready.sort(key=lambda n: (nodes[n], n))
    return result if len(result) == len(nodes) else None


def _forget_unwritten(records: List[dict], uf: _UnionFind) -> None:
    """A field group that writes text in no name of the listing (an occupancy that is
    -1 everywhere: another value would insert ``_o2``) has no segment in this tree."""
    written = {uf.find(p) for r in records for p, (s, e) in r["widened"].items() if e > s}
    for record in records:
        record["widened"] = {p: r for p, r in record["widened"].items() if uf.find(p) in written}
    for path in [p for p in uf.parent if uf.find(p) not in written]:
        del uf.parent[path]


def derive_grammar(records: List[dict], class_name: str) -> Grammar:
    """Segments for the records of one kernel class (all records share the class)."""
    gaps: List[Gap] = []
    uf = _UnionFind()
    for record in records:
        record["widened"] = _widen_to_values(record, PIECE_SPLIT.split(record["name"]))
        solid = sorted((p, r) for p, r in record["widened"].items() if r[1] > r[0])
        for i, (path_a, range_a) in enumerate(solid):
            uf.find(path_a)
            for path_b, range_b in solid[i + 1:]:
                if range_a[0] < range_b[1] and range_b[0] < range_a[1]:
                    uf.union(path_a, path_b)
        for path in record.get("influence", {}):
            uf.find(path)
    _forget_unwritten(records, uf)

    per_record: List[Optional[List[Tuple[str, int, int]]]] = [_items_for(r, uf) for r in records]
    inconsistent = sum(1 for items in per_record if items is None)
    if inconsistent:
        gaps.append(Gap(
            what="%d %s names whose field influence overlaps between segments" % (inconsistent, class_name),
            where=class_name,
            why="a field changed pieces that another field also writes; those names are "
                "left to the parser alone",
        ))
    order = _topological([_slots(items) for items in per_record if items])
    if order is None:
        gaps.append(Gap(what="no single segment order fits every %s name" % class_name,
                        where=class_name, why="the observed segment orders contradict each other"))
        return Grammar(segments=[], gaps=gaps)

    members: Dict[str, List[str]] = defaultdict(list)
    for path in uf.parent:
        members[uf.find(path)].append(path)

    segments: Dict[str, Segment] = {}
    for node in order:
        if node.startswith("literal:"):
            segments[node] = Segment(label="literal", fields=[], literal=True)
        else:
            fields = sorted(members[node])
            segments[node] = Segment(label=segment_label(fields), fields=fields)

    for record, items in zip(records, per_record):
        if not items:
            continue
        pieces = PIECE_SPLIT.split(record["name"])
        present = {node: "".join(pieces[s:e]) for node, s, e in items}
        for node in order:
            segment = segments[node]
            token = present.get(node, "")
            if segment.literal:
                segment.tokens.setdefault(token, "literal text" if token else "absent")
                continue
            values = {f: _text(record["leaves"].get(f)) for f in segment.fields}
            combos = segment.values.setdefault(token, [])
            if values not in combos:
                combos.append(values)

    for segment in segments.values():
        if segment.literal:
            continue
        for token, combos in segment.values.items():
            combos.sort(key=lambda c: sorted(c.items()))
            segment.tokens[token] = _meaning(segment, token, combos)

    ordered = [segments[node] for node in order]
    disambiguate_labels(ordered)
    return Grammar(segments=ordered, gaps=gaps)


def _specific_label(fields: Sequence[str]) -> str:
    """The label with the fields' shared ending added: ``F_rm0``, ``F_rn0``, ``F_rk0``
    -> ``tile r0`` (``""`` when the fields share no ending)."""
    names = [short_name(f) for f in fields]
    if len(names) < 2:
        return ""
    suffix = _common_prefix([n[::-1] for n in names])[::-1]
    prefix = _common_prefix(names)
    if not suffix or not prefix or len(prefix) + len(suffix) >= min(len(n) for n in names):
        return ""
    owners = {_owner(f) for f in fields}
    owner = owners.pop() if len(owners) == 1 else ""
    return ("%s %s%s" % (owner, prefix, suffix)).strip()


def disambiguate_labels(segments: List[Segment]) -> None:
    """Make each label name one segment: labels that repeat take their fields' shared
    ending where that tells them apart (``tile r0``, ``tile r1``), else a number
    (``tile r 1``, ``tile r 2``)."""
    for segment in segments:
        if segment.literal:
            segment.label = "literal"
        else:
            segment.label = re.sub(r" \d+$", "", segment.label)
    seen: Dict[str, int] = defaultdict(int)
    for segment in segments:
        seen[segment.label] += 1
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
    seen = defaultdict(int)
    for segment in segments:
        seen[segment.label] += 1
    counters: Dict[str, int] = defaultdict(int)
    for segment in segments:
        if seen[segment.label] > 1:
            counters[segment.label] += 1
            if segment.literal:
                segment.label = "literal %d" % counters[segment.label]
            else:
                segment.label = "%s %d" % (segment.label, counters[segment.label])


def _text(value) -> str:
    if isinstance(value, dict):
        return value.get("repr", "")
    return str(value)


def _meaning(segment: Segment, token: str, combos: List[Dict[str, str]]) -> str:
    shown = []
    for combo in combos[:4]:
        shown.append(", ".join("%s=%s" % (short_name(f), v) for f, v in combo.items()))
    text = " | ".join(shown)
    if len(combos) > 4:
        text += " | ... (%d combinations)" % len(combos)
    if token == "":
        text = "(no token) " + text
    return text
