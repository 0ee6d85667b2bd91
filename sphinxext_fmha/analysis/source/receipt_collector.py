"""Collector: receipts, the ``receipt`` argument's values and what each keeps or drops,
as source text (``render/sections/rules.py`` words it): branches of the enumeration
loops that test it, and functions that map it to a rule object."""

from __future__ import annotations

import ast
import re
from typing import Callable, List, Optional, Sequence, Set, Tuple

from ...model import Gap, Receipt
from ..pyparse import fold_str, function_params, mentions, names_in, parse_module, walk_no_nested
from .context import Context

#: ``N < receipt`` read as ``receipt > N``.
_MIRRORED = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE}


def collect_receipts(ctx: Context) -> None:
    """Record what each receipt value keeps or drops (``facts.receipts``), labelled from
    generate.py's ``--receipt`` help text."""
    labels = _receipt_labels(ctx)
    referenced: Set[str] = set()
    for fn, label in ctx.loop_functions():
        # closure: nested helpers see the enclosing function's receipt parameter
        names_here = set(function_params(fn)) | names_in(fn)
        if not (names_here & ctx.receipt_names):
            continue
        for n in walk_no_nested(fn):
            if not isinstance(n, ast.If) or not mentions(n.test, ctx.receipt_names):
                continue
            parent = ctx.pm.parents.get(n)
            if isinstance(parent, ast.If) and parent.orelse == [n] \
                    and mentions(parent.test, ctx.receipt_names):
                continue  # an elif: handled with its chain head
            chain_values: List[str] = []
            cur: Optional[ast.If] = n
            while cur is not None:
                values, others = _receipt_values(ctx, cur.test)
                chain_values.extend(values)
                conditions, keeps, drops, effects = _branch_conditions(ctx, cur.body)
                when = [ctx.seg(o) for o in others]
                skips = len(cur.body) == 1 and isinstance(cur.body[0], ast.Continue)
                if skips:  # ``if receipt == N and <cond>: continue``: a drop rule
                    conditions, effects = ["not (%s)" % " and ".join(when)] if when else ["False"], []
                comment = " ".join(ctx.pm.comments_above(cur.lineno)) or \
                    " ".join(ctx.pm.comments_above(cur.body[0].lineno))
                # the module's own comment first (generate.py's help names a receipt for
                # every API at once); a branch of several receipts takes the help's names
                for v in values or ["?"]:
                    referenced.add(v)
                    help_label = _label_for(v, labels)
                    ctx.facts.receipts.append(Receipt(
                        value=v, label=(help_label or comment) if len(values) > 1
                        else (comment or help_label),
                        conditions=conditions,
                        where=ctx.where(cur), function=label, keeps=keeps, drops=drops,
                        effects=effects, when=when, skips=skips))
                if len(cur.orelse) == 1 and isinstance(cur.orelse[0], ast.If) \
                        and mentions(cur.orelse[0].test, ctx.receipt_names):
                    cur = cur.orelse[0]
                    continue
                if cur.orelse:
                    conditions, keeps, drops, effects = _branch_conditions(ctx, cur.orelse)
                    first = cur.orelse[0]
                    comment = " ".join(ctx.pm.comments_above(first.lineno)) \
                        or ctx.pm.comments.get(first.lineno, "")
                    ctx.facts.receipts.append(Receipt(
                        value="other", label=comment, conditions=conditions,
                        where=ctx.where(first), kind="other", function=label, keeps=keeps,
                        drops=drops, effects=effects, before=list(dict.fromkeys(chain_values))))
                cur = None
    # receipts defined as rule objects (``get_product(receipt)``)
    for receipt in rule_object_receipts(
            ctx.tree, ctx.receipt_names, lambda v: _label_for(v, labels), ctx.where,
            lambda line: " ".join(ctx.pm.comments_above(line))):
        if receipt.kind != "rule-other":  # the default rule tests no value
            referenced.add(receipt.value)
        ctx.facts.receipts.append(receipt)
    # help-text values (and ranges) that this module never tests
    for lo, hi, text, where in labels:
        if lo != hi:
            # the whole range, or the parts the module does not test (batch_prefill
            # tests receipt == 100 of 100-199: -r 101 filters nothing)
            parts = (_untested(lo, hi, referenced) if any(_overlaps(v, lo, hi) for v in referenced)
                     else [(lo, hi)])
        else:
            parts = [] if str(lo) in referenced else [(lo, lo)]
        for low, high in parts:
            ctx.facts.receipts.append(Receipt(value=str(low) if low == high else f"{low}-{high}",
                                              label=text, where=where, kind="unreferenced"))


