"""Collector: tile dataclasses (named ``*Tile*`` or made of ints used in their ``name``).
"""

from __future__ import annotations

import re
from typing import Set

from ...model import Gap, TileClass, TileField
from .context import Context
from .facts import (
    ClassInfo,
)

__all__ = ["collect_tiles"]


def _name_fields(ctx: Context, info: ClassInfo) -> Set[str]:
    src = info.name_source
    return set(re.findall(r"self\.(\w+)", src))


def collect_tiles(ctx: Context) -> None:
    """Record the tile dataclasses (``facts.tiles``) and their names in ``ctx.tile_names``."""
    for info in ctx.facts.classes:
        if not info.is_dataclass or not info.fields:
            continue
        named = "tile" in info.name.lower()
        ints = [f for f in info.fields if f.annotation in ("int", "builtins.int")]
        used = _name_fields(ctx, info)
        int_heavy = (len(ints) >= max(3, len(info.fields) * 0.6)
                     and len([f for f in ints if f.name in used]) >= len(ints) * 0.6)
        if not (named or int_heavy):
            continue
        ctx.tile_names.add(info.name)
        tc = TileClass(
            class_name=info.name,
            defined_at=info.defined_at,
            imported_from=info.imported_from,
            fields=[TileField(f.name, f.comment) for f in info.fields],
            name_source=info.name_source,
        )
        ctx.facts.tiles.append(tc)
    if not ctx.facts.tiles:
        ctx.gaps.append(Gap("tile classes", ctx.rel, "no dataclass looks like a tile "
                            "(name contains 'Tile' or int fields used in name)"))
