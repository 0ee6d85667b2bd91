"""Receipts defined as rule objects: one function maps a receipt to a rule.

Newer CK codegen no longer tests ``receipt`` inside the enumeration loop; a function
such as ``get_product(receipt)`` returns, per receipt, an object wrapping a predicate::

    def get_product(receipt: int) -> Product:
        if receipt == 4:  # PyTorch integration
            def fit(problem_ctx, kernel_ctx) -> bool:
                cond = problem_ctx.dtype in ["fp16", "bf16"]
                cond &= kernel_ctx.pipeline.F_bias in ["no", "bias"]
                return cond
            return Product(name="PyTorch integration", rule=fit)

:func:`rule_object_receipts` reads which values each branch selects, its label (the
object's ``name=`` or the comment above the branch) and what the predicate keeps (its
``cond = ...``/``cond &= ...``/``return`` terms, with guards) as source text
(``render/sections/rules.py`` words it).
"""

from __future__ import annotations

import ast
from typing import Callable, List, Optional, Sequence, Set, Tuple

from ..model import Receipt

__all__ = ["rule_object_receipts"]

_CMP_VALUES = (ast.Eq, ast.In)


def _receipt_name(fn: ast.FunctionDef, names: Set[str]) -> Optional[str]:
    params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
    return next((p for p in params if p in names or "receipt" in p.lower()), None)


def _values(test: ast.AST, name: str) -> Optional[List[str]]:
    """Receipt values a branch test selects (``receipt == 2``, ``receipt in (2, 3)``,
    ``receipt == 2 or receipt == 3``), or None when the test is something else."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        out: List[str] = []
        for value in test.values:
            part = _values(value, name)
            if part is None:
                return None
            out.extend(part)
        return out
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], _CMP_VALUES)):
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
    terms: List[str] = []
    keeps: List[List[str]] = []
    accumulators: Set[str] = set()

    def add(expr: ast.AST, guard: Optional[ast.AST]) -> None:
        keeps.append([ast.unparse(expr), ast.unparse(guard) if guard is not None else ""])
        terms.append(keeps[-1][0] + (" (when %s)" % keeps[-1][1] if guard is not None else ""))

    def visit(stmts: Sequence[ast.stmt], guard: Optional[ast.AST]) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0], ast.Name):
                accumulators.add(stmt.targets[0].id)
                add(stmt.value, guard)
            elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) \
                    and isinstance(stmt.op, ast.BitAnd):
                add(stmt.value, guard)
            elif isinstance(stmt, ast.If):
                visit(stmt.body, stmt.test if guard is None else
                      ast.BoolOp(op=ast.And(), values=[guard, stmt.test]))  # type: ignore[list-item]
            elif isinstance(stmt, ast.Return) and stmt.value is not None and not (
                    isinstance(stmt.value, ast.Name) and stmt.value.id in accumulators):
                add(stmt.value, guard)

    visit(body, None)
    return terms, keeps


def _label(branch: Sequence[ast.stmt]) -> str:
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
    for stmt in branch:
        if isinstance(stmt, ast.FunctionDef):
            return _rule_terms(stmt.body)
    for node in (n for s in branch for n in ast.walk(s)):
        if isinstance(node, ast.Lambda):
            return _rule_terms([ast.Return(value=node.body)])
    return [], []


def rule_object_receipts(tree: ast.Module, receipt_names: Set[str],
                         label_for: Callable[[str], str],
                         where: Callable[[ast.AST], str],
                         comment_above: Callable[[int], str]) -> List[Receipt]:
    """Receipts of every function that maps a receipt to a rule object.

    ``label_for(value)``: the label generate.py's ``--receipt`` help gives the value
    ("" if none); ``where(node)``: ``file:line``; ``comment_above(line)``: the comment
    right above a line ("" if none).
    """
    receipts: List[Receipt] = []
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        name = _receipt_name(fn, receipt_names)
        if name is None:
            continue
        for stmt in fn.body:
            if isinstance(stmt, ast.If) and _values(stmt.test, name) is not None:
                receipts.extend(_chain(stmt, name, fn.name, label_for, where, comment_above))
    return receipts


def _chain(head: ast.If, name: str, function: str, label_for: Callable[[str], str],
           where: Callable[[ast.AST], str], comment_above: Callable[[int], str]) -> List[Receipt]:
    out: List[Receipt] = []
    seen: List[str] = []
    current: Optional[ast.If] = head
    while current is not None:
        values = _values(current.test, name)
        if values is None or not _is_rule_branch(current.body):
            return out
        terms, keeps = _predicate(current.body)
        label = _label(current.body) or comment_above(current.lineno)
        for value in values:
            seen.append(value)
            out.append(Receipt(value=value, label=label_for(value) or label, conditions=terms,
                               where=where(current), kind="rule", function=function,
                               rule_name=label, keeps=keeps))
        orelse = current.orelse
        if len(orelse) == 1 and isinstance(orelse[0], ast.If):
            current = orelse[0]
            continue
        if orelse and _is_rule_branch(orelse):
            terms, keeps = _predicate(orelse)
            label = _label(orelse) or comment_above(orelse[0].lineno)
            out.append(Receipt(value="other", label=label, conditions=terms,
                               where=where(orelse[0]), kind="rule-other", function=function,
                               rule_name=label, keeps=keeps, before=list(dict.fromkeys(seen))))
        current = None
    return out
