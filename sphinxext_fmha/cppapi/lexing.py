"""Text-level C++ helpers for the generated dispatch and kernel files: masking comments,
strings and preprocessor lines, squeezing blanks, folding constants, and splitting
template argument lists. Pure functions over text."""

from __future__ import annotations

import re
from typing import List, Mapping, Optional, Sequence, Tuple

__all__ = ["strip_comments", "normalize_cpp", "split_template_args", "find_template_calls",
           "trait_template", "trait_key", "match_paren", "squeeze", "mask_code"]

# --------------------------------------------------------------------------- lexing

_MASK_RE = re.compile(
    r"""
      (?P<line_comment>//[^\n]*)
    | (?P<block_comment>/\*[\s\S]*?\*/)
    | (?P<string>"(?:\\.|[^"\\\n])*")
    | (?P<char>'(?:\\.|[^'\\\n])')
    | (?P<pp>^[ \t]*\#(?:[^\n]*\\\n)*[^\n]*)
    """,
    re.VERBOSE | re.MULTILINE,
)


def _blank(text: str) -> str:
    """Same length, newlines kept, everything else a space."""
    return re.sub(r"[^\n]", " ", text)


def _mask(text: str) -> Tuple[str, str]:
    """Return (code, raw):

    * ``code``: comments, string/char literals and preprocessor lines blanked
      (same length as ``text``), for structure and for trait text;
    * ``raw``: only preprocessor lines blanked, comments and strings kept, for
      condition text.
    """
    code_parts: List[str] = []
    raw_parts: List[str] = []
    last = 0
    for m in _MASK_RE.finditer(text):
        start, end = m.span()
        code_parts.append(text[last:start])
        raw_parts.append(text[last:start])
        piece = m.group(0)
        if m.lastgroup == "string":
            # keep the quotes so that `compare("fp16")` stays a call with an argument
            code_parts.append('"' + " " * (len(piece) - 2) + '"')
            raw_parts.append(piece)
        elif m.lastgroup == "char":
            code_parts.append("'" + " " * (len(piece) - 2) + "'")
            raw_parts.append(piece)
        elif m.lastgroup == "pp":
            code_parts.append(_blank(piece))
            raw_parts.append(_blank(piece))
        else:  # comments
            code_parts.append(_blank(piece))
            raw_parts.append(piece)
        last = end
    code_parts.append(text[last:])
    raw_parts.append(text[last:])
    return "".join(code_parts), "".join(raw_parts)


def strip_comments(text: str) -> str:
    """Remove C/C++ comments (not inside string literals)."""

    def repl(m: re.Match[str]) -> str:
        if m.lastgroup in ("line_comment", "block_comment"):
            return " "
        return m.group(0)

    return _MASK_RE.sub(repl, text)


# --------------------------------------------------------------------------- normalising

_WS_RE = re.compile(r"\s+")
_SPACE_RE = re.compile(r" (?=\W)|(?<=\W) ")
_CMP_RE = re.compile(r"\((-?\d+)(==|!=|<=|>=|<|>)(-?\d+)\)")
_CMP_OPS = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    ">": lambda a, b: a > b,
}
_IDENT_RE = re.compile(r"(?<![\w.:])(?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*")


def _squeeze(text: str) -> str:
    """Collapse blanks; keep one space only between two word characters."""
    text = _WS_RE.sub(" ", text).strip()
    return _SPACE_RE.sub("", text)


def _fold_constants(text: str) -> str:
    """Fold ``(8>0)`` -> ``true`` and ``std::conditional_t<true,A,B>`` -> ``A``."""
    for _ in range(100):
        new = _CMP_RE.sub(
            lambda m: "true" if _CMP_OPS[m.group(2)](int(m.group(1)), int(m.group(3))) else "false",
            text,
        )
        new = _fold_conditional(new)
        if new == text:
            return new
        text = new
    return text


