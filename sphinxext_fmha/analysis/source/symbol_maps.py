"""Collector: symbol maps (module-level dicts, functions returning one dict per argument)
and where the module subscripts them (``MAP[self.a.b]``, per owner class or function)."""

from __future__ import annotations

import ast
from typing import Any, Callable, Dict, Optional

from ...model import Gap
from ..pyparse import FUNC, FunctionNode, ParsedModule, assigned_names, dotted, key_text, segment
from .context import Context, MapUse, SymbolMap

#: What ``ast.literal_eval`` raises for an entry that is not a plain literal
#: (``ValueError``: a name or a call; ``TypeError``: an unhashable key of a nested dict).
_NOT_LITERAL = (ValueError, TypeError, SyntaxError, RecursionError)


def _dict_entries(node: ast.Dict, pm: ParsedModule) -> Dict[str, str]:
    def shown(item: ast.AST, text: Callable[[Any], str]) -> str:
        try:
            return text(ast.literal_eval(item))
        except _NOT_LITERAL:
            return segment(pm, item)

    return {shown(k, key_text): shown(v, lambda value: value if isinstance(value, str) else repr(value))
            for k, v in zip(node.keys, node.values) if k is not None}


def collect_symbol_maps(ctx: Context) -> None:
    """Record module-level dicts and dict-returning functions of every loaded module."""
    maps = ctx.facts.symbol_maps
    for pm in sorted(ctx.universe.modules.values(), key=lambda m: m is ctx.pm):  # the module's own last
        if pm.tree is None:
            continue
        dicts: Dict[str, ast.Dict] = {}
        for node in pm.tree.body:
            for name, value in assigned_names(node):
                if isinstance(value, ast.Dict):
                    dicts[name] = value
                    maps[name] = SymbolMap(name, pm.where(node), "dict", _dict_entries(value, pm))
        for node in pm.tree.body:
            if isinstance(node, FUNC) and node.args.args:
                sm = _map_function(node, pm, dicts)
                if sm is not None:
                    maps[node.name] = sm
    if not maps:
        ctx.gaps.append(Gap("symbol maps", ctx.rel,
                            "no module-level dict found in the module or its local imports"))
    _collect_map_uses(ctx)


def _collect_map_uses(ctx: Context) -> None:
    """Record each ``MAP[self.a.b]`` of a known symbol map (``facts.map_uses``, in line order)."""
    kinds = {n: m.kind for n, m in ctx.facts.symbol_maps.items()}
    for node in ast.walk(ctx.tree):
        if not isinstance(node, ast.Subscript):
            continue
        call = isinstance(node.value, ast.Call)  # MAP[...] or map_function(...)[...]
        map_name: str = getattr(node.value.func if call else node.value, "id", "")  # type: ignore[attr-defined]
        if kinds.get(map_name) != ("function" if call else "dict"):
            continue
        path = dotted(node.slice)
        if path is None:
            continue
        path = path[5:] if path.startswith("self.") else path
        ctx.facts.map_uses.append(MapUse(
            owner=ctx.owner_of(node), path=path, field=path.split(".")[-1], map=map_name,
            where=ctx.where(node)))
    ctx.facts.map_uses.sort(key=lambda m: int(m.where.rpartition(":")[2] or 0))


def _map_function(fn: FunctionNode, pm: ParsedModule,
                  dicts: Dict[str, ast.Dict]) -> Optional[SymbolMap]:
    param = fn.args.args[0].arg
    branches: Dict[str, Dict[str, str]] = {}
    for ret in [n for n in ast.walk(fn) if isinstance(n, ast.Return)]:
        val = ret.value
        if isinstance(val, ast.Name) and val.id in dicts:
            key = None  # the condition choosing this return
            for cur, child in pm.ancestors(ret, fn):
                if isinstance(cur, ast.If) and child in cur.body:
                    t = cur.test
                    if isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.Eq) \
                            and isinstance(t.left, ast.Name) and t.left.id == param \
                            and isinstance(t.comparators[0], ast.Constant):
                        key = str(t.comparators[0].value)
                    break
            key = key if key is not None else "*"
            branches[key] = _dict_entries(dicts[val.id], pm)
        elif isinstance(val, ast.Dict):
            branches["*"] = _dict_entries(val, pm)
    return SymbolMap(fn.name, pm.where(fn), "function", {}, branches) if branches else None
