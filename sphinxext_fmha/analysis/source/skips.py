"""Collectors: the functions enumerating kernels (blob functions), their helpers, the
names of ``fnmatch`` and of the receipt parameter; skip conditions (``continue`` in
enumeration loops, asserts, rule functions, conditions of the dispatcher)."""

from __future__ import annotations

import ast
import copy
import re
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from ...model import Gap, SkipCondition
from ..pyparse import (
    FUNC,
    FunctionNode,
    ParsedModule,
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
            source = _combined(ctx.seg, chain)
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
                skips.append(SkipCondition(_combined(ctx.seg, chain), ctx.where(chain[-1][0]), "dispatch"))

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


def _combined(seg: Callable[[ast.AST], str], chain: Sequence[Tuple[ast.If, bool]]) -> str:
    """The conditions of nested ``if`` s as one condition's source text."""
    parts = []
    for node, positive in chain:
        text = seg(node.test)
        loose = isinstance(node.test, (ast.BoolOp, ast.IfExp, ast.Lambda)) or (
            isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not))
        parts.append(f"not ({text})" if not positive else f"({text})" if loose and len(chain) > 1
                     else text)
    return " and ".join(parts)


def _collect_rules(ctx: Context) -> None:
    """One ``rule`` per rule function: those a method hands out (``get_rules`` returning
    its nested functions, maybe after a base class's), else the methods of a rule class."""
    for info in ctx.facts.classes:
        pm, node = ctx.universe.classes[info.name]
        methods = [s for s in node.body if isinstance(s, FUNC)]
        lists = [(m.name, _extended(ctx, info.name, m), fns) for m in methods if (fns := _handed_out(m))]
        if not lists and "rule" in info.name.lower():
            lists = [("", "", [m for m in methods if not m.name.startswith("__")])]
        for method, base, fns in lists:
            for fn in fns:
                if not (returns := _returns(pm, fn)):
                    continue
                top = fn.decorator_list[0].lineno if fn.decorator_list else fn.lineno
                ctx.facts.skip_conditions.append(SkipCondition(
                    "; ".join(f"{c} -> {v}" if c else v for c, v in returns), pm.where(fn), "rule",
                    " ".join(pm.comments_above(top) + pm.comments_above(fn.body[0].lineno)),
                    ".".join(filter(None, (info.name, method, fn.name))), returns, base))


def _handed_out(method: FunctionNode) -> List[FunctionNode]:
    """The nested functions a method returns as values: in what it returns, or added to
    the list it returns (``rules.append(check)``, ``rules += [check]``)."""
    body = list(walk_no_nested(method))
    returned = {n.value.id for n in body if isinstance(n, ast.Return) and isinstance(n.value, ast.Name)}
    held = [n.value for n in body if isinstance(n, ast.Return) and n.value is not None]
    held += [n for n in body if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and isinstance(n.func.value, ast.Name) and n.func.value.id in returned]
    held += [n.value for n in body if isinstance(n, (ast.Assign, ast.AugAssign)) and returned & {
        t for x in (n.targets if isinstance(n, ast.Assign) else [n.target]) for t in names_in(x)}]
    called = {id(n.func) for h in held for n in ast.walk(h) if isinstance(n, ast.Call)}
    values = {n.id for h in held for n in ast.walk(h) if isinstance(n, ast.Name) and id(n) not in called}
    return [n for n in body if isinstance(n, FUNC) and n.name in values]


def _extended(ctx: Context, cls: str, method: FunctionNode) -> str:
    """The class whose rule list ``method`` extends (``super().m()``, ``Base.m()``)."""
    for n in walk_no_nested(method):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == method.name:
            if isinstance(n.func.value, ast.Call) and dotted(n.func.value.func) == "super":
                return next((b for b in ctx.mro(cls)[1:] if any(isinstance(s, FUNC) and s.name ==
                             method.name for s in ctx.universe.classes[b][1].body)), "super()")
            if (name := dotted(n.func.value) or "") in ctx.universe.classes:
                return name
    return ""


class _Inline(ast.NodeTransformer):
    def __init__(self, values: Dict[str, ast.expr]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self.values.get(node.id, node)


def _returns(pm: ParsedModule, fn: FunctionNode) -> List[List[str]]:
    """Each ``return`` of ``fn`` as ``[the if conditions leading to it, its value]``
    (source; a local assigned once, at the top, is shown as its value)."""
    assigned = [name for n in walk_no_nested(fn) for t in (
        n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(
            n, (ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr)) else []) for name in names_in(t)]
    local = {s.targets[0].id: s.value for s in fn.body if isinstance(s, ast.Assign)
             and isinstance(s.targets[0], ast.Name) and assigned.count(s.targets[0].id) == 1}

    def text(node: ast.AST) -> str:
        if not any(isinstance(n, ast.Name) and n.id in local for n in ast.walk(node)):
            return segment(pm, node)
        return ast.unparse(_Inline(local).visit(copy.deepcopy(node)))

    out: List[List[str]] = []

    def visit(stmts: Sequence[ast.stmt], chain: List[Tuple[ast.If, bool]]) -> None:
        for s in stmts:
            if isinstance(s, ast.Return):
                out.append([_combined(text, chain), text(s.value) if s.value else "None"])
                return
            if isinstance(s, ast.If):
                visit(s.body, chain + [(s, True)])
                visit(s.orelse, chain + [(s, False)])

    visit(fn.body, [])
    return out