def _fold_conditional(text: str) -> str:
    pos = 0
    while True:
        i = text.find("std::conditional_t<", pos)
        if i < 0:
            return text
        open_at = i + len("std::conditional_t")
        close = _match_angle(text, open_at)
        if close is None:
            return text
        args = split_template_args(text[open_at + 1 : close])
        if len(args) == 3 and args[0] in ("true", "false"):
            chosen = args[1] if args[0] == "true" else args[2]
            text = text[:i] + chosen + text[close + 1 :]
            pos = i
        else:
            pos = close + 1


def normalize_cpp(text: str, aliases: Optional[Mapping[str, str]] = None) -> str:
    """Canonical text of a C++ type/expression for comparisons.

    Comments are dropped, blanks squeezed, identifiers found in ``aliases``
    (already normalised values) replaced by their values (repeatedly), and
    integer comparisons in parentheses and ``std::conditional_t`` with a
    literal condition folded.
    """
    text = _squeeze(strip_comments(text))
    if aliases:
        for _ in range(20):
            changed = False

            def repl(m: re.Match[str]) -> str:
                nonlocal changed
                name = m.group(0)
                if name in aliases:
                    changed = True
                    return aliases[name]
                return name

            new = _IDENT_RE.sub(repl, text)
            text = new
            if not changed:
                break
    return _fold_constants(text)


# --------------------------------------------------------------------------- templates


def _match_angle(text: str, open_at: int) -> Optional[int]:
    """Index of the ``>`` closing the ``<`` at ``open_at`` (parentheses and
    brackets are opaque: ``<(0 > 0)>`` works)."""
    depth = 0
    paren = 0
    i = open_at
    n = len(text)
    while i < n:
        c = text[i]
        if c in "([{":
            paren += 1
        elif c in ")]}":
            paren -= 1
            if paren < 0:
                return None
        elif paren == 0:
            if c == "<":
                depth += 1
            elif c == ">":
                depth -= 1
                if depth == 0:
                    return i
            elif c == ";":
                return None
        i += 1
    return None


def split_template_args(text: str) -> List[str]:
    """Split a template argument list on top-level commas (items squeezed)."""
    args: List[str] = []
    paren = 0  # (), [], {}: opaque, `<`/`>` inside them are operators
    angle = 0
    start = 0
    for i, c in enumerate(text):
        if c in "([{":
            paren += 1
        elif c in ")]}":
            paren -= 1
        elif paren == 0 and c == "<":
            angle += 1
        elif paren == 0 and c == ">":
            angle -= 1
        elif c == "," and paren == 0 and angle == 0:
            args.append(_squeeze(text[start:i]))
            start = i + 1
    tail = _squeeze(text[start:])
    if tail or args:
        args.append(tail)
    return args


_TEMPLATE_NAME_RE = re.compile(r"(?<![\w.:>])((?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)\s*<")


def find_template_calls(code: str) -> List[Tuple[str, List[str], int, int]]:
    """Every ``name<args>(`` in comment-free ``code``: (name, args, start, end)
    where ``end`` is the index of the ``(``."""
    out: List[Tuple[str, List[str], int, int]] = []
    pos = 0
    while True:
        m = _TEMPLATE_NAME_RE.search(code, pos)
        if not m:
            return out
        open_at = m.end() - 1
        close = _match_angle(code, open_at)
        if close is None:
            pos = m.end()
            continue
        j = close + 1
        while j < len(code) and code[j] in " \t\r\n":
            j += 1
        if j < len(code) and code[j] == "(":
            out.append((m.group(1), split_template_args(code[open_at + 1 : close]), m.start(), j))
            pos = j
        else:
            pos = m.end()


def trait_template(trait: str) -> str:
    """``fmha_fwd_traits_<...>`` -> ``fmha_fwd_traits_`` (the trait's kind)."""
    i = trait.find("<")
    return trait[:i] if i >= 0 else trait


def trait_key(trait: str, extra_args: Sequence[str] = ()) -> str:
    """The text a leaf and a kernel file must share: the normalised trait
    followed by the call's other template arguments (e.g. the arch tag)."""
    return ",".join([trait, *extra_args])


def _match_paren(text: str, open_at: int) -> Optional[int]:
    depth = 0
    for i in range(open_at, len(text)):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
    return None


match_paren = _match_paren
squeeze = _squeeze
mask_code = _mask
