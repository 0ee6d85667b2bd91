"""Static facts about one FMHA codegen ops module, read with ``ast`` + ``tokenize`` only.

``analyze_source(fmha_dir, "codegen/ops/fmha_fwd.py")`` never imports or executes the
analysed code and never writes into the tree. Every name used below to recognise a
construct (``*Tile*`` classes, ``filename`` properties, ``receipt`` parameters,
``fnmatch`` calls, ``*Pool`` classes...) is a heuristic with a fallback; whatever cannot
be determined is reported as a :class:`~sphinxext_fmha.model.Gap`.
"""

from __future__ import annotations

import ast
import copy
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from ..model import (
    DispatchInfo,
    Factory,
    Gap,
    Receipt,
    SkipCondition,
    TileClass,
    TileField,
)
from .rule_receipts import rule_object_receipts
from .pysource import (
    Interpreter,
    Obj,
    ParsedModule,
    Unknown,
    dotted,
    flat,
    fold_str,
    parse_module,
    read_condition,
    segment,
    walk_no_nested,
)

__all__ = [
    "ClassField",
    "ClassInfo",
    "SymbolMap",
    "MapUse",
    "LoopInfo",
    "Enumeration",
    "FilterLine",
    "FilterMatch",
    "FilterSource",
    "DedupInfo",
    "DispatchLevel",
    "FactoryTable",
    "SourceFacts",
    "analyze_source",
]


# --------------------------------------------------------------------------------------
# result dataclasses (JSON-serialisable through sphinxext_fmha.model.to_dict)
# --------------------------------------------------------------------------------------


@dataclass
class ClassField:
    name: str
    annotation: str = ""
    default: str = ""
    comment: str = ""
    line: int = 0


@dataclass
class ClassInfo:
    name: str
    defined_at: str = ""
    module: str = ""
    imported_from: str = ""
    bases: List[str] = field(default_factory=list)
    is_dataclass: bool = False
    frozen: bool = False
    fields: List[ClassField] = field(default_factory=list)
    class_attributes: Dict[str, str] = field(default_factory=dict)
    properties: List[str] = field(default_factory=list)
    methods: List[str] = field(default_factory=list)
    static_methods: List[str] = field(default_factory=list)
    name_source: str = ""
    filename_source: str = ""
    docstring: str = ""


@dataclass
class SymbolMap:
    """A module-level dict, or a function returning one dict per argument value."""

    name: str
    defined_at: str = ""
    kind: str = "dict"  # "dict" | "function"
    entries: Dict[str, str] = field(default_factory=dict)
    parameter: str = ""
    branches: Dict[str, Dict[str, str]] = field(default_factory=dict)
    branch_maps: Dict[str, str] = field(default_factory=dict)


@dataclass
class MapUse:
    owner: str
    path: str
    field: str
    map: str
    map_call: str = ""
    argument: str = ""
    where: str = ""


@dataclass
class LoopInfo:
    function: str
    kind: str  # "product" | "for"
    targets: List[str] = field(default_factory=list)
    axes: List[str] = field(default_factory=list)
    resolved_axes: List[str] = field(default_factory=list)
    source: str = ""
    where: str = ""


@dataclass
class Enumeration:
    functions: Dict[str, str] = field(default_factory=dict)  # blob function -> where
    helpers: Dict[str, str] = field(default_factory=dict)  # pipeline-like helpers -> where
    loops: List[LoopInfo] = field(default_factory=list)


@dataclass
class FilterLine:
    kind: str  # split | pad | default | guard | match
    source: str
    where: str = ""
    function: str = ""


@dataclass
class FilterMatch:
    function: str
    kernel_expr: str
    pattern: str
    kernel_class: str = ""
    index: Optional[int] = None
    split_var: str = ""
    via: str = ""
    guard: str = ""
    where: str = ""


@dataclass
class FilterSource:
    separator: Optional[str] = None
    parts: Optional[int] = None
    missing_becomes: Optional[str] = None
    empty_default: Optional[str] = None
    lines: List[FilterLine] = field(default_factory=list)
    matches: List[FilterMatch] = field(default_factory=list)


@dataclass
class DedupInfo:
    kind: str
    source: str
    where: str = ""
    detail: str = ""


@dataclass
class DispatchLevel:
    name: str
    loop: str = ""
    template: str = ""
    where: str = ""


@dataclass
class FactoryTable:
    factory: str
    method: str
    defined_at: str = ""
    dtype_parameter: str = ""
    qualifiers: List[str] = field(default_factory=list)
    tiles: Dict[str, Dict[str, List[str]]] = field(default_factory=dict)
    calls: Dict[str, Dict[str, List[str]]] = field(default_factory=dict)
    supported: List[str] = field(default_factory=list)
    unsupported: List[str] = field(default_factory=list)


@dataclass
class SourceFacts:
    """Everything read statically from one ops module (paths relative to fmha_dir).

    * ``classes`` - every class of the module and the classes it imports from local
      modules (``imported_from`` set); ``kernel_classes`` - dataclasses with ``filename``.
    * ``tiles`` - tile dataclasses (``TileClass``); ``symbol_maps`` - module-level dicts
      and dict-returning functions (one dict per branch value) of the local modules;
      ``map_uses`` - ``MAP[self.a.b]`` subscripts per owner class/function.
    * ``factories`` / ``factory_tables`` - tile tables per factory, data type and head
      dim (``has_arch_factories`` is False when no factory carries an architecture).
    * ``enumeration`` - blob functions, helper functions and their loops;
      ``skip_conditions`` (kinds: continue, option, unsupported, assert, dispatch, rule)
      with ``skip_context[where] = {"function", "comment"}``.
    * ``dedup``, ``receipts``, ``filter_source``, ``dispatch`` (+ ``dispatch_levels``).
    * ``notes`` - noteworthy facts that are not gaps (suspicious literals, rules that
      never trigger, checks whose branches are identical...); ``gaps`` - what could not
      be determined.
    """

    module: str
    classes: List[ClassInfo] = field(default_factory=list)
    kernel_classes: List[str] = field(default_factory=list)
    tiles: List[TileClass] = field(default_factory=list)
    symbol_maps: Dict[str, SymbolMap] = field(default_factory=dict)
    map_uses: List[MapUse] = field(default_factory=list)
    factories: List[Factory] = field(default_factory=list)
    factory_tables: List[FactoryTable] = field(default_factory=list)
    has_arch_factories: bool = False
    enumeration: Enumeration = field(default_factory=Enumeration)
    skip_conditions: List[SkipCondition] = field(default_factory=list)
    skip_context: Dict[str, Dict[str, str]] = field(default_factory=dict)
    dedup: List[DedupInfo] = field(default_factory=list)
    receipts: List[Receipt] = field(default_factory=list)
    filter_source: FilterSource = field(default_factory=FilterSource)
    dispatch: DispatchInfo = field(default_factory=DispatchInfo)
    dispatch_levels: List[DispatchLevel] = field(default_factory=list)
    notes: List[Dict[str, str]] = field(default_factory=list)
    gaps: List[Gap] = field(default_factory=list)

    def class_info(self, name: str) -> ClassInfo:
        for c in self.classes:
            if c.name == name:
                return c
        raise KeyError(name)


# --------------------------------------------------------------------------------------
# module universe
# --------------------------------------------------------------------------------------

_FUNC = (ast.FunctionDef, ast.AsyncFunctionDef)


class _Universe:
    """The analysed module plus the local modules it imports (recursively)."""

    def __init__(self, fmha_dir: Path, module_relpath: str, gaps: List[Gap]) -> None:
        self.root = Path(fmha_dir)
        self.gaps = gaps
        self.modules: Dict[str, ParsedModule] = {}
        self.main: Optional[ParsedModule] = None
        # name visible in the main module -> (module relpath, original name)
        self.imported_names: Dict[str, Tuple[str, str]] = {}
        self.star_modules: List[str] = []
        self.classes: Dict[str, Tuple[ParsedModule, ast.ClassDef]] = {}
        self.functions: Dict[str, Tuple[ParsedModule, ast.FunctionDef]] = {}
        self.assigns: Dict[str, Dict[str, ast.AST]] = {}
        self.imports_of: Dict[str, List[Tuple[str, Optional[List[Tuple[str, str]]]]]] = {}
        self._globals_cache: Dict[Tuple[str, str], Any] = {}
        self.main = self.load(module_relpath)
        if self.main is not None and self.main.tree is not None:
            self._follow(self.main, depth=0)
            for rel, names in self.imports_of.get(self.main.relpath, []):
                if names is None:
                    self.star_modules.append(rel)
                else:
                    for local, orig in names:
                        self.imported_names[local] = (rel, orig)
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
        mod = node.module or ""
        parts = [p for p in mod.split(".") if p]
        if node.level:
            base = Path(pm.relpath).parent
            for _ in range(node.level - 1):
                base = base.parent
            cand_base = base.joinpath(*parts) if parts else base
        else:
            cand_base = Path(*parts) if parts else None
        if cand_base is None:
            return None
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
            if isinstance(node, ast.ImportFrom):
                rel = self.resolve_import(pm, node)
                if rel is None:
                    continue
                if any(a.name == "*" for a in node.names):
                    found.append((rel, None))
                else:
                    found.append((rel, [(a.asname or a.name, a.name) for a in node.names]))
                sub = self.load(rel)
                if sub is not None and depth < 6:
                    self._follow(sub, depth + 1)

    def _index(self) -> None:
        # other modules first, the main module last so that its definitions win
        order = [m for m in self.modules.values() if m is not self.main]
        if self.main is not None:
            order.append(self.main)
        for pm in order:
            if pm.tree is None:
                continue
            assigns: Dict[str, ast.AST] = {}
            for node in pm.tree.body:
                if isinstance(node, ast.ClassDef):
                    if pm is self.main or node.name not in self.classes:
                        self.classes[node.name] = (pm, node)
                elif isinstance(node, _FUNC):
                    if pm is self.main or node.name not in self.functions:
                        self.functions[node.name] = (pm, node)  # type: ignore[assignment]
                elif isinstance(node, ast.Assign):
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            assigns[t.id] = node.value
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
                    assigns[node.target.id] = node.value
            self.assigns[pm.relpath] = assigns

    # ---- name resolution ------------------------------------------------------------

    def origin_of(self, name: str, rel: Optional[str] = None, depth: int = 0) -> Optional[Tuple[ParsedModule, ast.AST]]:
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
            if isinstance(node, (ast.ClassDef,) + _FUNC) and node.name == name:
                return pm, node
        for imp_rel, names in self.imports_of.get(pm.relpath, []):
            if names is None:
                got = self.origin_of(name, imp_rel, depth + 1)
                if got is not None:
                    return got
            else:
                for local_name, orig in names:
                    if local_name == name:
                        return self.origin_of(orig, imp_rel, depth + 1)
        return None

    def visible_classes(self) -> List[Tuple[ParsedModule, ast.ClassDef, str]]:
        """Classes of the main module plus classes imported into it (by name or ``*``)."""
        out: List[Tuple[ParsedModule, ast.ClassDef, str]] = []
        seen: Set[str] = set()
        if self.main is None or self.main.tree is None:
            return out
        for node in self.main.tree.body:
            if isinstance(node, ast.ClassDef):
                out.append((self.main, node, ""))
                seen.add(node.name)
        for local, (rel, orig) in self.imported_names.items():
            got = self.origin_of(orig, rel)
            if got and isinstance(got[1], ast.ClassDef) and got[1].name not in seen:
                out.append((got[0], got[1], got[0].relpath))
                seen.add(got[1].name)
        for rel in self.star_modules:
            pm = self.modules.get(rel)
            if pm is None or pm.tree is None:
                continue
            for node in pm.tree.body:
                if isinstance(node, ast.ClassDef) and node.name not in seen:
                    out.append((pm, node, pm.relpath))
                    seen.add(node.name)
        return out

    def interpreter(self) -> Interpreter:
        classes = {n: c for n, (_, c) in self.classes.items()}
        functions = {n: f for n, (_, f) in self.functions.items()}
        node_modules: Dict[int, ParsedModule] = {}
        for pm in self.modules.values():
            if pm.tree is None:
                continue
            for node in ast.walk(pm.tree):
                if isinstance(node, _FUNC):
                    node_modules[id(node)] = pm
        interp = Interpreter(classes, self.global_value, functions, node_modules)
        return interp

    def global_value(self, name: str) -> Any:
        key = ("", name)
        if key in self._globals_cache:
            val = self._globals_cache[key]
            if isinstance(val, Unknown):
                raise val
            return copy.deepcopy(val)
        got = self.origin_of(name)
        if got is None or isinstance(got[1], (ast.ClassDef,) + _FUNC):
            exc = Unknown(f"global {name}")
            self._globals_cache[key] = exc
            raise exc
        interp = Interpreter({}, self._no_global, {}, {})
        try:
            val = interp.eval(got[1], {})
        except Unknown as exc:
            self._globals_cache[key] = exc
            raise
        self._globals_cache[key] = val
        return copy.deepcopy(val)

    @staticmethod
    def _no_global(name: str) -> Any:
        raise Unknown(f"global {name}")


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def _decorators(node: ast.AST) -> List[str]:
    out = []
    for d in getattr(node, "decorator_list", []):
        target = d.func if isinstance(d, ast.Call) else d
        out.append(dotted(target) or "")
    return out


