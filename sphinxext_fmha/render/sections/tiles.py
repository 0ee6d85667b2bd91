"""The tiles section: each sub-type's tiles per problem, from the listing; the factories'
tables (as generate.py's run got them, else read from the source) add where and when
they are used, and every entry where they disagree with the listing."""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Sequence, Tuple

from ...guide_data import GuideData
from ...model import Factory, TileRow, TileSource, TileTable, TileUse
from ..ir import (
    Block,
    BulletList,
    Code,
    CodeBlock,
    Dropdown,
    Emph,
    Inlines,
    Para,
    Strong,
    SubHeading,
    Table,
    codes,
    join,
)
from .cells import FOLD_ITEMS, fold, natural, plural

#: The mark of a tile the source's table does not list for its row.
NOT_IN_SOURCE = "not in the source's table"
#: The mark of a tile its factory's table, as generate.py's run got it, does not list.
NOT_IN_TABLE = "not in its factory's table"


def _merged_rows(table: TileTable) -> List[Tuple[Dict[str, str], List[TileUse]]]:
    """Rows that differ only in their data type and have the same tiles are said once
    (``fp16, bf16``)."""
    merged: Dict[Tuple, Tuple[Dict[str, str], List[TileUse]]] = {}
    for row in table.rows:
        key = (tuple((c, v) for c, v in row.keys.items() if c != "dtype"),
               tuple((u.tile, u.kernels, u.kept, u.in_source, u.note, repr(u.only)) for u in row.tiles))
        if key in merged:
            keys = merged[key][0]
            keys["dtype"] = keys["dtype"] + ", " + row.keys.get("dtype", "")
        else:
            merged[key] = (dict(row.keys), row.tiles)
    return list(merged.values())


def _tile_cell(uses: Sequence[TileUse], observed: bool) -> Inlines:
    items: List[Inlines] = []
    for use in uses:
        counts = plural(use.kernels, "kernel")
        if use.kept is not None:
            counts += ", %d kept" % use.kept
        item: Inlines = [Code(use.tile), " (%s" % counts]
        for values in use.only.values():
            item += [", ", *codes(values), " only"]
        item.append(")")
        if use.note:
            item += [" when ", Code(use.note)]
        if use.in_source is False:
            item += [" ", Emph(NOT_IN_TABLE if observed else NOT_IN_SOURCE)]
        items.append(item)
    return join(items, "; ")


def _key_cell(column: str, value: str) -> Inlines:
    return codes(value.split(", ")) if column == "dtype" else [Code(value)]


def _source_line(source: TileSource) -> Inlines:
    line: Inlines = []
    if source.arch:
        line += [Code(source.arch), ": "]
    line += [Code(source.factory)]
    if source.defined_at:
        line += [" at ", Code(source.defined_at)]
    if source.selected_by and source.selected_by != "default":
        line += [", used when ", Code(source.selected_by)]
    line.append(": %d of its %s have kernels" % (source.matched, plural(source.listed, "entry", "entries")))
    return line


def _not_generated(source: TileSource, rows: Sequence[TileRow]) -> List[Inlines]:
    """The source's entries no kernel has, said per data type (a whole data type
    without kernels in one line)."""
    listed_dtypes = {r.keys.get("dtype") for r in rows if r.keys.get("arch", "") == source.arch}
    per_dtype: Dict[str, List[Dict[str, str]]] = defaultdict(list)
    for entry in source.not_generated:
        per_dtype[entry["dtype"]].append(entry)
    items: List[Inlines] = []
    where: Inlines = [" for ", Code(source.arch)] if source.arch else []
    for dtype, entries in per_dtype.items():
        if dtype not in listed_dtypes:
            hdims = sorted({e["hdim"] for e in entries}, key=natural)
            items.append([Code(dtype), ": the table has %s (head dims %s); generate.py listed no "
                          % (plural(len(entries), "tile"), ", ".join(hdims)), Code(dtype),
                          " kernel", *where])
            continue
        for entry in entries:
            items.append([Code(dtype), " ", Code("hdim %s" % entry["hdim"]), ": ", Code(entry["tile"]),
                          " is in the table; no listed kernel", *where, " has it"])
    return items


def _table_blocks(table: TileTable, observed: bool) -> List[Block]:
    blocks: List[Block] = []
    problems = "by " + ", ".join(table.columns)
    distinct = {u.tile for r in table.rows for u in r.tiles}
    uses = [u for r in table.rows for u in r.tiles]
    if len(distinct) == 1 and not any(u.in_source is False or u.only or u.note for u in uses):
        # one tile for everything: a sentence says it all
        kept = sum(u.kept or 0 for u in uses)
        blocks.append(Para(["Every listed kernel (%d, over %s %s) uses the tile "
                            % (table.kernels, plural(len(table.rows), "problem"), problems),
                            Code(uses[0].tile), *_segments_named(table),
                            "; the minimal set keeps %d." % kept
                            if any(u.kept is not None for u in uses) else "."]))
    else:
        blocks.extend(_grid(table, observed))
    blocks.extend(_comparison(table, observed))
    return blocks


def _segments_named(table: TileTable) -> Inlines:
    """`` (segments b, occupancy)``: what the tile text is made of (a tile of one
    segment such as ``o2`` reads as the value it is)."""
    if not table.tile_segments:
        return []
    return [" (%s " % ("segment" if len(table.tile_segments) == 1 else "segments"),
            *join([[Strong(label)] for label in table.tile_segments], ", "), ")"]


