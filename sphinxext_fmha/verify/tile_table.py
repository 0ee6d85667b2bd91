"""The tiles each sub-type really has, per problem, from the parsed listing; the
source's factory tables only add where an entry is used, and disagreements."""

from __future__ import annotations

import functools
import re
from collections import Counter, defaultdict
from typing import AbstractSet, Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ..analysis.grammar import short_name
from ..model import ApiModel, Factory, KernelType, Segment, TileRow, TileSource, TileTable, TileUse, natural
from .filtercheck import ParsedListing
from .policy import classify

_QUALIFIERS = re.compile(r"\[(.*)\]\s*$")
_LEADING_NUMBER = re.compile(r"^\(?\s*(\d+)")


def _plain(name: str) -> str:
    """A field or parameter name without prefix and separators: ``F_trload`` and
    ``tr_load`` are both ``trload``."""
    return short_name(name).lower().replace("_", "")


def _value(segment: Segment, token: str) -> str:
    """The field value that writes ``token`` (the token itself when it is not known)."""
    combos = segment.values.get(token) or []
    if combos and len(segment.fields) == 1:
        value = combos[0].get(segment.fields[0])
        if value is not None:
            return str(value)
    return token.lstrip("_")


def _static_qualifiers(factories: Sequence[Factory]) -> Set[str]:
    """Names of the other parameters the source's tile tables are keyed by (``[tr_load=t]``)."""
    return {_plain(part.split("=")[0]) for factory in factories
            for per_hdim in factory.tiles.values() for found in map(_QUALIFIERS.search, per_hdim)
            if found for part in found.group(1).split(",")}


class _Layout:
    """Which segments of one sub-type are its tile, its problem and its extra keys."""

    def __init__(self, kernel_type: KernelType, tile_fields: AbstractSet[str],
                 qualifiers: AbstractSet[str]):
        segments = kernel_type.segments
        categories = ["" if s.literal else classify(s, tile_fields) for s in segments]
        tiles = [i for i, c in enumerate(categories) if c == "tile"]
        #: the kernel field holding the tile object, when the tile fields are one's
        heads = {f.split(".")[0] for i in tiles for f in segments[i].fields}
        self.tile_part = heads.pop() if len(heads) == 1 and all(
            "." in f for i in tiles for f in segments[i].fields) else ""
        # the tile's text: its segments and the literal text between them, not a segment
        # of another kind (2.8.3 bwd convert_dq's ``_b64x128_batch_o2``: tile ``b64x128_o2``)
        self.tile_span = [i for i in range(tiles[0], tiles[-1] + 1)
                          if i in tiles or segments[i].literal] if tiles else []
        self.tile_labels = [segments[i].label for i in tiles]

        def named(word: str) -> List[int]:
            return [i for i, c in enumerate(categories) if c == "problem"
                    and any(word in short_name(f).lower() for f in segments[i].fields)]

        self.dtype, self.hdim = named("dtype"), named("hdim")
        used = set(self.dtype) | set(self.hdim) | set(tiles)
        #: other problem segments (mode): a tile used with some of their values only says so
        self.others = [i for i, c in enumerate(categories) if c == "problem" and i not in used]
        #: segments the source's tables are keyed by (``tr_load``): key columns
        self.qualified = [i for i, s in enumerate(segments) if i not in used
                          and i not in self.others and not s.literal
                          and any(_plain(f) in qualifiers for f in s.fields)]


def _arch(file: str, tokens: Sequence[str]) -> str:
    return file.removesuffix(".cpp")[len("".join(tokens)):].lstrip("_")


def _table(model: ApiModel, kernel_type: KernelType, layout: _Layout,
           kernels: Sequence[Tuple[str, Sequence[str]]], kept: Optional[AbstractSet[str]],
           names: Mapping[str, str]) -> TileTable:
    segments = kernel_type.segments
    has_arch = any(s for s in kernel_type.arch_suffixes)
    columns = (["arch"] if has_arch else []) + ["dtype", "hdim"] + [
        segments[i].label for i in layout.qualified]
    counts: Dict[Tuple[str, ...], Counter] = defaultdict(Counter)
    kept_counts: Dict[Tuple[str, ...], Counter] = defaultdict(Counter)
    #: (row key, tile) -> per other problem segment, the values the tile is used with
    used_with: Dict[Tuple[Tuple[str, ...], str], List[Set[str]]] = defaultdict(
        lambda: [set() for _ in layout.others])

    @functools.cache  # once per token
    def value(i: int, token: str) -> str:
        return _value(segments[i], token)

    for file, tokens in kernels:
        key = ((_arch(file, tokens),) if has_arch else ()) + tuple(
            ",".join(value(i, tokens[i]) for i in group)
            for group in (layout.dtype, layout.hdim)) + tuple(
            value(i, tokens[i]) for i in layout.qualified)
        tile = names.get(file) or "".join(tokens[i] for i in layout.tile_span).lstrip("_")
        counts[key][tile] += 1
        for values, i in zip(used_with[(key, tile)], layout.others):
            values.add(value(i, tokens[i]))
        if kept is not None and file in kept:
            kept_counts[key][tile] += 1
    order = _orders(kernel_type, layout, has_arch)
    table = TileTable(kernel_type=kernel_type.class_name, columns=columns,
                      tile_segments=layout.tile_labels, kernels=len(kernels))
    for key in sorted(counts, key=lambda k: tuple(o(v) for o, v in zip(order, k))):
        uses = [TileUse(tile=t, kernels=n, kept=kept_counts[key][t] if kept is not None else None)
                for t, n in sorted(counts[key].items(), key=lambda item: natural(item[0]))]
        for position, i in enumerate(layout.others):
            row_values = set().union(*(used_with[(key, u.tile)][position] for u in uses))
            for use in uses:
                values = used_with[(key, use.tile)][position]
                if values != row_values:
                    use.only[segments[i].label] = sorted(values, key=natural)
        table.rows.append(TileRow(keys=dict(zip(columns, key)), tiles=uses))
    _compare_with_source(model.factories, table, has_arch)
    return table


