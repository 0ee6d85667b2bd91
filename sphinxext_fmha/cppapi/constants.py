"""Deciding whether a dispatcher condition is constant (``false and can_dispatch_v3``).

Only what the text proves is decided: literals, integer comparisons, ``!``/``not``,
``&&``/``and``, ``||``/``or`` and local ``const bool`` names whose value is itself
decided.  Anything that depends on the call's arguments is undecided (``None``).
"""

from __future__ import annotations

import re
from typing import Dict, List, Mapping, Optional

from .condition_form import split_top, strip_parens
from .masking import strip_comments

__all__ = ["constant_value", "bool_locals"]

_INT_CMP_RE = re.compile(r"^(-?\d+)\s*(==|!=|<=|>=|<|>)\s*(-?\d+)$")
_BOOL_LOCAL_RE = re.compile(r"^(?:const\s+|constexpr\s+)*(?:bool|auto)\s+([A-Za-z_]\w*)\s*=\s*(.+)$", re.S)
_OPS = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<=": lambda a, b: a <= b,
        ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, ">": lambda a, b: a > b}


def constant_value(expr: str, env: Optional[Mapping[str, str]] = None,
                   _depth: int = 0) -> Optional[bool]:
    """True/False when ``expr`` is constant, else None (see the module docstring)."""
    if _depth > 20:
        return None
    env = env or {}
    text = strip_parens(" ".join(strip_comments(expr).split()))
    if not text:
        return None
    ors = _split_or(text)
    if len(ors) > 1:
        values = [constant_value(p, env, _depth + 1) for p in ors]
        if any(v is True for v in values):
            return True
        return False if all(v is False for v in values) else None
    ands = _split_and(text)
    if len(ands) > 1:
        values = [constant_value(p, env, _depth + 1) for p in ands]
        if any(v is False for v in values):
            return False
        return True if all(v is True for v in values) else None
    if text in ("true", "false"):
        return text == "true"
    if text.startswith("!") and not text.startswith("!="):
        inner = constant_value(text[1:], env, _depth + 1)
        return None if inner is None else not inner
    if text.startswith("not "):
        inner = constant_value(text[4:], env, _depth + 1)
        return None if inner is None else not inner
    m = _INT_CMP_RE.match(text)
    if m:
        return _OPS[m.group(2)](int(m.group(1)), int(m.group(3)))
    if text in env:
        return constant_value(env[text], env, _depth + 1)
    return None


def _split_or(text: str) -> List[str]:
    return _split_alternative(split_top(text, "||"), "or")


def _split_and(text: str) -> List[str]:
    return _split_alternative(split_top(text, "&&"), "and")


def _split_alternative(parts: List[str], word: str) -> List[str]:
    """Split each top-level part again on the word operator outside parentheses."""
    return [piece for part in parts for piece in split_top(part, word, whole_word=True)]


def bool_locals(statements: List[str]) -> Dict[str, str]:
    """``const bool name = expr;`` statements of a function body: name -> expr."""
    env: Dict[str, str] = {}
    for statement in statements:
        if "bool" not in statement and "auto" not in statement:
            continue  # (the pattern needs one of them: a dispatch file has 100,000 statements)
        m = _BOOL_LOCAL_RE.match(statement.strip())
        if m:
            env[m.group(1)] = m.group(2)
    return env