def _bounds(value: str, lo: int, hi: int) -> Optional[Tuple[int, int]]:
    """The values a receipt value (``"2"``, ``"100-199"``, ``"-99"``) stands for, open
    ends closed at ``lo``/``hi``; None for another form (an expression)."""
    m = re.match(r"^(\d*)-(\d*)$", value)
    if m:
        return (int(m.group(1)) if m.group(1) else lo, int(m.group(2)) if m.group(2) else hi)
    return (int(value), int(value)) if value.isdigit() else None


def _untested(lo: int, hi: int, referenced: Set[str]) -> List[Tuple[int, int]]:
    """The parts of ``lo..hi`` no referenced value covers; none when a referenced value
    is of a form not read (it may cover anything)."""
    covered: List[Tuple[int, int]] = []
    for value in referenced:
        bounds = _bounds(value, lo, hi)
        if bounds is None:
            return []
        if _overlaps(value, lo, hi):
            covered.append((max(bounds[0], lo), min(bounds[1], hi)))
    parts: List[Tuple[int, int]] = []
    start = lo
    for first, last in sorted(covered):
        if first > start:
            parts.append((start, first - 1))
        start = max(start, last + 1)
    if start <= hi:
        parts.append((start, hi))
    return parts


def _overlaps(value: str, lo: int, hi: int) -> bool:
    """Whether a receipt value (``"2"``, ``"100-199"``, ``"-99"``) meets ``lo..hi``."""
    bounds = _bounds(value, lo, hi)
    return bounds is not None and bounds[0] <= hi and lo <= bounds[1]


def _receipt_labels(ctx: Context) -> List[Tuple[int, int, str, str]]:
    """(lo, hi, label, where) from generate.py's ``--receipt`` help text."""
    out: List[Tuple[int, int, str, str]] = []
    files = [ctx.root / "generate.py"] + sorted(p for p in ctx.root.glob("*.py") if p.name != "generate.py")
    for path in files:
        if not path.is_file():
            continue
        pm = parse_module(path, ctx.root)
        if pm.tree is None:
            continue
        for n in ast.walk(pm.tree):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                    and n.func.attr == "add_argument"):
                continue
            flags = [a.value for a in n.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            dest = next((kw.value.value for kw in n.keywords if kw.arg == "dest"
                         and isinstance(kw.value, ast.Constant)), "")
            if not any("receipt" in f for f in flags) and "receipt" not in str(dest):
                continue
            help_node = next((kw.value for kw in n.keywords if kw.arg == "help"), None)
            text = fold_str(help_node) if help_node is not None else None
            if text is None:
                ctx.gaps.append(Gap("receipt labels", pm.where(n), "help text is not a constant string"))
                continue
            first = len(out)
            for line in text.split("\n"):
                m = re.search(r"(\d+)\s*(?:-\s*(\d+))?\s*:\s*([^\n]+?)\s*$", line)
                if m:
                    out.append((int(m.group(1)), int(m.group(2) or m.group(1)), m.group(3).strip(),
                                pm.where(n)))
                elif line.strip() and len(out) > first:
                    # a label's continuation line (2026 CK's receipt 700 spans two)
                    lo, hi, label, where = out[-1]
                    out[-1] = (lo, hi, label + " " + line.strip(), where)
        if out:
            return out
    ctx.gaps.append(Gap("receipt labels", (ctx.root / "generate.py").name,
                        "no --receipt help text found"))
    return out


def _label_for(value: str, labels: List[Tuple[int, int, str, str]]) -> str:
    m = re.match(r"^(\d+)(?:-(\d+))?$", value)
    if not m:
        return ""
    lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
    exact = next((text for low, high, text, _ in labels if (low, high) == (lo, hi)), None)
    return exact if exact is not None else next(
        (text for low, high, text, _ in labels if low <= lo and hi <= high), "")


def _receipt_values(ctx: Context, test: ast.AST) -> Tuple[List[str], List[ast.AST]]:
    """Receipt values selected by ``test`` and the other AND-ed conjuncts."""
    values: List[str] = []
    others: List[ast.AST] = []
    conjuncts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    lo: Optional[int] = None
    hi: Optional[int] = None
    for c in conjuncts:
        if not mentions(c, ctx.receipt_names):
            others.append(c)
            continue
        alts = c.values if isinstance(c, ast.BoolOp) and isinstance(c.op, ast.Or) else [c]
        for a in alts:
            if not isinstance(a, ast.Compare):
                values.append(ctx.seg(a))
                continue
            items = [a.left] + list(a.comparators)
            for (lhs, op, rhs) in zip(items, a.ops, items[1:]):
                rec_left = isinstance(lhs, ast.Name) and lhs.id in ctx.receipt_names
                rec_right = isinstance(rhs, ast.Name) and rhs.id in ctx.receipt_names
                other = rhs if rec_left else (lhs if rec_right else None)
                if other is None:
                    continue
                if isinstance(op, ast.Eq) and isinstance(other, ast.Constant):
                    values.append(str(other.value))
                elif isinstance(op, ast.In) and isinstance(other, (ast.Tuple, ast.List, ast.Set)):
                    values.extend(str(e.value) for e in other.elts if isinstance(e, ast.Constant))
                elif isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) and isinstance(other, ast.Constant) \
                        and isinstance(other.value, int):
                    kind = _MIRRORED[type(op)] if rec_right else type(op)  # "receipt OP v"
                    if kind in (ast.Gt, ast.GtE):
                        lo = other.value + (kind is ast.Gt)
                    else:
                        hi = other.value - (kind is ast.Lt)
                else:
                    values.append(ctx.seg(a))
    if lo is not None or hi is not None:
        values.append(f"{lo if lo is not None else ''}-{hi if hi is not None else ''}")
    return values, others


