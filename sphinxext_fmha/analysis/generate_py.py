"""The APIs ``01_fmha/generate.py`` offers, read from its source with :mod:`ast`.

Nothing here imports or executes CK code: the APIs are derived from the syntax trees
of ``generate.py`` and of the ``codegen/ops/*.py`` modules (its options:
:mod:`.generate_options`).  Whatever cannot be read is reported as a
:class:`~sphinxext_fmha.model.Gap`, never guessed silently.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from ..locate import FMHA_SUBDIR, fmha_dir
from ..model import ApiInfo, Gap
from .generate_options import PathLike, evaluate_in, module_constants, read_ast
from .pyeval import ModuleRef, Unknown
from .pyparse import dotted

__all__ = ["DEFAULT_REQUIRED_FUNCTIONS", "discover_apis"]

#: What generate.py reads from every ops module when its table cannot be parsed.
DEFAULT_REQUIRED_FUNCTIONS = ("list_blobs", "write_blobs")

_GENERATE = FMHA_SUBDIR + "/generate.py"
_OPS = FMHA_SUBDIR + "/codegen/ops"


# --------------------------------------------------------------------------- helpers


def _where(rel: str, node: Optional[ast.AST] = None) -> str:
    line = getattr(node, "lineno", None)
    return f"{rel}:{line}" if line else rel


# --------------------------------------------------------------------------- APIs


class _Table:
    """How generate.py builds its handler table, as far as it could be read."""

    def __init__(self) -> None:
        self.kind = "unknown"  # "comprehension", "literal" or "unknown"
        self.node: Optional[ast.AST] = None
        self.key: Optional[ast.expr] = None
        self.loop_var: Optional[str] = None
        self.required: List[str] = list(DEFAULT_REQUIRED_FUNCTIONS)
        self.literal: Dict[str, str] = {}  # api name -> module stem (literal tables)


def _attrs_on(node: ast.AST, name: str) -> List[str]:
    found: List[str] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == name:
            if sub.attr not in found and not sub.attr.startswith("__"):
                found.append(sub.attr)
    return found


def _comprehension_parts(node: ast.AST) -> Optional[Tuple[ast.expr, ast.expr, str]]:
    """(key, value, loop variable) of ``{k: v for x in ...}`` / ``dict([(k, v) for x in ...])``."""
    if isinstance(node, ast.DictComp) and len(node.generators) == 1:
        target = node.generators[0].target
        if isinstance(target, ast.Name):
            return node.key, node.value, target.id
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "dict"
        and len(node.args) == 1
        and isinstance(node.args[0], (ast.ListComp, ast.GeneratorExp))
    ):
        comp = node.args[0]
        if (
            len(comp.generators) == 1
            and isinstance(comp.generators[0].target, ast.Name)
            and isinstance(comp.elt, ast.Tuple)
            and len(comp.elt.elts) == 2
        ):
            return comp.elt.elts[0], comp.elt.elts[1], comp.generators[0].target.id
    return None


def _import_aliases(module: ast.Module) -> Dict[str, str]:
    """local name -> dotted module for imports of ``codegen.ops`` modules."""
    aliases: Dict[str, str] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
    return aliases


def _find_table(module: ast.Module) -> _Table:
    table = _Table()
    wanted = set(DEFAULT_REQUIRED_FUNCTIONS)
    for node in ast.walk(module):
        parts = _comprehension_parts(node)
        if parts is not None:
            key, value, loop_var = parts
            attrs = _attrs_on(value, loop_var)
            if attrs and (set(attrs) & wanted or not table.node):
                table.kind, table.node, table.key, table.loop_var = "comprehension", node, key, loop_var
                table.required = attrs
                if set(attrs) & wanted:
                    return table
    aliases = _import_aliases(module)
    for node in ast.walk(module):
        if not isinstance(node, ast.Dict) or not node.keys:
            continue
        literal: Dict[str, str] = {}
        required: List[str] = []
        for entry, value in zip(node.keys, node.values):
            if not (isinstance(entry, ast.Constant) and isinstance(entry.value, str)):
                literal = {}
                break
            modules = set()
            for sub in ast.walk(value):
                if isinstance(sub, ast.Attribute) and sub.attr in wanted:
                    path = dotted(sub.value)
                    if path is None:
                        continue
                    head, _, rest = path.partition(".")
                    full = aliases.get(head, head) + ("." + rest if rest else "")
                    modules.add(full.rsplit(".", 1)[-1])
                    if sub.attr not in required:
                        required.append(sub.attr)
            if len(modules) != 1:
                literal = {}
                break
            literal[entry.value] = modules.pop()
        if literal:
            table.kind, table.node, table.literal = "literal", node, literal
            table.required = required or list(DEFAULT_REQUIRED_FUNCTIONS)
            return table
    return table


def _loaded_name_expr(module: ast.Module) -> Tuple[Optional[ast.expr], Optional[str], bool]:
    """How a module found by ``pkgutil.iter_modules`` is loaded.

    Returns (expression giving the loaded module's ``__name__``, name of the loop
    variable holding the module name, whether pkgutil.iter_modules is used at all).
    """
    for node in ast.walk(module):
        if not isinstance(node, ast.For):
            continue
        call = node.iter
        if not (isinstance(call, ast.Call) and dotted(call.func) in ("pkgutil.iter_modules", "iter_modules")):
            continue
        target = node.target
        name_var: Optional[str] = None
        if isinstance(target, ast.Tuple) and len(target.elts) >= 2 and isinstance(target.elts[1], ast.Name):
            name_var = target.elts[1].id
        for sub in ast.walk(node):
            if not isinstance(sub, ast.Call):
                continue
            func = dotted(sub.func) or ""
            attr = sub.func.attr if isinstance(sub.func, ast.Attribute) else func
            if attr in ("load_module", "import_module") and sub.args:
                return sub.args[0], name_var, True
        return None, name_var, True
    return None, None, False


def _defined_names(module: ast.Module) -> Tuple[Set[str], bool]:
    """Top-level names a module defines, and whether it has a star import."""
    names: Set[str] = set()
    star = False
    for stmt in module.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        names.add(sub.id)
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and isinstance(stmt.target, ast.Name):
            names.add(stmt.target.id)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                if alias.name == "*":
                    star = True
                else:
                    names.add((alias.asname or alias.name).split(".")[0])
    return names, star


def _ops_modules(ops_dir: Path) -> Tuple[List[str], List[str]]:
    """(sorted module stems of ``*.py`` except ``__init__``, sorted package folders)."""
    modules: List[str] = []
    packages: List[str] = []
    if not ops_dir.is_dir():
        return modules, packages
    for entry in sorted(ops_dir.iterdir(), key=lambda p: p.name):
        if entry.is_file() and entry.suffix == ".py" and entry.stem != "__init__":
            modules.append(entry.stem)
        elif entry.is_dir() and (entry / "__init__.py").is_file():
            packages.append(entry.name)
    return modules, packages


def discover_apis(ck_root: PathLike) -> Tuple[List[ApiInfo], List[Gap]]:
    """The APIs of a CK tree: one per ``codegen/ops/*.py`` module (sorted).

    Each API name is the handler key that generate.py derives from the module name,
    computed by evaluating generate.py's own key expression (e.g. stripping its
    ``unwanted_prefix``).  Disagreements between generate.py and the modules (a
    module lacking a function generate.py reads, two modules mapping to one key, a
    table entry without a module ...) are reported as gaps.
    """
    root = Path(ck_root)
    fmha = fmha_dir(root)
    ops_dir = fmha / "codegen" / "ops"
    gaps: List[Gap] = []
    stems, packages = _ops_modules(ops_dir)
    if not ops_dir.is_dir():
        gaps.append(Gap(what="no codegen/ops folder", where=_OPS, why="the tree has no FMHA ops modules"))
    for package in packages:
        gaps.append(Gap(
            what=f"codegen/ops/{package} is a package",
            where=f"{_OPS}/{package}",
            why="pkgutil.iter_modules also loads packages; only *.py modules are analysed",
        ))

    generate_path = fmha / "generate.py"
    module: Optional[ast.Module] = None
    if not generate_path.is_file():
        gaps.append(Gap(what="generate.py not found", where=_GENERATE,
                        why="API names fall back to the module names"))
    else:
        try:
            module = read_ast(generate_path)
        except SyntaxError as exc:
            gaps.append(Gap(what="generate.py does not parse", where=f"{_GENERATE}:{exc.lineno}",
                            why=f"{exc.msg}; API names fall back to the module names"))

    table = _find_table(module) if module is not None else _Table()
    consts = module_constants(module) if module is not None else {}

    # What __name__ does a loaded ops module get?
    name_expr: Optional[ast.expr] = None
    name_var: Optional[str] = None
    if module is not None and table.kind == "comprehension":
        name_expr, name_var, uses_pkgutil = _loaded_name_expr(module)
        if not uses_pkgutil:
            gaps.append(Gap(
                what="how generate.py finds the ops modules",
                where=_GENERATE,
                why="no pkgutil.iter_modules loop found; assuming every codegen/ops module is loaded",
            ))
        elif name_expr is None or name_var is None:
            gaps.append(Gap(
                what="names of the loaded ops modules",
                where=_GENERATE,
                why="could not read how generate.py loads the modules it finds; "
                    "assuming each module's __name__ is its file name",
            ))

    def loaded_name(stem: str) -> str:
        if name_expr is None or name_var is None:
            return stem
        try:
            value = evaluate_in(name_expr, consts, {name_var: stem})
        except Unknown as exc:
            value = exc
        if isinstance(value, str):
            return value
        gaps.append(Gap(
            what=f"__name__ of {stem}",
            where=_where(_GENERATE, name_expr),
            why="could not evaluate the name generate.py loads the module under; assuming its file name",
        ))
        return stem

    if module is not None and table.kind == "unknown":
        gaps.append(Gap(
            what="API names",
            where=_GENERATE,
            why="could not read how generate.py maps ops modules to API names; using the module names",
        ))

    def key_for(stem: str) -> Optional[str]:
        if table.kind == "comprehension" and table.key is not None and table.loop_var:
            env = {table.loop_var: ModuleRef(loaded_name(stem))}
            try:
                value = evaluate_in(table.key, consts, env)
            except Unknown as exc:
                gaps.append(Gap(
                    what=f"API name of {stem}",
                    where=_where(_GENERATE, table.key),
                    why=f"could not evaluate generate.py's key expression ({exc}); using the module name",
                ))
                return None
            if not isinstance(value, str):
                gaps.append(Gap(what=f"API name of {stem}", where=_where(_GENERATE, table.key),
                                why="the key expression does not give a string; using the module name"))
                return None
            return value
        if table.kind == "literal":
            for api, mod in table.literal.items():
                if mod == stem:
                    return api
            return None
        return None

    apis: List[ApiInfo] = []
    for stem in stems:
        source = f"{_OPS}/{stem}.py"
        key = key_for(stem)
        in_generate = True
        if table.kind == "literal" and key is None:
            in_generate = False
            gaps.append(Gap(what=f"{stem} is not in generate.py's handler table", where=source,
                            why="generate.py cannot run this module; its name is used as the API name"))
        name = key if key is not None else stem
        try:
            names, star = _defined_names(read_ast(ops_dir / f"{stem}.py"))
        except SyntaxError as exc:
            gaps.append(Gap(what=f"{stem} does not parse", where=f"{source}:{exc.lineno}", why=exc.msg))
        else:
            missing = [fn for fn in table.required if fn not in names]
            if missing and star:
                gaps.append(Gap(what=f"{stem} may lack {', '.join(missing)}", where=source,
                                why="the module has a star import; cannot tell whether it defines them"))
            elif missing:
                in_generate = False
                gaps.append(Gap(
                    what=f"{stem} lacks {', '.join(missing)}",
                    where=source,
                    why=f"generate.py reads {', '.join(table.required)} of every ops module; "
                        "it would fail while building its handler table",
                ))
        apis.append(ApiInfo(name=name, module=stem, source=source, in_generate=in_generate))

    # pkgutil yields modules in file name order; a later module wins a shared key.
    owners: Dict[str, ApiInfo] = {}
    for api in apis:
        if not api.in_generate:
            continue
        earlier = owners.get(api.name)
        if earlier is not None:
            earlier.in_generate = False
            gaps.append(Gap(
                what=f"API name {api.name!r} is claimed by {earlier.module} and {api.module}",
                where=api.source,
                why=f"generate.py keeps the later module ({api.module}); {earlier.module} cannot be selected",
            ))
        owners[api.name] = api

    if table.kind == "literal":
        for api_name, stem in sorted(table.literal.items()):
            if stem not in stems:
                apis.append(ApiInfo(name=api_name, module=stem, source="", in_generate=True))
                gaps.append(Gap(what=f"generate.py lists API {api_name!r} "
                                     f"but codegen/ops/{stem}.py is missing",
                                where=_where(_GENERATE, table.node), why="the API cannot be analysed"))
    return apis, gaps
