"""Per token: how many listed kernels carry it, and the exact dispatch conditions that
reach them, grouped. A condition term's *slot* belongs to the segments common to every
smallest set whose tokens determine its text."""

from __future__ import annotations

import re
from collections import Counter
from itertools import accumulate, combinations, compress, repeat
from operator import add, lt, mul, sub
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..model import ApiModel, ConditionGroup, TokenCounts, TokenDispatch
from ..schema.token_dispatch import Condition
from .parsed_listing import ParsedListing


def _rows_per_class(model: ApiModel, files: Sequence[str], parsed: Optional[ParsedListing]
                    ) -> Dict[str, List[Tuple[str, List[str]]]]:
    """kernel class -> (file, tokens) of each parsed file, in listing order."""
    listing = parsed if parsed is not None and parsed.files == list(files) \
        else ParsedListing.of(model, files)
    return listing.by_type()


def token_counts(model: ApiModel, files: Sequence[str],
                 parsed: Optional[ParsedListing] = None) -> TokenCounts:
    """(kernel class, segment index) -> token -> number of listed kernels with it."""
    counts: TokenCounts = {}
    for class_name, rows in _rows_per_class(model, files, parsed).items():
        # every parse of a class has one token per segment: count column by column
        for index, column in enumerate(zip(*(tokens for _, tokens in rows))):
            counts[(class_name, index)] = dict(Counter(column))
    return counts


_ARCH = "arch suffix"
_UNREACHED = (("unreached", ""),)

#: (tokens, arch suffix, the kernel's reading or None when unreached, file name)
_Item = Tuple[List[str], str, Optional[Mapping[str, Any]], str]
#: a condition term: (C++ text, form)
_Term = Tuple[str, Condition]


class _Rows:
    """The columns of a kernel class, for :func:`_determining`: most column sets do not
    determine a slot and a few rows show it, so each test looks at 64 rows, then 4 times
    as many...; a set of columns is one mixed-radix integer per row (C speed)."""

    def __init__(self, columns: List[List[str]]) -> None:
        self.columns = columns
        rows = len(columns[0]) if columns else 0
        self.sizes: List[int] = []
        size = 64
        while size < rows:
            self.sizes.append(size)
            size *= 4
        self.sizes.append(rows)
        coded = [_codes(column) for column in columns]
        self.codes: List[List[int]] = [codes for codes, _ in coded]
        self.radix: List[int] = [radix for _, radix in coded]
        self.varying = [index for index, radix in enumerate(self.radix) if radix > 1]
        self._keys: Dict[Tuple[Tuple[int, ...], int], List[int]] = {}
        self._groups: Dict[Tuple[Tuple[int, ...], int], int] = {}

    def keys(self, combo: Sequence[int], size: Optional[int] = None) -> List[int]:
        """Per row (of the first ``size``), one integer for its values in the columns ``combo``."""
        combo = tuple(combo)
        size = self.sizes[-1] if size is None else size
        found = self._keys.get((combo, size))
        if found is None:
            codes = self.codes[combo[-1]]
            codes = codes[:size] if size < len(codes) else codes
            if len(combo) == 1:
                found = codes
            else:
                found = list(map(add, map(mul, self.keys(combo[:-1], size),
                                          repeat(self.radix[combo[-1]])), codes))
            self._keys[(combo, size)] = found
        return found

    def determines(self, combo: Tuple[int, ...], codes: Sequence[Sequence[int]],
                   scale: int) -> bool:
        """Whether rows equal in ``combo`` have equal ``codes`` (cut to each size)."""
        for size, cut in zip(self.sizes, codes):
            keys = self.keys(combo, size)
            groups = self._groups.get((combo, size))
            if groups is None:
                groups = self._groups[(combo, size)] = len(set(keys))
            if len(set(map(add, map(mul, keys, repeat(scale)), cut))) != groups:
                return False
        return True


