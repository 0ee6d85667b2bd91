"""Tokens whose natural pattern selects more than the token: ``*_pagedkv*`` also
matches ``_qr_pagedkv``, ``*_ps*`` every ``_pssk``. Counted per sub-type with
generate.py's matching (:func:`~.filtercheck.matcher_as_generate`); text-and-``*``
patterns are tested as text (bwd: 60 tokens over 7,680 names, a second of regexes).
An exact pattern is named where one exists (``*TOKEN`` or ``*TOKEN_*``).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Dict, List, Set, Tuple

from ..model import ApiModel, PatternTrap
from .filtercheck import matcher_as_generate
from .parsed_listing import ParsedListing

__all__ = ["pattern_traps"]


def pattern_traps(model: ApiModel, listing: ParsedListing) -> List[PatternTrap]:
    """Every token of a segment that ``-f`` can choose whose ``*TOKEN*`` matches
    kernels of its sub-type that do not carry it."""
    names = listing.kernel_names(model)
    # class -> [(file, name, tokens)]: counted in files, as every other count of the
    # guide (newer CK writes one name per architecture, each its own file)
    per_type: Dict[str, List[tuple]] = defaultdict(list)
    for file, (class_name, tokens) in listing.parsed.items():
        per_type[class_name].append((file, names[file], tokens))
    traps: List[PatternTrap] = []
    for kernel_type in model.kernel_types:
        kernels = per_type.get(kernel_type.class_name, [])
        # the names as generate.py's matching sees them, folded once per sub-type
        folded = _folder(model)
        seen = [(file, folded(name)) for file, name, _ in kernels]
        for index, segment in enumerate(kernel_type.segments):
            if segment.literal or segment.constant:
                continue
            carriers_of: Dict[str, Set[str]] = defaultdict(set)
            for file, _, tokens in kernels:
                carriers_of[tokens[index]].add(file)
            for token in segment.tokens:
                if not token:
                    continue
                carriers = carriers_of.get(token, set())
                loose = "*%s*" % token
                matched = _matching(model, loose, kernels, seen)
                if matched == carriers:
                    continue
                exact = next((p for p in ("*%s" % token, "*%s_*" % token)
                              if _matching(model, p, kernels, seen) == carriers), "")
                traps.append(PatternTrap(kernel_type=kernel_type.class_name,
                                         segment=segment.label, token=token,
                                         carriers=len(carriers), loose=loose,
                                         loose_count=len(matched), exact=exact))
    return traps


_SPECIAL = frozenset("*?[]")


def _folder(model: ApiModel) -> Callable[[str], str]:
    """A name as generate.py's fnmatch compares it: case folded and separators turned
    as its platform does (what a pattern of text and ``*`` only is compared with)."""
    spec = model.filter
    if spec.fnmatch_lowercases and spec.fnmatch_backslashes:
        return lambda text: text.lower().replace("/", "\\")
    if spec.fnmatch_lowercases:
        return str.lower
    if spec.fnmatch_backslashes:
        return lambda text: text.replace("/", "\\")
    return lambda text: text


def _matching(model: ApiModel, pattern: str, kernels: List[tuple],
              seen: List[Tuple[str, str]]) -> set:
    """The files of ``kernels`` whose names ``pattern`` matches (``seen``: (file, name as
    :func:`_folder` makes it) of each)."""
    body = pattern[1:]
    if _SPECIAL.isdisjoint(body.rstrip("*")):
        text = _folder(model)(body.rstrip("*"))
        if body.endswith("*"):
            return {file for file, name in seen if text in name}
        return {file for file, name in seen if name.endswith(text)}
    matches = matcher_as_generate(model, pattern)
    return {file for file, name, _ in kernels if matches(name)}
