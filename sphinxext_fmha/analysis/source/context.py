"""The state the collectors share: the analysed module, the facts so far (the dataclasses
of :class:`SourceFacts`, the result of :func:`~.analyze_source`), and what earlier
collectors found (blob functions, tile classes, receipt parameters ...)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from ...model import DispatchInfo, Factory, Gap, Receipt, SkipCondition, TileClass
from ..pyparse import FUNC, FunctionNode, ParsedModule, dotted, segment
from .universe import Universe


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


@dataclass
class Context:
    """One analysis of one ops module (``pm``, parsed: ``tree``) below the FMHA folder
    ``root`` at ``rel``; the fields after ``universe`` are filled by the collectors."""

    root: Path
    rel: str
    facts: SourceFacts
    universe: Universe
    pm: ParsedModule
    tree: ast.Module
    class_infos: Dict[str, ClassInfo] = field(default_factory=dict)
    tile_names: Set[str] = field(default_factory=set)
    blob_functions: List[FunctionNode] = field(default_factory=list)
    helper_functions: List[Tuple[FunctionNode, str]] = field(default_factory=list)  # (fn, owner)
    fnmatch_names: Set[str] = field(default_factory=set)
    receipt_names: Set[str] = field(default_factory=set)

    @property
    def gaps(self) -> List[Gap]:
        return self.facts.gaps

    def where(self, node: ast.AST) -> str:
        return self.pm.where(node)

    def seg(self, node: ast.AST) -> str:
        """Source text of ``node`` on one line."""
        return segment(self.pm, node)

    def owner_of(self, node: ast.AST) -> str:
        """The class holding ``node``, else the innermost function, else ``""``."""
        fn_name = ""
        for cur, _ in self.pm.ancestors(node):
            if isinstance(cur, ast.ClassDef):
                return cur.name
            if isinstance(cur, FUNC) and not fn_name:
                fn_name = cur.name
        return fn_name

    def mro(self, name: str) -> List[str]:
        """A class and its bases that are classes of the analysed modules."""
        classes = self.universe.classes
        out: List[str] = []

        def visit(n: str) -> None:
            if n in out or n not in classes:
                return
            out.append(n)
            for b in classes[n][1].bases:
                bn = dotted(b)
                if bn:
                    visit(bn.split(".")[-1])

        visit(name)
        return out

    def loop_functions(self) -> List[Tuple[FunctionNode, str]]:
        """The blob functions and their helpers, with the label facts show for each."""
        out = [(fn, fn.name) for fn in self.blob_functions]
        out += [(fn, f"{owner}.{fn.name}") for fn, owner in self.helper_functions]
        return out

    def pool_class(self) -> Optional[ast.ClassDef]:
        """The class collecting kernels into the dispatcher (``*ApiPool``, ``register*``)."""
        classes = [n for n in self.tree.body if isinstance(n, ast.ClassDef)]
        return next((c for c in classes if "apipool" in c.name.lower()), None) or next(
            (c for c in classes if any(isinstance(s, FUNC) and s.name.startswith("register")
                                       for s in c.body)), None) or next(
            (c for c in classes if "pool" in c.name.lower()), None)
