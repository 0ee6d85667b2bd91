"""Plain-English reading of Python conditions (``x in [a, b]`` -> ``x is a or b``).

Used to explain skip conditions and receipt rules of the analysed codegen; it reads
the syntax only and never evaluates anything.
"""

from __future__ import annotations

import ast
import re
from typing import Any, Sequence

from .pyparse import display_name, dotted

__all__ = ["read_condition"]

_BARE = re.compile(r"^[\w.\-/*+]+$")


def _const(v: Any) -> str:
    if isinstance(v, str):
        if v == "":
            return '""'
        return v if _BARE.match(v) else repr(v).replace("'", '"')
    return repr(v)


def _term(node: ast.AST) -> str:
    if isinstance(node, ast.Constant):
        return _const(node.value)
    d = dotted(node)
    if d is not None:
        return display_name(d)
    if isinstance(node, ast.List):
        return "[" + ", ".join(_term(e) for e in node.elts) + "]"
    if isinstance(node, (ast.Tuple, ast.Set)):
        return "(" + ", ".join(_term(e) for e in node.elts) + ")"
    if isinstance(node, ast.Call):
        return _read_call(node)
    if isinstance(node, ast.Subscript):
        return _term(node.value) + "[" + _slice_text(node.slice) + "]"
    return ast.unparse(node)


def _slice_text(node: ast.AST) -> str:
    if isinstance(node, ast.Slice):
        lo = _term(node.lower) if node.lower else ""
        hi = _term(node.upper) if node.upper else ""
        return f"{lo}:{hi}"
    return _term(node)


def _alts(elts: Sequence[ast.AST], word: str) -> str:
    items = [_term(e) for e in elts]
    if not items:
        return "nothing"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + f" {word} " + items[-1]


def _read_call(node: ast.Call) -> str:
    f = node.func
    if isinstance(f, ast.Attribute) and len(node.args) == 1 and not node.keywords:
        obj = _term(f.value)
        arg = _term(node.args[0])
        words = {"startswith": "starts with", "endswith": "ends with"}
        if f.attr in words:
            return f"{obj} {words[f.attr]} {arg}"
    return ast.unparse(node)


def _is_seq(node: ast.AST) -> bool:
    return isinstance(node, (ast.List, ast.Tuple, ast.Set))


def _compare_one(left: ast.AST, op: ast.cmpop, right: ast.AST, negate: bool = False) -> str:
    if negate:
        inv = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
               ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.Lt: ast.GtE, ast.GtE: ast.Lt,
               ast.Gt: ast.LtE, ast.LtE: ast.Gt}
        op = inv[type(op)]()
    lhs = _term(left)
    # two names compared: "dpad is dvpad" would read as a value named dvpad
    if isinstance(op, ast.Eq) and not isinstance(right, ast.Constant):
        return f"{lhs} equals {_term(right)}"
    if isinstance(op, ast.NotEq) and not isinstance(right, ast.Constant):
        return f"{lhs} differs from {_term(right)}"
    if isinstance(op, (ast.Eq, ast.Is)):
        if isinstance(right, ast.Constant) and right.value is None:
            return f"{lhs} is None"
        return f"{lhs} is {_term(right)}"
    if isinstance(op, (ast.NotEq, ast.IsNot)):
        if isinstance(right, ast.Constant) and right.value is None:
            return f"{lhs} is not None"
        return f"{lhs} is not {_term(right)}"
    if isinstance(op, ast.In):
        if _is_seq(right):
            return f"{lhs} is {_alts(right.elts, 'or')}"  # type: ignore[attr-defined]
        if isinstance(left, ast.Constant) and isinstance(left.value, str):
            return f"{_term(right)} contains {lhs}"
        return f"{lhs} is in {_term(right)}"
    if isinstance(op, ast.NotIn):
        if _is_seq(right):
            elts = right.elts  # type: ignore[attr-defined]
            if len(elts) == 1:
                return f"{lhs} is not {_term(elts[0])}"
            if len(elts) == 2:
                return f"{lhs} is neither {_term(elts[0])} nor {_term(elts[1])}"
            return f"{lhs} is none of {_alts(elts, 'or')}"
        if isinstance(left, ast.Constant) and isinstance(left.value, str):
            return f"{_term(right)} does not contain {lhs}"
        return f"{lhs} is not in {_term(right)}"
    sym = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}.get(type(op), "?")
    return f"{lhs} {sym} {_term(right)}"


def read_condition(node: ast.AST, negate: bool = False) -> str:
    """Render a boolean expression in plain English (``x in [a, b]`` -> ``x is a or b``)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return read_condition(node.operand, not negate)
    if isinstance(node, ast.BoolOp):
        is_and = isinstance(node.op, ast.And)
        if negate:  # De Morgan
            is_and = not is_and
        word = " and " if is_and else " or "
        parts = []
        for v in node.values:
            text = read_condition(v, negate)
            inner = v.operand if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.Not) else v
            if isinstance(inner, ast.BoolOp):
                inner_and = isinstance(inner.op, ast.And) != (negate != (inner is not v))
                if inner_and != is_and:
                    text = f"({text})"
            parts.append(text)
        return word.join(parts)
    if isinstance(node, ast.Compare):
        pieces = []
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            pieces.append(_compare_one(left, op, right))
            left = right
        text = " and ".join(pieces)
        if negate:
            if len(pieces) == 1:
                return _compare_one(node.left, node.ops[0], node.comparators[0], negate=True)
            return f"not ({text})"
        return text
    if isinstance(node, ast.Constant):
        val = bool(node.value)
        return str(val != negate).lower() if isinstance(node.value, bool) else (
            f"not {_const(node.value)}" if negate else _const(node.value))
    text = _term(node)
    if negate:
        if isinstance(node, ast.Call) and " starts with " in text:
            return text.replace(" starts with ", " does not start with ", 1)
        if isinstance(node, ast.Call) and " ends with " in text:
            return text.replace(" ends with ", " does not end with ", 1)
        return f"not {text}" if re.match(r"^[\w.]+$", text) else f"not ({text})"
    return text

