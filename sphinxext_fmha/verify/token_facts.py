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

from ..analysis.analyze import grammars_of, parse_filename
from ..model import ApiModel, ConditionGroup, TokenCounts, TokenDispatch

__all__ = ["TokenCounts", "token_counts", "ConditionGroup", "TokenDispatch", "token_dispatch"]



def token_counts(model: ApiModel, files: Sequence[str]) -> TokenCounts:
    """(kernel class, segment index) -> token -> number of listed kernels with it."""
    grammars = grammars_of(model)
    counts: Dict[Tuple[str, int], Counter] = {}
    for filename in files:
        found = parse_filename(model, grammars, filename)
        if len(found) != 1:
            continue
        kernel_type, tokens = found[0]
        for index, token in enumerate(tokens):
            counts.setdefault((kernel_type.class_name, index), Counter())[token] += 1
    return {key: dict(value) for key, value in counts.items()}




_ARCH = "arch suffix"
_UNREACHED = (("unreached", ""),)

#: (tokens, arch suffix, the kernel's reading or None when unreached, file name)
_Item = Tuple[List[str], str, Optional[Mapping[str, Any]], str]


def _determines(keys: List[Tuple[str, ...]], values: Sequence[object]) -> bool:
    """Whether rows with equal ``keys`` have equal ``values``: then each key has one value,
    so there are as many distinct keys as distinct (key, value) pairs."""
    return len(set(keys)) == len(set(zip(keys, values)))


class _Rows:
    """The columns of a kernel class, for :func:`_determining`.

    Most sets of columns do not determine a slot's values, and a few rows usually show
    it: each test looks at the first 64 rows, then 4 times as many, and so on.
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
        self.prefixes = [[column[:size] for column in columns] for size in self.sizes]

    def determines(self, combo: Tuple[int, ...], codes: Sequence[Sequence[int]]) -> bool:
        """``codes``: the value codes cut to each of :attr:`sizes`."""
        return all(_determines(list(zip(*(prefix[c] for c in combo))), cut)
                   for prefix, cut in zip(self.prefixes, codes))


def _determining(rows: _Rows, codes: Sequence[int], limit: int = 3) -> List[Tuple[int, ...]]:
    """The smallest sets of columns whose values determine the value ``codes`` (all of
    that size)."""
    cuts = [codes[:size] for size in rows.sizes]
    for size in range(1, limit + 1):
        found = [combo for combo in combinations(range(len(rows.columns)), size)
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
        if not _determines(keys, values):
            found.append((index,))
    return found


def _owners(rows: _Rows, values: List[Optional[str]],
            known: Dict[Tuple[int, ...], List[Tuple[int, ...]]]) -> List[Tuple[int, ...]]:
    """:func:`_determining`, else :func:`_sensitive`; both see only which rows have equal
    values (value codes, numbered in order), so slots that split the rows alike share
    one answer (``known``)."""
    codes: Dict[Optional[str], int] = {}
    pattern = tuple(codes.setdefault(value, len(codes)) for value in values)
    if pattern not in known:
        known[pattern] = _determining(rows, pattern) or _sensitive(rows.columns, pattern)
    return known[pattern]


def token_dispatch(model: ApiModel, files: Sequence[str],
                   reading: Mapping[str, Any]) -> TokenDispatch:
    """Per token, its exact dispatch conditions grouped (see the module docstring)."""
    grammars = grammars_of(model)
    kernels = reading.get("kernels", {})
    per_class: Dict[str, List[_Item]] = {}
    for filename in files:
        found = parse_filename(model, grammars, filename)
        if len(found) != 1:
            continue
        kernel_type, tokens = found[0]
        suffix = filename[len("".join(tokens)):]
        per_class.setdefault(kernel_type.class_name, []).append(
            (list(tokens), suffix, kernels.get(filename), filename))
    result = TokenDispatch()
    position = {name: index for index, name in enumerate(reading.get("order", []))}
    for kernel_type in model.kernel_types:
        items = per_class.get(kernel_type.class_name)
        if items:
            labels = [s.label for s in kernel_type.segments]
            _class_groups(kernel_type.class_name, labels, items, result)
            _try_orders(kernel_type.class_name, labels, items, position, result)
    return result


def _try_orders(class_name: str, labels: List[str], items: List[_Item],
                position: Mapping[str, int], result: TokenDispatch) -> None:
    """Per segment: in which order the dispatcher tries its tokens among kernels that are
    equal in every other segment (and arch suffix)."""
    for index, label in enumerate(labels):
        chains: Dict[Tuple[str, ...], List[Tuple[int, str]]] = {}
        for tokens, suffix, _, filename in items:
            if filename in position:
                key = (suffix,) + tuple(tokens[:index]) + tuple(tokens[index + 1:])
                chains.setdefault(key, []).append((position[filename], tokens[index]))
        counts: Counter = Counter(tuple(token for _, token in sorted(chain))
                                  for chain in chains.values() if len(chain) > 1)
        if counts:
            result.orders[(class_name, label)] = dict(counts.most_common())


def _class_groups(class_name: str, labels: List[str],
                  items: List[_Item],
                  result: TokenDispatch) -> None:
    reached = [item for item in items if item[2] is not None]
    width = len(labels)
    columns = [[item[0][i] for item in reached] for i in range(width)]
    columns.append([item[1] for item in reached])
    names = labels + [_ARCH]
    slot_terms: List[Dict[str, Tuple[str, str]]] = [
        {slot: (cpp, words) for slot, cpp, words in (item[2] or {})["terms"]} for item in reached]
    ordered: Dict[str, None] = {}  # an ordered set
    for terms in slot_terms:
        ordered.update(dict.fromkeys(terms))
    slots = list(ordered)
    known: Dict[Tuple[int, ...], List[Tuple[int, ...]]] = {}
    rows = _Rows(columns)
    owners: Dict[str, List[Tuple[int, ...]]] = {}
    shared: List[Tuple[str, str]] = []
    undetermined: List[str] = []
    for slot in slots:
        values = [terms[slot][0] if slot in terms else None for terms in slot_terms]
        if len(set(values)) == 1:
            cpp_words = slot_terms[0].get(slot)
            if cpp_words and cpp_words[1] != "always":
                shared.append(cpp_words)
            continue
        found = _owners(rows, values, known)
        if found:
            owners[slot] = found
        else:
            undetermined.append(next(v for v in values if v is not None))
    result.shared[class_name] = shared
    if undetermined:
        result.undetermined[class_name] = undetermined
    cores = {slot: _core(owners.get(slot, [])) for slot in slots}
    for index in range(width):
        own_slots = [s for s in slots if index in cores[s]]
        partners = sorted({c for s in own_slots for combo in owners[s] for c in combo} - {index})
        by_token: Dict[str, Dict[Tuple[Tuple[str, str], ...], ConditionGroup]] = {}
        for row, (tokens, _, info, filename) in enumerate(reached):
            terms = slot_terms[row]
            condition = tuple(terms[s] for s in own_slots if s in terms and terms[s][1] != "always")
            groups = by_token.setdefault(tokens[index], {})
            group = groups.get(condition)
            if group is None:  # (not a setdefault default: one group per condition, not per row)
                group = groups[condition] = ConditionGroup(cpp=[c for c, _ in condition],
                                                           words=[w for _, w in condition])
            group.kernels += 1
            group.files.append(filename)
            group.varying = group.varying or bool(info and info.get("varying"))
            for partner in partners:
                partner_values = group.where.setdefault(names[partner], [])
                if columns[partner][row] not in partner_values:
                    partner_values.append(columns[partner][row])
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
