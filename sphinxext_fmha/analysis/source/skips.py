"""Collector: skip conditions (``continue`` in enumeration loops, asserts, rule objects,
conditions of the dispatcher)."""

from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Sequence, Set, Tuple

from ...model import SkipCondition
from ..pyparse import (
    FUNC,
    dotted,
    fold_str,
    function_params,
    mentions,
    names_in,
    segment,
    walk_no_nested,
    wrap,
)
from .context import Context


def collect_skip_conditions(ctx: Context) -> None:
    """Record the conditions that skip kernels (``facts.skip_conditions``: the source of
    each, an assertion's message); filter and receipt conditions have their own collectors."""
    seen: Set[Tuple[str, str]] = set()
    for fn, _ in ctx.loop_functions():
        loop_vars = {name for n in walk_no_nested(fn) for t in (
            [n.target] if isinstance(n, (ast.For, ast.comprehension)) else
            n.targets if isinstance(n, ast.Assign) else []) for name in names_in(t)}
        options = set(function_params(fn)) - loop_vars - ctx.receipt_names
        for n in walk_no_nested(fn):
            if isinstance(n, ast.Continue):
                loop = _innermost_loop(ctx, n, fn)
                if loop is None:
                    continue
                chain = _if_chain(ctx, n, loop)
                if not chain:
                    ctx.facts.skip_conditions.append(SkipCondition("", ctx.where(n), "continue"))
                    continue
                tests = [t.test for t, _ in chain]
                if any(isinstance(x, ast.Call) and (dotted(x.func) or "") in ctx.fnmatch_names
                       for t in tests for x in ast.walk(t)):
                    continue  # the kernel filter: observed by the probe
                if any(mentions(t, ctx.receipt_names) for t in tests):
                    continue  # receipt blocks: reported in receipts
                if _in_receipt_block(ctx, n, fn):
                    continue
                source = _combined(ctx, [(t.test, pos) for t, pos in chain])
                last = tests[-1]
                kind = "unsupported" if isinstance(last, ast.Compare) and len(last.ops) == 1 \
                    and isinstance(last.comparators[0], ast.Constant) \
                    and last.comparators[0].value is None else \
                    "option" if set().union(*map(names_in, tests)) & options else "continue"
                key = (ctx.where(chain[-1][0]), source)
                if key not in seen:
                    seen.add(key)
                    ctx.facts.skip_conditions.append(SkipCondition(source, key[0], kind))
            elif isinstance(n, ast.Assert) and _innermost_loop(ctx, n, fn) is not None:
                msg = fold_str(n.msg) if n.msg is not None else None
                ctx.facts.skip_conditions.append(SkipCondition(
                    ctx.seg(n.test), ctx.where(n), "assert", msg or ""))
    _collect_rules(ctx)
    _collect_dispatch_skips(ctx)

    def line_of(sc: SkipCondition) -> Tuple[str, int]:
        path, _, line = sc.where.rpartition(":")
        return (path, int(line)) if line.isdigit() else (sc.where, 0)

    ctx.facts.skip_conditions.sort(key=line_of)


def _up(ctx: Context, node: ast.AST, stop: Optional[ast.AST]) -> Iterator[Tuple[ast.AST, ast.AST]]:
    """(ancestor, its child on the way) from ``node`` up to ``stop`` (left out)."""
    parents = ctx.pm.parents
    child, cur = node, parents.get(node)
    while cur is not None and cur is not stop:
        yield cur, child
        child, cur = cur, parents.get(cur)


def _if_chain(ctx: Context, node: ast.AST, stop: ast.AST) -> List[Tuple[ast.If, bool]]:
    """Enclosing ``if`` statements between ``stop`` and ``node`` (outer first)."""
    return [(cur, child in cur.body) for cur, child in _up(ctx, node, stop)
            if isinstance(cur, ast.If)][::-1]


def _innermost_loop(ctx: Context, node: ast.AST, fn: ast.AST) -> Optional[ast.AST]:
    return next((cur for cur, _ in _up(ctx, node, fn) if isinstance(cur, (ast.For, ast.While))),
                None)


def _combined(ctx: Context, conds: Sequence[Tuple[ast.expr, bool]]) -> str:
    """The conditions of nested ``if`` s as one condition's source text."""
    parts = []
    for test, positive in conds:
        text = ctx.seg(test)
        parts.append((wrap(text, test) if len(conds) > 1 else text) if positive
                     else f"not ({text})")
    return " and ".join(parts)


def _in_receipt_block(ctx: Context, node: ast.AST, fn: ast.AST) -> bool:
    return any(isinstance(cur, ast.If) and mentions(cur.test, ctx.receipt_names)
               for cur, _ in _up(ctx, node, fn))


def _collect_rules(ctx: Context) -> None:
    for info in ctx.facts.classes:
        if "rule" not in info.name.lower():
            continue
        pm, node = ctx.universe.classes[info.name]
        checks = [s for s in node.body if isinstance(s, FUNC)
                  and not s.name.startswith("__")]
        parts = []
        for s in checks:
            rets = [r.value for r in ast.walk(s) if isinstance(r, ast.Return) and r.value is not None]
            if rets:
                parts.append(f"{s.name}: " + " | ".join(segment(pm, r) for r in rets))
        ctx.facts.skip_conditions.append(SkipCondition(
            "; ".join(parts) or info.name, info.defined_at, "rule"))


def _collect_dispatch_skips(ctx: Context) -> None:
    pool = ctx.pool_class()
    if pool is None:
        return
    for s in pool.body:
        if not isinstance(s, FUNC):
            continue
        for n in walk_no_nested(s):
            if isinstance(n, ast.Continue):
                loop = _innermost_loop(ctx, n, s)
                chain = _if_chain(ctx, n, loop) if loop is not None else []
                if not chain:
                    continue
                source = _combined(ctx, [(t.test, pos) for t, pos in chain])
                ctx.facts.skip_conditions.append(SkipCondition(
                    source, ctx.where(chain[-1][0]), "dispatch"))
