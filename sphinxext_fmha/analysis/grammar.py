"""The file-name grammar of each kernel sub-type, from the probe's perturbations (which
``_``-pieces of a name each field changes): fields whose ranges overlap write one segment,
pieces no field writes are literals, a field that only inserts pieces writes an
absent-when-off token, and the segments follow the topological order every name shows."""

from __future__ import annotations

import heapq
import re
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import repeat
from typing import Dict, Iterable, List, NamedTuple, Optional, Pattern, Sequence, Tuple

from ..model import Gap, Segment
from .segment_labels import disambiguate_labels, segment_label, short_name


def _pieces(name: str) -> List[str]:
    """The pieces of a name: each ``_`` starts one."""
    pieces = name.split("_")
    pieces[1:] = ["_" + piece for piece in pieces[1:]]
    return pieces


class _UnionFind(Dict[str, str]):
    """Field path -> a path of its group (the group's smallest path at the root)."""

    def find(self, item: str) -> str:
        self.setdefault(item, item)
        while self[item] != item:
            self[item] = self[self[item]]
            item = self[item]
        return item

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self[max(ra, rb)] = min(ra, rb)


def _matchers(candidates: List[List[str]]) -> Tuple[Pattern[str], Pattern[str]]:
    """A group per segment. ``re`` tries a group's alternatives left to right and
    backtracks, so a full match is the first parse with each segment's tokens longest
    first (the order of :meth:`Grammar.parses`), the last one with them the other way
    round: the two are the same exactly when there is one parse."""
    def alternatives(token_sets: Iterable[List[str]]) -> Pattern[str]:
        return re.compile("".join("(%s)" % "|".join(map(re.escape, tokens)) for tokens in token_sets))

    return alternatives(candidates), alternatives(tokens[::-1] for tokens in candidates)


@dataclass
class Grammar:
    """Ordered segments of one kernel sub-type, with a parser over their tokens (read
    once, at the first parse: a grammar that has parsed a name is a snapshot of them)."""

    segments: List[Segment]
    gaps: List[Gap] = field(default_factory=list)
    _compiled: Optional[Tuple[List[List[str]], Optional[Tuple[Pattern[str], Pattern[str]]]]] = \
        field(default=None, init=False, repr=False, compare=False)

    def parses(self, name: str, limit: int = 2) -> List[List[str]]:
        """All token sequences (up to ``limit``) that spell ``name``, in depth-first
        order (each segment's tokens longest first)."""
        if self._compiled is None:
            candidates = [sorted(s.tokens, key=len, reverse=True) for s in self.segments]
            # A segment without tokens spells nothing: no name parses.
            self._compiled = (candidates, _matchers(candidates) if all(candidates) else None)
        candidates, matchers = self._compiled
        match = matchers[0].fullmatch(name) if matchers is not None else None
        if match is None:
            return []
        tokens = match.groups()
        if limit == 1:
            return [list(tokens)]
        last = matchers[1].fullmatch(name) if matchers is not None and limit > 1 else None
        if last is not None and last.groups() == tokens:
            return [list(tokens)]
        # Several parses (rare): the walk finds the first ``limit`` of them.
        return _walk_parses(candidates, name, limit)

    def parse(self, name: str) -> Optional[List[str]]:
        """The unique parse of ``name``, or None if there is none or several."""
        found = self.parses(name)
        return found[0] if len(found) == 1 else None


def _walk_parses(candidates: List[List[str]], name: str, limit: int) -> List[List[str]]:
    """Depth-first over the segments, remembering the (segment, position) pairs that
    lead to no parse."""
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


#: One record's field influence, widened: ((field path, (start, end)), ...).
_Layout = Tuple[Tuple[str, Tuple[int, int]], ...]
#: The spans of a name: (field group, or "" for literal text, start piece, end piece).
_Spans = List[Tuple[str, int, int]]


