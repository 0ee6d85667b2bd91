"""Deciding whether a dispatcher condition is constant (``false and can_dispatch_v3``):
the folding of the template arguments (:func:`.lexing.constant_of`), with the word
operators read as their symbols and local ``const bool`` names replaced by their values.
Anything that depends on the call's arguments is undecided (``None``)."""

from __future__ import annotations

import re
from typing import Dict, List, Mapping, Optional

from .lexing import constant_of, normalize_cpp

__all__ = ["constant_value", "bool_locals"]

_BOOL_LOCAL_RE = re.compile(r"^(?:const\s+|constexpr\s+)*(?:bool|auto)\s+([A-Za-z_]\w*)\s*=\s*(.+)$", re.S)
_WORD_OP_RE = re.compile(r"\b(and|or|not)\b")
_SYMBOLS = {"and": "&&", "or": "||", "not": "!"}


def _symbols(text: str) -> str:
    return normalize_cpp(_WORD_OP_RE.sub(lambda m: _SYMBOLS[m.group(1)], text))


def constant_value(expr: str, env: Optional[Mapping[str, str]] = None) -> Optional[bool]:
    """True/False when ``expr`` is constant, else None (see the module docstring)."""
    aliases = {name: _symbols(value) for name, value in (env or {}).items()}
    return {"true": True, "false": False}.get(constant_of(normalize_cpp(_symbols(expr), aliases))
                                              or "")


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
