"""Masking comments, string and character literals and preprocessor lines in the
generated C++ files, so that searches see code only. Pure functions over text."""

from __future__ import annotations

import re
from typing import List, Tuple

__all__ = ["strip_comments", "mask_code_only", "matches_not_after"]

# The pieces masking blanks: line and block comments, string and character literals,
# and preprocessor lines (with their continuation lines). Every alternative starts
# with a literal and no group is named, which lets the search jump from candidate to
# candidate instead of trying every blank of an indented file (~7x faster than one
# pattern anchored with ``^[ \t]*#``); the first characters tell the kind, and
# :func:`_mask_spans` checks where a preprocessor line may start.
_MASK_SCAN_RE = re.compile(
    r"""//[^\n]*|/\*[\s\S]*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])'|\#(?:[^\n]*\\\n)*[^\n]*"""
)
_KIND_OF_START = {"//": "line_comment", "/*": "block_comment", '"': "string", "'": "char",
                  "#": "pp"}


_MASK_STARTS = "/\"'#"  # the first characters of the pieces: one per alternative


def _mask_spans(text: str) -> List[Tuple[int, int, str]]:
    """(start, end, kind) of the pieces to mask, left to right, none overlapping.

    A ``#`` starts a preprocessor piece only when nothing but spaces and tabs precede it
    on its line; the piece then starts at the line start (those blanks are masked with
    it). Any other ``#`` is passed over and the search goes on at the next character (a
    comment may follow on the same line).

    A piece can start only at one of :data:`_MASK_STARTS`, so the pattern is tried only
    where ``str.find`` (a memory scan) finds one: what a search would find, without
    the search trying every other character of a 17 MB dispatch file.
    """
    spans: List[Tuple[int, int, str]] = []
    pos = 0
    match = _MASK_SCAN_RE.match
    kinds = _KIND_OF_START
    find = text.find
    starts = _MASK_STARTS
    following = [find(c) for c in starts]  # the next of each start character (-1: none)
    while True:
        start = -1
        for k, at in enumerate(following):
            if 0 <= at < pos:
                at = following[k] = find(starts[k], pos)
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
        kind = kinds[text[start : start + 2] if first == "/" else first]
        if kind == "pp":
            line_start = text.rfind("\n", 0, start) + 1
            # (a piece ending on this line before the `#` ends in `*/` or a quote:
            # only blanks before it means no piece covers the line start)
            if text[line_start:start].strip(" \t"):
                pos = start + 1
                continue
            start = line_start
        spans.append((start, end, kind))
        pos = end


def _blank(text: str) -> str:
    """Same length, newlines kept, everything else a space."""
    if "\n" not in text:
        return " " * len(text)
    return "\n".join(" " * len(line) for line in text.split("\n"))


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
    for start, end, kind in _mask_spans(text):
        code_parts.append(text[last:start])
        raw_parts.append(text[last:start])
        piece = text[start:end]
        if kind == "pp":
            raw_parts.append(_blank(piece))
        else:
            raw_parts.append(piece)
        code_parts.append(_masked_piece(piece, kind))
        last = end
    code_parts.append(text[last:])
    raw_parts.append(text[last:])
    return "".join(code_parts), "".join(raw_parts)


def mask_code_only(text: str) -> str:
    """The ``code`` of :func:`_mask` alone (what a kernel file's trait key reads)."""
    parts: List[str] = []
    last = 0
    for start, end, kind in _mask_spans(text):
        parts.append(text[last:start])
        parts.append(_masked_piece(text[start:end], kind))
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _masked_piece(piece: str, kind: str) -> str:
    if kind == "string":
        # keep the quotes so that `compare("fp16")` stays a call with an argument
        return '"' + " " * (len(piece) - 2) + '"'
    if kind == "char":
        return "'" + " " * (len(piece) - 2) + "'"
    return _blank(piece)  # comments and preprocessor lines


def matches_not_after(before: re.Pattern, pattern: re.Pattern, text: str) -> List[re.Match]:
    """The matches of ``pattern`` in ``text`` whose preceding character ``before`` does
    not match, as a leading negative look-behind would give them (a rejected match is
    passed over and the search goes on at its next character). A pattern that starts
    with a literal lets the search jump; a look-behind in front would not. (``pattern``
    never matches the empty string.)"""
    found: List[re.Match] = []
    pos = 0
    preceding = before.match
    while True:
        # finditer goes on at each match's end, as a search from there would; only a
        # rejected match starts the search again, at its next character
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
    parts: List[str] = []
    last = 0
    for start, end, kind in _mask_spans(text):
        if kind in ("line_comment", "block_comment"):
            parts.append(text[last:start])
            parts.append(" ")
            last = end
    parts.append(text[last:])
    return "".join(parts)


# --------------------------------------------------------------------------- normalising