def _widen_to_values(record: dict, pieces: List[str], split: Dict[str, List[str]]) -> _Layout:
    """Perturbing ``qr`` into ``qr_async`` only shows the inserted ``_async``; where a
    field's own text stands in the name right at its influence, it owns that text.
    ``split`` remembers each value's pieces across records."""
    widened = []
    leaves = record["leaves"]
    last = len(pieces)
    for path, (start, end) in record.get("influence", {}).items():
        value = leaves.get(path)
        if isinstance(value, str) and len(value) >= 2:
            wanted = split.get(value)
            if wanted is None:
                wanted = split[value] = _pieces("_" + value)[1:]
            size = len(wanted)
            first = wanted[0]
            # the first place of the value's pieces that touches the influence
            for i in range(max(0, start - size), min(last - size, end) + 1):
                if pieces[i] == first and (size == 1 or pieces[i:i + size] == wanted):
                    start, end = min(start, i), max(end, i + size)
                    break
        widened.append((path, (start, end)))
    return tuple(widened)


def _join_overlapping(layout: _Layout, uf: _UnionFind) -> None:
    """Fields whose (non-empty) ranges overlap in one name write the same segment."""
    solid = sorted((p, r) for p, r in layout if r[1] > r[0])
    for i, (path_a, range_a) in enumerate(solid):
        uf.find(path_a)
        for path_b, range_b in solid[i + 1:]:
            if range_a[0] < range_b[1] and range_b[0] < range_a[1]:
                uf.union(path_a, path_b)
    for path, _ in layout:
        uf.find(path)


def _forget_unwritten(layouts: List[_Layout], uf: _UnionFind) -> List[_Layout]:
    """A field group that writes text in no name of the listing (an occupancy that is
    -1 everywhere: another value would insert ``_o2``) has no segment in this tree."""
    written = {uf.find(p) for layout in layouts for p, (s, e) in layout if e > s}
    kept = [tuple((p, r) for p, r in layout if uf.find(p) in written) for layout in layouts]
    for path in [p for p in uf if uf.find(p) not in written]:
        del uf[path]
    return kept


def _spans(layout: _Layout, size: int, uf: _UnionFind) -> Optional[_Spans]:
    """The ordered spans of a name of ``size`` pieces, or None if inconsistent."""
    ranges: Dict[str, List[Tuple[int, int]]] = defaultdict(list)
    for path, span in layout:
        ranges[uf.find(path)].append(span)
    spans = []
    covered: List[Optional[str]] = [None] * size
    for group, group_ranges in ranges.items():
        solid = [r for r in group_ranges if r[1] > r[0]]
        if solid:
            start, end = min(r[0] for r in solid), max(r[1] for r in solid)
        else:
            start = end = min(r[0] for r in group_ranges)
        for i in range(start, end):
            if covered[i] is not None:
                return None
            covered[i] = group
        spans.append((group, start, end))
    # An absent token splits the text around it: `_w32x32x16` and `_qr` stay two
    # literals in names where the optional `_o1` between them is missing.
    cuts = {start for _, start, end in spans if start == end}
    i = 0
    while i < size:
        if covered[i] is None:
            j = i + 1
            while j < size and covered[j] is None and j not in cuts:
                j += 1
            spans.append(("", i, j))
            i = j
        else:
            i += 1
    spans.sort(key=lambda s: (s[1], s[2], s[0]))
    return spans


def _nodes(spans: _Spans, texts: Sequence[str]) -> Tuple[str, ...]:
    """The item id of each span. A literal is identified by its text (and which
    repetition of that text it is), so the same literal in different names is one
    segment whatever optional tokens come and go around it."""
    nodes = []
    repeats: Dict[str, int] = defaultdict(int)
    for (group, _, _), text in zip(spans, texts):
        if group == "":
            nodes.append("literal:%s#%d" % (text, repeats[text]))
            repeats[text] += 1
        else:
            nodes.append(group)
    return tuple(nodes)


def _slots(spans: _Spans, nodes: Sequence[str]) -> Tuple[Tuple[str, ...], ...]:
    """Group the items of a name into ordered slots; absent tokens inserted at the same
    place share a slot, since one name cannot tell their order."""
    slots: List[List[str]] = []
    previous = None
    for node, (_, start, end) in zip(nodes, spans):
        if start == end and previous is not None and previous[0] == previous[1] == start:
            slots[-1].append(node)
        else:
            slots.append([node])
        previous = (start, end)
    return tuple(tuple(slot) for slot in slots)


