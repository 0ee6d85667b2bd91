"""Collectors: the classes of the module and of the local modules it imports, which of
them are tile dataclasses (named ``*Tile*`` or made of ints used in their ``name``), and
the factory classes (or functions) that make the tiles."""

from __future__ import annotations

import ast
import re
from typing import Dict, List

from ...model import Factory, Gap, TileClass, TileField
from ..pyparse import FUNC, ParsedModule, decorators, segment
from .context import ClassField, ClassInfo, Context


def _class_info(pm: ParsedModule, node: ast.ClassDef, imported_from: str) -> ClassInfo:
    is_dc = any(d.split(".")[-1] == "dataclass" for d in decorators(node))
    info = ClassInfo(name=node.name, defined_at=pm.where(node), imported_from=imported_from,
                     is_dataclass=is_dc)
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            ann = segment(pm, stmt.annotation)
            if is_dc and not ann.startswith("ClassVar"):
                info.fields.append(ClassField(stmt.target.id, ann, line=stmt.lineno,
                                              comment=pm.comments.get(stmt.end_lineno or stmt.lineno, "")))
        elif isinstance(stmt, FUNC) and stmt.name == "name":
            decos = decorators(stmt)
            if "property" in decos or any(d.endswith(".getter") for d in decos):
                info.name_source = pm.source_segment(stmt) or ast.unparse(stmt)
    return info


def collect_classes(ctx: Context) -> None:
    """List the visible classes (``facts.classes``); fill ``ctx.class_infos``."""
    for pm, node, imported_from in ctx.universe.visible_classes():
        info = _class_info(pm, node, imported_from)
        ctx.facts.classes.append(info)
        ctx.class_infos[node.name] = info
    # classes defined elsewhere in the universe (bases etc.) are known but not listed
    for name, (pm, node) in ctx.universe.classes.items():
        if name not in ctx.class_infos:
            ctx.class_infos[name] = _class_info(pm, node, pm.relpath)


def collect_tiles(ctx: Context) -> None:
    """Record the tile dataclasses (``facts.tiles``) and their names in ``ctx.tile_names``."""
    for info in ctx.facts.classes:
        if not info.is_dataclass or not info.fields:
            continue
        named = "tile" in info.name.lower()
        ints = [f for f in info.fields if f.annotation in ("int", "builtins.int")]
        used = set(re.findall(r"self\.(\w+)", info.name_source))
        int_heavy = (len(ints) >= max(3, len(info.fields) * 0.6)
                     and len([f for f in ints if f.name in used]) >= len(ints) * 0.6)
        if not (named or int_heavy):
            continue
        ctx.tile_names.add(info.name)
        ctx.facts.tiles.append(TileClass(
            class_name=info.name, defined_at=info.defined_at, imported_from=info.imported_from,
            fields=[TileField(f.name, f.comment) for f in info.fields], name_source=info.name_source))
    if not ctx.facts.tiles:
        ctx.gaps.append(Gap("tile classes", ctx.rel, "no dataclass looks like a tile "
                            "(name contains 'Tile' or int fields used in name)"))


def _tile_method(ctx: Context, fn: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ctx.tile_names
               for n in ast.walk(fn))


def collect_factories(ctx: Context) -> None:
    """Find the factories: where each is, when it is chosen, its architecture
    (``facts.factories``; their tables are observed, see ``observed_factories.py``)."""
    def local_class(name: str) -> bool:  # (not a dataclass)
        info = ctx.class_infos.get(name)
        return info is not None and not info.is_dataclass

    factory_classes = [node.name for node in ctx.tree.body if isinstance(node, ast.ClassDef)
                       and local_class(node.name) and ("factory" in node.name.lower() or any(
                           isinstance(s, FUNC) and _tile_method(ctx, s) for s in node.body))]
    for name in list(factory_classes):  # and their bases
        factory_classes += [b for b in ctx.mro(name)[1:] if b not in factory_classes and local_class(b)]
    selected = _selected_by(ctx)
    factories = [Factory(class_name=name, bases=[segment(pm, b) for b in node.bases],
                         defined_at=pm.where(node), selected_by=selected.get(name, ""),
                         arch=_arch_of(ctx, name))
                 for name in factory_classes for pm, node in [ctx.universe.classes[name]]]
    if not factory_classes:
        for fname, (fpm, fn) in ctx.universe.functions.items():
            if fn in ctx.blob_functions or not _tile_method(ctx, fn):
                continue
            got = ctx.universe.origin_of(fname)
            if got is None or got[1] is not fn:
                continue  # not visible in the analysed module
            factories.append(Factory(class_name=fname, defined_at=fpm.where(fn),
                                     selected_by=selected.get(fname, "")))
    ctx.facts.factories = factories
    ctx.facts.tile_hdim_field = _hdim_field(ctx)
    ctx.facts.has_arch_factories = any(f.arch for f in factories)
    if not factories:
        ctx.gaps.append(Gap("factories", ctx.rel,
                            "no factory class or tile-table function was found", section="tiles"))


def _hdim_field(ctx: Context) -> str:
    """The tile field giving the head dim where a tile table is a plain list: read from
    ``hdim = <tile>.<field>`` in the blob functions."""
    for fn in ctx.blob_functions:
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                    and "hdim" in n.targets[0].id.lower() and isinstance(n.value, ast.Attribute) \
                    and isinstance(n.value.value, ast.Name):
                return n.value.attr
    return ""


def _arch_of(ctx: Context, cls_name: str) -> str:
    for owner in ctx.mro(cls_name):
        node = ctx.universe.classes[owner][1]
        candidates = sorted(((t.id, s.value) for s in node.body if isinstance(s, ast.Assign)
                             and isinstance(s.value, ast.Call) for t in s.targets
                             if isinstance(t, ast.Name)), key=lambda c: "arch" not in c[0].lower())
        for stmt in node.body:
            # a plain ``arch = "gfx9"``
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) \
                    and isinstance(stmt.value.value, str) and any(
                        isinstance(t, ast.Name) and "arch" in t.id.lower() for t in stmt.targets):
                return stmt.value.value
        for _, call in candidates:
            if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                return call.args[0].value
            for kw in call.keywords:
                if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                    return str(kw.value.value)
    return ""


def _selected_by(ctx: Context) -> Dict[str, str]:
    """Conditions under which a factory class/function is chosen."""
    out: Dict[str, List[str]] = {}
    known = set(ctx.universe.classes) | set(ctx.universe.functions)
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Name) \
                and node.value.id in ctx.universe.classes:
            conds: List[str] = []
            for cur, child in ctx.pm.ancestors(node):
                if isinstance(cur, FUNC):
                    break
                if isinstance(cur, ast.If):
                    text = ctx.seg(cur.test)
                    conds.append(text if child in cur.body else f"not ({text})")
            out.setdefault(node.value.id, []).append(" and ".join(reversed(conds)) or "default")
        elif isinstance(node, ast.IfExp):
            for branch, neg in ((node.body, False), (node.orelse, True)):
                if isinstance(branch, ast.Name) and branch.id in known:
                    text = ctx.seg(node.test)
                    out.setdefault(branch.id, []).append(f"not ({text})" if neg else text)
    return {k: " or ".join(dict.fromkeys(v)) for k, v in out.items()}
