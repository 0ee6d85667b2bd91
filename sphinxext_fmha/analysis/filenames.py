"""Kernel file names parsed with the model's grammars: the kernel name under its arch
suffix, its sub-type and tokens, the baseline check of the listing."""

from __future__ import annotations

import functools
import weakref
from typing import Dict, List, Optional, Sequence, Tuple

from ..model import ApiModel, Baseline, KernelType
from .grammar import Grammar

__all__ = ["Grammars", "baseline_of", "example_tokens", "grammars_of", "parse_filename",
           "parsed_once", "split_filename"]


def example_tokens(kernel_type: KernelType) -> List[str]:
    """The example's kernel name cut into one token per (final) segment, or []."""
    name = split_filename(kernel_type.example, kernel_type.arch_suffixes)
    if not name:
        return []
    tokens = Grammar(segments=kernel_type.segments).parse(name)
    return list(tokens) if tokens is not None and len(tokens) == len(kernel_type.segments) else []


def split_filename(filename: str, suffixes: Sequence[str]) -> Optional[str]:
    """The kernel name in ``filename`` for one of the arch ``suffixes``."""
    if not filename.endswith(".cpp"):
        return None
    stem = filename[: -len(".cpp")]
    longest_first, bare = _suffix_order(tuple(suffixes))
    for suffix in longest_first:
        if stem.endswith(suffix):
            return stem[: -len(suffix)]
    return stem if bare else None


@functools.lru_cache(maxsize=256)
def _suffix_order(suffixes: Tuple[str, ...]) -> Tuple[Tuple[str, ...], bool]:
    """The non-empty suffixes longest first, and whether a bare name is allowed."""
    return tuple(s for s in sorted(suffixes, key=len, reverse=True) if s), "" in suffixes or not suffixes


def parse_filename(model: ApiModel, grammars: Dict[str, Grammar], filename: str):
    """[(kernel type, tokens)] for every sub-type whose grammar parses ``filename``."""
    memo = grammars.parsed if isinstance(grammars, Grammars) and grammars.model_id == id(model) else None
    if memo is not None and filename in memo:
        return [(kernel_type, list(tokens)) for kernel_type, tokens in memo[filename]]
    found = [(kernel_type, tokens) for kernel_type in model.kernel_types
             for name in [split_filename(filename, kernel_type.arch_suffixes)] if name is not None
             for tokens in grammars[kernel_type.class_name].parses(name)]
    if memo is not None:
        memo[filename] = [(kernel_type, tuple(tokens)) for kernel_type, tokens in found]
    return found


class Grammars(Dict[str, Grammar]):
    """The grammar of each kernel type of one model, and the parse of every file name
    asked for so far: the baseline, the token counts, the token dispatch and the parsed
    listings all parse the same names."""

    def __init__(self, model: ApiModel) -> None:
        super().__init__((k.class_name, Grammar(segments=k.segments)) for k in model.kernel_types)
        self.model_id = id(model)
        self.shape = _grammar_shape(model)
        self.parsed: Dict[str, List[Tuple[KernelType, Tuple[str, ...]]]] = {}


def _grammar_shape(model: ApiModel) -> tuple:
    """What the grammars were built from (a model is not changed once built; this
    only guards the cache against one that is)."""
    return tuple((k.class_name, id(k), tuple(k.arch_suffixes), id(k.segments),
                  tuple((id(s), len(s.tokens)) for s in k.segments)) for k in model.kernel_types)


#: id(model) -> its grammars; an entry leaves with its model (weakref.finalize).
_GRAMMARS: Dict[int, Grammars] = {}


def grammars_of(model: ApiModel) -> Dict[str, Grammar]:
    """The model's grammars, the same object (with its parses) for as long as the model lives."""
    cached = _GRAMMARS.get(id(model))
    if cached is not None and cached.shape == _grammar_shape(model):
        return cached
    grammars = Grammars(model)
    if cached is None:
        weakref.finalize(model, _GRAMMARS.pop, id(model), None).atexit = False
    _GRAMMARS[id(model)] = grammars
    return grammars


def baseline_of(model: ApiModel, grammars: Dict[str, Grammar], listed_files: Sequence[str]) -> Baseline:
    baseline = Baseline(count=len(listed_files))
    for filename in listed_files:
        found = parse_filename(model, grammars, filename)
        # one parse that spells the name back, with the suffix it was split from
        if len(found) == 1 and "".join(found[0][1]) + filename[len(
                split_filename(filename, found[0][0].arch_suffixes) or ""):] == filename:
            baseline.parsed += 1
        elif not found:
            baseline.unparsed.append(filename)
        else:
            baseline.ambiguous.append(filename)
    return baseline


def parsed_once(model: ApiModel, filename: str) -> Optional[Tuple[str, List[str]]]:
    """(sub-type, tokens) of a file the model's grammars parse exactly once."""
    found = parse_filename(model, grammars_of(model), filename)
    return (found[0][0].class_name, found[0][1]) if len(found) == 1 else None
