"""A run's pattern in plain words, what it keeps and excludes, from
:attr:`~sphinxext_fmha.model.FilterRun.reading`: "Names containing `_nlogits_nbias` (logits,
bias), then ...; that leaves out `_logits` (logits); `_alibi`, `_bias` (bias); ..."."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

from ...model import NO_TOKEN
from ..ir import Code, Inlines, join, text_of


def _stretch(stretch: Dict[str, Any]) -> Inlines:
    """One stretch between stars: its text, and the segments its literal text spells."""
    out: Inlines = [Code(stretch["text"])]
    brackets = int(stretch.get("brackets") or 0)
    if stretch.get("segments"):
        out.append(" (%s)" % ", ".join(stretch["segments"]))
    elif brackets:
        out.append(" (%d bracket position%s)" % (brackets, "" if brackets == 1 else "s"))
    return out


def _names(reading: Dict[str, Any]) -> Inlines:
    """"names containing X, then Y" from the stretches."""
    stretches = reading.get("stretches") or []
    if not stretches:
        return ["every name"]
    if not reading.get("selected"):
        return ["no name (the pattern matches none of them)"]
    out: Inlines = ["names "]
    for number, stretch in enumerate(stretches):
        place = stretch.get("place")
        if number:
            out.append(", and ending in " if place == "end" else ", then ")
        else:
            out.append("that are " if reading.get("whole") else
                       {"start": "starting with ", "end": "ending in "}.get(place, "containing "))
        out.extend(_stretch(stretch))
    return out


#: A segment's tokens a gloss lists at most; beyond, it counts them ("the 6 other
#: values of hdim") or names the few its names have ("only `_pdv` (pad)").
_MOST_LISTED = 3


def _tokens(tokens: Sequence[str]) -> Inlines:
    return join([[Code(token) if token else NO_TOKEN] for token in tokens])


def _left_out(reading: Dict[str, Any]) -> Inlines:
    """What the selected names lack: of the segments the pattern writes, the other
    values ("that leaves out"); of the others, where the pattern has bracket positions,
    what the names it selects have no or only of ("the names it selects have no
    `_alibi`, `_bias` (bias)"), whichever piece of the pattern is the cause."""
    excluded: Dict[str, List[str]] = reading.get("excluded") or {}
    kept: Dict[str, List[str]] = reading.get("kept") or {}
    if not excluded:
        return []
    stretches = reading.get("stretches") or []
    spelled = {label for stretch in stretches for label in stretch.get("segments") or []}
    brackets = any(stretch.get("brackets") for stretch in stretches)
    out: Inlines = []
    pinned = [label for label in excluded if label in spelled]
    for number, label in enumerate(pinned):
        out.append("; that leaves out " if not number else "; ")
        gone = excluded[label]
        if len(gone) > _MOST_LISTED:
            out.append("the %d other values of %s" % (len(gone), label))
        else:
            out += _tokens(gone) + [" (%s)" % label]
    # what the bracket positions leave out; a pattern of whole tokens says what its
    # tokens leave out, and what else the selected names lack is the set's table's
    others = [label for label in excluded if label not in spelled] if brackets else []
    for number, label in enumerate(others):
        out.append("; " if number else "; the names it selects have ")
        gone, have = excluded[label], kept.get(label, [])
        if len(gone) > _MOST_LISTED and len(have) < len(gone):
            out += ["only "] + _tokens(have) + [" (%s)" % label]
        else:
            out += ["no "] + _tokens(gone) + [" (%s)" % label]
    return out


def gloss_inlines(readings: Sequence[Dict[str, Any]], capital: bool = True) -> Inlines:
    """The gloss of one run: per ``@`` part (or, where one pattern reads several
    sub-types, per sub-type) its names and what they leave out (``capital``: a sentence
    of its own, not one that continues after a colon)."""
    parts: Inlines = []
    split = len({r.get("part") for r in readings}) > 1
    for reading in readings:
        if parts:
            parts.append(" ")
        # of a sub-type the pattern selects nothing of, there is nothing more to say
        body = _names(reading) + (_left_out(reading) if reading.get("selected") else [])
        kernel_type = Code(str(reading.get("kernel_type", "")))
        label: Inlines = (["Part %d (" % int(reading.get("part", 0)), kernel_type, "): "] if split
                          else ["For ", kernel_type, ": "])
        if split or len(readings) > 1:
            parts += label + body
        else:
            first = body[0]
            parts += ([first[0].upper() + first[1:]] if capital and isinstance(first, str)
                      else [first])
            parts += body[1:]
        parts.append(".")
    return parts


def gloss_text(readings: Sequence[Dict[str, Any]]) -> str:
    """:func:`gloss_inlines` as text, tokens and patterns in backticks (``runs[].gloss``
    of the JSON)."""
    return "".join("`%s`" % part.text if isinstance(part, Code) else text_of([part])
                   for part in gloss_inlines(readings))
