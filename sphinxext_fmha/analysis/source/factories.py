"""Collector: factory classes (or functions) and the tile tables they return.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Set, Tuple

from ...model import Factory, Gap
from ..pyparse import segment
from .astutil import (
    FUNC,
    FunctionNode,
    member,
)
from .context import Context
from .facts import (
    FactoryTable,
)
from .tile_tables import TileTableReader

__all__ = ["collect_factories"]


def _tile_method(ctx: Context, fn: ast.AST) -> bool:
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ctx.tile_names:
            return True
    return False


def collect_factories(ctx: Context) -> None:
    """Find the factories and evaluate their tile tables (``facts.factories``, ``factory_tables``)."""
    main_classes = [n for n in ctx.tree.body if isinstance(n, ast.ClassDef)]
    factory_classes: List[str] = []
    for node in main_classes:
        info = ctx.class_infos.get(node.name)
        if info is None or info.is_dataclass:
            continue
        has_tiles = any(isinstance(s, FUNC) and _tile_method(ctx, s) for s in node.body)
        if "factory" in node.name.lower() or has_tiles:
            factory_classes.append(node.name)
    # bases of factories that are local classes
    for name in list(factory_classes):
        for b in ctx.mro(name)[1:]:
            info = ctx.class_infos.get(b)
            if b not in factory_classes and info is not None and not info.is_dataclass:
                factory_classes.append(b)
    selected = _selected_by(ctx)
    reader = TileTableReader(ctx, ctx.universe.interpreter())
    tables: List[FactoryTable] = []
    factories: List[Factory] = []
    if factory_classes:
        for name in factory_classes:
            pm, node = ctx.universe.classes[name]
            fac = Factory(class_name=name, bases=[segment(pm, b) for b in node.bases],
                          defined_at=pm.where(node), selected_by=selected.get(name, ""))
            fac.arch = _arch_of(ctx, name)
            methods = _tile_methods_of(ctx, name)
            first = True
            for mname, owner in methods:
                mpm, mnode = ctx.universe.classes[owner]
                fn = member(mnode, mname)
                if fn is None:
                    continue
                table = reader.read(name, mname, fn, mpm, is_method=True)
                tables.append(table)
                if first:
                    fac.tiles = table.tiles
                    fac.dtypes = list(table.supported)
                    fac.unsupported_dtypes = list(table.unsupported)
                    fac.tile_notes = dict(table.notes)
                    first = False
            factories.append(fac)
    else:
        for fname, (fpm, fn) in ctx.universe.functions.items():
            if fn in ctx.blob_functions or not _tile_method(ctx, fn):
                continue
            got = ctx.universe.origin_of(fname)
            if got is None or got[1] is not fn:
                continue  # not visible in the analysed module
            fac = Factory(class_name=fname, defined_at=fpm.where(fn),
                          selected_by=selected.get(fname, ""))
            table = reader.read(fname, fname, fn, fpm, is_method=False)
            tables.append(table)
            fac.tiles, fac.dtypes, fac.unsupported_dtypes = table.tiles, table.supported, table.unsupported
            fac.tile_notes = dict(table.notes)
            factories.append(fac)
    ctx.facts.factories = factories
    ctx.facts.factory_tables = tables
    ctx.facts.tile_hdim_field = reader.hdim_field or ""
    ctx.facts.has_arch_factories = any(f.arch for f in factories)
    if not factories:
        ctx.gaps.append(Gap("factories", ctx.rel,
                            "no factory class or tile-table function was found", section="tiles"))



def _tile_methods_of(ctx: Context, cls_name: str) -> List[Tuple[str, str]]:
    seen: Dict[str, str] = {}
    order: List[str] = []
    for owner in ctx.mro(cls_name):
        node = ctx.universe.classes[owner][1]
        for stmt in node.body:
            if isinstance(stmt, FUNC) and stmt.name not in seen:
                seen[stmt.name] = owner
                order.append(stmt.name)
    out = []
    for mname in order:
        owner = seen[mname]
        fn = member(ctx.universe.classes[owner][1], mname)
        if fn is not None and _tile_method_deep(ctx, fn, set()):
            out.append((mname, owner))
    return out


def _tile_method_deep(ctx: Context, fn: FunctionNode, visited: Set[int]) -> bool:
    if id(fn) in visited:
        return False
    visited.add(id(fn))
    if _tile_method(ctx, fn):
        return True
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                and isinstance(n.func.value, ast.Name):
            owner = n.func.value.id
            if owner in ctx.universe.classes:
                sub = member(ctx.universe.classes[owner][1], n.func.attr)
                if sub is not None and _tile_method_deep(ctx, sub, visited):
                    return True
    return False


def _arch_of(ctx: Context, cls_name: str) -> str:
    for owner in ctx.mro(cls_name):
        pm, node = ctx.universe.classes[owner]
        candidates: List[Tuple[str, ast.Call]] = []
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
                for t in stmt.targets:
                    if isinstance(t, ast.Name):
                        candidates.append((t.id, stmt.value))
        candidates.sort(key=lambda c: 0 if "arch" in c[0].lower() else 1)
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
    parents = ctx.pm.parents
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Name) \
                and node.value.id in ctx.universe.classes:
            conds: List[str] = []
            child: ast.AST = node
            cur = parents.get(node)
            while cur is not None and not isinstance(cur, FUNC):
                if isinstance(cur, ast.If):
                    text = ctx.seg(cur.test)
                    conds.append(text if child in cur.body else f"not ({text})")
                child, cur = cur, parents.get(cur)
            out.setdefault(node.value.id, []).append(" and ".join(reversed(conds)) or "default")
        elif isinstance(node, ast.IfExp):
            for branch, neg in ((node.body, False), (node.orelse, True)):
                if isinstance(branch, ast.Name) and branch.id in known:
                    text = ctx.seg(node.test)
                    out.setdefault(branch.id, []).append(f"not ({text})" if neg else text)
    return {k: " or ".join(dict.fromkeys(v)) for k, v in out.items()}