def _grid(table: TileTable, observed: bool) -> List[Block]:
    rows = [[_key_cell(c, keys.get(c, "")) for c in table.columns] + [_tile_cell(uses, observed)]
            for keys, uses in _merged_rows(table)]
    grid = Table(header=list(table.columns) + ["Tiles (kernels)"], rows=rows, classes=["fmha-tiles"],
                 counts_after=None)
    return fold([Code(table.kernel_type), ": %s" % plural(len(rows), "tile row")], [grid], len(rows))


def _comparison(table: TileTable, observed: bool) -> List[Block]:
    """What the factories' tables add (as generate.py's run got them, else as read from
    the source), and where they disagree with the listing."""
    blocks: List[Block] = []
    archs = {r.keys.get("arch", "") for r in table.rows}
    matched = {s.arch for s in table.sources}
    facts: List[Inlines] = [_source_line(s) for s in table.sources]

    def origin(it: str) -> str:
        return "as generate.py's run got %s" % it if observed else "read from the source"
    if len(facts) == 1:
        blocks.append(Para(["Tile table %s: " % origin("it"), *facts[0], "."]))
    elif facts:
        blocks.append(Para(["Tile tables %s:" % origin("them")]))
        blocks.append(BulletList(facts))
    unmatched = sorted((a for a in archs - matched if a), key=natural)
    if archs - matched:
        blocks.append(Para(["No tile table %s has the tiles of these kernels" % (
                                "of a factory generate.py's run called" if observed else origin("")),
                            *([" (", *codes(unmatched), ")"] if unmatched else []),
                            ": the rows are the listing's alone."]))
    missing = [u for r in table.rows for u in r.tiles if u.in_source is False]
    if missing and observed:
        blocks.append(Para([Emph(NOT_IN_TABLE), ": %s the listing has for a problem, the "
                            "factory's table does not have for it, as generate.py's run got "
                            "the table: the codegen adds the tile elsewhere; the rows show what "
                            "generate.py produced." % plural(len(missing), "tile")]))
    elif missing:
        blocks.append(Para([Emph(NOT_IN_SOURCE), ": %s the listing has for a problem, the "
                            "table read from the source does not have for it. The static "
                            "reading and generate.py disagree; the rows show what generate.py "
                            "produced." % plural(len(missing), "tile")]))
    for source in table.sources:
        items = _not_generated(source, table.rows)
        if items:
            title: Inlines = ["Entries of ", Code(source.factory), " without a listed kernel (%d)"
                              % len(source.not_generated)]
            if len(items) == 1:
                blocks.append(Para(title + [": ", *items[0], "."]))
            else:
                listed = BulletList(items)
                blocks.extend(fold(title, [listed], len(items), FOLD_ITEMS)
                              if len(items) > FOLD_ITEMS else [Para(title + [":"]), listed])
    return blocks


def _other_factories(factories: Sequence[Factory], tables: Sequence[TileTable]) -> Inlines:
    """The factories' tables no listed kernel was compared with, and why, in one line."""
    used = {s.factory for t in tables for s in t.sources}
    archs = {r.keys.get("arch", "") for t in tables for r in t.rows}
    listed = {u.tile for t in tables for r in t.rows for u in r.tiles}
    called = any(f.observed for f in factories)
    # a base whose table a called factory inherits was compared through it
    inherited = {base for f in factories if f.observed for base in f.bases}
    items: List[Inlines] = []
    for factory in factories:
        if factory.class_name in used or not factory.tiles \
                or (called and not factory.observed and factory.class_name in inherited):
            continue
        if called and not factory.observed:
            why: Inlines = ["generate.py's run did not call it"]
        elif factory.arch and factory.arch not in archs:
            why = ["no listed kernel is for ", Code(factory.arch)]
        elif any(tile in listed for per_hdim in factory.tiles.values()
                 for tiles in per_hdim.values() for tile in tiles):
            why = ["another table matches as well or better"]
        else:
            why = ["none of its tiles is listed"]
        items.append([Code(factory.class_name), " (", *why, ")"])
    return ["Not compared: ", *join(items, "; "), "."] if items else []


def tiles_section(data: GuideData) -> List[Block]:
    model = data.model
    blocks: List[Block] = []
    if not data.tile_tables:
        blocks.append(Para(["No kernel name of this API carries a tile."]))
    else:
        intro = ("From the listing: each problem's tiles and their kernels (per data type "
                 "of the row).")
        kept = any(u.kept is not None for t in data.tile_tables for r in t.rows for u in r.tiles)
        blocks.append(Para([intro + " ", Emph("kept"), ": of them in the minimal set."] if kept else [intro]))
    for table in data.tile_tables:
        blocks.append(SubHeading([Code(table.kernel_type)]))
        blocks.extend(_table_blocks(table, any(f.observed for f in model.factories)))
    others = _other_factories(model.factories, data.tile_tables)
    if others:
        blocks.append(Para(others))
    for tile in model.tiles:
        field_rows: List[List[Inlines]] = [[[Code(f.name)], [" ".join(f.comment.split())]]
                                           for f in tile.fields]
        inner: List[Block] = []
        if tile.defined_at:
            origin: Inlines = ["Defined at ", Code(tile.defined_at)]
            if tile.imported_from:
                origin += [" (imported from ", Code(tile.imported_from), ")"]
            inner.append(Para(origin + ["."]))
        if field_rows:
            inner.append(Table(header=["Field", "Comment"], rows=field_rows, classes=["fmha-tilefields"]))
        if tile.name_source:
            inner.append(Para(["How the tile names itself:"]))
            inner.append(CodeBlock(tile.name_source, "python"))
        blocks.append(Dropdown(title=["Tile class ", Code(tile.class_name)], blocks=inner))
    return blocks