def _and(guard: Optional[ast.expr], test: ast.expr) -> ast.expr:
    return test if guard is None else ast.BoolOp(op=ast.And(), values=[guard, test])


def _shown(term: List[str]) -> str:
    """A [condition, guard] term as one text: ``condition (when guard)``."""
    return term[0] + (" (when %s)" % term[1] if term[1] else "")


def _branch_conditions(ctx: Context, body: Sequence[ast.stmt]
                       ) -> Tuple[List[str], List[List[str]], List[List[str]], List[str]]:
    """(conditions as source, what it keeps and drops as [condition, guard], effects)."""
    keeps: List[List[str]] = []
    drops: List[List[str]] = []
    effects: List[str] = []
    cond_vars: Set[str] = set()

    def add(into: List[List[str]], expr: ast.AST, guard: Optional[ast.AST]) -> None:
        into.append([ctx.seg(expr), ctx.seg(guard) if guard is not None else ""])

    def visit(stmts: Sequence[ast.stmt], guard: Optional[ast.expr]) -> None:
        for s in stmts:
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) \
                    and not isinstance(s.value, (ast.Call, ast.ListComp, ast.Dict, ast.List)):
                cond_vars.add(s.targets[0].id)
                add(keeps, s.value, guard)
            elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) \
                    and isinstance(s.op, ast.BitAnd) and s.target.id in cond_vars:
                add(keeps, s.value, guard)
            elif isinstance(s, ast.If):
                if len(s.body) == 1 and isinstance(s.body[0], ast.Continue):
                    t = s.test
                    if not (isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not) and isinstance(
                            t.operand, ast.Name) and t.operand.id in cond_vars):  # ``if not cond: continue``
                        add(drops, t, guard)
                else:
                    visit(s.body, _and(guard, s.test))
                    if s.orelse:
                        visit(s.orelse, _and(guard, ast.UnaryOp(op=ast.Not(), operand=s.test)))
            elif not (isinstance(s, ast.Pass)
                      or isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)):
                effects.append(ctx.seg(s))

    visit(body, None)
    return [*map(_shown, keeps), *("not (%s)" % _shown(d) for d in drops)], keeps, drops, effects


def _receipt_name(fn: ast.FunctionDef, names: Set[str]) -> Optional[str]:
    params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
    return next((p for p in params if p in names or "receipt" in p.lower()), None)


