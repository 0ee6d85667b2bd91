"""What the kernels carrying each token have in common: how many there are, and under
which dispatch conditions the dispatcher reaches them.  Both come from parsing a real
listing with the model's grammar and from the reading of the generated API dispatch
file (:func:`sphinxext_fmha.cppapi.reading.read_dispatch`); no Sphinx, no rendering.

Dispatch conditions per token are exact, never intersected: every condition term has a
*slot* (its place in the generated ``if`` template); a slot belongs to the segments
whose tokens determine its text (the segments common to every smallest such set, the
arch suffix counting as one), and a token's condition is, per kernel, the terms of the
slots that belong to its segment.  Kernels whose condition is the same form one group; the group
names the tokens of the other determining segments (hdim, tile, ...) it covers."""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..model import ApiModel, ConditionGroup, TokenCounts, TokenDispatch
from .parsed_listing import ParsedListing

__all__ = ["TokenCounts", "token_counts", "ConditionGroup", "TokenDispatch", "token_dispatch"]


def _parsed(model: ApiModel, files: Sequence[str], parsed: Optional[ParsedListing]
            ) -> ParsedListing:
    """``parsed`` when it is the parse of ``files`` (the caller parsed the listing
    once for every consumer), else a parse of its own."""
    return parsed if parsed is not None and parsed.of_files(files) else ParsedListing.of(model, files)


def _rows_per_class(model: ApiModel, files: Sequence[str], parsed: Optional[ParsedListing]
                    ) -> Dict[str, List[Tuple[List[str], str]]]:
    """kernel class -> (tokens, file) of each file with one parse, in listing order
    (classes in the order of their first file)."""
    listing = _parsed(model, files, parsed)
    rows: Dict[str, List[Tuple[List[str], str]]] = {}
    for filename in listing.files:
        found = listing.parsed.get(filename)
        if found is not None:
            rows.setdefault(found[0], []).append((found[1], filename))
    return rows


def token_counts(model: ApiModel, files: Sequence[str],
                 parsed: Optional[ParsedListing] = None) -> TokenCounts:
    """(kernel class, segment index) -> token -> number of listed kernels with it
    (``parsed``: the listing parsed already)."""
    counts: TokenCounts = {}
    for class_name, rows in _rows_per_class(model, files, parsed).items():
        # every parse of a class has one token per segment: count column by column
        for index, column in enumerate(zip(*(tokens for tokens, _ in rows))):
            counts[(class_name, index)] = dict(Counter(column))
    return counts


_ARCH = "arch suffix"
_UNREACHED = (("unreached", ""),)

#: (tokens, arch suffix, the kernel's reading or None when unreached, file name)
_Item = Tuple[List[str], str, Optional[Mapping[str, Any]], str]
#: a condition term: (C++ text, words)
_Term = Tuple[str, str]


class _Rows:
    """The columns of a kernel class, for :func:`_determining`.

    Most sets of columns do not determine a slot's values, and a few rows usually show
    it: each test looks at the first 64 rows, then 4 times as many, and so on.  How a
    set of columns splits those rows does not depend on the slot: it is computed once
    per set and kept.  A column with one value splits nothing, so a set holding it
    determines exactly when the set without it does and is never among the smallest
    (unless the values are all equal): only the other columns are combined.
    """

    def __init__(self, columns: List[List[str]]) -> None:
        self.columns = columns
        rows = len(columns[0]) if columns else 0
        self.sizes: List[int] = []
        size = 64
        while size < rows:
            self.sizes.append(size)
            size *= 4
        self.sizes.append(rows)
        self.varying = [index for index, column in enumerate(columns) if len(set(column)) > 1]
        self._splits: Dict[Tuple[Tuple[int, ...], int], Tuple[List[int], int]] = {}

    def _split(self, combo: Tuple[int, ...], size: int) -> Tuple[List[int], int]:
        """Per row of the first ``size``, the number of its values in ``combo`` (in
        order of first occurrence); and how many such groups there are."""
        found = self._splits.get((combo, size))
        if found is None:
            keys: Sequence[object] = (self.columns[combo[0]][:size] if len(combo) == 1 else
                                      list(zip(*(self.columns[c][:size] for c in combo))))
            number = {key: n for n, key in enumerate(dict.fromkeys(keys))}
            found = self._splits[(combo, size)] = (list(map(number.__getitem__, keys)), len(number))
        return found

    def determines(self, combo: Tuple[int, ...], codes: Sequence[Sequence[int]]) -> bool:
        """Whether rows equal in ``combo`` have equal values, at every size (each key
        has one value: as many (key, value) pairs as keys); ``codes``: the value codes
        cut to each of :attr:`sizes`."""
        for size, cut in zip(self.sizes, codes):
            group, groups = self._split(combo, size)
            if len(set(zip(group, cut))) != groups:
                return False
        return True


