"""Collectors: the functions enumerating kernels (blob functions), their helpers, the
names of ``fnmatch`` and of the receipt parameter; skip conditions (``continue`` in
enumeration loops, asserts, rule objects, conditions of the dispatcher)."""

from __future__ import annotations

import ast
import re
from typing import List, Optional, Sequence, Set, Tuple

from ...model import Gap, SkipCondition
from ..pyparse import (
    FUNC,
    FunctionNode,
    dotted,
    fold_str,
    function_params,
    mentions,
    names_in,
    segment,
    walk_no_nested,
)
from .context import Context


def find_blob_functions(ctx: Context) -> None:
    """Find the blob functions (loops with ``continue`` or ``product``, in ``facts.enumeration``),
    their helpers, the names of ``fnmatch`` and of the receipt parameter (``ctx``)."""
    tree = ctx.tree
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "fnmatch":
            ctx.fnmatch_names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            ctx.fnmatch_names.update(f"{a.asname or a.name}.{f}" for a in node.names
                                     if a.name == "fnmatch" for f in ("fnmatch", "fnmatchcase"))
    if not ctx.fnmatch_names:
        ctx.fnmatch_names = {"fnmatch.fnmatch", "fnmatch"}
    def enumerates(fn: FunctionNode) -> bool:
        loops = [n for n in walk_no_nested(fn) if isinstance(n, (ast.For, ast.While))]
        return bool(loops) and (any(isinstance(n, ast.Continue) for loop in loops for n in ast.walk(loop))
                                or any(isinstance(n, ast.Call) and (dotted(n.func) or "").endswith("product")
                                       for n in walk_no_nested(fn)))

    candidates = [node for node in tree.body if isinstance(node, FUNC) and enumerates(node)]
    named = [f for f in candidates if "blob" in f.name.lower()
             and not re.match(r"^(write|list)_", f.name)]
    ctx.blob_functions = named or candidates
    if not ctx.blob_functions:
        ctx.gaps.append(Gap("blob functions", ctx.rel,
                            "no module-level function enumerating kernels (loops with continue/product)"))
    for fn in ctx.blob_functions:
        ctx.facts.enumeration.functions[fn.name] = ctx.where(fn)
        ctx.facts.enumeration.takes_targets |= any(arg.arg == "targets" for arg in fn.args.args)
        ctx.receipt_names.update(p for p in function_params(fn) if "receipt" in p.lower())
    if ctx.blob_functions and not ctx.receipt_names:
        ctx.gaps.append(Gap("receipt parameter", ctx.rel,
                            "no blob-function parameter whose name contains 'receipt'"))
    # helpers: nested functions of blob functions and loop-bearing factory/pipeline methods
    ctx.helper_functions += [(n, fn.name) for fn in ctx.blob_functions
                             for n in walk_no_nested(fn) if isinstance(n, FUNC)]
    for node in tree.body:
        info = ctx.class_infos.get(getattr(node, "name", ""))
        if isinstance(node, ast.ClassDef) and not (info is not None and info.is_dataclass) \
                and "pool" not in node.name.lower():
            ctx.helper_functions += [(stmt, node.name) for stmt in node.body if isinstance(stmt, FUNC)
                                     and any(isinstance(n, (ast.For, ast.While))
                                             for n in walk_no_nested(stmt))]


def collect_skip_conditions(ctx: Context) -> None:
    """Record the conditions that skip kernels (``facts.skip_conditions``: the source of
    each, an assertion's message); filter and receipt conditions have their own collectors."""
    seen: Set[Tuple[str, str]] = set()
    skips = ctx.facts.skip_conditions
    for fn, _ in ctx.loop_functions():
        loop_vars = {name for n in walk_no_nested(fn) for t in (
            [n.target] if isinstance(n, (ast.For, ast.comprehension)) else
            n.targets if isinstance(n, ast.Assign) else []) for name in names_in(t)}
        options = set(function_params(fn)) - loop_vars - ctx.receipt_names
        for n in walk_no_nested(fn):
            if isinstance(n, ast.Assert) and _if_chain(ctx, n, fn) is not None:
                msg = fold_str(n.msg) if n.msg is not None else None
                skips.append(SkipCondition(ctx.seg(n.test), ctx.where(n), "assert", msg or ""))
            chain = _if_chain(ctx, n, fn) if isinstance(n, ast.Continue) else None
            if chain == []:
                skips.append(SkipCondition("", ctx.where(n), "continue"))
            if not chain:
                continue
            tests = [t.test for t, _ in chain]
            if any(isinstance(x, ast.Call) and (dotted(x.func) or "") in ctx.fnmatch_names
                   for t in tests for x in ast.walk(t)) or any(
                    isinstance(cur, ast.If) and mentions(cur.test, ctx.receipt_names)
                    for cur, _ in ctx.pm.ancestors(n, fn)):
                continue  # the kernel filter (observed by the probe), receipts (own collector)
            source = _combined(ctx, chain)
            last = tests[-1]
            kind = "unsupported" if isinstance(last, ast.Compare) and len(last.ops) == 1 \
                and isinstance(last.comparators[0], ast.Constant) \
                and last.comparators[0].value is None else \
                "option" if set().union(*map(names_in, tests)) & options else "continue"
            key = (ctx.where(chain[-1][0]), source)
            if key not in seen:
                seen.add(key)
                skips.append(SkipCondition(source, key[0], kind))
    _collect_rules(ctx)
    pool = ctx.pool_class()  # the dispatcher's conditions
    for method in [s for s in pool.body if isinstance(s, FUNC)] if pool is not None else []:
        for n in walk_no_nested(method):
            chain = _if_chain(ctx, n, method) if isinstance(n, ast.Continue) else None
            if chain:
                skips.append(SkipCondition(_combined(ctx, chain), ctx.where(chain[-1][0]), "dispatch"))

    def line_of(sc: SkipCondition) -> Tuple[str, int]:
        path, _, line = sc.where.rpartition(":")
        return (path, int(line)) if line.isdigit() else (sc.where, 0)

    skips.sort(key=line_of)


def _if_chain(ctx: Context, node: ast.AST, fn: ast.AST) -> Optional[List[Tuple[ast.If, bool]]]:
    """The ``if`` s between ``node`` and its innermost loop in ``fn`` (outer first, with
    whether ``node`` is in the body); None outside a loop."""
    chain: List[Tuple[ast.If, bool]] = []
    for cur, child in ctx.pm.ancestors(node, fn):
        if isinstance(cur, (ast.For, ast.While)):
            return chain[::-1]
        if isinstance(cur, ast.If):
            chain.append((cur, child in cur.body))
    return None


def _combined(ctx: Context, chain: Sequence[Tuple[ast.If, bool]]) -> str:
    """The conditions of nested ``if`` s as one condition's source text."""
    parts = []
    for node, positive in chain:
        text = ctx.seg(node.test)
        loose = isinstance(node.test, (ast.BoolOp, ast.IfExp, ast.Lambda)) or (
            isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not))
        parts.append(f"not ({text})" if not positive else f"({text})" if loose and len(chain) > 1
                     else text)
    return " and ".join(parts)


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
