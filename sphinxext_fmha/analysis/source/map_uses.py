"""Collector: ``MAP[self.a.b]`` subscripts of symbol maps, per owner class or function.
"""

from __future__ import annotations

import ast

from ..pyparse import dotted
from .context import Context
from .facts import (
    MapUse,
)

__all__ = ["collect_map_uses"]


def collect_map_uses(ctx: Context) -> None:
    """Record each ``MAP[self.a.b]`` of a known symbol map (``facts.map_uses``, in line order)."""
    dict_names = {n for n, m in ctx.facts.symbol_maps.items() if m.kind == "dict"}
    fn_names = {n for n, m in ctx.facts.symbol_maps.items() if m.kind == "function"}
    for node in ast.walk(ctx.tree):
        if not isinstance(node, ast.Subscript):
            continue
        base = node.value
        map_name = ""
        if isinstance(base, ast.Name) and base.id in dict_names:
            map_name = base.id
        elif isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id in fn_names:
            map_name = base.func.id
        else:
            continue
        path = dotted(node.slice)
        if path is None:
            continue
        if path.startswith("self."):
            path = path[5:]
        ctx.facts.map_uses.append(MapUse(
            owner=ctx.owner_of(node), path=path, field=path.split(".")[-1], map=map_name,
            where=ctx.where(node)))
    ctx.facts.map_uses.sort(key=lambda m: int(m.where.rpartition(":")[2] or 0))
