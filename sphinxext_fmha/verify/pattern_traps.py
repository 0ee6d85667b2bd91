"""Tokens whose natural pattern selects more than the token (``*_ps*`` every ``_pssk``),
counted per sub-type with generate.py's matching; an exact pattern where one exists."""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Set, Tuple

from ..model import ApiModel, PatternTrap
from .filtercheck import matcher_as_generate, normcase
from .parsed_listing import ParsedListing


def pattern_traps(model: ApiModel, listing: ParsedListing) -> List[PatternTrap]:
    """Every token of a segment that ``-f`` can choose whose ``*TOKEN*`` matches
    kernels of its sub-type that do not carry it."""
    names, per_type = listing.kernel_names(model), listing.by_type()
    traps: List[PatternTrap] = []
    for kernel_type in model.kernel_types:
        # [(file, name, tokens)]: counted in files (newer CK: one per architecture)
        kernels = [(file, names[file], tokens)
                   for file, tokens in per_type.get(kernel_type.class_name, [])]
        # the names as generate.py's matching sees them, folded once per sub-type
        folded = normcase(model)
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


def _matching(model: ApiModel, pattern: str, kernels: List[tuple],
              seen: List[Tuple[str, str]]) -> set:
    """The files of ``kernels`` whose names ``pattern`` matches (``seen``: (file, name as
    :func:`~.filtercheck.normcase` makes it) of each)."""
    body = pattern[1:]
    if _SPECIAL.isdisjoint(body.rstrip("*")):
        text = normcase(model)(body.rstrip("*"))
        if body.endswith("*"):
            return {file for file, name in seen if text in name}
        return {file for file, name in seen if name.endswith(text)}
    matches = matcher_as_generate(model, pattern)
    return {file for file, name, _ in kernels if matches(name)}
