"""The value of a C++ constant expression as a compiler would fold it, or None.

Integer and boolean literals, parentheses, the unary ``! ~ - +`` and the binary
arithmetic, shift, comparison, bitwise and logical operators with C++'s precedence
(``64/2``, ``(1 > 0)``, ``!(false) && (0 == 0)``).  Any other name, string or call is
a value the text does not give (undecided), except where ``&&``/``||`` are decided
without it (``false && s.compare("fp16") == 0``).  Template-ids are the caller's to
hide behind a plain name first (:func:`.lexing.constant_of`): here ``<`` and ``>`` are
comparisons only.
"""

from __future__ import annotations

import re
from typing import List, Optional, Union

__all__ = ["evaluate"]

Value = Union[bool, int]

_TOKEN_RE = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|\d+)[uUlL]*|([A-Za-z_][\w:.]*|\"[^\"]*\")|"
                       r"(<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>&|^!~()]))")
# binary operators, loosest first (C++'s precedence)
_LEVELS = (("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="),
           ("<<", ">>"), ("+", "-"), ("*", "/", "%"))
_UNDECIDED = object()  # a name whose value the text does not give


class _Unreadable(Exception):
    """The text is not an expression of this grammar."""


def evaluate(text: str) -> Optional[Value]:
    """The value of ``text`` (see the module docstring); None when undecided or unread."""
    tokens: List[object] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None or m.end() == pos:
            return None
        number, name, op = m.groups()
        if number is not None:
            tokens.append(int(number, 0) if not number.startswith("0") or len(number) == 1
                          or number[1] in "xX" else int(number, 8))
        elif name is not None:
            tokens.append({"true": True, "false": False}.get(name, _UNDECIDED))
            if text.startswith("(", m.end()) and name[0] != '"':  # a call: its value
                depth = 0
                for end in range(m.end(), len(text)):
                    depth += {"(": 1, ")": -1}.get(text[end], 0)
                    if not depth:
                        pos = end + 1
                        break
                else:
                    return None
                continue
        else:
            tokens.append(op)
        pos = m.end()
    try:
        value, end = _binary(tokens, 0, 0)
    except (_Unreadable, IndexError):
        return None
    if end != len(tokens) or value is _UNDECIDED:
        return None
    return value


def _binary(tokens: List[object], at: int, level: int):
    if level == len(_LEVELS):
        return _unary(tokens, at)
    left, at = _binary(tokens, at, level + 1)
    ops = _LEVELS[level]
    while at < len(tokens) and isinstance(tokens[at], str) and tokens[at] in ops:
        op = tokens[at]
        right, at = _binary(tokens, at + 1, level + 1)
        left = _apply(op, left, right)  # type: ignore[arg-type]
    return left, at


def _unary(tokens: List[object], at: int):
    token = tokens[at]
    if token in ("!", "~", "-", "+"):
        value, at = _unary(tokens, at + 1)
        if value is _UNDECIDED:
            return value, at
        if token == "!":
            return not value, at
        number = int(value)
        return (~number if token == "~" else -number if token == "-" else number), at
    if token == "(":
        value, at = _binary(tokens, at + 1, 0)
        if tokens[at] != ")":
            raise _Unreadable
        return value, at + 1
    if isinstance(token, str):
        raise _Unreadable
    return token, at + 1


def _apply(op: str, left: object, right: object) -> object:
    if op in ("&&", "||"):
        # decided by one side alone when that side is false (&&) or true (||)
        stop = op == "||"
        if any(v is not _UNDECIDED and bool(v) is stop for v in (left, right)):
            return stop
        return _UNDECIDED if _UNDECIDED in (left, right) else not stop
    if left is _UNDECIDED or right is _UNDECIDED:
        return _UNDECIDED
    a, b = int(left), int(right)  # type: ignore[call-overload]
    if op in ("/", "%"):
        if b == 0:
            raise _Unreadable
        quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # C++ truncates
        return quotient if op == "/" else a - b * quotient
    if op in ("<<", ">>") and not 0 <= b < 64:
        raise _Unreadable
    return _BINARY[op](a, b)


_BINARY = {"==": int.__eq__, "!=": int.__ne__, "<": int.__lt__, "<=": int.__le__,
           ">": int.__gt__, ">=": int.__ge__, "+": int.__add__, "-": int.__sub__,
           "*": int.__mul__, "&": int.__and__, "|": int.__or__, "^": int.__xor__,
           "<<": int.__lshift__, ">>": int.__rshift__}