def _determining(rows: _Rows, codes: Sequence[int], limit: int = 3) -> List[Tuple[int, ...]]:
    """The smallest sets of columns whose values determine the value ``codes`` (all of
    that size)."""
    cuts = [codes[:size] for size in rows.sizes]
    columns = rows.varying if len(set(codes)) > 1 else range(len(rows.columns))
    for size in range(1, limit + 1):
        found = [combo for combo in combinations(columns, size)
                 if rows.determines(combo, cuts)]
        if found:
            return found
    return []


def _core(combos: List[Tuple[int, ...]]) -> set:
    """The segments a slot belongs to: those in every smallest determining set (the pad in
    {pad, hdim} and {pad, tile}); when they share none (the hdim level: {hdim} or {tile}),
    all of them."""
    if not combos:
        return set()
    core = set(combos[0]).intersection(*combos[1:])
    return core or {c for combo in combos for c in combo}


def _sensitive(columns: List[List[str]], values: Sequence[object]) -> List[Tuple[int, ...]]:
    """Fallback when no three columns determine ``values``: each column on its own for
    which two rows that differ only in that column have different values."""
    found: List[Tuple[int, ...]] = []
    for index in range(len(columns)):
        others = [column for c, column in enumerate(columns) if c != index]
        keys: List[Tuple[str, ...]] = list(zip(*others)) if others else [()] * len(values)
        if len(set(keys)) != len(set(zip(keys, values))):
            found.append((index,))
    return found


def _owners(rows: _Rows, values: List[Optional[str]],
            known: Dict[Tuple[int, ...], List[Tuple[int, ...]]]) -> List[Tuple[int, ...]]:
    """:func:`_determining`, else :func:`_sensitive`; both see only which rows have equal
    values (each row's code: the first row with its value), so slots that split the
    rows alike share one answer (``known``)."""
    first: Dict[Optional[str], int] = {}
    pattern = tuple([first.setdefault(value, row) for row, value in enumerate(values)])
    if pattern not in known:
        known[pattern] = _determining(rows, pattern) or _sensitive(rows.columns, pattern)
    return known[pattern]


def token_dispatch(model: ApiModel, files: Sequence[str], reading: Mapping[str, Any],
                   parsed: Optional[ParsedListing] = None) -> TokenDispatch:
    """Per token, its exact dispatch conditions grouped (see the module docstring);
    ``parsed``: the listing parsed already."""
    kernels = reading.get("kernels", {})
    per_class: Dict[str, List[_Item]] = {}
    for class_name, rows in _rows_per_class(model, files, parsed).items():
        per_class[class_name] = [(tokens, filename[len("".join(tokens)):],
                                  kernels.get(filename), filename) for tokens, filename in rows]
    result = TokenDispatch()
    position = {name: index for index, name in enumerate(reading.get("order", []))}
    for kernel_type in model.kernel_types:
        items = per_class.get(kernel_type.class_name)
        if items:
            labels = [s.label for s in kernel_type.segments]
            _class_groups(kernel_type.class_name, labels, items, result)
            _try_orders(kernel_type.class_name, labels, items, position, result)
    return result


def _columns(rows: Sequence[Sequence[str]], width: int) -> List[List[str]]:
    """The ``width`` columns of rows of that many values each."""
    return [list(column) for column in zip(*rows)] if rows else [[] for _ in range(width)]


def _try_orders(class_name: str, labels: List[str], items: List[_Item],
                position: Mapping[str, int], result: TokenDispatch) -> None:
    """Per segment: in which order the dispatcher tries its tokens among kernels that are
    equal in every other segment (and arch suffix)."""
    placed = [item for item in items if item[3] in position]
    columns = _columns([item[0] for item in placed], len(labels))
    columns.append([item[1] for item in placed])
    # Columns with one value do not tell kernels apart: the kernels equal in every
    # other column are those equal in the other varying ones.
    varying = [index for index, column in enumerate(columns) if len(set(column)) > 1]
    keys = list(zip(*(columns[index] for index in varying))) if varying else [()] * len(placed)
    alone = len(set(keys)) == len(keys)  # no two kernels equal in every column
    places = [position[item[3]] for item in placed]
    for index, label in enumerate(labels):
        if index not in varying and alone:
            continue  # every kernel is alone among those equal in the other columns
        cut = varying.index(index) if index in varying else len(varying)
        tokens = columns[index]
        chains: Dict[Tuple[str, ...], List[int]] = {}
        for row, key in enumerate(keys):
            chains.setdefault(key[:cut] + key[cut + 1:], []).append(row)
        # (rows with one place are one file: their tokens are equal)
        counts: Counter = Counter(tuple(tokens[row] for row in sorted(chain, key=places.__getitem__))
                                  for chain in chains.values() if len(chain) > 1)
        if counts:
            result.orders[(class_name, label)] = dict(counts.most_common())