def _rule_values(test: ast.AST, name: str) -> Optional[List[str]]:
    """Receipt values a branch test selects (``receipt == 2``, ``receipt in (2, 3)``,
    ``receipt == 2 or receipt == 3``), or None when the test is something else."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        out: List[str] = []
        for value in test.values:
            part = _rule_values(value, name)
            if part is None:
                return None
            out.extend(part)
        return out
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.Eq, ast.In))):
        return None
    left, right = test.left, test.comparators[0]
    if isinstance(right, ast.Name) and right.id == name:
        left, right = right, left
    if not (isinstance(left, ast.Name) and left.id == name):
        return None
    if isinstance(test.ops[0], ast.Eq) and isinstance(right, ast.Constant):
        return [str(right.value)]
    if isinstance(right, (ast.Tuple, ast.List, ast.Set)):
        return [str(e.value) for e in right.elts if isinstance(e, ast.Constant)]
    return None


def _rule_terms(body: Sequence[ast.stmt]) -> Tuple[List[str], List[List[str]]]:
    """(source terms, [condition, guard] each) of a predicate's body: what it keeps."""
    keeps: List[List[str]] = []
    accumulators: Set[str] = set()

    def add(expr: ast.AST, guard: Optional[ast.AST]) -> None:
        keeps.append([ast.unparse(expr), ast.unparse(guard) if guard is not None else ""])

    def visit(stmts: Sequence[ast.stmt], guard: Optional[ast.expr]) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0], ast.Name):
                accumulators.add(stmt.targets[0].id)
                add(stmt.value, guard)
            elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) \
                    and isinstance(stmt.op, ast.BitAnd):
                add(stmt.value, guard)
            elif isinstance(stmt, ast.If):
                visit(stmt.body, _and(guard, stmt.test))
            elif isinstance(stmt, ast.Return) and stmt.value is not None and not (
                    isinstance(stmt.value, ast.Name) and stmt.value.id in accumulators):
                add(stmt.value, guard)

    visit(body, None)
    return [_shown(k) for k in keeps], keeps


def _rule_label(branch: Sequence[ast.stmt]) -> str:
    """``name=`` (or the first string argument) of the object a branch returns."""
    for stmt in branch:
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Call):
            for keyword in stmt.value.keywords:
                if keyword.arg in ("name", "label") and isinstance(keyword.value, ast.Constant):
                    return str(keyword.value.value)
            for arg in stmt.value.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    return arg.value
    return ""


def _is_rule_branch(branch: Sequence[ast.stmt]) -> bool:
    """A branch that defines a predicate and returns an object (not a loop body rule)."""
    returns_object = any(isinstance(s, ast.Return) and isinstance(s.value, ast.Call)
                         for s in branch)
    defines = any(isinstance(s, (ast.FunctionDef, ast.Lambda)) for s in branch)
    return returns_object and (defines or any(
        isinstance(s, ast.Return) and any(isinstance(a, ast.Lambda) for a in ast.walk(s))
        for s in branch))


def _predicate(branch: Sequence[ast.stmt]) -> Tuple[List[str], List[List[str]]]:
    body = next((s.body for s in branch if isinstance(s, ast.FunctionDef)), None) or next(
        ([ast.Return(value=n.body)] for s in branch for n in ast.walk(s) if isinstance(n, ast.Lambda)), None)
    return _rule_terms(body) if body else ([], [])


def rule_object_receipts(tree: ast.Module, receipt_names: Set[str],
                         label_for: Callable[[str], str],
                         where: Callable[[ast.AST], str],
                         comment_above: Callable[[int], str]) -> List[Receipt]:
    """Receipts of every function that maps a receipt to a rule object (newer CK:
    ``get_product(receipt)`` returns per receipt a ``Product(name=..., rule=fit)``): the
    values each branch selects, its label and the ``cond = ...``/``cond &= ...``/``return``
    terms its predicate keeps, with guards, as source text."""
    receipts: List[Receipt] = []
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        name = _receipt_name(fn, receipt_names)
        if name is None:
            continue
        for stmt in fn.body:
            if isinstance(stmt, ast.If) and _rule_values(stmt.test, name) is not None:
                receipts.extend(_rule_chain(stmt, name, fn.name, label_for, where, comment_above))
    return receipts


def _rule_chain(head: ast.If, name: str, function: str, label_for: Callable[[str], str],
           where: Callable[[ast.AST], str], comment_above: Callable[[int], str]) -> List[Receipt]:
    out: List[Receipt] = []
    current = head
    while (values := _rule_values(current.test, name)) is not None and _is_rule_branch(current.body):
        terms, keeps = _predicate(current.body)
        label = _rule_label(current.body) or comment_above(current.lineno)
        out += [Receipt(value=value, label=label_for(value) or label, conditions=terms,
                        where=where(current), kind="rule", function=function, rule_name=label,
                        keeps=keeps) for value in values]
        orelse = current.orelse
        if len(orelse) == 1 and isinstance(orelse[0], ast.If):
            current = orelse[0]
            continue
        if orelse and _is_rule_branch(orelse):
            terms, keeps = _predicate(orelse)
            label = _rule_label(orelse) or comment_above(orelse[0].lineno)
            out.append(Receipt(value="other", label=label, conditions=terms,
                               where=where(orelse[0]), kind="rule-other", function=function,
                               rule_name=label, keeps=keeps,
                               before=list(dict.fromkeys(r.value for r in out))))
        break
    return out
