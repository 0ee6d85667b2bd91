"""What a ``-f`` pattern keeps and excludes: the segments its literal stretches spell in
every matched name, and the tokens no matched name carries (worded in ``render/``)."""

from __future__ import annotations

import re
from itertools import accumulate
from typing import AbstractSet, Any, Dict, List, Optional, Sequence, Set, Tuple

from ..model import ApiModel, natural
from .boxes import matcher
from .filtercheck import api_patterns
from .synthesis import Kernel

_PIECE = re.compile(r"\*+|\?|\[[^\]]+\]|[^*?\[]+|\[")
#: literal text: an escaped character (``[*]``) or any other
_ESCAPED = re.compile(r"\[(.)\]|(.)", re.S)


def pattern_pieces(pattern: str) -> List[Tuple[str, str]]:
    """(kind, text) of each piece: ``star`` (``*``), ``any`` (``?``), ``class``
    (``[...]``) or ``literal`` (plain text, an unclosed ``[`` included)."""
    pieces: List[Tuple[str, str]] = []
    for text in _PIECE.findall(pattern):
        # a class of one character is that character, escaped (``[*]``)
        kind = ("star" if text.startswith("*") else "any" if text == "?" else
                "class" if len(text) > 3 and text.startswith("[") else "literal")
        if kind == "literal" and pieces and pieces[-1][0] == "literal":
            pieces[-1] = ("literal", pieces[-1][1] + text)
        else:
            pieces.append((kind, "*" if kind == "star" else text))
    return pieces


def _stretches(pieces: Sequence[Tuple[str, str]]) -> List[List[Tuple[str, str]]]:
    """The pieces between the stars, in order (a star ends a stretch)."""
    stretches: List[List[Tuple[str, str]]] = [[]]
    for piece in pieces:
        if piece[0] == "star":
            stretches.append([])
        else:
            stretches[-1].append(piece)
    return stretches


def _regex(pieces: Sequence[Tuple[str, str]]) -> re.Pattern[str]:
    """fnmatch's meaning, each stretch between stars a group."""
    out: List[str] = []
    for stretch in _stretches(pieces):
        body = "".join("." if kind == "any"
                       else "[%s]" % re.escape(text[1:-1]) if kind == "class"
                       else _ESCAPED.sub(lambda m: re.escape(m.group(1) or m.group(2)), text)
                       for kind, text in stretch)
        out.append("(%s)" % body)
    return re.compile(".*".join(out), re.S)


def _spelled(kernels: Sequence[Kernel], regex: re.Pattern[str], groups: int,
             labels: Sequence[str]) -> List[List[str]]:
    """Per stretch, the labels of the segments whose whole token it covers in every
    name (empty tokens spell nothing)."""
    found: List[Optional[Set[int]]] = [None] * groups
    for kernel in kernels:
        match = regex.fullmatch(kernel.name)
        if match is None:
            continue
        ends = list(accumulate(map(len, kernel.tokens)))
        bounds = list(zip([0, *ends], ends))
        for group in range(groups):
            low, high = match.span(group + 1)
            covered = {i for i, (a, b) in enumerate(bounds)
                       if b > a and low <= a and b <= high and labels[i]}
            before = found[group]
            found[group] = covered if before is None else before & covered
    return [[labels[i] for i in sorted(s)] if s else [] for s in found]


def run_reading(model: ApiModel, kernels: Sequence[Kernel], filter_text: str,
                quiet: AbstractSet[Tuple[str, str]] = frozenset()) -> List[Dict[str, Any]]:
    """Per ``@`` part and sub-type: its pieces with the segments they spell, and per
    segment the tokens matched names carry and lack; ``quiet`` segments (tiles) only
    where the pattern spells them."""
    patterns = api_patterns(model, filter_text)
    readings: List[Dict[str, Any]] = []
    for kernel_type in model.kernel_types:
        position, pattern = kernel_type.filter_position, patterns.get(kernel_type.class_name)
        if position is None or pattern is None:
            continue
        own = [k for k in kernels if k.kernel_type == kernel_type.class_name]
        match = matcher(pattern)
        chosen = [k for k in own if match(k.name)]
        labels = ["" if s.literal else s.label for s in kernel_type.segments]
        pieces = pattern_pieces(pattern)
        stretches = _stretches(pieces)
        spelled = _spelled(chosen, _regex(pieces), len(stretches), labels)
        shown = [{"text": "".join(text for _, text in stretch), "segments": spells,
                  "brackets": sum(1 for kind, _ in stretch if kind != "literal"),
                  "place": "start" if number == 0 else "end" if number == len(stretches) - 1
                  else "middle"}
                 for number, (stretch, spells) in enumerate(zip(stretches, spelled)) if stretch]
        kept: Dict[str, List[str]] = {}
        excluded: Dict[str, List[str]] = {}
        said = {label for spells in spelled for label in spells}
        for index, segment in enumerate(kernel_type.segments):
            if segment.literal or ((kernel_type.class_name, segment.label) in quiet
                                   and segment.label not in said):
                continue
            present = {k.tokens[index] for k in own}
            selected = {k.tokens[index] for k in chosen}
            gone = sorted(present - selected, key=natural)
            if gone:
                excluded[segment.label] = gone
                kept[segment.label] = sorted(selected, key=natural)
        readings.append({"part": position if model.filter.api_split else 0,
                         "kernel_type": kernel_type.class_name, "pattern": pattern,
                         "stretches": shown, "whole": len(stretches) == 1,
                         "selected": len(chosen), "of": len(own),
                         "kept": kept, "excluded": excluded})
    return sorted(readings, key=lambda r: r["part"])