def _determining(rows: _Rows, codes: Sequence[int], limit: int = 3) -> List[Tuple[int, ...]]:
    """The smallest sets of columns whose values determine the value ``codes``."""
    cuts = [codes[:size] for size in rows.sizes]
    scale = max(codes, default=0) + 1
    columns = rows.varying if len(set(codes)) > 1 else range(len(rows.columns))
    for size in range(1, limit + 1):
        found = [combo for combo in combinations(columns, size)
                 if rows.determines(combo, cuts, scale)]
        if found:
            return found
    return []


def _sensitive(rows: _Rows, values: Sequence[int]) -> List[Tuple[int, ...]]:
    """Fallback: each column alone whose change, all else equal, changes ``values``."""
    found: List[Tuple[int, ...]] = []
    every = rows.keys(range(len(rows.columns))) if rows.columns else [0] * len(values)
    scale = len(values) + 1
    for index, weight in enumerate(_weights(rows.radix)):
        # the row's key with this column's digit set to zero: its values in the others
        keys = list(map(sub, every, map(mul, rows.codes[index], repeat(weight))))
        if len(set(keys)) != len(set(map(add, map(mul, keys, repeat(scale)), values))):
            found.append((index,))
    return found


def _owners(rows: _Rows, values: List[Optional[str]],
            known: Dict[Tuple[int, ...], List[Tuple[int, ...]]]) -> List[Tuple[int, ...]]:
    """:func:`_determining`, else :func:`_sensitive`; slots that split the rows alike
    share one answer (``known``)."""
    # (reversed: the first row of each value is the one kept)
    first = dict(zip(reversed(values), range(len(values) - 1, -1, -1)))
    pattern = tuple(map(first.__getitem__, values))
    if pattern not in known:
        known[pattern] = _determining(rows, pattern) or _sensitive(rows, pattern)
    return known[pattern]


def token_dispatch(model: ApiModel, files: Sequence[str], reading: Mapping[str, Any],
                   parsed: Optional[ParsedListing] = None) -> TokenDispatch:
    """Per token, its exact dispatch conditions grouped (see the module docstring)."""
    kernels = reading.get("kernels", {})
    per_class: Dict[str, List[_Item]] = {}
    for class_name, rows in _rows_per_class(model, files, parsed).items():
        per_class[class_name] = [(tokens, filename[len("".join(tokens)):],
                                  kernels.get(filename), filename) for filename, tokens in rows]
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
    return [list(column) for column in zip(*rows)] if rows else [[] for _ in range(width)]


def _try_orders(class_name: str, labels: List[str], items: List[_Item],
                position: Mapping[str, int], result: TokenDispatch) -> None:
    """Per segment: the order the dispatcher tries its tokens among otherwise equal kernels."""
    placed = [item for item in items if item[3] in position]
    if not placed:
        return
    columns = _columns([item[0] for item in placed], len(labels))
    columns.append([item[1] for item in placed])
    rows = _Rows(columns)
    # Columns with one value do not tell kernels apart: the kernels equal in every
    # other column are those equal in the other varying ones.
    varying = rows.varying
    keys = rows.keys(varying) if varying else [0] * len(placed)
    alone = len(set(keys)) == len(keys)  # no two kernels equal in every column
    weights = dict(zip(varying, _weights([rows.radix[i] for i in varying])))
    places = [position[item[3]] for item in placed]
    tried = sorted(range(len(placed)), key=places.__getitem__)
    for index, label in enumerate(labels):
        if index not in weights and alone:
            continue  # every kernel is alone among those equal in the other columns
        # each kernel's key with this column's digit set to zero: its other columns
        others = keys if index not in weights else list(
            map(sub, keys, map(mul, rows.codes[index], repeat(weights[index]))))
        counts = _chain_tokens(others, tried, columns[index])
        if counts:
            result.orders[(class_name, label)] = dict(counts.most_common())


