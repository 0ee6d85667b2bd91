"""The tiles section: tile tables per factory and tile classes."""

from __future__ import annotations

from typing import List

from ...guide_data import GuideData
from ..ir import (
    Block,
    BulletList,
    Code,
    CodeBlock,
    Dropdown,
    Inlines,
    Para,
    SubHeading,
    Table,
    codes,
    join,
)
from .common import fold, natural, plural


def _hdim_key(key: str):
    return natural(key)


def tiles_section(data: GuideData) -> List[Block]:
    model = data.model
    blocks: List[Block] = []
    if not model.factories:
        blocks.append(Para(["No tile table was found in the module."]))
    for factory in model.factories:
        heading: Inlines = [Code(factory.class_name)]
        if factory.arch:
            heading.append(" (%s)" % factory.arch)
        blocks.append(SubHeading(heading))
        facts: List[Inlines] = []
        if factory.defined_at:
            facts.append(["Defined at ", Code(factory.defined_at)])
        if factory.selected_by:
            facts.append(["Used when ", Code(factory.selected_by)])
        if factory.bases:
            facts.append(["Bases: ", *codes(factory.bases)])
        if factory.dtypes:
            facts.append(["Data types: ", *codes(factory.dtypes)])
        if factory.unsupported_dtypes:
            facts.append(["No tiles for: ", *codes(factory.unsupported_dtypes)])
        if facts:
            blocks.append(BulletList(facts))
        rows: List[List[Inlines]] = []
        for dtype in factory.tiles:
            for hdim in sorted(factory.tiles[dtype], key=_hdim_key):
                tiles = factory.tiles[dtype][hdim]
                rows.append([[Code(dtype)], [Code(hdim)], join([[Code(t)] for t in tiles], " ")])
        if rows:
            table = Table(header=["dtype", "hdim", "Tiles"], rows=rows, classes=["fmha-tiles"])
            blocks.extend(fold([Code(factory.class_name), ": %s" % plural(len(rows), "tile row")],
                                [table], len(rows)))
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
