"""Evaluating one tile table: a factory method called for every data type it knows.
"""

from __future__ import annotations

import ast
import itertools
from typing import Any, Dict, List, Optional, Tuple

from ...model import Gap
from ..pyeval import ClassRef, Obj, Unknown
from ..pyinterp import Interpreter
from ..pyparse import ParsedModule, dotted
from .astutil import (
    FunctionNode,
    decorators,
    expand_axes,
    flat_targets,
    key_text,
    member,
)
from .context import Context
from .facts import (
    FactoryTable,
)

__all__ = ["TileTableReader"]


def _hdim_field(ctx: Context) -> Optional[str]:
    """Field of a tile giving the head dim when tile tables are plain lists (heuristic)."""
    for fn in ctx.blob_functions:
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                    and "hdim" in n.targets[0].id.lower() and isinstance(n.value, ast.Attribute) \
                    and isinstance(n.value.value, ast.Name):
                return n.value.attr
    return None


def _call_sites(ctx: Context, method: str) -> List[Tuple[FunctionNode, ast.Call]]:
    out = []
    for fn in ctx.blob_functions:
        for n in ast.walk(fn):
            if isinstance(n, ast.Call):
                f = n.func
                name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
                if name == method:
                    out.append((fn, n))
    return out


def _loop_axis(fn: FunctionNode, var: str) -> Optional[ast.AST]:
    for n in ast.walk(fn):
        if not isinstance(n, ast.For):
            continue
        targets = flat_targets(n.target)
        it = n.iter
        if isinstance(it, ast.Call) and (dotted(it.func) or "").endswith("product"):
            axes = expand_axes(it.args)
            if len(axes) == len(targets):
                for t, a in zip(targets, axes):
                    if isinstance(t, ast.Name) and t.id == var:
                        return a
        elif len(targets) == 1 and isinstance(targets[0], ast.Name) and targets[0].id == var:
            return it
    return None


def _related_methods(ctx: Context, fn: FunctionNode) -> List[ast.AST]:
    out: List[ast.AST] = [fn]
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                and isinstance(n.func.value, ast.Name) \
                and n.func.value.id in ctx.universe.classes:
            sub = member(ctx.universe.classes[n.func.value.id][1], n.func.attr)
            if sub is not None and sub not in out:
                out.append(sub)
    return out


def _non_numeric_arguments(source: str) -> str:
    """The constructor arguments of a tile that are not plain numbers, as written
    (``CppConstraint('...')``); ``""`` when every argument is a number."""
    try:
        call = ast.parse(source.strip(), mode="eval").body
    except SyntaxError:
        return ""
    if not isinstance(call, ast.Call):
        return ""

    def number(node: ast.expr) -> bool:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            node = node.operand
        return isinstance(node, ast.Constant) and isinstance(node.value, (int, float))

    text = source.strip()

    def written(node: ast.expr) -> str:
        return ast.get_source_segment(text, node) or ast.unparse(node)

    parts = [written(a) for a in call.args if not number(a)]
    parts += ["%s=%s" % (k.arg, written(k.value)) for k in call.keywords if not number(k.value)]
    return ", ".join(parts)


#: One evaluation of a table: (values of the other parameters, tiles per head dim,
#: constructor sources per head dim).
_Combo = Tuple[Tuple[Any, ...], Dict[str, List[Obj]], Dict[str, List[str]]]