def _topological(orders: Iterable[Sequence[Sequence[str]]]) -> Optional[List[str]]:
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
    ready = [(nodes[n], n) for n, d in indegree.items() if d == 0]
    heapq.heapify(ready)  # the first-placed node of those ready first
    result = []
    while ready:
        node = heapq.heappop(ready)[1]
        result.append(node)
        for b in edges[node]:
            indegree[b] -= 1
            if indegree[b] == 0:
                heapq.heappush(ready, (nodes[b], b))
    return result if len(result) == len(nodes) else None


class _Names(NamedTuple):
    """The names of one kernel class cut into items: per name, its item ids and the text
    of each (None and () for a name whose influence ranges overlap between segments), and
    the distinct slot sequences."""

    nodes: List[Optional[Tuple[str, ...]]]
    texts: List[Tuple[str, ...]]
    slots: Dict[Tuple[Tuple[str, ...], ...], None]


class _Cutter(NamedTuple):
    """How names of one layout are cut: their spans, which of them are literal text, and
    the expression whose groups are the spans' texts (:func:`_cutter`)."""

    spans: _Spans
    literals: List[int]
    pattern: Pattern[str]


def _cut(records: List[dict], uf: _UnionFind) -> _Names:
    """Fill ``uf`` with the field groups and cut every name. Names share a few layouts
    (the same influence ranges, the same number of pieces), so the unions, spans, cutting
    expression and slots are worked out once per layout."""
    pieces = [_pieces(r["name"]) for r in records]
    split: Dict[str, List[str]] = {}
    layout_ids: Dict[_Layout, int] = {}
    of_record = [layout_ids.setdefault(_widen_to_values(r, p, split), len(layout_ids))
                 for r, p in zip(records, pieces)]
    for layout in layout_ids:
        _join_overlapping(layout, uf)
    layouts = _forget_unwritten(list(layout_ids), uf)
    cutters: Dict[Tuple[int, int], Optional[_Cutter]] = {}
    nodes_of: Dict[tuple, Tuple[Tuple[str, ...], Tuple[Tuple[str, ...], ...]]] = {}
    names = _Names([], [], {})
    for record, layout_id, record_pieces in zip(records, of_record, pieces):
        key = (layout_id, len(record_pieces))
        if key not in cutters:
            spans = _spans(layouts[layout_id], len(record_pieces), uf)
            cutters[key] = _Cutter(spans, [i for i, (group, _, _) in enumerate(spans) if group == ""],
                                   _cutter(spans)) if spans else None
        cutter = cutters[key]
        if cutter is None:
            names.nodes.append(None)
            names.texts.append(())
            continue
        texts = cutter.pattern.fullmatch(record["name"]).groups()  # type: ignore[union-attr]
        literal_key = (key,) + tuple(texts[i] for i in cutter.literals)
        if literal_key not in nodes_of:
            nodes = _nodes(cutter.spans, texts)
            nodes_of[literal_key] = (nodes, _slots(cutter.spans, nodes))
        nodes, slots = nodes_of[literal_key]
        names.nodes.append(nodes)
        names.texts.append(texts)
        names.slots[slots] = None
    return names


def _cutter(spans: _Spans) -> Pattern[str]:
    """The expression that cuts a name of one layout into the text of each span: a group
    per span, of as many ``_``-pieces as the span holds."""
    parts = []
    for _, start, end in spans:
        first = "[^_]*" if start == 0 and end > 0 else ""
        rest = max(0, end - max(start, 1))
        parts.append("(%s%s)" % (first, "(?:_[^_]*){%d}" % rest if rest else ""))
    return re.compile("".join(parts))


