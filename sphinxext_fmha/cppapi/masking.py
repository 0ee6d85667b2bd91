"""Masking comments, string and character literals and preprocessor lines in the
generated C++ files, so that searches see code only. Pure functions over text."""

from __future__ import annotations

import re
from typing import Callable, List, Tuple

__all__ = ["strip_comments", "mask_code_only", "matches_not_after"]

# Every alternative starts with a literal and no group is named, so the search jumps
# from candidate to candidate (~7x faster than one pattern anchored with ``^[ \t]*#``);
# :func:`_mask_spans` checks where a preprocessor line may start.
_MASK_SCAN_RE = re.compile(
    r"""//[^\n]*|/\*[\s\S]*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])'|\#(?:[^\n]*\\\n)*[^\n]*"""
)
_KIND_OF_START = {"//": "line_comment", "/*": "block_comment", '"': "string", "'": "char",
                  "#": "pp"}
_MASK_STARTS = "/\"'#"  # the first characters of the pieces: one per alternative

Span = Tuple[int, int, str]


def _mask_spans(text: str) -> List[Span]:
    """(start, end, kind) of the pieces to mask, left to right, none overlapping.

    A ``#`` starts a preprocessor piece (from its line start) only after nothing but
    blanks on its line. The pattern is tried only where ``str.find`` (a memory scan)
    finds a start character, not at every character of a 17 MB dispatch file."""
    spans: List[Span] = []
    pos = 0
    match = _MASK_SCAN_RE.match
    find = text.find
    following = [find(c) for c in _MASK_STARTS]  # the next of each start character (-1: none)
    while True:
        start = -1
        for k, at in enumerate(following):
            if 0 <= at < pos:
                at = following[k] = find(_MASK_STARTS[k], pos)
            if at >= 0 and (start < 0 or at < start):
                start = at
        if start < 0:
            return spans
        m = match(text, start)
        if m is None:
            pos = start + 1
            continue
        end = m.end()
        first = text[start]
        kind = _KIND_OF_START[text[start : start + 2] if first == "/" else first]
        if kind == "pp":
            line_start = text.rfind("\n", 0, start) + 1
            if text[line_start:start].strip(" \t"):
                pos = start + 1
                continue
            start = line_start
        spans.append((start, end, kind))
        pos = end


def _blank(text: str) -> str:
    """Same length, newlines kept, everything else a space."""
    return "\n".join(" " * len(line) for line in text.split("\n"))


def _masked_piece(piece: str, kind: str) -> str:
    # a literal keeps its quotes: `compare("fp16")` stays a call with an argument
    if kind in ("string", "char"):
        return piece[0] + " " * (len(piece) - 2) + piece[0]
    return _blank(piece)  # comments and preprocessor lines


def _replaced(text: str, spans: List[Span], replace: Callable[[str, str], str]) -> str:
    parts: List[str] = []
    last = 0
    for start, end, kind in spans:
        parts += (text[last:start], replace(text[start:end], kind))
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _mask(text: str) -> Tuple[str, str]:
    """(code, raw): ``code`` with comments, literals and preprocessor lines blanked (for
    structure and trait text), ``raw`` with only preprocessor lines blanked (for
    condition text); both as long as ``text``."""
    spans = _mask_spans(text)
    return (_replaced(text, spans, _masked_piece),
            _replaced(text, [s for s in spans if s[2] == "pp"], lambda piece, _: _blank(piece)))


def mask_code_only(text: str) -> str:
    """The ``code`` of :func:`_mask` alone (what a kernel file's trait key reads)."""
    return _replaced(text, _mask_spans(text), _masked_piece)


def matches_not_after(before: re.Pattern, pattern: re.Pattern, text: str) -> List[re.Match]:
    """The matches of ``pattern`` (never empty) in ``text`` whose preceding character
    ``before`` does not match, as a leading negative look-behind would give them; a
    pattern that starts with a literal lets the search jump, a look-behind would not."""
    found: List[re.Match] = []
    pos = 0
    preceding = before.match
    while True:
        # only a rejected match starts the search again, at its next character
        for m in pattern.finditer(text, pos):
            start = m.start()
            if start and preceding(text, start - 1):
                pos = start + 1
                break
            found.append(m)
        else:
            return found


def strip_comments(text: str) -> str:
    """Remove C/C++ comments (not inside string literals): each becomes one space."""
    if "//" not in text and "/*" not in text:
        return text  # no comment can start anywhere
    spans = [s for s in _mask_spans(text) if s[2].endswith("comment")]
    return _replaced(text, spans, lambda piece, kind: " ")