def _is_dataclass(node: ast.ClassDef) -> Tuple[bool, bool]:
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = (dotted(target) or "").split(".")[-1]
        if name == "dataclass":
            frozen = False
            if isinstance(d, ast.Call):
                for kw in d.keywords:
                    if kw.arg == "frozen" and isinstance(kw.value, ast.Constant):
                        frozen = bool(kw.value.value)
            return True, frozen
    return False, False


def _member(cls: ast.ClassDef, name: str) -> Optional[ast.FunctionDef]:
    for stmt in cls.body:
        if isinstance(stmt, _FUNC) and stmt.name == name:
            return stmt  # type: ignore[return-value]
    return None


def _names_in(node: ast.AST) -> Set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _calls_named(node: ast.AST, names: Set[str]) -> List[ast.Call]:
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            fname = f.id if isinstance(f, ast.Name) else (f.attr if isinstance(f, ast.Attribute) else None)
            if fname in names:
                out.append(n)
    return out


def _is_fnmatch_call(node: ast.AST, fnmatch_names: Set[str]) -> bool:
    if not isinstance(node, ast.Call):
        return False
    d = dotted(node.func) or ""
    return d in fnmatch_names


def _key_text(key: Any) -> str:
    if isinstance(key, tuple):
        return "(" + ", ".join(_key_text(k) for k in key) + ")"
    return str(key)


def _wrap(text: str, node: ast.AST) -> str:
    if isinstance(node, (ast.BoolOp, ast.IfExp, ast.Lambda)) or (
            isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        return f"({text})"
    return text


def _value_text(v: Any) -> str:
    if isinstance(v, str):
        return v
    return repr(v)


def _function_params(fn: ast.AST) -> List[str]:
    a = fn.args  # type: ignore[attr-defined]
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]


# --------------------------------------------------------------------------------------
# the analysis
# --------------------------------------------------------------------------------------


def _overlaps(value: str, lo: int, hi: int) -> bool:
    """Whether a receipt value (``"2"``, ``"100-199"``, ``"-99"``) meets ``lo..hi``."""
    m = re.match(r"^(\d*)-(\d*)$", value)
    if m:
        first = int(m.group(1)) if m.group(1) else lo
        last = int(m.group(2)) if m.group(2) else hi
        return first <= hi and lo <= last
    return value.isdigit() and lo <= int(value) <= hi