def _fill_tokens(segments: Dict[str, Segment], order: List[str], records: List[dict],
                 names: _Names) -> None:
    """Each segment's tokens, in the order names first show them, with the field
    values that write each token (one combination per distinct set of values)."""
    leaves: List[dict] = []
    present: List[Dict[str, str]] = []
    for record, nodes, texts in zip(records, names.nodes, names.texts):
        if nodes:
            leaves.append(record["leaves"])
            present.append(dict(zip(nodes, texts)))
    for node in order:
        segment = segments[node]
        # Whole columns at a time (map over dict.get), then one pass per distinct row.
        tokens = list(map(dict.get, present, repeat(node), repeat("")))
        if segment.literal:
            for token in dict.fromkeys(tokens):
                segment.tokens.setdefault(token, "literal text" if token else "absent")
            continue
        columns = [list(map(dict.get, leaves, repeat(f))) for f in segment.fields]
        if all(plain_values(column) for column in columns):
            # Equal values of these types have equal texts: the texts of distinct rows.
            rows = dict.fromkeys(zip(tokens, *columns))
            distinct = dict.fromkeys((token, *map(str, row)) for token, *row in rows)
        else:
            distinct = dict.fromkeys(zip(tokens, *map(_texts, columns)))
        for token, *row in distinct:
            values = dict(zip(segment.fields, row))
            combos = segment.values.setdefault(token, [])
            if values not in combos:
                combos.append(values)


def derive_grammar(records: List[dict], class_name: str) -> Grammar:
    """Segments for the records of one kernel class (all records share the class)."""
    gaps: List[Gap] = []
    uf = _UnionFind()
    names = _cut(records, uf)
    inconsistent = names.nodes.count(None)
    if inconsistent:
        gaps.append(Gap("%d %s names whose field influence overlaps between segments"
                        % (inconsistent, class_name), class_name, "a field changed pieces that "
                        "another field also writes; those names are left to the parser alone"))
    # The order depends only on the distinct slot sequences.
    order = _topological(names.slots)
    if order is None:
        gaps.append(Gap(what="no single segment order fits every %s name" % class_name,
                        where=class_name, why="the observed segment orders contradict each other"))
        return Grammar(segments=[], gaps=gaps)

    members: Dict[str, List[str]] = defaultdict(list)
    for path in uf:
        members[uf.find(path)].append(path)

    segments: Dict[str, Segment] = {}
    for node in order:
        if node.startswith("literal:"):
            segments[node] = Segment(label="literal", fields=[], literal=True)
        else:
            fields = sorted(members[node])
            segments[node] = Segment(label=segment_label(fields), fields=fields)
    _fill_tokens(segments, order, records, names)

    for segment in segments.values():
        if segment.literal:
            continue
        for token, combos in segment.values.items():
            combos.sort(key=lambda c: sorted(c.items()))
            segment.tokens[token] = _meaning(segment, token, combos)

    ordered = [segments[node] for node in order]
    disambiguate_labels(ordered)
    return Grammar(segments=ordered, gaps=gaps)


#: Types whose equal values (``==``) always have equal texts, whatever mix of them a
#: field holds (not int with bool: 1 == True; no floats: 0.0 == -0.0).
_PLAIN = (frozenset({str, int, type(None)}), frozenset({str, bool, type(None)}))


def plain_values(column: Sequence[object]) -> bool:
    """Whether equal values of ``column`` have equal texts (see :data:`_PLAIN`)."""
    kinds = set(map(type, column))
    return any(kinds <= plain for plain in _PLAIN)


def _texts(values: List[object]) -> List[str]:
    """Each value's text: a dict's ``repr`` entry, else ``str`` (at C speed when no value
    is a dict)."""
    if any(issubclass(kind, dict) for kind in set(map(type, values))):
        return [v.get("repr", "") if isinstance(v, dict) else str(v) for v in values]
    return list(map(str, values))


def _meaning(segment: Segment, token: str, combos: List[Dict[str, str]]) -> str:
    text = " | ".join(", ".join("%s=%s" % (short_name(f), v) for f, v in combo.items())
                      for combo in combos[:4])
    if len(combos) > 4:
        text += " | ... (%d combinations)" % len(combos)
    if token == "":
        text = "(no token) " + text
    return text
