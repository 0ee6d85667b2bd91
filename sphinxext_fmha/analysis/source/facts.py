"""What the source analysis reports: the facts of one ops module, as dataclasses
(:class:`SourceFacts` is the whole result of :func:`~.analyze_source`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List

from ...model import DispatchInfo, Factory, Gap, Receipt, SkipCondition, TileClass

__all__ = ["ClassField", "ClassInfo", "SymbolMap", "MapUse", "Enumeration", "SourceFacts"]


@dataclass
class ClassField:
    name: str
    annotation: str = ""
    comment: str = ""
    line: int = 0


@dataclass
class ClassInfo:
    name: str
    defined_at: str = ""
    imported_from: str = ""
    is_dataclass: bool = False
    fields: List[ClassField] = field(default_factory=list)
    name_source: str = ""


@dataclass
class SymbolMap:
    """A module-level dict, or a function returning one dict per argument value."""

    name: str
    defined_at: str = ""
    kind: str = "dict"  # "dict" | "function"
    entries: Dict[str, str] = field(default_factory=dict)
    branches: Dict[str, Dict[str, str]] = field(default_factory=dict)


@dataclass
class MapUse:
    owner: str
    path: str
    field: str
    map: str
    where: str = ""


@dataclass
class Enumeration:
    functions: Dict[str, str] = field(default_factory=dict)  # blob function -> where
    takes_targets: bool = False  # a blob function has a ``targets`` parameter


@dataclass
class SourceFacts:
    """Everything read statically from one ops module (paths relative to fmha_dir):
    ``classes`` are the module's and those it imports from local modules
    (``imported_from`` set); ``factories`` say where each factory is and when it is
    chosen (their tables are observed); ``gaps``: what could not be determined."""

    module: str
    classes: List[ClassInfo] = field(default_factory=list)
    tiles: List[TileClass] = field(default_factory=list)
    symbol_maps: Dict[str, SymbolMap] = field(default_factory=dict)
    map_uses: List[MapUse] = field(default_factory=list)
    factories: List[Factory] = field(default_factory=list)
    has_arch_factories: bool = False
    #: the tile field giving the head dim where a tile table is a plain list
    tile_hdim_field: str = ""
    enumeration: Enumeration = field(default_factory=Enumeration)
    skip_conditions: List[SkipCondition] = field(default_factory=list)
    receipts: List[Receipt] = field(default_factory=list)
    dispatch: DispatchInfo = field(default_factory=DispatchInfo)
    gaps: List[Gap] = field(default_factory=list)
