"""The names callers used when the C++ dispatch reader was one module; the code now lives
in :mod:`.lexing`, :mod:`.parse`, :mod:`.matching`, :mod:`.conditions`, :mod:`.entry_points`
and :mod:`.links`."""

from __future__ import annotations

from .condition_words import condition_terms, describe_condition
from .lexing import (
    find_template_calls,
    normalize_cpp,
    split_template_args,
    strip_comments,
    trait_key,
    trait_template,
)
from .matching import DispatchMatch, kernel_trait_key, kernel_trait_keys, match_leaves_to_kernels
from .parse import DispatchBlock, DispatchLeaf, DispatchTree, parse_dispatch

__all__ = [
    "DispatchBlock",
    "DispatchLeaf",
    "DispatchTree",
    "DispatchMatch",
    "parse_dispatch",
    "match_leaves_to_kernels",
    "describe_condition",
    "condition_terms",
    "normalize_cpp",
    "kernel_trait_keys",
    "kernel_trait_key",
    "trait_key",
    "trait_template",
    "strip_comments",
    "find_template_calls",
    "split_template_args",
]
