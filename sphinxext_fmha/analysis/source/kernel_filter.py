"""Collector: how the ``-f`` filter is split, padded and matched with ``fnmatch``.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Sequence, Tuple

from ...model import Gap
from ..pyparse import dotted, walk_no_nested
from .astutil import (
    FUNC,
    FunctionNode,
    is_fnmatch_call,
    member,
)
from .context import Context
from .facts import (
    FilterLine,
    FilterMatch,
)

__all__ = ["collect_filter"]


def collect_filter(ctx: Context) -> None:
    """Read how ``-f`` is split, padded, defaulted and matched (``facts.filter_source``)."""
    fs = ctx.facts.filter_source
    tree = ctx.tree
    functions = [n for n in ast.walk(tree) if isinstance(n, FUNC)]
    split_vars: Dict[Tuple[str, str], str] = {}  # (function, var) -> separator
    for fn in functions:
        for n in walk_no_nested(fn):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "split" \
                    and n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str):
                fs.lines.append(FilterLine("split", ctx.seg(_stmt_of(ctx, n)), ctx.where(n), fn.name))
                if fs.separator is None:
                    fs.separator = n.args[0].value
                stmt = _stmt_of(ctx, n)
                if isinstance(stmt, ast.Assign):
                    for t in stmt.targets:
                        if isinstance(t, ast.Name):
                            split_vars[(fn.name, t.id)] = n.args[0].value
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "extend" \
                    and n.args and isinstance(n.args[0], ast.BinOp) and isinstance(n.args[0].op, ast.Mult):
                lst = n.args[0].left
                fs.lines.append(FilterLine("pad", ctx.seg(n), ctx.where(n), fn.name))
                if isinstance(lst, ast.List) and len(lst.elts) == 1 and isinstance(lst.elts[0], ast.Constant):
                    fs.missing_becomes = lst.elts[0].value  # type: ignore[assignment]  # a str in every codegen
                cnt = n.args[0].right
                if isinstance(cnt, ast.BinOp) and isinstance(cnt.left, ast.Constant):
                    fs.parts = cnt.left.value  # type: ignore[assignment]  # an int in every codegen
            elif isinstance(n, ast.If) and isinstance(n.test, ast.Compare) and len(n.test.ops) == 1 \
                    and isinstance(n.test.ops[0], ast.Eq) \
                    and isinstance(n.test.comparators[0], ast.Constant) \
                    and n.test.comparators[0].value in ("", None) and len(n.body) == 1 \
                    and isinstance(n.body[0], ast.Assign) and isinstance(n.body[0].value, ast.Constant):
                fs.lines.append(FilterLine("default", ctx.seg(n.test) + ": " + ctx.seg(n.body[0]),
                                           ctx.where(n), fn.name))
                fs.empty_default = n.body[0].value.value  # type: ignore[assignment]  # a str or None
            elif isinstance(n, ast.Call) and is_fnmatch_call(n, ctx.fnmatch_names):
                _filter_match(ctx, fn, n, split_vars, functions)
    if not fs.matches:
        ctx.gaps.append(Gap("kernel filter", ctx.rel, "no fnmatch call found"))


def _stmt_of(ctx: Context, node: ast.AST) -> ast.AST:
    parents = ctx.pm.parents
    cur = node
    while cur in parents and not isinstance(cur, ast.stmt):
        cur = parents[cur]
    return cur


def _filter_match(ctx: Context, fn: FunctionNode, call: ast.Call, split_vars: Dict[Tuple[str, str], str],
                  functions: Sequence[FunctionNode]) -> None:
    fs = ctx.facts.filter_source
    if len(call.args) < 2:
        return
    kexpr, pat = call.args[0], call.args[1]
    m = FilterMatch(function=fn.name, kernel_expr=ctx.seg(kexpr), pattern=ctx.seg(pat),
                    where=ctx.where(call))
    m.kernel_class = _expr_class(ctx, kexpr.value if isinstance(kexpr, ast.Attribute) else kexpr, fn)
    parents = ctx.pm.parents
    cur = parents.get(call)
    guards = []
    while cur is not None and cur is not fn:
        if isinstance(cur, ast.If) and not any(isinstance(x, ast.Call)
                                               and is_fnmatch_call(x, ctx.fnmatch_names)
                                               for x in ast.walk(cur.test)):
            guards.append(ctx.seg(cur.test))
        cur = parents.get(cur)
    m.guard = " and ".join(reversed(guards))
    if m.guard:
        fs.lines.append(FilterLine("guard", m.guard, ctx.where(call), fn.name))
    fs.lines.append(FilterLine("match", ctx.seg(_stmt_of(ctx, call)), ctx.where(call), fn.name))
    idx, var, via = _pattern_index(ctx, fn, pat, split_vars, functions)
    m.index, m.split_var, m.via = idx, var, via
    fs.matches.append(m)


def _pattern_index(ctx: Context, fn: FunctionNode, pat: ast.AST, split_vars: Dict[Tuple[str, str], str],
                   functions: Sequence[FunctionNode]) -> Tuple[Optional[int], str, str]:
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
                return got[0], got[1], f"{pat.id} = {ctx.seg(n.value)}"
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
                    sub = from_subscript(arg, other.name)
                    if sub:
                        found.append((sub[0], sub[1], f"{other.name}() passes {ctx.seg(arg)}"))
        idxs = {f[0] for f in found}
        if len(idxs) == 1:
            return found[0][0], found[0][1], "; ".join(dict.fromkeys(f[2] for f in found))
        if len(idxs) > 1:
            ctx.gaps.append(Gap(f"filter index of {fn.name}", ctx.where(fn),
                                "callers pass different filter parts"))
    return None, "", ""


def _expr_class(ctx: Context, expr: ast.AST, fn: FunctionNode) -> str:
    aliases: Dict[str, str] = {}
    assigned: Dict[str, ast.AST] = {}
    for n in walk_no_nested(fn):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            assigned[n.targets[0].id] = n.value
            if isinstance(n.value, ast.Name) and n.value.id in ctx.universe.classes:
                aliases[n.targets[0].id] = n.value.id

    def cls_of_call(call: ast.AST) -> str:
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
            name = aliases.get(call.func.id, call.func.id)
            if name in ctx.universe.classes:
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
            for cname in ctx.mro(owner):
                found = member(ctx.universe.classes[cname][1], e.attr)
                if found is None:
                    continue
                if found.returns is not None:
                    ann = dotted(found.returns)
                    if ann and ann.split(".")[-1] in ctx.universe.classes:
                        return ann.split(".")[-1]
                for r in ast.walk(found):
                    if isinstance(r, ast.Return) and r.value is not None:
                        c = cls_of_call(r.value)
                        if c:
                            return c
            return ""
        return ""

    return resolve(expr)