class TileTableReader:
    """Evaluates the tile tables of one module with one interpreter.

    ``hdim_field`` is the tile field that gives the head dim when a table is a plain
    list of tiles (read from ``hdim = <tile>.<field>`` in the blob functions).
    """

    def __init__(self, ctx: Context, interp: Interpreter) -> None:
        self.ctx = ctx
        self.interp = interp
        self.hdim_field = _hdim_field(ctx)
        self.warned_hdim = False

    def read(self, owner: str, method: str, fn: FunctionNode,
             pm: ParsedModule, is_method: bool) -> FactoryTable:
        """The table of ``owner.method`` (or function ``fn``) for each candidate data type.

        Tables that cannot be evaluated for a data type become gaps; data types found
        in the method but never enumerated by the blob functions become notes.
        """
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        decos = decorators(fn)
        bound: Dict[str, Any] = {}
        if is_method and "staticmethod" not in decos and params:
            # self or cls: bound to the owner, not a table parameter; a comparison with a
            # class attribute (``dtype in cls._DT_FP16_BF16``) reads it through it
            bound = {params[0]: ClassRef(owner)}
            params = params[1:]
        table = FactoryTable(factory=owner, method=method, defined_at=pm.where(fn))
        if not params:
            self.ctx.gaps.append(Gap(f"tile table {owner}.{method}", pm.where(fn),
                                     "method takes no dtype parameter", "tiles", owner))
            return table
        dtype_param = next((p for p in params if "dtype" in p.lower()), params[0])
        table.dtype_parameter = dtype_param
        others = [p for p in params if p != dtype_param]
        table.qualifiers = others
        related = _related_methods(self.ctx, fn)
        enumerated: List[Any] = []
        self._candidates(method, params.index(dtype_param), dtype_param, [], enumerated)
        enumerated = list(enumerated)
        dtypes = self._candidates(method, params.index(dtype_param), dtype_param, related,
                                  bound=bound)
        dtypes = [d for d in dtypes if isinstance(d, str)]
        other_values: List[List[Any]] = []
        for p in others:
            vals = self._candidates(method, params.index(p), p, related)
            if not vals:
                other_values.append([None])
            else:
                other_values.append(vals)
        combos = list(itertools.product(*other_values)) if others else [()]
        for dtype in dtypes:
            per_combo: List[_Combo] = []
            failed = False
            for combo in combos:
                args = {dtype_param: dtype}
                args.update({p: v for p, v in zip(others, combo)})
                self.interp.steps = 0
                try:
                    if is_method:
                        result = self.interp.call_function(fn, [], args, self_obj=ClassRef(owner)
                                                      if "staticmethod" not in decos else None)
                    else:
                        result = self.interp.call_function(fn, [], args)
                except Unknown as exc:
                    self.ctx.gaps.append(Gap(f"tile table {owner}.{method}({dtype!r}"
                                         + "".join(f", {p}={v!r}" for p, v in zip(others, combo)) + ")",
                                         pm.where(fn), f"cannot be evaluated statically: {exc}",
                                         "tiles", owner))
                    failed = True
                    continue
                tiles, calls = self._normalise(result)
                per_combo.append((combo, tiles, calls))
            if any(tiles for _, tiles, _ in per_combo):
                table.notes.update(self._notes(per_combo))
                table.supported.append(dtype)
                table.tiles[dtype], table.calls[dtype] = self._merge(others, per_combo)
            elif not failed:
                table.unsupported.append(dtype)
        if not dtypes:
            self.ctx.gaps.append(Gap(f"tile table {owner}.{method}", pm.where(fn),
                                 "no candidate data types found (no loop feeding its data type "
                                 "argument could be evaluated, and it compares that argument "
                                 "with no literal value)", "tiles", owner))
        if not enumerated:
            self.ctx.gaps.append(Gap(f"enumerated data types for {owner}.{method}", pm.where(fn),
                                 "the loop feeding the data type argument could not be evaluated; "
                                 "data types come from comparisons only", "tiles", owner))
        return table

    def _merge(self, others: List[str],
               per_combo: List[_Combo]) -> Tuple[Dict[str, List[str]], Dict[str, List[str]]]:
        """(tiles, calls) per head dim of one data type, merged over the other parameters.

        Keys get a ``[param=value]`` suffix only when the other parameters matter
        (their tables differ, or some of them are empty).
        """
        non_empty = [(c, t, k) for c, t, k in per_combo if t]
        rendered_sets = {repr({h: [self._render(o) for o in v] for h, v in t.items()})
                         for _, t, _ in non_empty}
        qualify = bool(others) and (len(rendered_sets) > 1 or len(non_empty) < len(per_combo))
        tiles_out: Dict[str, List[str]] = {}
        calls_out: Dict[str, List[str]] = {}
        for combo, tiles, calls in non_empty:
            suffix = ""
            if qualify:
                suffix = " [" + ", ".join(f"{p}={v}" for p, v in zip(others, combo)) + "]"
            for h, objs in tiles.items():
                shown = tiles_out.setdefault(h + suffix, [])
                for o in objs:
                    r = self._render(o)
                    if r not in shown:
                        shown.append(r)
            for h, srcs in calls.items():
                shown = calls_out.setdefault(h + suffix, [])
                for src in srcs:
                    if src not in shown:
                        shown.append(src)
        return tiles_out, calls_out

    def _notes(self, per_combo: List[_Combo]) -> Dict[str, str]:
        """Tile name -> the constructor arguments that are not plain numbers."""
        out: Dict[str, str] = {}
        for _, tiles, _ in per_combo:
            for objs in tiles.values():
                for obj in objs:
                    note = _non_numeric_arguments(obj.source)
                    if note:
                        out.setdefault(self._render(obj), note)
        return out

    def _candidates(self, fn_name: str, position: int, param: str,
                    method_nodes: List[ast.AST], enumerated: Optional[List[Any]] = None,
                    bound: Optional[Dict[str, Any]] = None) -> List[Any]:
        values: List[Any] = enumerated if enumerated is not None else []
        for bfn, call in _call_sites(self.ctx, fn_name):
            arg = call.args[position] if position < len(call.args) else None
            if isinstance(arg, ast.Name):
                axis = _loop_axis(bfn, arg.id)
                if axis is not None:
                    try:
                        got = self.interp.iterate(self.interp.eval(axis, {}))
                    except Unknown:
                        continue
                    values.extend(v for v in got if v not in values)
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
                            elif isinstance(s, ast.Attribute) and bound:
                                values.extend(v for v in self._constants(s, bound)
                                              if v not in values)
        return values

    def _constants(self, node: ast.AST, bound: Dict[str, Any]) -> List[Any]:
        """The plain values (strings, numbers) an expression such as a class attribute
        holds, one or a tuple of them; none when it cannot be evaluated statically."""
        try:
            value = self.interp.eval(node, dict(bound))
        except Unknown:
            return []
        items = value if isinstance(value, (list, tuple, set, frozenset)) else [value]
        return [v for v in items if isinstance(v, (str, int, float)) and not isinstance(v, bool)]

    def _render(self, obj: Obj) -> str:
        if obj.class_name in self.ctx.tile_names:
            try:
                name = self.interp.get_field(obj, "name")
                if isinstance(name, str):
                    return name
            except Unknown:
                pass
        return obj.source

    def _normalise(self, result: Any) -> Tuple[Dict[str, List[Obj]], Dict[str, List[str]]]:
        """(tiles, call sources) per head-dim key of one evaluated table (dict, list or tile)."""
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
                add(key_text(k), v)
        elif isinstance(result, (list, tuple)):
            if result and not self.hdim_field and not self.warned_hdim:
                self.warned_hdim = True  # one gap for all tables
                self.ctx.gaps.append(Gap("head dim of list-shaped tile tables", self.ctx.rel,
                                     "no 'hdim = <tile>.<field>' assignment in the blob functions; "
                                     "tiles are listed under '*'", "tiles"))
            for v in result:
                key = "*"
                if isinstance(v, Obj) and self.hdim_field:
                    try:
                        key = key_text(self.interp.get_field(v, self.hdim_field))
                    except Unknown:
                        key = "*"
                add(key, v)
        elif isinstance(result, Obj):
            add("*", result)
        return tiles, calls