def _chain_tokens(keys: List[int], tried: List[int], tokens: List[str]) -> Counter:
    """How many chains (2+ rows of one key) try their tokens in each order (``tried``:
    rows in dispatch order), counted in the order of their first row."""
    sizes = Counter(keys)
    if len(sizes) == len(keys):
        return Counter()
    in_chain = list(map(lt, repeat(1), map(sizes.__getitem__, keys)))
    # rows of each chain together (by key), each chain's in the order tried (stable sort)
    rows = sorted(compress(tried, map(in_chain.__getitem__, tried)), key=keys.__getitem__)
    ordered = list(map(tokens.__getitem__, rows))
    chained = sorted(set(compress(keys, in_chain)))
    ends = list(accumulate(map(sizes.__getitem__, chained)))
    texts = dict(zip(chained, map(tuple, map(ordered.__getitem__, map(slice, [0] + ends, ends)))))
    return Counter(filter(None, map(texts.get, dict.fromkeys(keys))))


def _slot_columns(readings: Sequence[Mapping[str, Any]]) -> Dict[str, List[Optional[_Term]]]:
    """slot -> per reached kernel, its term in that slot (None: none)."""
    slots: Dict[str, List[Optional[_Term]]] = {}
    for row, reading in enumerate(readings):
        for slot, cpp, words in reading["terms"]:
            column = slots.get(slot)
            if column is None:
                column = slots[slot] = [None] * len(readings)
            column[row] = (cpp, words)
    return slots


_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\s*(?:\.|->|::)\s*[A-Za-z_]\w*)*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_CONSTANTS = frozenset(("true", "false", "nullptr"))


def _same_slots(slots: Mapping[str, List[Optional[_Term]]]) -> Dict[str, str]:
    """slot -> the slot of another dispatch function it is one with: newer CK writes one
    ``if`` template into several functions (``fmha_fwd_v2``, ``_v3``); the function with
    most kernels at a place owns the terms there testing a subset of its names."""
    places: Dict[str, Dict[str, List[Optional[_Term]]]] = {}  # depth/index -> function -> column
    for slot, column in slots.items():
        parts = slot.rsplit("/", 2)
        if len(parts) == 3 and parts[1].isdigit():
            places.setdefault("/".join(parts[1:]), {})[parts[0]] = column
    into: Dict[str, str] = {}
    for place, columns in places.items():
        if len(columns) < 2:
            continue
        main = max(columns, key=lambda f: sum(t is not None for t in columns[f]))
        names = _names(columns[main])
        for function, column in columns.items():
            if function != main and _names(column) <= names:
                into["%s/%s" % (function, place)] = "%s/%s" % (main, place)
    return into


def _names(column: Sequence[Optional[_Term]]) -> set:
    """The names (``t.hdim_q``, ``a.seqlen_k``) the terms of a column test."""
    return {"".join(name.split()) for cpp in dict.fromkeys(t[0] for t in column if t)
            for name in _NAME.findall(_STRING.sub('""', cpp)) if name not in _CONSTANTS}


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
    shared: List[_Term] = []
    undetermined: List[str] = []
    into = _same_slots(terms)
    for slot in [s for s in terms if s not in into] + list(into):
        column = terms[slot]
        values = [term[0] if term is not None else None for term in column]
        if len(set(values)) == 1:
            if column[0] and column[0][1] is not True:
                shared.append(column[0])
            continue
        found = owners.get(into.get(slot, "")) or _owners(rows, values, known)
        if found:
            owners[slot] = found
        else:
            undetermined.append(next(v for v in values if v is not None))
    result.shared[class_name] = shared
    if undetermined:
        result.undetermined[class_name] = undetermined
    # a slot's segments: those in every smallest determining set (pad in {pad, hdim} and
    # {pad, tile}); when they share none ({hdim} or {tile}), all of them
    cores = {slot: set().union(*owners.get(slot, ())).intersection(*owners.get(slot, ()))
             or set().union(*owners.get(slot, ())) for slot in terms}
    # per slot and reached kernel: the term it adds to a condition (None: no term, or always)
    conditional = {slot: [t if t is not None and t[1] is not True else None for t in column]
                   for slot, column in terms.items() if cores[slot]}
    files = [item[3] for item in reached]
    varying = [bool(item[2] and item[2].get("varying")) for item in reached]
    more = [item[2].get("more") or () if item[2] else () for item in reached]
    coded: Dict[str, Tuple[List[int], int]] = {}
    for index in range(width):
        own_slots = [s for s in terms if index in cores[s]]
        partners = sorted({c for s in own_slots for combo in owners[s] for c in combo} - {index})
        by_name: Dict[str, List[int]] = {}  # one list per name, should two segments share one
        for partner in partners:
            by_name.setdefault(names[partner], []).append(partner)
        by_token: Dict[str, Dict[Tuple[_Term, ...], ConditionGroup]] = {}
        for slot in own_slots:
            if slot not in coded:  # a slot's terms numbered once, for every segment it is of
                coded[slot] = _codes(conditional[slot])
        for token, conditions in _rows_by_condition(
                columns[index], [conditional[s] for s in own_slots],
                index in rows.varying or bool(own_slots),
                [(rows.codes[index], rows.radix[index])] + [coded[s] for s in own_slots]).items():
            groups = by_token[token] = {}
            for condition, members in conditions.items():
                groups[condition] = ConditionGroup(
                    cpp=[c for c, _ in condition], forms=[w for _, w in condition],
                    where={name: _tokens_of(columns, ps, members) for name, ps in by_name.items()},
                    kernels=len(members), varying=any(map(varying.__getitem__, members)),
                    files=list(map(files.__getitem__, members)),
                    more=list(dict.fromkeys(n for m in members for n in more[m])))
        for tokens, _, info, filename in items:
            if info is None:
                group = by_token.setdefault(tokens[index], {}).setdefault(
                    _UNREACHED, ConditionGroup(unreached=True))
                group.kernels += 1
                group.files.append(filename)
        result.groups[(class_name, index)] = {
            token: sorted(groups.values(), key=lambda g: (g.unreached, -g.kernels))
            for token, groups in by_token.items()}