def _orders(kernel_type: KernelType, layout: _Layout, has_arch: bool):
    """Sort keys per column: arch suffixes and data types in listing order, numbers naturally."""
    segments = kernel_type.segments
    arches = [s.lstrip("_") for s in kernel_type.arch_suffixes]

    def listing_order(positions: Sequence[int]):
        seen = [",".join(_value(segments[i], t) for i in positions)
                for t in (segments[positions[0]].tokens if positions else [])]

        def key(value: str):
            return (seen.index(value) if value in seen else len(seen), natural(value))
        return key

    orders: List[Callable[[str], Any]] = []
    if has_arch:
        orders.append(lambda v: (arches.index(v) if v in arches else len(arches), v))
    orders += [listing_order(layout.dtype), natural]
    orders += [listing_order([i]) for i in layout.qualified]
    return orders


def _static_entries(factory: Factory) -> Set[Tuple[str, str, str]]:
    """(data type, head dim, tile) of a factory's table; the head dim is the key's
    leading number (``128``, ``(128, 128)``, ``128 [tr_load=t]``)."""
    return {(dtype, found.group(1) if found else key, tile)
            for dtype, per_hdim in factory.tiles.items() for key, tiles in per_hdim.items()
            for found in [_LEADING_NUMBER.match(key)] for tile in tiles}


def _compare_with_source(factories: Sequence[Factory], table: TileTable, has_arch: bool) -> None:
    """Per arch, the factory whose table has most listed tiles marks the rows' tiles and
    its entries no kernel has (only the factories generate.py called, where known)."""
    if any(f.observed for f in factories):
        factories = [f for f in factories if f.observed]
    by_arch: Dict[str, List[TileRow]] = defaultdict(list)
    for row in table.rows:
        by_arch[row.keys.get("arch", "")].append(row)
    for arch, rows in by_arch.items():
        observed = {(r.keys["dtype"], r.keys["hdim"], u.tile) for r in rows for u in r.tiles}
        best: Optional[Tuple[Tuple[int, bool], Factory, Set[Tuple[str, str, str]]]] = None
        for factory in factories:
            if has_arch and factory.arch and factory.arch != arch:
                continue
            entries = _static_entries(factory)
            # most entries with kernels; of equals, the one that names this arch
            rank = (len(entries & observed), bool(arch) and factory.arch == arch)
            if rank[0] and (best is None or rank > best[0]):
                best = (rank, factory, entries)
        if best is None:
            continue
        (matched, _), factory, entries = best
        for row in rows:
            for use in row.tiles:
                use.in_source = (row.keys["dtype"], row.keys["hdim"], use.tile) in entries
                use.note = factory.tile_notes.get(use.tile, "")
        missing = sorted(entries - observed, key=lambda e: (e[0], natural(e[1]), natural(e[2])))
        table.sources.append(TileSource(
            factory=factory.class_name, arch=arch, defined_at=factory.defined_at,
            selected_by=factory.selected_by, matched=matched, listed=len(entries),
            not_generated=[{"dtype": d, "hdim": h, "tile": t} for d, h, t in missing],
            observed=factory.observed))


def _layouts(model: ApiModel) -> Dict[str, _Layout]:
    tile_fields = {f.name for tile in model.tiles for f in tile.fields}
    qualifiers = _static_qualifiers(model.factories)
    return {k.class_name: _Layout(k, tile_fields, qualifiers) for k in model.kernel_types}


def tile_names(model: ApiModel, records: Sequence[dict]) -> Dict[str, str]:
    """Kernel file -> its tile's own name, as the probe saw the tile object name itself
    (constant pieces included, which the file-name grammar leaves as literal text)."""
    layouts = _layouts(model)
    tile_classes = {t.class_name for t in model.tiles}
    out: Dict[str, str] = {}
    for record in records:
        layout = layouts.get(record.get("class", ""))
        parts = record.get("parts") or {}
        # the part the tile segments are fields of, else an object of a tile class (its
        # name may be constant text the grammar cannot tell from the kernel name)
        part = parts.get(layout.tile_part) if layout and layout.tile_part else None
        if part is None:
            part = next((p for p in parts.values() if p and p[0] in tile_classes), None)
        if part and isinstance(part[-1], str):
            out[record["filename"]] = part[-1]
    return out


def tile_tables(model: ApiModel, parsed: ParsedListing, kept: Optional[AbstractSet[str]] = None,
                names: Optional[Mapping[str, str]] = None) -> List[TileTable]:
    """One :class:`TileTable` per sub-type with tiles; ``kept``: the set's files."""
    layouts = _layouts(model)
    per_type = parsed.by_type()
    tables = []
    for kernel_type in model.kernel_types:
        layout = layouts[kernel_type.class_name]
        files = per_type.get(kernel_type.class_name)
        if not files or not (layout.tile_labels or any(f in (names or {}) for f, _ in files)):
            continue
        tables.append(_table(model, kernel_type, layout, files, kept, names or {}))
    return tables

