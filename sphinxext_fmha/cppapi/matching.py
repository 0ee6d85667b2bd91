"""Link dispatch leaves to generated kernel files by the template arguments both sides use.

Every kernel file explicitly specialises the template its leaf calls with the same
``fmha_*_traits_<...>`` argument list (spelled through local ``using`` aliases), plus the
same extra arguments such as the arch tag.  Both sides are normalised
(:func:`~.lexing.normalize_cpp`) and compared as text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping as _AbcMapping
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Tuple, Union

from .call_sites import classify_args
from .lexing import find_template_calls, normalize_cpp, trait_key, trait_template
from .masking import mask_code_only, matches_not_after
from .parse import DispatchLeaf, DispatchTree

__all__ = ["kernel_trait_keys", "kernel_trait_key", "DispatchMatch", "match_leaves_to_kernels"]


# --------------------------------------------------------------------------- kernel files

# Both start with a word; the word boundary before it is checked after a match (a
# leading ``\b`` would make the search try every position of the file).
_USING_DECL_RE = re.compile(r"using\s+([A-Za-z_]\w*)\s*=\s*([^;]*);")
_EXPLICIT_SPECIALISATION_RE = re.compile(r"template\s*<\s*>")
_WORD_CHAR_RE = re.compile(r"\w")


def kernel_trait_keys(text: str) -> List[str]:
    """Keys of every explicit specialisation ``template<> R f<trait, ...>(...)``
    in a generated kernel ``.cpp`` (aliases of the file expanded), in order,
    without duplicates."""
    code = mask_code_only(text)
    aliases = _LazyAliases(
        {m.group(1): m.group(2) for m in matches_not_after(_WORD_CHAR_RE, _USING_DECL_RE, code)}
    )
    keys: List[str] = []
    # A kernel file specialises several functions for one trait (launch, oneshot,
    # get_name): the same arguments give the same keys again, which are already in
    # ``keys`` (an alias's value, once computed, never changes).
    seen_args: set = set()
    for m in matches_not_after(_WORD_CHAR_RE, _EXPLICIT_SPECIALISATION_RE, code):
        stop = len(code)
        for ch in "{;":
            k = code.find(ch, m.end())
            if k >= 0:
                stop = min(stop, k)
        head = code[m.end() : stop]
        calls = find_template_calls(head)
        if not calls:
            continue
        _, args, _, _ = calls[0]
        if tuple(args) in seen_args:
            continue
        seen_args.add(tuple(args))
        traits, extras, _, _ = classify_args(args, aliases)
        for _, trait in traits:
            key = trait_key(trait, extras)
            if key not in keys:
                keys.append(key)
    return keys


class _LazyAliases(_AbcMapping):
    """``using`` aliases of a file, each normalised (and expanded) on first use."""

    def __init__(self, raw: Dict[str, str]) -> None:
        self._raw = raw
        self._done: Dict[str, str] = {}
        self._busy: set = set()

    def __contains__(self, name: object) -> bool:
        return name in self._raw

    def __getitem__(self, name: str) -> str:
        done = self._done.get(name)
        if done is not None:
            return done
        if name in self._busy:  # self-reference: leave the name as is
            return name
        self._busy.add(name)
        try:
            value = normalize_cpp(self._raw[name], self)
        finally:
            self._busy.discard(name)
        self._done[name] = value
        return value

    def __iter__(self):
        return iter(self._raw)

    def keys(self):  # the names, as a dict's view: set operations on it run in C
        return self._raw.keys()

    def __len__(self) -> int:
        return len(self._raw)


def kernel_trait_key(text: str) -> str:
    """The specialised trait key(s) of a kernel file, one per line."""
    return "\n".join(kernel_trait_keys(text))


# --------------------------------------------------------------------------- matching


@dataclass
class DispatchMatch:
    """Result of :func:`match_leaves_to_kernels`.

    ``leaf_kernels``: leaf order -> kernel files it launches (one list entry per
    trait argument, ``None`` when no generated kernel specialises it).
    ``kernel_leaves``: kernel file -> orders of the leaves that launch it.
    ``unmatched``: (leaf order, key) for traits no generated kernel specialises.
    ``unreached``: kernel files no leaf launches, sorted.
    ``kinds``: kernel file -> trait template name (``fmha_bwd_dot_do_o_traits_``).
    """

    leaf_kernels: Dict[int, List[Optional[str]]] = field(default_factory=dict)
    kernel_leaves: Dict[str, List[int]] = field(default_factory=dict)
    unmatched: List[Tuple[int, str]] = field(default_factory=list)
    unreached: List[str] = field(default_factory=list)
    ambiguous: Dict[str, List[str]] = field(default_factory=dict)
    kinds: Dict[str, str] = field(default_factory=dict)

    def files_of(self, order: int) -> List[str]:
        return [f for f in self.leaf_kernels.get(order, []) if f]


def match_leaves_to_kernels(
    leaves: Union[DispatchTree, Iterable[DispatchLeaf]],
    kernel_traits: Mapping[str, str],
) -> DispatchMatch:
    """Link each leaf to the kernel files that specialise its traits.

    ``kernel_traits`` maps kernel file name -> :func:`kernel_trait_key` of its
    text (``GenerateRunner.generate_api_file(...).kernel_traits``; the
    ApiFileResult itself is accepted too).  Kernel files
    with an empty key (nothing specialised) are reported as unreached.  For a parsed
    tree the result is kept with the tree and shared: read it, never change it.
    """
    kernel_traits = getattr(kernel_traits, "kernel_traits", kernel_traits)  # an ApiFileResult
    if not isinstance(kernel_traits, _AbcMapping):
        raise TypeError(
            "match_leaves_to_kernels needs {kernel file: trait key} "
            "(GenerateRunner.generate_api_file(...).kernel_traits), not bare names"
        )
    if not isinstance(leaves, DispatchTree):
        return _match(leaves, kernel_traits)
    # the readers of one dispatch file share its tree and match it to the same kernels
    key = ("match", tuple(kernel_traits.items()))
    found = leaves.derived.get(key)
    if found is None:
        found = leaves.derived[key] = _match(leaves.leaves, kernel_traits)
    return found


def _match(leaves: Iterable[DispatchLeaf], kernel_traits: Mapping[str, str]) -> DispatchMatch:
    by_key: Dict[str, List[str]] = {}
    result = DispatchMatch()
    for name in sorted(kernel_traits):
        keys = [k for k in kernel_traits[name].split("\n") if k]
        result.kinds[name] = trait_template(keys[0]) if keys else ""
        for key in keys:
            by_key.setdefault(key, []).append(name)
    for key, names in by_key.items():
        if len(names) > 1:
            result.ambiguous[key] = names
    reached: Dict[str, List[int]] = {}
    for leaf in leaves:
        files: List[Optional[str]] = []
        for trait, key in zip(leaf.trait_args, leaf.keys):
            names = by_key.get(key) or []
            if not names:
                files.append(None)
                if trait not in leaf.undecided:  # (the call may never name it)
                    result.unmatched.append((leaf.order, key))
                continue
            files.append(names[0] if len(names) == 1 else names[0])
            for name in names:
                orders = reached.setdefault(name, [])
                if not orders or orders[-1] != leaf.order:
                    orders.append(leaf.order)
        result.leaf_kernels[leaf.order] = files
    result.kernel_leaves = {name: reached[name] for name in sorted(reached)}
    result.unreached = sorted(name for name in kernel_traits if name not in reached)
    return result