class _Analysis:
    def __init__(self, fmha_dir: Path, module_relpath: str) -> None:
        self.root = Path(fmha_dir)
        self.rel = Path(module_relpath).as_posix()
        self.facts = SourceFacts(module=self.rel)
        self.gaps = self.facts.gaps
        self.u = _Universe(self.root, self.rel, self.gaps)
        self.pm = self.u.main
        self.class_infos: Dict[str, ClassInfo] = {}
        self.tile_names: Set[str] = set()
        self.blob_functions: List[ast.FunctionDef] = []
        self.helper_functions: List[Tuple[ast.FunctionDef, str]] = []  # (fn, owner label)
        self.fnmatch_names: Set[str] = set()
        self.receipt_names: Set[str] = set()
        self.factory_names: List[str] = []
        self._warned_hdim = False

    # ---- driver ---------------------------------------------------------------------

    def run(self) -> SourceFacts:
        if self.pm is None or self.pm.tree is None:
            return self.facts
        steps = [
            ("classes", self.collect_classes),
            ("symbol maps", self.collect_symbol_maps),
            ("tile classes", self.collect_tiles),
            ("map uses", self.collect_map_uses),
            ("blob functions", self.find_blob_functions),
            ("factories", self.collect_factories),
            ("enumeration", self.collect_enumeration),
            ("skip conditions", self.collect_skip_conditions),
            ("receipts", self.collect_receipts),
            ("kernel filter", self.collect_filter),
            ("de-duplication", self.collect_dedup),
            ("dispatch", self.collect_dispatch),
        ]
        for label, step in steps:
            try:
                step()
            except Exception as exc:  # never let one construct break the whole analysis
                self.gaps.append(Gap(label, self.rel, f"analysis failed: {type(exc).__name__}: {exc}"))
        return self.facts

    def where(self, node: ast.AST, pm: Optional[ParsedModule] = None) -> str:
        return (pm or self.pm).where(node)  # type: ignore[union-attr]

    def seg(self, node: ast.AST, pm: Optional[ParsedModule] = None) -> str:
        return segment(pm or self.pm, node)

    def owner_of(self, node: ast.AST) -> str:
        parents = self.pm.parents  # type: ignore[union-attr]
        cur = parents.get(node)
        fn_name = ""
        while cur is not None:
            if isinstance(cur, ast.ClassDef):
                return cur.name
            if isinstance(cur, _FUNC) and not fn_name:
                fn_name = cur.name
            cur = parents.get(cur)
        return fn_name

    # ---- classes --------------------------------------------------------------------

    def class_info(self, pm: ParsedModule, node: ast.ClassDef, imported_from: str) -> ClassInfo:
        is_dc, frozen = _is_dataclass(node)
        info = ClassInfo(
            name=node.name,
            defined_at=pm.where(node),
            module=pm.relpath,
            imported_from=imported_from,
            bases=[segment(pm, b) for b in node.bases],
            is_dataclass=is_dc,
            frozen=frozen,
            docstring=(ast.get_docstring(node) or "").strip(),
        )
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                ann = segment(pm, stmt.annotation)
                entry = ClassField(
                    name=stmt.target.id,
                    annotation=ann,
                    default=segment(pm, stmt.value) if stmt.value is not None else "",
                    comment=pm.comment_at(stmt.end_lineno or stmt.lineno),
                    line=stmt.lineno,
                )
                if is_dc and not ann.startswith("ClassVar"):
                    info.fields.append(entry)
                else:
                    info.class_attributes[stmt.target.id] = entry.default
            elif isinstance(stmt, ast.Assign):
                for t in stmt.targets:
                    if isinstance(t, ast.Name):
                        info.class_attributes[t.id] = segment(pm, stmt.value)
            elif isinstance(stmt, _FUNC):
                decos = _decorators(stmt)
                if "property" in decos or any(d.endswith(".getter") for d in decos):
                    info.properties.append(stmt.name)
                    if stmt.name == "name":
                        info.name_source = pm.source_segment(stmt) or ast.unparse(stmt)
                    if stmt.name == "filename":
                        info.filename_source = pm.source_segment(stmt) or ast.unparse(stmt)
                else:
                    info.methods.append(stmt.name)
                    if "staticmethod" in decos:
                        info.static_methods.append(stmt.name)
        return info

    def collect_classes(self) -> None:
        for pm, node, imported_from in self.u.visible_classes():
            info = self.class_info(pm, node, imported_from)
            self.facts.classes.append(info)
            self.class_infos[node.name] = info
        # classes defined elsewhere in the universe (bases etc.) are known but not listed
        for name, (pm, node) in self.u.classes.items():
            if name not in self.class_infos:
                self.class_infos[name] = self.class_info(pm, node, pm.relpath)
        self.facts.kernel_classes = [c.name for c in self.facts.classes
                                     if c.is_dataclass and "filename" in c.properties]
        if not self.facts.kernel_classes:
            self.gaps.append(Gap("kernel classes", self.rel,
                                 "no dataclass with a 'filename' property was found"))

    # ---- symbol maps ----------------------------------------------------------------

    def _dict_entries(self, node: ast.Dict, pm: ParsedModule) -> Dict[str, str]:
        out: Dict[str, str] = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                continue
            try:
                key = ast.literal_eval(k)
                key_text = _key_text(key)
            except Exception:
                key_text = segment(pm, k)
            try:
                val = ast.literal_eval(v)
                val_text = _value_text(val)
            except Exception:
                val_text = segment(pm, v)
            out[key_text] = val_text
        return out

    def collect_symbol_maps(self) -> None:
        maps = self.facts.symbol_maps
        modules = [m for m in self.u.modules.values() if m is not self.pm] + [self.pm]
        for pm in modules:
            if pm is None or pm.tree is None:
                continue
            dicts: Dict[str, ast.Dict] = {}
            for node in pm.tree.body:
                targets: List[ast.AST] = []
                value = None
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    targets, value = [node.target], node.value
                if isinstance(value, ast.Dict):
                    for t in targets:
                        if isinstance(t, ast.Name):
                            dicts[t.id] = value
                            maps[t.id] = SymbolMap(t.id, pm.where(node), "dict",
                                                   self._dict_entries(value, pm))
            for node in pm.tree.body:
                if not isinstance(node, _FUNC) or not node.args.args:
                    continue
                sm = self._map_function(node, pm, dicts)
                if sm is not None:
                    maps[node.name] = sm
        if not maps:
            self.gaps.append(Gap("symbol maps", self.rel,
                                 "no module-level dict found in the module or its local imports"))

    def _map_function(self, fn: ast.FunctionDef, pm: ParsedModule,
                      dicts: Dict[str, ast.Dict]) -> Optional[SymbolMap]:
        param = fn.args.args[0].arg
        branches: Dict[str, Dict[str, str]] = {}
        branch_maps: Dict[str, str] = {}
        returns_dict = False
        parents = pm.parents
        for ret in [n for n in ast.walk(fn) if isinstance(n, ast.Return)]:
            val = ret.value
            if isinstance(val, ast.Name) and val.id in dicts:
                returns_dict = True
                # find the condition choosing this return
                cur = parents.get(ret)
                child: ast.AST = ret
                key = None
                while cur is not None and cur is not fn:
                    if isinstance(cur, ast.If) and child in cur.body:
                        t = cur.test
                        if isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.Eq) \
                                and isinstance(t.left, ast.Name) and t.left.id == param \
                                and isinstance(t.comparators[0], ast.Constant):
                            key = str(t.comparators[0].value)
                        break
                    child, cur = cur, parents.get(cur)
                key = key if key is not None else "*"
                branches[key] = self._dict_entries(dicts[val.id], pm)
                branch_maps[key] = val.id
            elif isinstance(val, ast.Dict):
                returns_dict = True
                branches["*"] = self._dict_entries(val, pm)
        if not returns_dict:
            return None
        return SymbolMap(fn.name, pm.where(fn), "function", {}, param, branches, branch_maps)

    # ---- tiles ----------------------------------------------------------------------

    def _name_fields(self, info: ClassInfo) -> Set[str]:
        src = info.name_source
        return set(re.findall(r"self\.(\w+)", src))

    def collect_tiles(self) -> None:
        for info in self.facts.classes:
            if not info.is_dataclass or not info.fields:
                continue
            named = "tile" in info.name.lower()
            ints = [f for f in info.fields if f.annotation in ("int", "builtins.int")]
            used = self._name_fields(info)
            int_heavy = (len(ints) >= max(3, len(info.fields) * 0.6)
                         and len([f for f in ints if f.name in used]) >= len(ints) * 0.6)
            if not (named or int_heavy):
                continue
            self.tile_names.add(info.name)
            tc = TileClass(
                class_name=info.name,
                defined_at=info.defined_at,
                imported_from=info.imported_from,
                fields=[TileField(f.name, f.comment) for f in info.fields],
                name_source=info.name_source,
                optional_parts=self._optional_parts(info),
            )
            self.facts.tiles.append(tc)
        if not self.facts.tiles:
            self.gaps.append(Gap("tile classes", self.rel,
                                 "no dataclass looks like a tile (name contains 'Tile' or int fields used in name)"))

    def _optional_parts(self, info: ClassInfo) -> List[str]:
        pm, node = self.u.classes.get(info.name, (None, None))
        if node is None or pm is None:
            return []
        prop = _member(node, "name")
        if prop is None:
            return []
        out: List[str] = []
        for n in ast.walk(prop):
            if isinstance(n, ast.IfExp):
                out.append(segment(pm, n))
            elif isinstance(n, ast.If) and any(isinstance(s, ast.AugAssign) for s in n.body):
                out.append(segment(pm, n.test) + " -> " + "; ".join(segment(pm, s) for s in n.body))
        defaults = {f.name: f.default for f in info.fields if f.default}
        if defaults:
            for n in ast.walk(prop):
                if isinstance(n, ast.JoinedStr):
                    text = segment(pm, n)
                    for fname, dflt in defaults.items():
                        m = re.search(r"[^{}\"']*\{self\." + re.escape(fname) + r"[^}]*\}", text)
                        if m and ("{self." + fname) not in " ".join(out):
                            out.append(f"{m.group(0).strip()} (field {fname} defaults to {dflt})")
        return out

    # ---- map uses -------------------------------------------------------------------

    def collect_map_uses(self) -> None:
        dict_names = {n for n, m in self.facts.symbol_maps.items() if m.kind == "dict"}
        fn_names = {n for n, m in self.facts.symbol_maps.items() if m.kind == "function"}
        parents = self.pm.parents  # type: ignore[union-attr]
        for node in ast.walk(self.pm.tree):  # type: ignore[union-attr, arg-type]
            if not isinstance(node, ast.Subscript):
                continue
            base = node.value
            map_name = map_call = ""
            if isinstance(base, ast.Name) and base.id in dict_names:
                map_name = base.id
            elif isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id in fn_names:
                map_name = base.func.id
                map_call = self.seg(base)
            else:
                continue
            path = dotted(node.slice)
            if path is None:
                continue
            if path.startswith("self."):
                path = path[5:]
            parent = parents.get(node)
            argument = parent.arg if isinstance(parent, ast.keyword) and parent.arg else ""
            self.facts.map_uses.append(MapUse(
                owner=self.owner_of(node), path=path, field=path.split(".")[-1], map=map_name,
                map_call=map_call, argument=argument, where=self.where(node)))
        self.facts.map_uses.sort(key=lambda m: int(m.where.rpartition(":")[2] or 0))

    # ---- blob & helper functions ----------------------------------------------------

    def find_blob_functions(self) -> None:
        tree = self.pm.tree  # type: ignore[union-attr]
        for node in tree.body:  # type: ignore[union-attr]
            if isinstance(node, ast.ImportFrom) and node.module == "fnmatch":
                for a in node.names:
                    self.fnmatch_names.add(a.asname or a.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == "fnmatch":
                        self.fnmatch_names.add(f"{a.asname or a.name}.fnmatch")
                        self.fnmatch_names.add(f"{a.asname or a.name}.fnmatchcase")
        if not self.fnmatch_names:
            self.fnmatch_names = {"fnmatch.fnmatch", "fnmatch"}
        candidates: List[ast.FunctionDef] = []
        for node in tree.body:  # type: ignore[union-attr]
            if not isinstance(node, _FUNC):
                continue
            loops = [n for n in walk_no_nested(node) if isinstance(n, (ast.For, ast.While))]
            has_continue = any(isinstance(n, ast.Continue) for l in loops for n in ast.walk(l))
            has_product = any(isinstance(n, ast.Call) and (dotted(n.func) or "").endswith("product")
                              for n in walk_no_nested(node))
            if loops and (has_continue or has_product):
                candidates.append(node)  # type: ignore[arg-type]
        named = [f for f in candidates if "blob" in f.name.lower()
                 and not re.match(r"^(write|list)_", f.name)]
        self.blob_functions = named or candidates
        if not self.blob_functions:
            self.gaps.append(Gap("blob functions", self.rel,
                                 "no module-level function enumerating kernels (loops with continue/product)"))
        for fn in self.blob_functions:
            self.facts.enumeration.functions[fn.name] = self.where(fn)
            for params in _function_params(fn):
                if "receipt" in params.lower():
                    self.receipt_names.add(params)
        if self.blob_functions and not self.receipt_names:
            self.gaps.append(Gap("receipt parameter", self.rel,
                                 "no blob-function parameter whose name contains 'receipt'"))
        # helpers: nested functions of blob functions and loop-bearing factory/pipeline methods
        for fn in self.blob_functions:
            for n in walk_no_nested(fn):
                if isinstance(n, _FUNC):
                    self.helper_functions.append((n, fn.name))  # type: ignore[arg-type]
        for node in tree.body:  # type: ignore[union-attr]
            if isinstance(node, ast.ClassDef):
                info = self.class_infos.get(node.name)
                if info is not None and info.is_dataclass:
                    continue
                if "pool" in node.name.lower():
                    continue
                for stmt in node.body:
                    if isinstance(stmt, _FUNC) and any(isinstance(n, (ast.For, ast.While))
                                                       for n in walk_no_nested(stmt)):
                        self.helper_functions.append((stmt, node.name))  # type: ignore[arg-type]
        for fn, owner in self.helper_functions:
            label = f"{owner}.{fn.name}"
            self.facts.enumeration.helpers[label] = self.where(fn)

    # ---- factories ------------------------------------------------------------------

    def _tile_method(self, fn: ast.AST) -> bool:
        for n in ast.walk(fn):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in self.tile_names:
                return True
        return False

    def _mro(self, name: str) -> List[str]:
        out: List[str] = []

        def visit(n: str) -> None:
            if n in out or n not in self.u.classes:
                return
            out.append(n)
            for b in self.u.classes[n][1].bases:
                bn = dotted(b)
                if bn:
                    visit(bn.split(".")[-1])

        visit(name)
        return out

    def collect_factories(self) -> None:
        main_classes = [n for n in self.pm.tree.body if isinstance(n, ast.ClassDef)]  # type: ignore[union-attr]
        factory_classes: List[str] = []
        for node in main_classes:
            info = self.class_infos.get(node.name)
            if info is None or info.is_dataclass:
                continue
            has_tiles = any(isinstance(s, _FUNC) and self._tile_method(s) for s in node.body)
            if "factory" in node.name.lower() or has_tiles:
                factory_classes.append(node.name)
        # bases of factories that are local classes
        for name in list(factory_classes):
            for b in self._mro(name)[1:]:
                info = self.class_infos.get(b)
                if b not in factory_classes and info is not None and not info.is_dataclass:
                    factory_classes.append(b)
        selected = self._selected_by()
        interp = self.u.interpreter()
        tables: List[FactoryTable] = []
        factories: List[Factory] = []
        if factory_classes:
            for name in factory_classes:
                pm, node = self.u.classes[name]
                fac = Factory(class_name=name, bases=[segment(pm, b) for b in node.bases],
                              defined_at=pm.where(node), selected_by=selected.get(name, ""))
                fac.arch = self._arch_of(name, interp)
                methods = self._tile_methods_of(name)
                first = True
                for mname, owner in methods:
                    mpm, mnode = self.u.classes[owner]
                    fn = _member(mnode, mname)
                    if fn is None:
                        continue
                    table = self._evaluate_table(interp, name, mname, fn, mpm, is_method=True)
                    tables.append(table)
                    if first:
                        fac.tiles = table.tiles
                        fac.dtypes = list(table.supported)
                        fac.unsupported_dtypes = list(table.unsupported)
                        first = False
                factories.append(fac)
        else:
            for fname, (fpm, fn) in self.u.functions.items():
                if fn in self.blob_functions or not self._tile_method(fn):
                    continue
                got = self.u.origin_of(fname)
                if got is None or got[1] is not fn:
                    continue  # not visible in the analysed module
                fac = Factory(class_name=fname, defined_at=fpm.where(fn),
                              selected_by=selected.get(fname, ""))
                table = self._evaluate_table(interp, fname, fname, fn, fpm, is_method=False)
                tables.append(table)
                fac.tiles, fac.dtypes, fac.unsupported_dtypes = table.tiles, table.supported, table.unsupported
                factories.append(fac)
        self.facts.factories = factories
        self.facts.factory_tables = tables
        self.factory_names = [f.class_name for f in factories]
        self.facts.has_arch_factories = any(f.arch for f in factories)
        if not factories:
            self.gaps.append(Gap("factories", self.rel,
                                 "no factory class or tile-table function was found"))
        elif not self.facts.has_arch_factories:
            self.facts.notes.append({
                "what": "no per-arch factories",
                "where": self.rel,
                "detail": "tile tables come from " + ", ".join(f.class_name for f in factories)
                          + "; none carries an architecture",
            })

    def _tile_methods_of(self, cls_name: str) -> List[Tuple[str, str]]:
        seen: Dict[str, str] = {}
        order: List[str] = []
        for owner in self._mro(cls_name):
            node = self.u.classes[owner][1]
            for stmt in node.body:
                if isinstance(stmt, _FUNC) and stmt.name not in seen:
                    seen[stmt.name] = owner
                    order.append(stmt.name)
        out = []
        for mname in order:
            owner = seen[mname]
            fn = _member(self.u.classes[owner][1], mname)
            if fn is not None and self._tile_method_deep(fn, set()):
                out.append((mname, owner))
        return out

    def _tile_method_deep(self, fn: ast.FunctionDef, visited: Set[int]) -> bool:
        if id(fn) in visited:
            return False
        visited.add(id(fn))
        if self._tile_method(fn):
            return True
        for n in ast.walk(fn):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name):
                owner = n.func.value.id
                if owner in self.u.classes:
                    sub = _member(self.u.classes[owner][1], n.func.attr)
                    if sub is not None and self._tile_method_deep(sub, visited):
                        return True
        return False

    def _arch_of(self, cls_name: str, interp: Interpreter) -> str:
        for owner in self._mro(cls_name):
            pm, node = self.u.classes[owner]
            candidates: List[Tuple[str, ast.AST]] = []
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
                    for t in stmt.targets:
                        if isinstance(t, ast.Name):
                            candidates.append((t.id, stmt.value))
            candidates.sort(key=lambda c: 0 if "arch" in c[0].lower() else 1)
            for _, call in candidates:
                if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                    return call.args[0].value
                for kw in call.keywords:
                    if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                        return str(kw.value.value)
        return ""

    def _selected_by(self) -> Dict[str, str]:
        """Conditions under which a factory class/function is chosen."""
        out: Dict[str, List[str]] = {}
        known = set(self.u.classes) | set(self.u.functions)
        parents = self.pm.parents  # type: ignore[union-attr]
        for node in ast.walk(self.pm.tree):  # type: ignore[union-attr, arg-type]
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Name) and node.value.id in self.u.classes:
                conds: List[str] = []
                child: ast.AST = node
                cur = parents.get(node)
                while cur is not None and not isinstance(cur, _FUNC):
                    if isinstance(cur, ast.If):
                        text = self.seg(cur.test)
                        conds.append(text if child in cur.body else f"not ({text})")
                    child, cur = cur, parents.get(cur)
                out.setdefault(node.value.id, []).append(" and ".join(reversed(conds)) or "default")
            elif isinstance(node, ast.IfExp):
                for branch, neg in ((node.body, False), (node.orelse, True)):
                    if isinstance(branch, ast.Name) and branch.id in known:
                        text = self.seg(node.test)
                        out.setdefault(branch.id, []).append(f"not ({text})" if neg else text)
        return {k: " or ".join(dict.fromkeys(v)) for k, v in out.items()}

    def _hdim_field(self) -> Optional[str]:
        """Field of a tile giving the head dim when tile tables are plain lists (heuristic)."""
        for fn in self.blob_functions:
            for n in ast.walk(fn):
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                        and "hdim" in n.targets[0].id.lower() and isinstance(n.value, ast.Attribute) \
                        and isinstance(n.value.value, ast.Name):
                    return n.value.attr
        return None

    def _call_sites(self, method: str) -> List[Tuple[ast.FunctionDef, ast.Call]]:
        out = []
        for fn in self.blob_functions:
            for n in ast.walk(fn):
                if isinstance(n, ast.Call):
                    f = n.func
                    name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
                    if name == method:
                        out.append((fn, n))
        return out

    def _loop_axis(self, fn: ast.FunctionDef, var: str) -> Optional[ast.AST]:
        for n in ast.walk(fn):
            if not isinstance(n, ast.For):
                continue
            targets = self._flat_targets(n.target)
            it = n.iter
            if isinstance(it, ast.Call) and (dotted(it.func) or "").endswith("product"):
                axes = self._expand_axes(it.args)
                if len(axes) == len(targets):
                    for t, a in zip(targets, axes):
                        if isinstance(t, ast.Name) and t.id == var:
                            return a
            elif len(targets) == 1 and isinstance(targets[0], ast.Name) and targets[0].id == var:
                return it
        return None

    @staticmethod
    def _flat_targets(target: ast.AST) -> List[ast.AST]:
        if isinstance(target, (ast.Tuple, ast.List)):
            return list(target.elts)
        return [target]

    @staticmethod
    def _expand_axes(args: Sequence[ast.AST]) -> List[ast.AST]:
        out: List[ast.AST] = []
        for a in args:
            if isinstance(a, ast.Starred):
                v = a.value
                if isinstance(v, ast.BinOp) and isinstance(v.op, ast.Mult) and isinstance(v.left, ast.List) \
                        and isinstance(v.right, ast.Constant) and isinstance(v.right.value, int):
                    out.extend(list(v.left.elts) * v.right.value)
                    continue
                if isinstance(v, (ast.List, ast.Tuple)):
                    out.extend(v.elts)
                    continue
            out.append(a)
        return out

    def _candidate_values(self, interp: Interpreter, fn_name: str, position: int, param: str,
                          method_nodes: List[ast.AST], enumerated: Optional[List[Any]] = None) -> List[Any]:
        values: List[Any] = enumerated if enumerated is not None else []
        for bfn, call in self._call_sites(fn_name):
            if position < len(call.args) and isinstance(call.args[position], ast.Name):
                axis = self._loop_axis(bfn, call.args[position].id)
                if axis is not None:
                    try:
                        got = list(interp.eval(axis, {}))
                        values.extend(v for v in got if v not in values)
                    except (Unknown, TypeError):
                        pass
        for mnode in method_nodes:
            for n in ast.walk(mnode):
                if isinstance(n, ast.Compare):
                    sides = [n.left] + list(n.comparators)
                    if any(isinstance(s, ast.Name) and s.id == param for s in sides):
                        for s in sides:
                            if isinstance(s, ast.Constant) and s.value not in values:
                                values.append(s.value)
                            elif isinstance(s, (ast.List, ast.Tuple, ast.Set)):
                                for e in s.elts:
                                    if isinstance(e, ast.Constant) and e.value not in values:
                                        values.append(e.value)
        return values

    def _related_methods(self, fn: ast.FunctionDef) -> List[ast.AST]:
        out: List[ast.AST] = [fn]
        for n in ast.walk(fn):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                    and n.func.value.id in self.u.classes:
                sub = _member(self.u.classes[n.func.value.id][1], n.func.attr)
                if sub is not None and sub not in out:
                    out.append(sub)
        return out

    def _render_tile(self, interp: Interpreter, obj: Obj) -> str:
        if obj.class_name in self.tile_names:
            try:
                name = interp.get_field(obj, "name")
                if isinstance(name, str):
                    return name
            except Unknown:
                pass
        return obj.source

    def _evaluate_table(self, interp: Interpreter, owner: str, method: str, fn: ast.FunctionDef,
                        pm: ParsedModule, is_method: bool) -> FactoryTable:
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        decos = _decorators(fn)
        if is_method and "staticmethod" not in decos and "classmethod" not in decos and params:
            params = params[1:]
        table = FactoryTable(factory=owner, method=method, defined_at=pm.where(fn))
        if not params:
            self.gaps.append(Gap(f"tile table {owner}.{method}", pm.where(fn), "method takes no dtype parameter"))
            return table
        dtype_param = next((p for p in params if "dtype" in p.lower()), params[0])
        table.dtype_parameter = dtype_param
        others = [p for p in params if p != dtype_param]
        table.qualifiers = others
        related = self._related_methods(fn)
        enumerated: List[Any] = []
        self._candidate_values(interp, method, params.index(dtype_param), dtype_param, [], enumerated)
        enumerated = list(enumerated)
        dtypes = self._candidate_values(interp, method, params.index(dtype_param), dtype_param, related)
        dtypes = [d for d in dtypes if isinstance(d, str)]
        other_values: List[List[Any]] = []
        for p in others:
            vals = self._candidate_values(interp, method, params.index(p), p, related)
            if not vals:
                other_values.append([None])
            else:
                other_values.append(vals)
        hdim_field = self._hdim_field()
        combos = list(itertools.product(*other_values)) if others else [()]
        for dtype in dtypes:
            per_combo: List[Tuple[Tuple[Any, ...], Dict[str, List[Obj]], Dict[str, List[str]]]] = []
            failed = False
            for combo in combos:
                args = {dtype_param: dtype}
                args.update({p: v for p, v in zip(others, combo)})
                interp.steps = 0
                try:
                    if is_method:
                        result = interp.call_function(fn, [], args, self_obj=self._class_ref(owner)
                                                      if "staticmethod" not in decos else None)
                    else:
                        result = interp.call_function(fn, [], args)
                except Unknown as exc:
                    self.gaps.append(Gap(f"tile table {owner}.{method}({dtype!r}"
                                         + "".join(f", {p}={v!r}" for p, v in zip(others, combo)) + ")",
                                         pm.where(fn), f"cannot be evaluated statically: {exc}"))
                    failed = True
                    continue
                tiles, calls = self._normalise_table(interp, result, hdim_field)
                per_combo.append((combo, tiles, calls))
            non_empty = [(c, t, k) for c, t, k in per_combo if t]
            if non_empty:
                table.supported.append(dtype)
                rendered_sets = {repr({h: [self._render_tile(interp, o) for o in v] for h, v in t.items()})
                                 for _, t, _ in non_empty}
                qualify = bool(others) and (len(rendered_sets) > 1 or len(non_empty) < len(per_combo))
                tiles_out: Dict[str, List[str]] = {}
                calls_out: Dict[str, List[str]] = {}
                for combo, tiles, calls in non_empty:
                    suffix = ""
                    if qualify:
                        suffix = " [" + ", ".join(f"{p}={v}" for p, v in zip(others, combo)) + "]"
                    for h, objs in tiles.items():
                        key = h + suffix
                        tiles_out.setdefault(key, [])
                        for o in objs:
                            r = self._render_tile(interp, o)
                            if r not in tiles_out[key]:
                                tiles_out[key].append(r)
                    for h, srcs in calls.items():
                        key = h + suffix
                        calls_out.setdefault(key, [])
                        for s in srcs:
                            if s not in calls_out[key]:
                                calls_out[key].append(s)
                table.tiles[dtype] = tiles_out
                table.calls[dtype] = calls_out
            elif not failed:
                table.unsupported.append(dtype)
        if not dtypes:
            self.gaps.append(Gap(f"tile table {owner}.{method}", pm.where(fn),
                                 "no candidate data types found (no dtype loop feeding it, no comparisons)"))
        label = owner if owner == method else f"{owner}.{method}"
        if enumerated:
            extra = [d for d in table.supported if d not in enumerated]
            if extra:
                self.facts.notes.append({
                    "what": f"{label} has tiles for data types that are never enumerated",
                    "where": pm.where(fn),
                    "detail": f"{', '.join(extra)} not in the enumerated data types ({', '.join(map(str, enumerated))})",
                })
        else:
            self.gaps.append(Gap(f"enumerated data types for {owner}.{method}", pm.where(fn),
                                 "the loop feeding the data type argument could not be evaluated; "
                                 "data types come from comparisons only"))
        return table

    def _class_ref(self, name: str) -> Any:
        from .pysource import _ClassRef  # local import: private helper type

        return _ClassRef(name)

    def _normalise_table(self, interp: Interpreter, result: Any,
                         hdim_field: Optional[str]) -> Tuple[Dict[str, List[Obj]], Dict[str, List[str]]]:
        tiles: Dict[str, List[Obj]] = {}
        calls: Dict[str, List[str]] = {}
        if result is None:
            return tiles, calls

        def add(key: str, value: Any) -> None:
            items = value if isinstance(value, (list, tuple)) else [value]
            objs = [v for v in items if isinstance(v, Obj)]
            if objs:
                tiles.setdefault(key, []).extend(objs)
            calls.setdefault(key, []).extend(
                v.source if isinstance(v, Obj) else repr(v) for v in items)

        if isinstance(result, dict):
            for k, v in result.items():
                add(_key_text(k), v)
        elif isinstance(result, (list, tuple)):
            if result and not hdim_field and not self._warned_hdim:
                self._warned_hdim = True
                self.gaps.append(Gap("head dim of list-shaped tile tables", self.rel,
                                     "no 'hdim = <tile>.<field>' assignment in the blob functions; "
                                     "tiles are listed under '*'"))
            for v in result:
                key = "*"
                if isinstance(v, Obj) and hdim_field:
                    try:
                        key = _key_text(interp.get_field(v, hdim_field))
                    except Unknown:
                        key = "*"
                add(key, v)
        elif isinstance(result, Obj):
            add("*", result)
        return tiles, calls

    # ---- enumeration ----------------------------------------------------------------

    def _loop_functions(self) -> List[Tuple[ast.FunctionDef, str]]:
        out = [(fn, fn.name) for fn in self.blob_functions]
        out += [(fn, f"{owner}.{fn.name}") for fn, owner in self.helper_functions]
        return out

    def collect_enumeration(self) -> None:
        for fn, label in self._loop_functions():
            local_assigns: Dict[str, ast.AST] = {}
            for n in walk_no_nested(fn):
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                    local_assigns[n.targets[0].id] = n.value
            for n in walk_no_nested(fn):
                if not isinstance(n, ast.For):
                    continue
                it = n.iter
                targets = [self.seg(t) for t in self._flat_targets(n.target)]
                if isinstance(it, ast.Call) and (dotted(it.func) or "").endswith("product"):
                    axes_nodes = self._expand_axes(it.args)
                    axes = [self.seg(a) for a in axes_nodes]
                    resolved = []
                    for a in axes_nodes:
                        if isinstance(a, ast.Name) and a.id in local_assigns:
                            resolved.append(self.seg(local_assigns[a.id]))
                        else:
                            resolved.append(self.seg(a))
                    info = LoopInfo(label, "product", targets, axes, resolved, self.seg(it), self.where(n))
                    if len(targets) != len(axes):
                        self.gaps.append(Gap(f"product axes of {label}", self.where(n),
                                             f"{len(targets)} loop targets but {len(axes)} axes"))
                else:
                    src = self.seg(it)
                    resolved = src
                    if isinstance(it, ast.Name) and it.id in local_assigns:
                        resolved = self.seg(local_assigns[it.id])
                    info = LoopInfo(label, "for", targets, [src], [resolved], src, self.where(n))
                self.facts.enumeration.loops.append(info)

    # ---- skip conditions ------------------------------------------------------------

    def _if_chain(self, node: ast.AST, stop: ast.AST) -> List[Tuple[ast.If, bool]]:
        """Enclosing ``if`` statements between ``stop`` and ``node`` (outer first)."""
        parents = self.pm.parents  # type: ignore[union-attr]
        chain: List[Tuple[ast.If, bool]] = []
        child = node
        cur = parents.get(node)
        while cur is not None and cur is not stop:
            if isinstance(cur, ast.If):
                chain.append((cur, child in cur.body))
            child, cur = cur, parents.get(cur)
        return list(reversed(chain))

    def _innermost_loop(self, node: ast.AST, fn: ast.AST) -> Optional[ast.AST]:
        parents = self.pm.parents  # type: ignore[union-attr]
        cur = parents.get(node)
        while cur is not None and cur is not fn:
            if isinstance(cur, (ast.For, ast.While)):
                return cur
            cur = parents.get(cur)
        return None

    def _mentions(self, node: ast.AST, names: Set[str]) -> bool:
        return bool(_names_in(node) & names)

    def _combined(self, conds: List[Tuple[ast.AST, bool]]) -> Tuple[str, ast.AST]:
        parts = []
        nodes: List[ast.AST] = []
        for test, positive in conds:
            text = self.seg(test)
            if positive:
                parts.append(_wrap(text, test) if len(conds) > 1 else text)
                nodes.append(test)
            else:
                parts.append(f"not ({text})")
                nodes.append(ast.UnaryOp(op=ast.Not(), operand=test))
        node = nodes[0] if len(nodes) == 1 else ast.BoolOp(op=ast.And(), values=nodes)
        return " and ".join(parts), node

    def _skip_reading(self, node: ast.AST) -> str:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return "skipped unless " + read_condition(node.operand)
        return "skipped when " + read_condition(node)

    def collect_skip_conditions(self) -> None:
        seen: Set[Tuple[str, str]] = set()
        for fn, label in self._loop_functions():
            params = set(_function_params(fn))
            loop_vars: Set[str] = set()
            for n in walk_no_nested(fn):
                if isinstance(n, (ast.For, ast.comprehension)):
                    loop_vars |= _names_in(n.target)
                elif isinstance(n, ast.Assign):
                    for t in n.targets:
                        loop_vars |= _names_in(t)
            options = params - loop_vars - self.receipt_names
            for n in walk_no_nested(fn):
                if isinstance(n, ast.Continue):
                    loop = self._innermost_loop(n, fn)
                    if loop is None:
                        continue
                    chain = self._if_chain(n, loop)
                    if not chain:
                        self.facts.skip_conditions.append(SkipCondition(
                            "", "always skipped (unconditional continue)", self.where(n), "continue"))
                        continue
                    tests = [t.test for t, _ in chain]
                    if any(_is_fnmatch_call(x, self.fnmatch_names) for t in tests for x in ast.walk(t)):
                        continue  # kernel filter: reported in filter_source
                    if any(self._mentions(t, self.receipt_names) for t in tests):
                        continue  # receipt blocks: reported in receipts
                    if self._in_receipt_block(n, fn):
                        continue
                    conds = [(t.test, pos) for t, pos in chain]
                    source, node = self._combined(conds)
                    kind = "continue"
                    names = set().union(*(_names_in(t) for t in tests))
                    if names & options:
                        kind = "option"
                    last = tests[-1]
                    if isinstance(last, ast.Compare) and len(last.ops) == 1 and isinstance(
                            last.comparators[0], ast.Constant) and last.comparators[0].value is None:
                        kind = "unsupported"
                    where = self.where(chain[-1][0])
                    key = (where, source)
                    if key in seen:
                        continue
                    seen.add(key)
                    self.facts.skip_conditions.append(SkipCondition(source, self._skip_reading(node), where, kind))
                    ctx = {"function": label}
                    comment = self._comment_near(chain[-1][0], n)
                    if comment:
                        ctx["comment"] = comment
                    self.facts.skip_context[where] = ctx
                elif isinstance(n, ast.Assert) and self._innermost_loop(n, fn) is not None:
                    text = self.seg(n.test)
                    msg = fold_str(n.msg) if n.msg is not None else None
                    reading = "requires " + read_condition(n.test) + (f" ({msg})" if msg else "")
                    self.facts.skip_conditions.append(SkipCondition(text, reading, self.where(n), "assert"))
                    self.facts.skip_context[self.where(n)] = {"function": label}
        self._collect_rules()
        self._collect_dispatch_skips()

        def line_of(sc: SkipCondition) -> Tuple[str, int]:
            path, _, line = sc.where.rpartition(":")
            return (path, int(line)) if line.isdigit() else (sc.where, 0)

        self.facts.skip_conditions.sort(key=line_of)

    def _in_receipt_block(self, node: ast.AST, fn: ast.AST) -> bool:
        parents = self.pm.parents  # type: ignore[union-attr]
        cur = parents.get(node)
        while cur is not None and cur is not fn:
            if isinstance(cur, ast.If) and self._mentions(cur.test, self.receipt_names):
                return True
            cur = parents.get(cur)
        return False

    def _comment_near(self, if_node: ast.If, cont: ast.AST) -> str:
        pm = self.pm
        assert pm is not None
        texts: List[str] = []
        for line in range(if_node.lineno, (getattr(cont, "end_lineno", None) or cont.lineno) + 1):
            c = pm.comment_at(line)
            if c:
                texts.append(c)
        texts = pm.comments_above(if_node.lineno) + texts
        return " ".join(t for t in texts if t)

    def _collect_rules(self) -> None:
        for info in self.facts.classes:
            if "rule" not in info.name.lower():
                continue
            pm, node = self.u.classes[info.name]
            checks = [s for s in node.body if isinstance(s, _FUNC)
                      and not s.name.startswith("__")]
            parts = []
            for s in checks:
                rets = [r for r in ast.walk(s) if isinstance(r, ast.Return) and r.value is not None]
                if rets:
                    parts.append(f"{s.name}: " + " | ".join(segment(pm, r.value) for r in rets))
            uses = [self.where(c) for c in _calls_named(self.pm.tree, {info.name})]  # type: ignore[arg-type]
            reading = f"rule object {info.name}"
            if info.docstring:
                reading += f": {info.docstring.splitlines()[0]}"
            if uses:
                reading += f" (used at {', '.join(uses)})"
            self.facts.skip_conditions.append(SkipCondition(
                "; ".join(parts) or info.name, reading, info.defined_at, "rule"))

    def _pool_class(self) -> Optional[ast.ClassDef]:
        classes = [n for n in self.pm.tree.body if isinstance(n, ast.ClassDef)]  # type: ignore[union-attr]
        for c in classes:
            if "apipool" in c.name.lower():
                return c
        for c in classes:
            if any(isinstance(s, _FUNC) and s.name.startswith("register") for s in c.body):
                return c
        for c in classes:
            if "pool" in c.name.lower():
                return c
        return None

    def _dispatch_method(self, pool: ast.ClassDef) -> Optional[ast.FunctionDef]:
        props = [s for s in pool.body if isinstance(s, _FUNC)]
        for s in props:
            if s.name == "api" and "property" in _decorators(s):
                return s  # type: ignore[return-value]
        for s in props:
            if s.name == "render":
                return s  # type: ignore[return-value]
        for s in props:
            if any(isinstance(n, ast.For) for n in walk_no_nested(s)) and any(
                    isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "format"
                    for n in ast.walk(s)):
                return s  # type: ignore[return-value]
        return None

    def _collect_dispatch_skips(self) -> None:
        pool = self._pool_class()
        if pool is None:
            return
        for s in pool.body:
            if not isinstance(s, _FUNC):
                continue
            for n in walk_no_nested(s):
                if isinstance(n, ast.Continue):
                    loop = self._innermost_loop(n, s)
                    chain = self._if_chain(n, loop) if loop is not None else []
                    if not chain:
                        continue
                    source, node = self._combined([(t.test, pos) for t, pos in chain])
                    reading = self._skip_reading(node).replace("skipped", "not dispatched", 1)
                    self.facts.skip_conditions.append(SkipCondition(
                        source, reading, self.where(chain[-1][0]), "dispatch"))
                    self.facts.skip_context[self.where(chain[-1][0])] = {"function": f"{pool.name}.{s.name}"}

    # ---- receipts -------------------------------------------------------------------

    def _receipt_labels(self) -> List[Tuple[int, int, str, str]]:
        """(lo, hi, label, where) from generate.py's ``--receipt`` help text."""
        out: List[Tuple[int, int, str, str]] = []
        files = [self.root / "generate.py"] + sorted(p for p in self.root.glob("*.py") if p.name != "generate.py")
        for path in files:
            if not path.is_file():
                continue
            pm = parse_module(path, self.root)
            if pm.tree is None:
                continue
            for n in ast.walk(pm.tree):
                if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                        and n.func.attr == "add_argument"):
                    continue
                flags = [a.value for a in n.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                dest = next((kw.value.value for kw in n.keywords if kw.arg == "dest"
                             and isinstance(kw.value, ast.Constant)), "")
                if not any("receipt" in f for f in flags) and "receipt" not in str(dest):
                    continue
                help_node = next((kw.value for kw in n.keywords if kw.arg == "help"), None)
                text = fold_str(help_node) if help_node is not None else None
                if text is None:
                    self.gaps.append(Gap("receipt labels", pm.where(n), "help text is not a constant string"))
                    continue
                for line in text.split("\n"):
                    for m in re.finditer(r"(\d+)\s*(?:-\s*(\d+))?\s*:\s*([^\n]+?)\s*$", line):
                        lo = int(m.group(1))
                        hi = int(m.group(2)) if m.group(2) else lo
                        out.append((lo, hi, m.group(3).strip(), pm.where(n)))
            if out:
                return out
        self.gaps.append(Gap("receipt labels", (self.root / "generate.py").name,
                             "no --receipt help text found"))
        return out

    def _label_for(self, value: str, labels: List[Tuple[int, int, str, str]]) -> str:
        m = re.match(r"^(\d+)(?:-(\d+))?$", value)
        if not m:
            return ""
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        exact = [l for l in labels if l[0] == lo and l[1] == hi]
        if exact:
            return exact[0][2]
        inside = [l for l in labels if l[0] <= lo and hi <= l[1]]
        return inside[0][2] if inside else ""

    def _receipt_values(self, test: ast.AST) -> Tuple[List[str], List[ast.AST]]:
        """Receipt values selected by ``test`` and the other AND-ed conjuncts."""
        values: List[str] = []
        others: List[ast.AST] = []
        conjuncts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        lo: Optional[int] = None
        hi: Optional[int] = None
        for c in conjuncts:
            if not self._mentions(c, self.receipt_names):
                others.append(c)
                continue
            alts = c.values if isinstance(c, ast.BoolOp) and isinstance(c.op, ast.Or) else [c]
            for a in alts:
                if not isinstance(a, ast.Compare):
                    values.append(self.seg(a))
                    continue
                items = [a.left] + list(a.comparators)
                for (l, op, r) in zip(items, a.ops, items[1:]):
                    rec_left = isinstance(l, ast.Name) and l.id in self.receipt_names
                    rec_right = isinstance(r, ast.Name) and r.id in self.receipt_names
                    other = r if rec_left else (l if rec_right else None)
                    if other is None:
                        continue
                    if isinstance(op, ast.Eq) and isinstance(other, ast.Constant):
                        values.append(str(other.value))
                    elif isinstance(op, ast.In) and isinstance(other, (ast.Tuple, ast.List, ast.Set)):
                        values.extend(str(e.value) for e in other.elts if isinstance(e, ast.Constant))
                    elif isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) and isinstance(other, ast.Constant) \
                            and isinstance(other.value, int):
                        v = other.value
                        # normalise to "receipt OP v"
                        if rec_right:
                            op = {ast.Lt: ast.Gt(), ast.LtE: ast.GtE(), ast.Gt: ast.Lt(), ast.GtE: ast.LtE()}[type(op)]
                        if isinstance(op, ast.Gt):
                            lo = v + 1
                        elif isinstance(op, ast.GtE):
                            lo = v
                        elif isinstance(op, ast.Lt):
                            hi = v - 1
                        elif isinstance(op, ast.LtE):
                            hi = v
                    else:
                        values.append(self.seg(a))
        if lo is not None or hi is not None:
            values.append(f"{lo if lo is not None else ''}-{hi if hi is not None else ''}")
        return values, others

    def _branch_conditions(self, body: Sequence[ast.stmt]) -> Tuple[List[str], List[str], List[str], List[str]]:
        """(keep conditions, drop conditions, keep readings + drop readings, effects)."""
        keep: List[str] = []
        keep_read: List[str] = []
        drop: List[str] = []
        drop_read: List[str] = []
        effects: List[str] = []
        cond_vars: Set[str] = set()

        def visit(stmts: Sequence[ast.stmt], guard: Optional[ast.AST]) -> None:
            for s in stmts:
                if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) \
                        and not isinstance(s.value, (ast.Call, ast.ListComp, ast.Dict, ast.List)):
                    cond_vars.add(s.targets[0].id)
                    add_keep(s.value, guard)
                elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) \
                        and isinstance(s.op, (ast.BitAnd,)) and s.target.id in cond_vars:
                    add_keep(s.value, guard)
                elif isinstance(s, ast.If):
                    conts = [x for x in s.body if isinstance(x, ast.Continue)]
                    if conts and len(s.body) == 1:
                        t = s.test
                        if isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not) and isinstance(
                                t.operand, ast.Name) and t.operand.id in cond_vars:
                            continue  # ``if not cond: continue``
                        text = self.seg(t)
                        if guard is not None:
                            text = f"{text} (when {self.seg(guard)})"
                        drop.append(f"not ({text})")
                        rd = read_condition(t)
                        if guard is not None:
                            rd += f" when {read_condition(guard)}"
                        drop_read.append(rd)
                    else:
                        g = s.test if guard is None else ast.BoolOp(op=ast.And(), values=[guard, s.test])
                        visit(s.body, g)
                        if s.orelse:
                            ng = ast.UnaryOp(op=ast.Not(), operand=s.test)
                            visit(s.orelse, ng if guard is None else ast.BoolOp(op=ast.And(), values=[guard, ng]))
                elif isinstance(s, (ast.Pass,)):
                    continue
                elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
                    continue
                else:
                    effects.append(self.seg(s))

        def add_keep(expr: ast.AST, guard: Optional[ast.AST]) -> None:
            text = self.seg(expr)
            rd = read_condition(expr)
            if guard is not None:
                text = f"{text} (when {self.seg(guard)})"
                rd = f"{rd} when {read_condition(guard)}"
            keep.append(text)
            keep_read.append(rd)

        visit(body, None)
        conditions = keep + drop
        readings: List[str] = []
        if keep_read:
            readings.append("keeps only kernels where " + "; ".join(keep_read))
        if drop_read:
            readings.append("drops kernels where " + "; ".join(drop_read))
        return conditions, readings, effects, []

    def collect_receipts(self) -> None:
        labels = self._receipt_labels()
        referenced: Set[str] = set()
        funcs = self._loop_functions()
        for fn, label in funcs:
            # closure: nested helpers see the enclosing function's receipt parameter
            names_here = set(_function_params(fn)) | _names_in(fn)
            if not (names_here & self.receipt_names):
                continue
            parents = self.pm.parents  # type: ignore[union-attr]
            for n in walk_no_nested(fn):
                if not isinstance(n, ast.If) or not self._mentions(n.test, self.receipt_names):
                    continue
                parent = parents.get(n)
                if isinstance(parent, ast.If) and parent.orelse == [n] and self._mentions(parent.test, self.receipt_names):
                    continue  # an elif: handled with its chain head
                chain_values: List[str] = []
                cur: Optional[ast.If] = n
                while cur is not None:
                    values, others = self._receipt_values(cur.test)
                    chain_values.extend(values)
                    conditions, readings, effects, _ = self._branch_conditions(cur.body)
                    extra = ""
                    if others:
                        extra = " and ".join(self.seg(o) for o in others)
                    if len(cur.body) == 1 and isinstance(cur.body[0], ast.Continue):
                        # ``if receipt == N and <cond>: continue``: a drop rule
                        conditions = [f"not ({extra})"] if extra else ["drops every kernel"]
                        readings = ["drops kernels where " + " and ".join(read_condition(o) for o in others)
                                    if others else "drops every kernel"]
                        effects, others, extra = [], [], ""
                    comment = " ".join(self.pm.comments_above(cur.lineno)) or \
                        " ".join(self.pm.comments_above(cur.body[0].lineno))  # type: ignore[union-attr]
                    for v in values or ["?"]:
                        referenced.add(v)
                        self.facts.receipts.append(self._make_receipt(
                            v, labels, comment, conditions, readings, effects, extra, others, label, cur))
                    if len(cur.orelse) == 1 and isinstance(cur.orelse[0], ast.If) \
                            and self._mentions(cur.orelse[0].test, self.receipt_names):
                        cur = cur.orelse[0]
                        continue
                    if cur.orelse:
                        conditions, readings, effects, _ = self._branch_conditions(cur.orelse)
                        first = cur.orelse[0]
                        comment = " ".join(self.pm.comments_above(first.lineno))  # type: ignore[union-attr]
                        if not comment:
                            comment = self.pm.comment_at(first.lineno)  # type: ignore[union-attr]
                        others_txt = ", ".join(dict.fromkeys(chain_values))
                        reading_head = f"any receipt other than {others_txt}"
                        body = "; ".join(readings) or (
                            "runs " + "; ".join(effects) if effects else "no restriction")
                        self.facts.receipts.append(Receipt(
                            value="other", label=comment,
                            conditions=conditions,
                            reading=f"{reading_head}: {body} (in {label})",
                            where=self.where(first)))
                    cur = None
        # receipts defined as rule objects (``get_product(receipt)``), see rule_receipts
        for receipt in rule_object_receipts(
                self.pm.tree, self.receipt_names, lambda v: self._label_for(v, labels), self.where,  # type: ignore[arg-type]
                lambda line: " ".join(self.pm.comments_above(line))):  # type: ignore[union-attr]
            referenced.add(receipt.value)
            self.facts.receipts.append(receipt)
        # help-text values (and ranges) that this module never tests
        for lo, hi, text, where in labels:
            if lo != hi:
                if not any(_overlaps(v, lo, hi) for v in referenced):
                    self.facts.receipts.append(Receipt(
                        value="%d-%d" % (lo, hi), label=text, conditions=[],
                        reading="no value of this range is referenced in this module: only "
                                "conditions that apply to every receipt", where=where))
                continue
            if str(lo) not in referenced:
                self.facts.receipts.append(Receipt(
                    value=str(lo), label=text, conditions=[],
                    reading="not referenced in this module: only conditions that apply to every receipt",
                    where=where))

    def _make_receipt(self, value: str, labels: List[Tuple[int, int, str, str]], comment: str,
                      conditions: List[str], readings: List[str], effects: List[str], extra: str,
                      others: List[ast.AST], fn_label: str, node: ast.If) -> Receipt:
        label = self._label_for(value, labels) or comment
        parts = list(readings)
        if effects:
            parts.append("runs " + "; ".join(effects))
        reading = f"receipt {value}"
        if others:
            reading += " when " + " and ".join(read_condition(o) for o in others)
        reading += ": " + ("; ".join(parts) if parts else "no restriction")
        reading += f" (in {fn_label})"
        conds = list(conditions)
        if extra:
            conds = [f"(only when {extra})"] + conds
        return Receipt(value=value, label=label, conditions=conds, reading=reading, where=self.where(node))

    # ---- kernel filter --------------------------------------------------------------

    def collect_filter(self) -> None:
        fs = self.facts.filter_source
        tree = self.pm.tree  # type: ignore[union-attr]
        functions = [n for n in ast.walk(tree) if isinstance(n, _FUNC)]  # type: ignore[arg-type]
        split_vars: Dict[Tuple[str, str], str] = {}  # (function, var) -> separator
        for fn in functions:
            for n in walk_no_nested(fn):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "split" \
                        and n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str):
                    fs.lines.append(FilterLine("split", self.seg(self._stmt_of(n)), self.where(n), fn.name))
                    if fs.separator is None:
                        fs.separator = n.args[0].value
                    stmt = self._stmt_of(n)
                    if isinstance(stmt, ast.Assign):
                        for t in stmt.targets:
                            if isinstance(t, ast.Name):
                                split_vars[(fn.name, t.id)] = n.args[0].value
                elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "extend" \
                        and n.args and isinstance(n.args[0], ast.BinOp) and isinstance(n.args[0].op, ast.Mult):
                    lst = n.args[0].left
                    fs.lines.append(FilterLine("pad", self.seg(n), self.where(n), fn.name))
                    if isinstance(lst, ast.List) and len(lst.elts) == 1 and isinstance(lst.elts[0], ast.Constant):
                        fs.missing_becomes = lst.elts[0].value
                    cnt = n.args[0].right
                    if isinstance(cnt, ast.BinOp) and isinstance(cnt.left, ast.Constant):
                        fs.parts = cnt.left.value
                elif isinstance(n, ast.If) and isinstance(n.test, ast.Compare) and len(n.test.ops) == 1 \
                        and isinstance(n.test.ops[0], ast.Eq) and isinstance(n.test.comparators[0], ast.Constant) \
                        and n.test.comparators[0].value in ("", None) and len(n.body) == 1 \
                        and isinstance(n.body[0], ast.Assign) and isinstance(n.body[0].value, ast.Constant):
                    fs.lines.append(FilterLine("default", self.seg(n.test) + ": " + self.seg(n.body[0]),
                                               self.where(n), fn.name))
                    fs.empty_default = n.body[0].value.value
                elif _is_fnmatch_call(n, self.fnmatch_names):
                    self._filter_match(fn, n, split_vars, functions)
        if not fs.matches:
            self.gaps.append(Gap("kernel filter", self.rel, "no fnmatch call found"))

    def _stmt_of(self, node: ast.AST) -> ast.AST:
        parents = self.pm.parents  # type: ignore[union-attr]
        cur = node
        while cur in parents and not isinstance(cur, ast.stmt):
            cur = parents[cur]
        return cur

    def _filter_match(self, fn: ast.FunctionDef, call: ast.Call, split_vars: Dict[Tuple[str, str], str],
                      functions: List[ast.AST]) -> None:
        fs = self.facts.filter_source
        if len(call.args) < 2:
            return
        kexpr, pat = call.args[0], call.args[1]
        m = FilterMatch(function=fn.name, kernel_expr=self.seg(kexpr), pattern=self.seg(pat),
                        where=self.where(call))
        m.kernel_class = self._expr_class(kexpr.value if isinstance(kexpr, ast.Attribute) else kexpr, fn)
        parents = self.pm.parents  # type: ignore[union-attr]
        cur = parents.get(call)
        guards = []
        while cur is not None and cur is not fn:
            if isinstance(cur, ast.If) and not any(isinstance(x, ast.Call) and _is_fnmatch_call(x, self.fnmatch_names)
                                                   for x in ast.walk(cur.test)):
                guards.append(self.seg(cur.test))
            cur = parents.get(cur)
        m.guard = " and ".join(reversed(guards))
        if m.guard:
            fs.lines.append(FilterLine("guard", m.guard, self.where(call), fn.name))
        fs.lines.append(FilterLine("match", self.seg(self._stmt_of(call)), self.where(call), fn.name))
        idx, var, via = self._pattern_index(fn, pat, split_vars, functions)
        m.index, m.split_var, m.via = idx, var, via
        fs.matches.append(m)

    def _pattern_index(self, fn: ast.FunctionDef, pat: ast.AST, split_vars: Dict[Tuple[str, str], str],
                       functions: List[ast.AST]) -> Tuple[Optional[int], str, str]:
        def from_subscript(node: ast.AST, owner: str) -> Optional[Tuple[int, str]]:
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                    and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
                return node.slice.value, node.value.id
            return None

        got = from_subscript(pat, fn.name)
        if got:
            return got[0], got[1], "direct"
        if not isinstance(pat, ast.Name):
            return None, "", ""
        # local assignment  pattern = parts[i]
        for n in walk_no_nested(fn):
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == pat.id for t in n.targets):
                got = from_subscript(n.value, fn.name)
                if got:
                    return got[0], got[1], f"{pat.id} = {self.seg(n.value)}"
        # a parameter fed by callers with parts[i]
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        if pat.id in params:
            pos = params.index(pat.id)
            found: List[Tuple[int, str, str]] = []
            for other in functions:
                for n in walk_no_nested(other):
                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == fn.name:
                        arg = None
                        if pos < len(n.args):
                            arg = n.args[pos]
                        for kw in n.keywords:
                            if kw.arg == pat.id:
                                arg = kw.value
                        if arg is None:
                            continue
                        sub = from_subscript(arg, other.name)  # type: ignore[attr-defined]
                        if sub:
                            found.append((sub[0], sub[1], f"{other.name}() passes {self.seg(arg)}"))  # type: ignore[attr-defined]
            idxs = {f[0] for f in found}
            if len(idxs) == 1:
                return found[0][0], found[0][1], "; ".join(dict.fromkeys(f[2] for f in found))
            if len(idxs) > 1:
                self.gaps.append(Gap(f"filter index of {fn.name}", self.where(fn),
                                     "callers pass different filter parts"))
        return None, "", ""

    def _expr_class(self, expr: ast.AST, fn: ast.FunctionDef) -> str:
        aliases: Dict[str, str] = {}
        assigned: Dict[str, ast.AST] = {}
        for n in walk_no_nested(fn):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                assigned[n.targets[0].id] = n.value
                if isinstance(n.value, ast.Name) and n.value.id in self.u.classes:
                    aliases[n.targets[0].id] = n.value.id

        def cls_of_call(call: ast.AST) -> str:
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
                name = aliases.get(call.func.id, call.func.id)
                if name in self.u.classes:
                    return name
            return ""

        def resolve(e: ast.AST, depth: int = 0) -> str:
            if depth > 6:
                return ""
            if isinstance(e, ast.Call):
                return cls_of_call(e)
            if isinstance(e, ast.Name):
                if e.id in assigned:
                    return resolve(assigned[e.id], depth + 1)
                # loop variable of a for loop over a known iterable is not resolved
                return ""
            if isinstance(e, ast.Attribute):
                owner = resolve(e.value, depth + 1)
                if not owner:
                    return ""
                for cname in self._mro(owner):
                    member = _member(self.u.classes[cname][1], e.attr)
                    if member is None:
                        continue
                    if member.returns is not None:
                        ann = dotted(member.returns)
                        if ann and ann.split(".")[-1] in self.u.classes:
                            return ann.split(".")[-1]
                    for r in ast.walk(member):
                        if isinstance(r, ast.Return) and r.value is not None:
                            c = cls_of_call(r.value)
                            if c:
                                return c
                return ""
            return ""

        return resolve(expr)

    # ---- de-duplication -------------------------------------------------------------

    def collect_dedup(self) -> None:
        out = self.facts.dedup
        scopes: List[Tuple[ast.AST, ParsedModule]] = [(fn, self.pm) for fn in self.blob_functions]  # type: ignore[misc]
        pool = self._pool_class()
        if pool is not None:
            scopes.append((pool, self.pm))  # type: ignore[arg-type]
        for scope, pm in scopes:
            inits: Dict[str, ast.AST] = {}
            for n in ast.walk(scope):
                if isinstance(n, ast.Assign) and len(n.targets) == 1:
                    t = n.targets[0]
                    name = t.id if isinstance(t, ast.Name) else None
                    v = n.value
                    if name and (isinstance(v, ast.Dict) and not v.keys or isinstance(v, ast.Call)
                                 and (dotted(v.func) or "").split(".")[-1] in ("dict", "OrderedDict")):
                        inits[name] = n
                elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value is not None:
                    v = n.value
                    if isinstance(v, ast.Dict) and not v.keys or isinstance(v, ast.Call) \
                            and (dotted(v.func) or "").split(".")[-1] in ("dict", "OrderedDict"):
                        inits[n.target.id] = n
            for n in ast.walk(scope):
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Subscript) \
                        and isinstance(n.targets[0].value, ast.Name) and n.targets[0].value.id in inits \
                        and isinstance(n.value, ast.Constant) and n.value.value is True:
                    init = inits[n.targets[0].value.id]
                    detail = " ".join(pm.comments_above(init.lineno)) or "dict used as an ordered set"
                    out.append(DedupInfo("ordered-set dict", segment(pm, n), pm.where(n),
                                         f"{detail} (initialised at {pm.where(init)}: {segment(pm, init)})"))
                elif isinstance(n, ast.Call):
                    fname = (dotted(n.func) or "").split(".")[-1]
                    if fname == "set" or (isinstance(n.func, ast.Attribute) and n.func.attr == "add"):
                        out.append(DedupInfo("set", segment(pm, n), pm.where(n)))
                    elif "dup" in fname.lower():
                        got = self.u.origin_of(fname)
                        doc = ""
                        loc = ""
                        if got is not None and isinstance(got[1], _FUNC):
                            doc = " ".join((ast.get_docstring(got[1]) or "").split())
                            loc = got[0].where(got[1])
                        out.append(DedupInfo("check", segment(pm, n), pm.where(n),
                                             (f"{fname} defined at {loc}: {doc}" if loc else doc).strip()))
                elif isinstance(n, ast.If) and isinstance(n.test, ast.Compare) and len(n.test.ops) == 1 \
                        and isinstance(n.test.ops[0], ast.NotIn):
                    container = dotted(n.test.comparators[0]) or ""
                    container = container[:-len(".keys")] if container.endswith(".keys") else container
                    fills = any(
                        (isinstance(x, ast.Call) and isinstance(x.func, ast.Attribute)
                         and x.func.attr in ("append", "add", "setdefault") and dotted(x.func.value) == container)
                        or (isinstance(x, ast.Assign) and any(isinstance(t, ast.Subscript)
                                                              and dotted(t.value) == container for t in x.targets))
                        for b in n.body for x in ast.walk(b))
                    if container and fills:
                        out.append(DedupInfo("membership", segment(pm, n.test), pm.where(n)))
        for line, text in sorted(self.pm.comments.items()):  # type: ignore[union-attr]
            if re.search(r"duplicat|dedup", text, re.I):
                out.append(DedupInfo("comment", text, f"{self.rel}:{line}"))
        if not out:
            self.facts.notes.append({"what": "no de-duplication", "where": self.rel,
                                     "detail": "no ordered-set dict, set(), duplicate check or membership test found"})

    # ---- dispatch -------------------------------------------------------------------

    def collect_dispatch(self) -> None:
        d = self.facts.dispatch
        pool = self._pool_class()
        if pool is None:
            self.gaps.append(Gap("dispatch", self.rel, "no API-pool class (name with 'Pool' / register methods)"))
            return
        method = self._dispatch_method(pool)
        if method is None:
            self.gaps.append(Gap("dispatch", self.where(pool), f"{pool.name} has no method rendering the dispatcher"))
            return
        if method.name == "api" and "property" in _decorators(method):
            d.mechanism = f"property {pool.name}.api"
        elif method.name == "render":
            d.mechanism = f"method {pool.name}.render()"
        else:
            d.mechanism = f"method {pool.name}.{method.name}()"
        d.where = self.where(method)
        levels = self._dispatch_levels(pool, method)
        self.facts.dispatch_levels = levels
        d.order = [l.name for l in levels]
        if not levels:
            self.gaps.append(Gap("dispatch order", self.where(method), "no nested loops over the pool found"))
        d.sorts = self._sorts(pool)
        d.padding_order = self._padding_order()
        d.unreachable = self._unreachable(pool)
        self._constant_checks(pool)

    def _dispatch_levels(self, pool: ast.ClassDef, method: ast.FunctionDef) -> List[DispatchLevel]:
        levels: List[DispatchLevel] = []
        methods = {s.name: s for s in pool.body if isinstance(s, _FUNC)}

        def level_name(loop: ast.For) -> str:
            target, it = loop.target, loop.iter
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" \
                    and isinstance(target, ast.Tuple) and len(target.elts) == 2:
                target = target.elts[1]
                it = it.args[0] if it.args else it
            if isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(it, ast.Call) \
                    and isinstance(it.func, ast.Attribute) and it.func.attr == "items":
                target = target.elts[0]
            if isinstance(target, ast.Tuple):
                return "(" + ", ".join(self.seg(e) for e in target.elts) + ")"
            return self.seg(target)

        def templates_in(body: Sequence[ast.stmt]) -> List[str]:
            out: List[str] = []
            todo: List[ast.AST] = list(body)
            while todo:
                n = todo.pop(0)
                if isinstance(n, (ast.For, ast.While) + _FUNC):
                    continue
                if isinstance(n, ast.Call):
                    if isinstance(n.func, ast.Attribute) and n.func.attr == "format" and isinstance(n.func.value, ast.Name):
                        out.append(n.func.value.id)
                    elif isinstance(n.func, ast.Name) and n.func.id in self.u.functions and any(
                            kw.arg and kw.arg.startswith("F_") for kw in n.keywords):
                        out.append(n.func.id)
                todo.extend(ast.iter_child_nodes(n))
            return out

        def descend(stmts: Sequence[ast.stmt], visited: Set[str]) -> None:
            loops = [n for n in stmts if isinstance(n, ast.For)]
            nested: List[ast.For] = []
            for s in stmts:
                for n in ast.walk(s):
                    if isinstance(n, ast.For) and n not in nested:
                        nested.append(n)
            first: Optional[ast.For] = None
            for n in nested:
                # outermost loop: not inside another loop of this block
                if not any(n is not o and n in list(ast.walk(o)) for o in nested):
                    first = n
                    break
            if first is None:
                # follow self.method(...) calls
                for s in stmts:
                    for n in ast.walk(s):
                        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                                and isinstance(n.func.value, ast.Name) and n.func.value.id == "self" \
                                and n.func.attr in methods and n.func.attr not in visited:
                            visited.add(n.func.attr)
                            descend(methods[n.func.attr].body, visited)
                            return
                return
            del loops
            tmpl = templates_in(first.body)
            levels.append(DispatchLevel(level_name(first), self.seg(first.iter),
                                        ", ".join(dict.fromkeys(tmpl)), self.where(first)))
            descend(first.body, visited)

        descend(method.body, {method.name})
        return levels

    def _sorts(self, pool: ast.ClassDef) -> List[str]:
        out: List[str] = []
        scopes: List[Tuple[ast.AST, ParsedModule]] = [(pool, self.pm)]  # type: ignore[list-item]
        scopes += [(fn, self.pm) for fn in self.blob_functions]  # type: ignore[misc]
        # local helper functions called from blob functions (e.g. imported factory selection)
        for fn in self.blob_functions:
            for n in ast.walk(fn):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                    got = self.u.origin_of(n.func.id)
                    if got is not None and isinstance(got[1], _FUNC) and got[1] not in [s for s, _ in scopes]:
                        scopes.append((got[1], got[0]))
        for scope, pm in scopes:
            for n in ast.walk(scope):
                if not isinstance(n, ast.Call):
                    continue
                is_sorted = isinstance(n.func, ast.Name) and n.func.id == "sorted"
                is_sort = isinstance(n.func, ast.Attribute) and n.func.attr == "sort"
                if not (is_sorted or is_sort):
                    continue
                text = segment(pm, n)
                key = next((kw.value for kw in n.keywords if kw.arg == "key"), None)
                key_src = ""
                if key is not None and not isinstance(key, ast.Lambda):
                    name = dotted(key) or ""
                    mname = name.split(".")[-1]
                    target = None
                    if isinstance(scope, ast.ClassDef):
                        target = _member(scope, mname)
                    if target is None:
                        for cls in [pool]:
                            target = _member(cls, mname)
                    if target is not None:
                        rets = [r for r in ast.walk(target) if isinstance(r, ast.Return) and r.value is not None]
                        key_src = " | ".join(segment(pm, r.value) for r in rets)
                        comment = " ".join(pm.comment_at(l) for l in range(target.lineno, (target.end_lineno or target.lineno) + 1)
                                           if pm.comment_at(l))
                        if comment:
                            key_src += f"  # {comment}"
                comment = " ".join(pm.comments_above(self._stmt_line(n, pm)))
                entry = f"{text} at {pm.where(n)}"
                if key_src:
                    entry += f"; key returns {key_src}"
                if comment:
                    entry += f"; comment: {comment}"
                out.append(entry)
        return out

    @staticmethod
    def _stmt_line(node: ast.AST, pm: ParsedModule) -> int:
        cur = node
        parents = pm.parents
        while cur in parents and not isinstance(cur, ast.stmt):
            cur = parents[cur]
        return getattr(cur, "lineno", getattr(node, "lineno", 1))

    def _padding_order(self) -> str:
        hints: List[str] = []
        seen: Set[str] = set()
        rel_words = r"matter|later|earlier|first|before|after|pad"
        for line, text in sorted(self.pm.comments.items()):  # type: ignore[union-attr]
            hint = (re.search(r"\border\b", text, re.I) and re.search(rel_words, text, re.I)) or (
                re.search(r"\bpad", text, re.I) and re.search(r"\b(later|earlier|first|before|after|order)\b", text, re.I))
            if hint and text not in seen:
                seen.add(text)
                hints.append(f"{text} ({self.rel}:{line})")
        for item in self.facts.dedup:
            if item.kind == "check" and re.search(r"pad|order", item.detail, re.I) and item.detail not in seen:
                seen.add(item.detail)
                hints.append(f"{item.detail} (called at {item.where})")
        return "; ".join(hints)

    def _templates(self) -> Dict[str, Tuple[ParsedModule, ast.AST, str]]:
        """Module-level string constants containing ``{F_...}``-style placeholders."""
        out: Dict[str, Tuple[ParsedModule, ast.AST, str]] = {}
        for pm in self.u.modules.values():
            if pm.tree is None:
                continue
            for node in pm.tree.body:
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                        and isinstance(node.value.value, str) and re.search(r"\{\w+\}", node.value.value):
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            out[t.id] = (pm, node, node.value.value)
        return out

    def _unreachable(self, pool: ast.ClassDef) -> List[Dict[str, str]]:
        out: List[Dict[str, str]] = []
        templates = self._templates()
        falsy = {"false", "False", "0", "f"}
        # (1) template arguments hard-coded to a false constant
        for n in ast.walk(self.pm.tree):  # type: ignore[arg-type]
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "format"):
                continue
            tname = n.func.value.id if isinstance(n.func.value, ast.Name) else ""
            for kw in n.keywords:
                if kw.arg is None:
                    continue
                val = kw.value
                const = None
                if isinstance(val, ast.Constant) and isinstance(val.value, (bool, str, int)) \
                        and str(val.value) in falsy:
                    const = str(val.value)
                elif isinstance(val, ast.Subscript) and isinstance(val.slice, ast.Constant) \
                        and str(val.slice.value) in ("f", "False") and isinstance(val.value, ast.Name) \
                        and val.value.id in self.facts.symbol_maps:
                    entry = self.facts.symbol_maps[val.value.id].entries.get(str(val.slice.value))
                    if entry in ("false", "False", "0"):
                        const = entry
                if const is None:
                    continue
                uses = ""
                if tname in templates:
                    tpm, tnode, text = templates[tname]
                    ctx = [flat(m.group(0)) for m in re.finditer(
                        r"[^\n;{}]*\{" + re.escape(kw.arg) + r"\}[^\n;{}]*", text)]
                    uses = " | ".join(ctx[:3])
                out.append({
                    "what": f"{kw.arg}={self.seg(val)}",
                    "where": self.where(kw.value),
                    "why": f"template {tname or '?'} always receives {const} for {{{kw.arg}}}"
                           + (f"; used in: {uses}" if uses else ""),
                })
        # (2) conditions in templates that are always false
        pattern = re.compile(r"(if\s*(constexpr\s*)?\(\s*(false|0)\s*\)|&&\s*false\b|\bfalse\s*&&)")
        for tname, (tpm, tnode, text) in templates.items():
            for m in pattern.finditer(text):
                line = tnode.lineno + text[:m.start()].count("\n")
                out.append({"what": flat(m.group(0)), "where": f"{tpm.relpath}:{line}",
                            "why": f"always-false condition in template {tname}"})
        return out

    def _constant_checks(self, pool: ast.ClassDef) -> None:
        """Trait checks whose if/else branches return the same text (condition has no effect)."""
        trait_classes = set()
        for n in ast.walk(pool):
            if isinstance(n, _FUNC):
                for a in n.args.args:
                    if a.annotation is not None:
                        name = (dotted(a.annotation) or "").split(".")[-1]
                        if name in self.u.classes:
                            trait_classes.add(name)
        for cname in sorted(trait_classes):
            pm, node = self.u.classes[cname]
            for s in node.body:
                if not isinstance(s, _FUNC):
                    continue
                for n in ast.walk(s):
                    if isinstance(n, ast.If) and len(n.body) == 1 and len(n.orelse) == 1 \
                            and isinstance(n.body[0], ast.Return) and isinstance(n.orelse[0], ast.Return) \
                            and n.body[0].value is not None and n.orelse[0].value is not None \
                            and ast.dump(n.body[0].value) == ast.dump(n.orelse[0].value):
                        self.facts.notes.append({
                            "what": f"{cname}.{s.name} ignores {self.seg(n.test, pm)}",
                            "where": pm.where(n),
                            "detail": f"both branches return {segment(pm, n.body[0].value)}",
                        })