def _slot_columns(readings: Sequence[Mapping[str, Any]]) -> Dict[str, List[Optional[_Term]]]:
    """slot -> per reached kernel (its reading), its term in that slot (None: it has
    none); slots in the order they first occur."""
    slots: Dict[str, List[Optional[_Term]]] = {}
    for row, reading in enumerate(readings):
        for slot, cpp, words in reading["terms"]:
            column = slots.get(slot)
            if column is None:
                column = slots[slot] = [None] * len(readings)
            column[row] = (cpp, words)
    return slots


def _class_groups(class_name: str, labels: List[str],
                  items: List[_Item],
                  result: TokenDispatch) -> None:
    reached = [item for item in items if item[2] is not None]
    width = len(labels)
    columns = _columns([item[0] for item in reached], width)
    columns.append([item[1] for item in reached])
    names = labels + [_ARCH]
    terms = _slot_columns([info for info in (item[2] for item in reached) if info is not None])
    known: Dict[Tuple[int, ...], List[Tuple[int, ...]]] = {}
    rows = _Rows(columns)
    owners: Dict[str, List[Tuple[int, ...]]] = {}
    shared: List[Tuple[str, str]] = []
    undetermined: List[str] = []
    for slot, column in terms.items():
        values = [term[0] if term is not None else None for term in column]
        if len(set(values)) == 1:
            if column[0] and column[0][1] != "always":
                shared.append(column[0])
            continue
        found = _owners(rows, values, known)
        if found:
            owners[slot] = found
        else:
            undetermined.append(next(v for v in values if v is not None))
    result.shared[class_name] = shared
    if undetermined:
        result.undetermined[class_name] = undetermined
    cores = {slot: _core(owners.get(slot, [])) for slot in terms}
    # per slot and reached kernel: the term it adds to a condition (None: no term, or "always")
    conditional = {slot: [t if t is not None and t[1] != "always" else None for t in column]
                   for slot, column in terms.items() if cores[slot]}
    files = [item[3] for item in reached]
    varying = [bool(item[2] and item[2].get("varying")) for item in reached]
    for index in range(width):
        own_slots = [s for s in terms if index in cores[s]]
        partners = sorted({c for s in own_slots for combo in owners[s] for c in combo} - {index})
        by_name: Dict[str, List[int]] = {}  # one list per name, should two segments share one
        for partner in partners:
            by_name.setdefault(names[partner], []).append(partner)
        by_token: Dict[str, Dict[Tuple[_Term, ...], ConditionGroup]] = {}
        for token, conditions in _rows_by_condition(
                columns[index], [conditional[s] for s in own_slots],
                index in rows.varying or bool(own_slots)).items():
            groups = by_token[token] = {}
            for condition, members in conditions.items():
                groups[condition] = ConditionGroup(
                    cpp=[c for c, _ in condition], words=[w for _, w in condition],
                    where={name: list(dict.fromkeys(columns[p][r] for r in members for p in ps))
                           for name, ps in by_name.items()},
                    kernels=len(members), varying=any(varying[r] for r in members),
                    files=[files[r] for r in members])
        for tokens, _, info, filename in items:
            if info is None:
                groups = by_token.setdefault(tokens[index], {})
                group = groups.get(_UNREACHED)
                if group is None:
                    group = groups[_UNREACHED] = ConditionGroup(unreached=True)
                group.kernels += 1
                group.files.append(filename)
        result.groups[(class_name, index)] = {
            token: sorted(groups.values(), key=lambda g: (g.unreached, -g.kernels))
            for token, groups in by_token.items()}


def _rows_by_condition(tokens: List[str], conditional: List[List[Optional[_Term]]],
                       splits: bool) -> Dict[str, Dict[Tuple[_Term, ...], List[int]]]:
    """token -> condition (its terms) -> the rows with both, each in the order of its
    first row; ``conditional``: per own slot, each row's term or None; ``splits``:
    False when every row has the same token and no own slot."""
    if not splits:
        return {tokens[0]: {(): list(range(len(tokens)))}} if tokens else {}
    rows_of: Dict[Tuple[str, Tuple[Optional[_Term], ...]], List[int]] = {}
    keys = zip(tokens, zip(*conditional)) if conditional else ((t, ()) for t in tokens)
    for row, key in enumerate(keys):
        found = rows_of.get(key)
        if found is None:
            rows_of[key] = [row]
        else:
            found.append(row)
    out: Dict[str, Dict[Tuple[_Term, ...], List[int]]] = {}
    for (token, terms), members in rows_of.items():
        condition = tuple(t for t in terms if t is not None)
        groups = out.setdefault(token, {})
        # Terms of different slots may spell one condition: then one group, rows in order.
        groups[condition] = sorted(groups[condition] + members) if condition in groups else members
    return out
