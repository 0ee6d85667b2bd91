"""Dispatcher conditions as data (``t.has_lse == true`` -> ``"has_lse"``), worded in
:mod:`sphinxext_fmha.render.sections.condition_words`."""

from __future__ import annotations

import functools
import re
from typing import List

from ..schema.token_dispatch import Condition
from .lexing import match_paren
from .masking import strip_comments

__all__ = ["clean_condition", "condition_form", "split_top", "strip_parens"]


def split_top(text: str, op: str, whole_word: bool = False) -> List[str]:
    """``text`` split on ``op`` outside brackets, parts stripped; ``whole_word``: only
    where ``op`` stands alone (the word operators ``and``/``or``)."""
    if not whole_word:
        return _split_symbol(text, op)
    parts: List[str] = []
    depth = start = 0
    for m in _word_scanner(op).finditer(text):
        c = m.group()
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0:
            parts.append(text[start : m.start()])
            start = m.end()
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _split_symbol(text: str, op: str) -> List[str]:
    """:func:`split_top` for a symbol operator: ``str.split``, pieces joined again while
    the brackets before an occurrence do not balance (``op`` holds no bracket)."""
    pieces = text.split(op)
    if len(pieces) == 1:
        return [text.strip()]
    if "[" in text or "]" in text or "{" in text or "}" in text:
        def balance(piece: str) -> int:
            return (piece.count("(") + piece.count("[") + piece.count("{")
                    - piece.count(")") - piece.count("]") - piece.count("}"))
    else:
        def balance(piece: str) -> int:
            return piece.count("(") - piece.count(")")
    parts: List[str] = []
    depth = 0
    first = 0
    last = len(pieces) - 1
    for k in range(last):
        depth += balance(pieces[k])
        if depth == 0:
            parts.append((pieces[first] if first == k else op.join(pieces[first : k + 1])).strip())
            first = k + 1
    parts.append((pieces[last] if first == last else op.join(pieces[first:])).strip())
    return parts


@functools.cache
def _word_scanner(op: str) -> re.Pattern:
    # a bracket, or ``op`` standing alone (not part of a longer name or a member)
    return re.compile(r"[()\[\]{}]|(?<![\w.])%s(?!\w)" % re.escape(op))


@functools.lru_cache(maxsize=1 << 16)
def strip_parens(text: str) -> str:
    text = text.strip()
    while text.startswith("(") and match_paren(text, 0) == len(text) - 1:
        text = text[1:-1].strip()
    return text


_TRUE_COMMENT_RE = re.compile(r"\btrue\s*/\*.*?\*/", re.S)
_COMPARE_STR_RE = re.compile(r'^([\w.]+)\.compare\(\s*("[^"]*")\s*\)\s*==\s*0$')
_COMPARE_PREFIX_RE = re.compile(r'^([\w.]+)\.compare\(\s*0\s*,\s*\d+\s*,\s*("[^"]*")\s*\)\s*==\s*0$')
_BOOL_CMP_RE = re.compile(r"^(.+?)\s*==\s*(true|false)$")
_SIMPLE_CMP_RE = re.compile(r"^([\w.:]+) (==|!=) ([\w.:]+)$")

#: ``||`` and ``&&``: the C++ operator, its tag, the part that decides the whole
#: (absorbing) and the part that drops out (identity), tried outermost first
_JUNCTIONS = (("||", "or", True, False), ("&&", "and", False, True))


def _form(expr: str) -> Condition:
    expr = strip_parens(expr)
    for op, tag, absorbing, identity in _JUNCTIONS:
        pieces = split_top(expr, op)
        if len(pieces) == 1:
            continue
        parts = [_form(p) for p in pieces]
        if any(p is absorbing for p in parts):
            return absorbing
        parts = [p for p in parts if p is not identity]
        if len(parts) == 1 and isinstance(parts[0], str) and (
                " and " if tag == "or" else " or ") not in parts[0]:
            return parts[0]  # (a lone part its words would bracket stays a junction)
        return (tag, *parts) if parts else identity
    return _atom(expr)


def _negate(form: Condition) -> Condition:
    if isinstance(form, bool):
        return not form
    m = _SIMPLE_CMP_RE.match(form) if isinstance(form, str) else None
    if m:  # not (x != y) -> x == y
        return f"{m.group(1)} {'!=' if m.group(2) == '==' else '=='} {m.group(3)}"
    return ("not", form)


def _atom(expr: str) -> Condition:
    expr = strip_parens(expr)
    if expr in ("true", "false"):
        return expr == "true"
    if expr.startswith("!") and not expr.startswith("!="):
        return _negate(_form(expr[1:]))
    if (m := _COMPARE_STR_RE.match(expr)):
        return f"{m.group(1)} == {m.group(2)}"
    if (m := _COMPARE_PREFIX_RE.match(expr)):
        return ("starts", m.group(1), m.group(2))
    if (m := _BOOL_CMP_RE.match(expr)) and split_top(m.group(1), "==") == [m.group(1).strip()]:
        subject = _atom(m.group(1))
        return subject if m.group(2) == "true" else _negate(subject)
    if len(split_top(expr, "||")) > 1 or len(split_top(expr, "&&")) > 1:
        return _form(expr)
    return expr


# hundreds of thousands of calls for a few thousand distinct conditions (a large bwd file)
@functools.lru_cache(maxsize=65536)
def condition_form(cond: str) -> Condition:
    """A dispatcher condition as data (a ``token_dispatch.Condition``): ``t.``/``a.`` go,
    ``true /*...*/`` (a check the generator disabled) is True, ``x == false`` -> not ``x``,
    ``s.compare("fp16") == 0`` -> ``s == "fp16"``, ``s.compare(0, 6, "gfx950") == 0`` ->
    ``("starts", "s", '"gfx950"')``; other terms verbatim (squeezed), nothing inferred."""
    text = clean_condition(cond)
    return _form(re.sub(r"(?<![\w.])[ta]\.(?=[A-Za-z_])", "", text)) if text else True


def clean_condition(text: str) -> str:
    """A condition without comments, blanks squeezed, ``true /*...*/`` -> ``true``."""
    return " ".join(strip_comments(_TRUE_COMMENT_RE.sub("true", text)).split())
