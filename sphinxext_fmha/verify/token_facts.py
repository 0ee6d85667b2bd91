"""What the kernels carrying each token have in common: how many there are, and which
dispatch conditions they share. Both come from parsing a real listing with the model's
grammar (no Sphinx, no rendering here)."""

from __future__ import annotations

from collections import Counter
from typing import Dict, List, Optional, Sequence, Tuple

from ..analysis.analyze import grammars_of, parse_filename
from ..model import ApiModel

__all__ = ["TokenCounts", "TokenConditions", "token_counts", "token_conditions"]


TokenCounts = Dict[Tuple[str, int], Dict[str, int]]


def token_counts(model: ApiModel, files: Sequence[str]) -> TokenCounts:
    """(kernel class, segment index) -> token -> number of listed kernels with it."""
    grammars = grammars_of(model)
    counts: Dict[Tuple[str, int], Counter] = {}
    for filename in files:
        found = parse_filename(model, grammars, filename)
        if len(found) != 1:
            continue
        kernel_type, tokens = found[0]
        for index, token in enumerate(tokens):
            counts.setdefault((kernel_type.class_name, index), Counter())[token] += 1
    return {key: dict(value) for key, value in counts.items()}


TokenConditions = Dict[Tuple[str, int], Dict[str, List[str]]]


def token_conditions(model: ApiModel, files: Sequence[str],
                     terms_by_file: Dict[str, List[str]]) -> TokenConditions:
    """(kernel class, segment index) -> token -> the dispatch-condition terms shared by
    every kernel with that token and not by every kernel of its class."""
    grammars = grammars_of(model)
    per_class: Dict[str, List[Tuple[List[str], List[str]]]] = {}
    for filename in files:
        if filename not in terms_by_file:
            continue
        found = parse_filename(model, grammars, filename)
        if len(found) != 1:
            continue
        kernel_type, tokens = found[0]
        per_class.setdefault(kernel_type.class_name, []).append(
            (list(tokens), list(terms_by_file[filename])))
    result: TokenConditions = {}
    for class_name, items in per_class.items():
        common = set(items[0][1])
        for _tokens, terms in items[1:]:
            common &= set(terms)
        width = len(items[0][0])
        for index in range(width):
            shared: Dict[str, Optional[set]] = {}
            order: Dict[str, List[str]] = {}
            for tokens, terms in items:
                token = tokens[index]
                if token not in shared:
                    shared[token] = set(terms)
                    order[token] = terms
                else:
                    shared[token] &= set(terms)  # type: ignore[operator]
            result[(class_name, index)] = {
                token: [t for t in order[token] if t in (shared[token] or set()) and t not in common]
                for token in shared}
    return result
