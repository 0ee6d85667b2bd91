"""Collector: skip conditions (``continue`` in enumeration loops, asserts, rule objects,
conditions of the dispatcher).
"""

from __future__ import annotations

import ast
from typing import List, Optional, Sequence, Set, Tuple

from ...model import SkipCondition
from ..pyparse import fold_str, segment, walk_no_nested
from ..python_conditions import read_condition
from .astutil import (
    FUNC,
    calls_named,
    function_params,
    is_fnmatch_call,
    mentions,
    names_in,
    wrap,
)
from .context import Context

__all__ = ["collect_skip_conditions"]


def collect_skip_conditions(ctx: Context) -> None:
    """Record the conditions that skip kernels (``facts.skip_conditions``).

    Filter and receipt conditions are left to their own collectors.
    """
    seen: Set[Tuple[str, str]] = set()
    for fn, _ in ctx.loop_functions():
        params = set(function_params(fn))
        loop_vars: Set[str] = set()
        for n in walk_no_nested(fn):
            if isinstance(n, (ast.For, ast.comprehension)):
                loop_vars |= names_in(n.target)
            elif isinstance(n, ast.Assign):
                for t in n.targets:
                    loop_vars |= names_in(t)
        options = params - loop_vars - ctx.receipt_names
        for n in walk_no_nested(fn):
            if isinstance(n, ast.Continue):
                loop = _innermost_loop(ctx, n, fn)
                if loop is None:
                    continue
                chain = _if_chain(ctx, n, loop)
                if not chain:
                    ctx.facts.skip_conditions.append(SkipCondition(
                        "", "always skipped (unconditional continue)", ctx.where(n), "continue"))
                    continue
                tests = [t.test for t, _ in chain]
                if any(is_fnmatch_call(x, ctx.fnmatch_names) for t in tests for x in ast.walk(t)):
                    continue  # the kernel filter: observed by the probe
                if any(mentions(t, ctx.receipt_names) for t in tests):
                    continue  # receipt blocks: reported in receipts
                if _in_receipt_block(ctx, n, fn):
                    continue
                conds = [(t.test, pos) for t, pos in chain]
                source, node = _combined(ctx, conds)
                kind = "continue"
                names = set().union(*(names_in(t) for t in tests))
                if names & options:
                    kind = "option"
                last = tests[-1]
                if isinstance(last, ast.Compare) and len(last.ops) == 1 and isinstance(
                        last.comparators[0], ast.Constant) and last.comparators[0].value is None:
                    kind = "unsupported"
                where = ctx.where(chain[-1][0])
                key = (where, source)
                if key in seen:
                    continue
                seen.add(key)
                ctx.facts.skip_conditions.append(SkipCondition(source, _skip_reading(ctx, node), where, kind))
            elif isinstance(n, ast.Assert) and _innermost_loop(ctx, n, fn) is not None:
                text = ctx.seg(n.test)
                msg = fold_str(n.msg) if n.msg is not None else None
                reading = "requires " + read_condition(n.test) + (f" ({msg})" if msg else "")
                ctx.facts.skip_conditions.append(SkipCondition(text, reading, ctx.where(n), "assert"))
    _collect_rules(ctx)
    _collect_dispatch_skips(ctx)

    def line_of(sc: SkipCondition) -> Tuple[str, int]:
        path, _, line = sc.where.rpartition(":")
        return (path, int(line)) if line.isdigit() else (sc.where, 0)

    ctx.facts.skip_conditions.sort(key=line_of)


def _if_chain(ctx: Context, node: ast.AST, stop: ast.AST) -> List[Tuple[ast.If, bool]]:
    """Enclosing ``if`` statements between ``stop`` and ``node`` (outer first)."""
    parents = ctx.pm.parents
    chain: List[Tuple[ast.If, bool]] = []
    child = node
    cur = parents.get(node)
    while cur is not None and cur is not stop:
        if isinstance(cur, ast.If):
            chain.append((cur, child in cur.body))
        child, cur = cur, parents.get(cur)
    return list(reversed(chain))


def _innermost_loop(ctx: Context, node: ast.AST, fn: ast.AST) -> Optional[ast.AST]:
    parents = ctx.pm.parents
    cur = parents.get(node)
    while cur is not None and cur is not fn:
        if isinstance(cur, (ast.For, ast.While)):
            return cur
        cur = parents.get(cur)
    return None


def _combined(ctx: Context, conds: Sequence[Tuple[ast.expr, bool]]) -> Tuple[str, ast.expr]:
    parts = []
    nodes: List[ast.expr] = []
    for test, positive in conds:
        text = ctx.seg(test)
        if positive:
            parts.append(wrap(text, test) if len(conds) > 1 else text)
            nodes.append(test)
        else:
            parts.append(f"not ({text})")
            nodes.append(ast.UnaryOp(op=ast.Not(), operand=test))
    node = nodes[0] if len(nodes) == 1 else ast.BoolOp(op=ast.And(), values=nodes)
    return " and ".join(parts), node


def _skip_reading(ctx: Context, node: ast.AST) -> str:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return "skipped unless " + read_condition(node.operand)
    return "skipped when " + read_condition(node)


def _in_receipt_block(ctx: Context, node: ast.AST, fn: ast.AST) -> bool:
    parents = ctx.pm.parents
    cur = parents.get(node)
    while cur is not None and cur is not fn:
        if isinstance(cur, ast.If) and mentions(cur.test, ctx.receipt_names):
            return True
        cur = parents.get(cur)
    return False


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
        uses = [ctx.where(c) for c in calls_named(ctx.tree, {info.name})]
        reading = f"rule object {info.name}"
        if info.docstring:
            reading += f": {info.docstring.splitlines()[0]}"
        if uses:
            reading += f" (used at {', '.join(uses)})"
        ctx.facts.skip_conditions.append(SkipCondition(
            "; ".join(parts) or info.name, reading, info.defined_at, "rule"))


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
                source, node = _combined(ctx, [(t.test, pos) for t, pos in chain])
                reading = _skip_reading(ctx, node).replace("skipped", "not dispatched", 1)
                ctx.facts.skip_conditions.append(SkipCondition(
                    source, reading, ctx.where(chain[-1][0]), "dispatch"))
