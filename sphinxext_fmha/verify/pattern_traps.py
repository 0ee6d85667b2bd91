"""Tokens whose natural pattern selects more than the token: ``*_pagedkv*`` also
matches every name whose pipeline is ``_qr_pagedkv``, ``*_ps*`` every ``_pssk``.

Counted over the listed names of each sub-type with the matching generate.py applies
(:func:`~.filtercheck.matcher_as_generate`: its case folding and separators), so the
counts are what ``-f`` selects in that sub-type's filter part. A pattern of text and
``*`` only is tested as the text it is (contained, at the end, followed by ``_``):
bwd has some 60 tokens over 7,680 names, a second of regular expressions. Where one
exists, a pattern that selects exactly the token's kernels is named: the token at the
end of the name (``*TOKEN``) or followed by the next segment's ``_`` (``*TOKEN_*``).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List

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
        for index, segment in enumerate(kernel_type.segments):
            if segment.literal or segment.constant:
                continue
            for token in segment.tokens:
                if not token:
                    continue
                carriers = {file for file, _, tokens in kernels if tokens[index] == token}
                loose = "*%s*" % token
                matched = _matching(model, loose, kernels)
                if matched == carriers:
                    continue
                exact = next((p for p in ("*%s" % token, "*%s_*" % token)
                              if _matching(model, p, kernels) == carriers), "")
                traps.append(PatternTrap(kernel_type=kernel_type.class_name,
                                         segment=segment.label, token=token,
                                         carriers=len(carriers), loose=loose,
                                         loose_count=len(matched), exact=exact))
    return traps


_SPECIAL = frozenset("*?[]")


def _matching(model: ApiModel, pattern: str, kernels: List[tuple]) -> set:
    body = pattern[1:]
    if _SPECIAL.isdisjoint(body.rstrip("*")):
        spec = model.filter
        fold = (lambda text: text.lower()) if spec.fnmatch_lowercases else (lambda text: text)
        slash = (lambda text: text.replace("/", "\\")) if spec.fnmatch_backslashes \
            else (lambda text: text)
        text = slash(fold(body.rstrip("*")))
        if body.endswith("*"):
            return {file for file, name, _ in kernels if text in slash(fold(name))}
        return {file for file, name, _ in kernels if slash(fold(name)).endswith(text)}
    matches = matcher_as_generate(model, pattern)
    return {file for file, name, _ in kernels if matches(name)}
