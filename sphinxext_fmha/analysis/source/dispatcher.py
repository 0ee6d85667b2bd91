"""Collector: the dispatcher, its loop levels, sorts and padding order (which kernels it
never reaches is read from the API file generate.py renders, see ``cppapi/``)."""

from __future__ import annotations

import ast
import re
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from ...model import Gap
from ..pyparse import (
    FUNC,
    FunctionNode,
    ParsedModule,
    decorators,
    dotted,
    segment,
    walk_no_nested,
)
from .context import Context


def collect_dispatch(ctx: Context) -> None:
    """Read the pool's dispatcher: mechanism, loop levels, sorts, padding order."""
    d = ctx.facts.dispatch
    pool = ctx.pool_class()
    if pool is None:
        ctx.gaps.append(Gap("dispatch", ctx.rel, "no API-pool class (name with 'Pool' / register methods)"))
        return
    method = _dispatch_method(ctx, pool)
    if method is None:
        ctx.gaps.append(Gap("dispatch", ctx.where(pool),
                            f"{pool.name} has no method rendering the dispatcher"))
        return
    d.mechanism = (f"property {pool.name}.api" if method.name == "api"
                   and "property" in decorators(method) else f"method {pool.name}.{method.name}()")
    d.where = ctx.where(method)
    d.order = _dispatch_levels(ctx, pool, method)
    if not d.order:
        ctx.gaps.append(Gap("dispatch order", ctx.where(method), "no nested loops over the pool found"))
    d.sorts = _sorts(ctx, pool)
    d.padding_order = _padding_order(ctx)


def _dispatch_method(ctx: Context, pool: ast.ClassDef) -> Optional[FunctionNode]:
    methods = [s for s in pool.body if isinstance(s, FUNC)]
    tests: Sequence[Callable[[FunctionNode], bool]] = (
        lambda s: s.name == "api" and "property" in decorators(s),
        lambda s: s.name == "render",
        lambda s: any(isinstance(n, ast.For) for n in walk_no_nested(s)) and any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "format"
            for n in ast.walk(s)))
    return next((s for test in tests for s in methods if test(s)), None)


def _dispatch_levels(ctx: Context, pool: ast.ClassDef, method: FunctionNode) -> List[str]:
    """The names the nested loops of the dispatcher bind, outermost first."""
    levels: List[str] = []
    methods = {s.name: s for s in pool.body if isinstance(s, FUNC)}

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
            return "(" + ", ".join(ctx.seg(e) for e in target.elts) + ")"
        return ctx.seg(target)

    def descend(stmts: Sequence[ast.stmt], visited: Set[str]) -> None:
        # the outermost loop: breadth-first, a loop comes before the loops inside it
        first = next((n for s in stmts for n in ast.walk(s) if isinstance(n, ast.For)), None)
        if first is None:  # follow self.method(...) calls
            called = next((n.func.attr for s in stmts for n in ast.walk(s) if isinstance(n, ast.Call)
                           and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                           and n.func.value.id == "self" and n.func.attr in methods
                           and n.func.attr not in visited), None)
            if called is not None:
                visited.add(called)
                descend(methods[called].body, visited)
            return
        levels.append(level_name(first))
        descend(first.body, visited)

    descend(method.body, {method.name})
    return levels


def _sorts(ctx: Context, pool: ast.ClassDef) -> List[str]:
    out: List[str] = []
    scopes: List[Tuple[ast.AST, ParsedModule]] = [(scope, ctx.pm) for scope in [pool, *ctx.blob_functions]]
    # local helper functions called from blob functions (e.g. imported factory selection)
    for fn in ctx.blob_functions:
        for n in ast.walk(fn):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                got = ctx.universe.origin_of(n.func.id)
                if got is not None and isinstance(got[1], FUNC) and got[1] not in [s for s, _ in scopes]:
                    scopes.append((got[1], got[0]))
    for scope, pm in scopes:
        for n in ast.walk(scope):
            if not (isinstance(n, ast.Call) and (
                    isinstance(n.func, ast.Name) and n.func.id == "sorted"
                    or isinstance(n.func, ast.Attribute) and n.func.attr == "sort")):
                continue
            text = segment(pm, n)
            key = next((kw.value for kw in n.keywords if kw.arg == "key"), None)
            key_src = ""
            if key is not None and not isinstance(key, ast.Lambda):
                # the key method of the pool (the one class among the scopes)
                name = (dotted(key) or "").split(".")[-1]
                target = next((s for s in pool.body if isinstance(s, FUNC) and s.name == name), None)
                if target is not None:
                    rets = [r.value for r in ast.walk(target)
                            if isinstance(r, ast.Return) and r.value is not None]
                    key_src = " | ".join(segment(pm, r) for r in rets)
                    lines = range(target.lineno, (target.end_lineno or target.lineno) + 1)
                    comment = " ".join(filter(None, map(pm.comments.get, lines)))
                    if comment:
                        key_src += f"  # {comment}"
            stmt = next((a for a, _ in pm.ancestors(n) if isinstance(a, ast.stmt)), n)
            comment = " ".join(pm.comments_above(stmt.lineno))
            out.append(f"{text} at {pm.where(n)}" + (f"; key returns {key_src}" if key_src else "")
                       + (f"; comment: {comment}" if comment else ""))
    return out


def _padding_order(ctx: Context) -> str:
    """What the module's comments, and the docstrings of the ``*dup*`` functions its blob
    functions and pool call (``check_duplicates_and_paddings``), say of how padding orders
    the kernels."""
    hints: Dict[str, str] = {}  # each text once, where it is said first
    rel_words = r"matter|later|earlier|first|before|after|pad"
    for line, text in sorted(ctx.pm.comments.items()):
        if (re.search(r"\border\b", text, re.I) and re.search(rel_words, text, re.I)) or (
                re.search(r"\bpad", text, re.I)
                and re.search(r"\b(later|earlier|first|before|after|order)\b", text, re.I)):
            hints.setdefault(text, f"{text} ({ctx.rel}:{line})")
    pool = ctx.pool_class()
    for scope in [*ctx.blob_functions, *([pool] if pool is not None else [])]:
        for n in ast.walk(scope):
            fname = (dotted(n.func) or "").split(".")[-1] if isinstance(n, ast.Call) else ""
            if "dup" not in fname.lower():
                continue
            got = ctx.universe.origin_of(fname)
            doc = loc = ""
            if got is not None and isinstance(got[1], FUNC):
                doc = " ".join((ast.get_docstring(got[1]) or "").split())
                loc = got[0].where(got[1])
            detail = (f"{fname} defined at {loc}: {doc}" if loc else doc).strip()
            if re.search(r"pad|order", detail, re.I):
                hints.setdefault(detail, f"{detail} (called at {ctx.where(n)})")
    return "; ".join(hints.values())