def _tokens_of(columns: List[List[str]], partners: List[int], members: List[int]) -> List[str]:
    if len(partners) == 1:
        return list(dict.fromkeys(map(columns[partners[0]].__getitem__, members)))
    return list(dict.fromkeys(columns[p][r] for r in members for p in partners))


def _rows_by_condition(tokens: List[str], conditional: List[List[Optional[_Term]]],
                       splits: bool, coded: Optional[List[Tuple[List[int], int]]] = None
                       ) -> Dict[str, Dict[Tuple[_Term, ...], List[int]]]:
    """token -> condition (its terms) -> its rows; ``conditional``: per own slot, each
    row's term or None; ``coded``: the :func:`_codes` of ``tokens`` and columns."""
    if not splits:
        return {tokens[0]: {(): list(range(len(tokens)))}} if tokens else {}
    # One integer per row for its token and terms (as digits), and the rows of each
    # integer, ascending, at C speed: a stable sort of the rows by it.
    if coded is None:
        coded = [_codes(tokens)] + [_codes(column) for column in conditional]
    keys = coded[0][0]
    for codes, radix in coded[1:]:
        keys = list(map(add, map(mul, keys, repeat(radix)), codes))
    sizes = Counter(keys)
    distinct = sorted(sizes)
    ends = list(accumulate(map(sizes.__getitem__, distinct)))
    by_key = sorted(range(len(keys)), key=keys.__getitem__)
    rows_of = dict(zip(distinct, map(by_key.__getitem__, map(slice, [0] + ends, ends))))
    out: Dict[str, Dict[Tuple[_Term, ...], List[int]]] = {}
    for key in dict.fromkeys(keys):  # in the order of each one's first row
        members = rows_of[key]
        row = members[0]
        condition = tuple(t for t in (column[row] for column in conditional) if t is not None)
        groups = out.setdefault(tokens[row], {})
        # Terms of different slots may spell one condition: then one group, rows in order.
        groups[condition] = sorted(groups[condition] + members) if condition in groups else members
    return out


def _weights(radix: Sequence[int]) -> List[int]:
    """Each digit's weight in a mixed-radix number of these radices (the last one's: 1)."""
    return list(accumulate(reversed(radix[1:]), mul, initial=1))[::-1] if radix else []


def _codes(column: Sequence[Any]) -> Tuple[List[int], int]:
    """Each value's number (in the order values first occur), and how many there are."""
    number = {value: code for code, value in enumerate(dict.fromkeys(column))}
    return list(map(number.__getitem__, column)), len(number)
