"""The state the collectors share: the analysed module and the local modules it imports
(:class:`Universe`: files of the tree, never anything installed), the facts so far
(:class:`SourceFacts`, the result of :func:`~.analyze_source`) and what earlier
collectors found (blob functions, tile classes, receipt parameters ...)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from ...model import DispatchInfo, Factory, Gap, Receipt, SkipCondition, TileClass
from ..pyparse import FUNC, FunctionNode, ParsedModule, assigned_names, dotted, parse_module, segment


class Universe:
    """The analysed module plus the local modules it imports (recursively)."""

    def __init__(self, fmha_dir: Path, module_relpath: str, gaps: List[Gap]) -> None:
        self.root = Path(fmha_dir)
        self.gaps = gaps
        self.modules: Dict[str, ParsedModule] = {}
        self.classes: Dict[str, Tuple[ParsedModule, ast.ClassDef]] = {}
        self.functions: Dict[str, Tuple[ParsedModule, FunctionNode]] = {}
        self.assigns: Dict[str, Dict[str, ast.AST]] = {}
        #: module -> the local modules it imports: (relpath, [(local, original name)], None for ``*``)
        self.imports_of: Dict[str, List[Tuple[str, Optional[List[Tuple[str, str]]]]]] = {}
        self.main = self.load(module_relpath)
        if self.main is not None:
            self._follow(self.main, depth=0)
        self._index()

    def load(self, relpath: str) -> Optional[ParsedModule]:
        if relpath in self.modules:
            return self.modules[relpath]
        path = self.root / relpath
        if not path.is_file():
            self.gaps.append(Gap(f"module {relpath}", relpath, "file not found"))
            return None
        pm = parse_module(path, self.root)
        if pm.tree is None:
            self.gaps.append(Gap(f"module {relpath}", relpath, f"cannot be parsed: {pm.error}"))
        self.modules[relpath] = pm
        return pm

    def resolve_import(self, pm: ParsedModule, node: ast.ImportFrom) -> Optional[str]:
        parts = [p for p in (node.module or "").split(".") if p]
        if not (node.level or parts):
            return None
        base = Path(pm.relpath).parent
        for _ in range(node.level - 1):
            base = base.parent
        cand_base = base.joinpath(*parts) if node.level else Path(*parts)
        for cand in (cand_base.with_suffix(".py"), cand_base / "__init__.py"):
            if (self.root / cand).is_file():
                return cand.as_posix()
        return None

    def _follow(self, pm: ParsedModule, depth: int) -> None:
        if pm.tree is None or pm.relpath in self.imports_of:
            return
        found: List[Tuple[str, Optional[List[Tuple[str, str]]]]] = []
        self.imports_of[pm.relpath] = found
        for node in pm.tree.body:
            if isinstance(node, ast.ImportFrom) and (rel := self.resolve_import(pm, node)) is not None:
                found.append((rel, None if any(a.name == "*" for a in node.names)
                              else [(a.asname or a.name, a.name) for a in node.names]))
                sub = self.load(rel)
                if sub is not None and depth < 6:
                    self._follow(sub, depth + 1)

    def _index(self) -> None:
        # other modules first, the main module last so that its definitions win
        for pm in sorted(self.modules.values(), key=lambda m: m is self.main):
            if pm.tree is None:
                continue
            assigns: Dict[str, ast.AST] = {}
            for node in pm.tree.body:
                if isinstance(node, ast.ClassDef):
                    if pm is self.main or node.name not in self.classes:
                        self.classes[node.name] = (pm, node)
                elif isinstance(node, FUNC):
                    if pm is self.main or node.name not in self.functions:
                        self.functions[node.name] = (pm, node)
                else:
                    assigns.update(assigned_names(node))
            self.assigns[pm.relpath] = assigns

    # ---- name resolution ------------------------------------------------------------

    def origin_of(self, name: str, rel: Optional[str] = None,
                  depth: int = 0) -> Optional[Tuple[ParsedModule, ast.AST]]:
        """Where a module-level ``name`` visible in module ``rel`` is defined."""
        if depth > 8:
            return None
        pm = self.modules.get(rel) if rel else self.main
        if pm is None or pm.tree is None:
            return None
        local = self.assigns.get(pm.relpath, {})
        if name in local:
            return pm, local[name]
        for node in pm.tree.body:
            if isinstance(node, (ast.ClassDef,) + FUNC) and node.name == name:
                return pm, node
        for imp_rel, names in self.imports_of.get(pm.relpath, []):
            if names is not None:
                orig = next((o for local_name, o in names if local_name == name), None)
                if orig is not None:
                    return self.origin_of(orig, imp_rel, depth + 1)
            elif (got := self.origin_of(name, imp_rel, depth + 1)) is not None:
                return got
        return None

    def visible_classes(self) -> List[Tuple[ParsedModule, ast.ClassDef, str]]:
        """Classes of the main module plus classes imported into it (by name or ``*``)."""
        if self.main is None or self.main.tree is None:
            return []
        out = [(self.main, node, "") for node in self.main.tree.body if isinstance(node, ast.ClassDef)]
        seen = {node.name for _, node, _ in out}
        imports = self.imports_of.get(self.main.relpath, [])
        named = {local: (rel, orig) for rel, names in imports for local, orig in names or []}
        imported = [self.origin_of(orig, rel) for rel, orig in named.values()]
        starred = [(pm, node) for rel, names in imports if names is None
                   for pm in [self.modules.get(rel)] if pm is not None and pm.tree is not None
                   for node in pm.tree.body]
        for got in imported + starred:
            if got and isinstance(got[1], ast.ClassDef) and got[1].name not in seen:
                out.append((got[0], got[1], got[0].relpath))
                seen.add(got[1].name)
        return out


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
                visit((dotted(b) or "").split(".")[-1])

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
