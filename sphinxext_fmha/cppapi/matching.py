"""Link dispatch leaves to generated kernel files: each kernel file specialises the
template its leaf calls with the same trait and extra arguments (spelled through local
``using`` aliases), compared as normalised text (:func:`~.lexing.normalize_cpp`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping as _AbcMapping
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

from .call_sites import classify_args
from .lexing import find_template_calls, normalize_cpp, trait_key, trait_template
from .masking import mask_code_only, matches_not_after
from .parse import DispatchLeaf, DispatchTree

__all__ = ["kernel_trait_keys", "kernel_trait_key", "DispatchMatch", "main_rank",
           "match_leaves_to_kernels"]


# Both start with a word; the word boundary before it is checked after a match (a
# leading ``\b`` would make the search try every position of the file).
_USING_DECL_RE = re.compile(r"using\s+([A-Za-z_]\w*)\s*=\s*([^;]*);")
_EXPLICIT_SPECIALISATION_RE = re.compile(r"template\s*<\s*>")
_WORD_CHAR_RE = re.compile(r"\w")


def kernel_trait_keys(text: str) -> List[str]:
    """Keys of every ``template<> R f<trait, ...>(...)`` of a kernel ``.cpp`` (its aliases
    expanded), in order, without duplicates."""
    code = mask_code_only(text)
    aliases = _LazyAliases(
        {m.group(1): m.group(2) for m in matches_not_after(_WORD_CHAR_RE, _USING_DECL_RE, code)})
    keys: Dict[str, None] = {}  # an ordered set
    # several functions specialised for one trait (launch, get_name): same keys again
    seen_args: set = set()
    for m in matches_not_after(_WORD_CHAR_RE, _EXPLICIT_SPECIALISATION_RE, code):
        stop = min([k for k in (code.find("{", m.end()), code.find(";", m.end())) if k >= 0],
                   default=len(code))
        calls = find_template_calls(code[m.end() : stop])
        args = tuple(calls[0][1]) if calls else None
        if args is None or args in seen_args:
            continue
        seen_args.add(args)
        traits, extras, _ = classify_args(args, aliases)
        keys.update(dict.fromkeys(trait_key(trait, extras) for trait in traits))
    return list(keys)


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


@dataclass
class DispatchMatch:
    """``leaf_kernels``: leaf order -> a kernel file per trait (None: not generated);
    ``kernel_leaves``: kernel file -> its leaves; ``unmatched``: (leaf order, key) not
    generated; ``unreached``: kernel files no leaf launches, sorted; ``kinds``: kernel
    file -> trait template (``fmha_bwd_dot_do_o_traits_``)."""

    leaf_kernels: Dict[int, List[Optional[str]]] = field(default_factory=dict)
    kernel_leaves: Dict[str, List[int]] = field(default_factory=dict)
    unmatched: List[Tuple[int, str]] = field(default_factory=list)
    unreached: List[str] = field(default_factory=list)
    ambiguous: Dict[str, List[str]] = field(default_factory=dict)
    kinds: Dict[str, str] = field(default_factory=dict)

    def files_of(self, order: int) -> List[str]:
        return [f for f in self.leaf_kernels.get(order, []) if f]

    def main_rank(self) -> Callable[[str], Tuple[int, int, str]]:
        """:func:`main_rank` of the leaves' kernel files (kinds: trait templates)."""
        return main_rank(map(self.files_of, self.leaf_kernels), self.kinds.__getitem__,
                         Counter(self.kinds.values()))


def main_rank(calls: Iterable[Sequence[str]], kind_of: Callable[[str], str],
              sizes: Mapping[str, int]) -> Callable[[str], Tuple[int, int, str]]:
    """How a kind ranks as the main kind of a call (``calls``: the kernels each leaf
    launches together). Each leaf launches its own main kernel and repeats partners others
    launch too (combine, dot_do_o, convert_dq kernels): the main kind has the most distinct
    kernels among the leaves launching several kinds, whatever the traits' order. Where
    kinds tie the file does not tell (kernels generated together, read from the traits),
    so the kind with the most kernel files ranks first (``sizes``), then the name."""
    distinct: Dict[str, Set[str]] = {}
    for call in calls:
        if len({kind_of(kernel) for kernel in call}) > 1:
            for kernel in call:
                distinct.setdefault(kind_of(kernel), set()).add(kernel)
    return lambda kind: (len(distinct.get(kind, ())), sizes.get(kind, 0), kind)


def match_leaves_to_kernels(leaves: Union[DispatchTree, Iterable[DispatchLeaf]],
                            kernel_traits: Mapping[str, str]) -> DispatchMatch:
    """Each leaf linked to the kernel files that specialise its traits (``kernel_traits``:
    file -> :func:`kernel_trait_key`, or an ApiFileResult). For a parsed tree the result
    is kept with the tree and shared: never change it."""
    kernel_traits = getattr(kernel_traits, "kernel_traits", kernel_traits)  # an ApiFileResult
    if not isinstance(kernel_traits, _AbcMapping):
        raise TypeError("match_leaves_to_kernels needs {kernel file: trait key} (GenerateRunner"
                        ".generate_api_file(...).kernel_traits), not bare names")
    if not isinstance(leaves, DispatchTree):
        return _match(leaves, kernel_traits)
    tree = leaves
    return tree.once(("match", tuple(kernel_traits.items())), lambda: _match(tree.leaves, kernel_traits))


def _match(leaves: Iterable[DispatchLeaf], kernel_traits: Mapping[str, str]) -> DispatchMatch:
    by_key: Dict[str, List[str]] = {}
    result = DispatchMatch()
    for name in sorted(kernel_traits):
        keys = [k for k in kernel_traits[name].split("\n") if k]
        result.kinds[name] = trait_template(keys[0]) if keys else ""
        for key in keys:
            by_key.setdefault(key, []).append(name)
    result.ambiguous = {key: names for key, names in by_key.items() if len(names) > 1}
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
            files.append(names[0])
            for name in names:
                orders = reached.setdefault(name, [])
                if not orders or orders[-1] != leaf.order:
                    orders.append(leaf.order)
        result.leaf_kernels[leaf.order] = files
    result.kernel_leaves = {name: reached[name] for name in sorted(reached)}
    result.unreached = sorted(name for name in kernel_traits if name not in reached)
    return result