def analyze_source(fmha_dir: Path, module_relpath: str) -> SourceFacts:
    """Read ``fmha_dir/module_relpath`` (and its local imports) and return its facts."""
    analysis = _Analysis(Path(fmha_dir), module_relpath)
    facts = analysis.run()
    for extra in (_suspicious_literals, _dead_rules):
        try:
            extra(analysis)
        except Exception as exc:  # pragma: no cover - defensive
            facts.gaps.append(Gap(extra.__name__.strip("_").replace("_", " "), facts.module,
                                  f"analysis failed: {type(exc).__name__}: {exc}"))
    return facts


def _table_head_dims(facts: SourceFacts) -> Set[Any]:
    dims: Set[Any] = set()
    for table in facts.factory_tables:
        for per_dtype in table.tiles.values():
            for key in per_dtype:
                raw = key.split(" [", 1)[0]
                try:
                    dims.add(ast.literal_eval(raw))
                except (ValueError, SyntaxError):
                    dims.add(raw)
    return dims


def _dim_key(v: Any) -> Tuple[int, Any]:
    return (0, v) if isinstance(v, int) else (1, str(v))


def _dead_rules(analysis: _Analysis) -> None:
    """Skip rules testing a head dim that no tile table provides (they never trigger)."""
    facts = analysis.facts
    dims = _table_head_dims(facts)
    if not dims or "*" in dims:
        return
    scalars = {d[0] if isinstance(d, tuple) else d for d in dims}
    for sc in facts.skip_conditions:
        if sc.kind not in ("continue", "option") or not sc.source:
            continue
        try:
            tree = ast.parse(sc.source, mode="eval").body
        except SyntaxError:
            continue
        conjuncts: List[ast.AST] = []
        todo: List[ast.AST] = [tree]
        while todo:
            node = todo.pop(0)
            if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
                todo[:0] = node.values
            else:
                conjuncts.append(node)
        for c in conjuncts:
            if not (isinstance(c, ast.Compare) and len(c.ops) == 1 and isinstance(c.ops[0], ast.Eq)):
                continue
            left, right = c.left, c.comparators[0]
            if isinstance(left, ast.Name) and "hdim" in left.id.lower() and isinstance(right, ast.Constant):
                if right.value not in scalars:
                    facts.notes.append({
                        "what": "skip rule never triggers",
                        "where": sc.where,
                        "detail": f"{sc.source}: no tile table has head dim {right.value!r} "
                                  f"(tables have {', '.join(str(v) for v in sorted(scalars, key=_dim_key))})",
                    })
            elif isinstance(left, ast.Tuple) and left.elts and isinstance(left.elts[0], ast.Name) \
                    and "hdim" in left.elts[0].id.lower():
                try:
                    value = ast.literal_eval(right)
                except ValueError:
                    continue
                if value not in dims:
                    facts.notes.append({
                        "what": "skip rule never triggers",
                        "where": sc.where,
                        "detail": f"{sc.source}: no tile table has head dims {value!r}",
                    })


def _suspicious_literals(analysis: _Analysis) -> None:
    """Membership lists holding one comma-joined string (e.g. ``["a, b"]``): always false."""
    pm = analysis.pm
    if pm is None or pm.tree is None:
        return
    for n in ast.walk(pm.tree):
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.In, ast.NotIn)) \
                and isinstance(n.comparators[0], (ast.List, ast.Tuple, ast.Set)):
            for e in n.comparators[0].elts:
                if isinstance(e, ast.Constant) and isinstance(e.value, str) and re.search(r"\w,\s*\w", e.value):
                    analysis.facts.notes.append({
                        "what": f"suspicious literal {e.value!r}",
                        "where": pm.where(n),
                        "detail": f"{segment(pm, n)} compares against one comma-joined string, "
                                  "so it is true only for that exact text",
                    })
