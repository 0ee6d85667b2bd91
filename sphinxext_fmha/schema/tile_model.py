"""Tile classes, the factories that make tiles, and the tile tables a guide shows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional


@dataclass
class TileField:
    """One field of a tile class."""

    #: The field's name.
    name: str
    #: The comment next to its declaration.
    comment: str = ""


@dataclass
class TileClass:
    """A dataclass describing a tile (block sizes and the like) that names itself."""

    #: The class name.
    class_name: str
    #: Where it is defined (``path:line``).
    defined_at: str = ""
    #: The ops module it is imported from, when not defined in the API's own module.
    imported_from: str = ""
    #: Its fields, in declaration order.
    fields: List[TileField] = field(default_factory=list)
    #: The source of its ``name`` property.
    name_source: str = ""


@dataclass
class Factory:
    """A class or function that hands out the tiles of each data type and head size
    (per architecture in newer trees)."""

    #: The class or function name.
    class_name: str
    #: Its base classes, as source text.
    bases: List[str] = field(default_factory=list)
    #: The GPU architecture it serves, when it serves one.
    arch: str = ""
    #: Where it is defined (``path:line``).
    defined_at: str = ""
    #: The condition under which generate.py uses it, as source text.
    selected_by: str = ""
    #: ``{dtype: {head size: [tile, ...]}}``, tiles as source text.
    tiles: Dict[str, Dict[str, List[str]]] = field(default_factory=dict)
    #: ``{tile: source text}``: a tile's constructor arguments that are not plain numbers
    #: (``CppConstraint('...')``), else the text of its field that differs from the default.
    tile_notes: Dict[str, str] = field(default_factory=dict)
    #: :attr:`tiles` is what its tile method returned to generate.py's own run (else:
    #: the source's reading).
    observed: bool = False


@dataclass
class TileUse:
    """One tile of a :class:`TileRow`: how many listed kernels use it."""

    #: The tile's part of the kernel name (``b128x64x32_r4x1x1``).
    tile: str
    #: Listed kernels of the row's problem that use it.
    kernels: int = 0
    #: Of those, the kernels of the recommended minimal set (``null``: not computed).
    kept: Optional[int] = None
    #: Whether the factory table read from the source lists it for this row (``null``:
    #: no table read from the source matches this architecture).
    in_source: Optional[bool] = None
    #: The source's condition on the tile (:attr:`Factory.tile_notes`), if any.
    note: str = ""
    #: ``{field: [values]}``: other problem fields (``mode``) the tile is used with only
    #: some of the row's values of.
    only: Dict[str, List[str]] = field(default_factory=dict)


@dataclass
class TileRow:
    """The tiles of one problem (architecture, data type, head dim, ...)."""

    #: ``{column: value}`` for the columns of :attr:`TileTable.columns`.
    keys: Dict[str, str] = field(default_factory=dict)
    tiles: List[TileUse] = field(default_factory=list)


@dataclass
class TileSource:
    """A factory table read from the source, compared with what generate.py produced."""

    factory: str
    #: The architecture whose kernels it was compared with (``""``: no arch suffix).
    arch: str = ""
    defined_at: str = ""
    selected_by: str = ""
    #: (data type, head dim, tile) entries of the table that some listed kernel has.
    matched: int = 0
    #: All (data type, head dim, tile) entries of the table.
    listed: int = 0
    #: Table entries no listed kernel has: ``{"dtype", "hdim", "tile"}``.
    not_generated: List[Dict[str, str]] = field(default_factory=list)
    #: The table is what generate.py's run got from the factory (:attr:`Factory.observed`).
    observed: bool = False


@dataclass
class TileTable:
    """The tiles one sub-type really has, per problem, from the parsed listing."""

    kernel_type: str
    #: Key columns, in order: ``arch`` (when file names carry one), ``dtype``,
    #: ``hdim``, then other fields that key the tiles.
    columns: List[str] = field(default_factory=list)
    rows: List[TileRow] = field(default_factory=list)
    #: Labels of the name segments that make up a tile.
    tile_segments: List[str] = field(default_factory=list)
    #: The factory table each architecture was compared with.
    sources: List[TileSource] = field(default_factory=list)
    #: Kernels of the sub-type counted.
    kernels: int = 0
