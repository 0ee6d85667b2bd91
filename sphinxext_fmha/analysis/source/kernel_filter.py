"""Collector: which ``-f`` part each ``fnmatch`` call of the codegen matches a kernel class
against (the self-check ``source_and_observation_agree.filter_positions`` holds it against
the part the running code used).
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Sequence

from ...model import Gap
from ..pyparse import dotted, walk_no_nested
from .astutil import (
    FUNC,
    FunctionNode,
    is_fnmatch_call,
    member,
)
from .context import Context
from .facts import FilterMatch

__all__ = ["collect_filter"]


def collect_filter(ctx: Context) -> None:
    """Each ``fnmatch(kernel, pattern)`` call: the kernel class and the filter part
    (``facts.filter_source.matches``)."""
    functions = [n for n in ast.walk(ctx.tree) if isinstance(n, FUNC)]
    matches = ctx.facts.filter_source.matches
    for fn in functions:
        for n in walk_no_nested(fn):
            if isinstance(n, ast.Call) and is_fnmatch_call(n, ctx.fnmatch_names) and len(n.args) >= 2:
                kexpr = n.args[0]
                matches.append(FilterMatch(
                    kernel_class=_expr_class(ctx, kexpr.value if isinstance(kexpr, ast.Attribute)
                                             else kexpr, fn),
                    index=_pattern_index(ctx, fn, n.args[1], functions), where=ctx.where(n)))
    if not matches:
        ctx.gaps.append(Gap("kernel filter", ctx.rel, "no fnmatch call found"))


def _pattern_index(ctx: Context, fn: FunctionNode, pat: ast.AST,
                   functions: Sequence[FunctionNode]) -> Optional[int]:
    def from_subscript(node: ast.AST) -> Optional[int]:
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
            return node.slice.value
        return None

    got = from_subscript(pat)
    if got is not None or not isinstance(pat, ast.Name):
        return got
    # local assignment  pattern = parts[i]
    for n in walk_no_nested(fn):
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == pat.id for t in n.targets):
            got = from_subscript(n.value)
            if got is not None:
                return got
    # a parameter fed by callers with parts[i]
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    if pat.id in params:
        pos = params.index(pat.id)
        found: List[int] = []
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
                    sub = from_subscript(arg)
                    if sub is not None:
                        found.append(sub)
        idxs = set(found)
        if len(idxs) == 1:
            return found[0]
        if len(idxs) > 1:
            ctx.gaps.append(Gap(f"filter index of {fn.name}", ctx.where(fn),
                                "callers pass different filter parts"))
    return None


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
