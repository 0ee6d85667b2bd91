"""Example workloads chosen from the tree itself (no CK version, dtype or head dim named
here): ``common``, ``receipt`` or ``pairs`` (:class:`~sphinxext_fmha.model.Workload`),
counted in the main sub-type's listing over its two problem segments with most values."""

from __future__ import annotations

from collections import Counter
from typing import Dict, List, Sequence, Set, Tuple

from ..model import NO_TOKEN, ApiModel, KernelType, Need, Receipt, Segment, Workload, natural
from .parsed_listing import ParsedListing
from .policy import classify


def example_workloads(model: ApiModel, parsed: ParsedListing) -> List[Workload]:
    """At most two (each costs cold runs; a repeat left out, ties to token order):
    ``common``, then the values of the first receipt that names some, else ``pairs``."""
    if not model.kernel_types:
        return []
    main = max(model.kernel_types, key=lambda k: (k.count, k.class_name))
    rows = [tokens for class_name, tokens in parsed.parsed.values()
            if class_name == main.class_name]
    tile_fields = {f.name for tile in model.tiles for f in tile.fields}
    problem = [i for i, s in enumerate(main.segments) if not s.literal and not s.constant
               and classify(s, tile_fields, model.api) == "problem"]
    problem.sort(key=lambda i: (-len({r[i] for r in rows}), i))
    found: List[Workload] = []
    receipt = next((Workload("receipt", needs, main.class_name, receipt=r.value, label=r.label)
                    for r in model.receipts for needs in [_receipt_needs(r, main)] if needs), None)
    if len(problem) >= 2 and rows:
        first, second = sorted(problem[:2])
        pairs = Counter((r[first], r[second]) for r in rows)
        ones, twos = (sorted(main.segments[i].tokens, key=natural) for i in (first, second))
        order = {pair: n for n, pair in enumerate((a, b) for a in ones for b in twos)}
        (a, b), count = max(pairs.items(), key=lambda kv: (kv[1], -order[kv[0]]))
        found.append(Workload("common", [_need(main, first, [a]), _need(main, second, [b])],
                              main.class_name, count,
                              ties=sum(1 for n in pairs.values() if n == count)))
        needs = []
        for index in (first, second):
            values = Counter(r[index] for r in rows)
            if len(values) > 2:
                top = sorted(values, key=lambda t: (-values[t], natural(t)))[:2]
                needs.append(_need(main, index, top))
        if needs and receipt is None:
            kept = [r for r in rows if all(r[_index(main, n.segment)] in n.tokens for n in needs)]
            found.append(Workload("pairs", needs, main.class_name, len(kept)))
    if receipt is not None:
        found.append(receipt)
    unique: Dict[Tuple, Workload] = {}
    for workload in found:
        unique.setdefault(_key(workload), workload)
    return list(unique.values())


def _need(main: KernelType, index: int, tokens: Sequence[str]) -> Need:
    segment = main.segments[index]
    ordered = sorted(tokens, key=natural)
    return Need(segment=segment.label, tokens=ordered,
                given=[_given(segment, t) for t in ordered], kernel_types=[main.class_name])


def _given(segment: Segment, token: str) -> str:
    """How a reader writes the value (:func:`~.needs.resolve_needs` reads it back): the
    field's value where only this token has it and spells it or is empty (``128``,
    ``no`` for a bias written as no token), else the token without its ``_``."""
    values = {v for combo in segment.values.get(token, []) for v in combo.values()}
    owners = [t for t, combos in segment.values.items()
              if any(v in combo.values() for combo in combos for v in values)]
    if len(values) == 1 and owners == [token] and (not token or next(iter(values)) in token):
        return next(iter(values))
    return token.lstrip("_") or NO_TOKEN


def _index(main: KernelType, label: str) -> int:
    return next(i for i, s in enumerate(main.segments) if s.label == label)


def _key(workload: Workload) -> Tuple:
    return tuple(sorted((n.segment, tuple(n.tokens)) for n in workload.needs))


def _receipt_needs(receipt: Receipt, main: KernelType) -> List[Need]:
    """The needs a receipt's rule makes (one per segment its terms test), or none when a
    term tests no field of a segment or keeps none of its tokens."""
    if not receipt.terms:
        return []
    wanted: Dict[int, Set[str]] = {}
    for term in receipt.terms:
        path, values = term[1], set(term[2:])
        index = next((i for i, s in enumerate(main.segments) if path in s.fields), None)
        if index is None:
            return []
        segment = main.segments[index]
        tokens = {t for t, combos in segment.values.items()
                  if any(combo.get(path) in values for combo in combos)}
        wanted[index] = wanted.get(index, tokens) & tokens
        if not wanted[index]:
            return []
    return [_need(main, index, sorted(tokens)) for index, tokens in sorted(wanted.items())
            if tokens != set(main.segments[index].tokens)]
