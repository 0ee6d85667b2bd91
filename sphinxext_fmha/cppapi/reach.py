"""The conditions under which the dispatcher reaches each kernel: the ``&&`` terms of
its leaves' branches (and of the calls into their function), each in a *slot* (function,
depth, position) so the same slot of different kernels compares. Exact: a branch that
only picks a partner kernel is a :class:`SubKernelChoice`, not the main kernel's
condition; terms its leaves do not share are left out and the kernel is ``varying``."""

from __future__ import annotations

import collections
import functools
import re
from dataclasses import dataclass, field
from typing import DefaultDict, Dict, Iterable, List, Optional, Set, Tuple

from ..schema.token_dispatch import Condition
from .allocation import collector_paused
from .condition_form import condition_form, split_top, strip_parens
from .entry_points import read_entry_points
from .lexing import constant_value, trait_template
from .masking import strip_comments
from .matching import DispatchMatch
from .parse import DispatchLeaf, DispatchTree

__all__ = ["Term", "KernelReach", "SubKernelChoice", "kernel_reach", "condition_terms_cpp"]


@dataclass(frozen=True)
class Term:
    """One ``&&`` term of a dispatcher condition: C++ text and its :data:`Condition`."""

    slot: str
    cpp: str
    form: Condition


@dataclass
class KernelReach:
    """``terms`` every leaf reaching the kernel shares (outermost first), those
    ``leaves`` and their ``functions``; ``varying``: some leaves add terms the others lack,
    on the variables ``more`` (``a.seqlen_q``)."""

    terms: List[Term] = field(default_factory=list)
    leaves: List[int] = field(default_factory=list)
    functions: List[str] = field(default_factory=list)
    varying: bool = False
    more: List[str] = field(default_factory=list)


@dataclass
class SubKernelChoice:
    """Branches that differ in one condition only (``condition`` against ``other``; None:
    its ``else``, ``!(c)``) and launch the same kernels of ``kept_kinds`` with different
    ones of ``chosen_kinds``: the condition picks those, not the kept ones. ``count``:
    the launch calls of such branches."""

    condition: str
    form: Condition
    other: Optional[str]
    other_form: Condition
    kept_kinds: str
    chosen_kinds: str
    count: int = 0


@functools.lru_cache(maxsize=65536)
def condition_terms_cpp(condition: str) -> Tuple[str, ...]:
    """Top-level ``&&`` terms of a condition, C++ text with comments kept, blanks squeezed."""
    text = " ".join(condition.split())
    return tuple(strip_parens(t) for t in split_top(strip_parens(text), "&&") if t.strip())


def _choice_depths(tree: DispatchTree, match: DispatchMatch
                   ) -> Tuple[Dict[int, Tuple[int, int]], Dict[int, int]]:
    """leaf order -> (depth where a partner choice starts, number of its conditions):
    leaves launching the same main kernel with different partners part there; and leaf
    order -> the position of its main kernel's trait (:meth:`.DispatchMatch.main_rank`;
    bwd lists its dot_do_o trait first), for the leaves launching several kernels."""
    rank = match.main_rank()
    main_at: Dict[int, int] = {}
    by_main: Dict[Tuple[str, str], Dict[int, Tuple[str, ...]]] = {}  # -> leaf order -> partners
    for leaf in tree.leaves:
        if len(leaf.trait_args) > 1:
            main = main_at[leaf.order] = max(range(len(leaf.trait_args)), key=lambda i: rank(
                trait_template(leaf.trait_args[i])))
            keys = leaf.keys  # (computed on each read)
            by_main.setdefault((leaf.function, keys.pop(main)), {})[leaf.order] = tuple(keys)
    choices: Dict[int, Tuple[int, int]] = {}
    for group in by_main.values():
        if len(set(group.values())) < 2:
            continue
        # where each parts from any other leaf of the group (a duplicate branch too)
        conditions = {order: tree.leaves[order].conditions for order in group}
        for order, mine in conditions.items():
            depths = [next((i for i, (a, b) in enumerate(zip(mine, other)) if a != b), len(mine))
                      for other in conditions.values()]
            if min(depths) < len(mine):
                choices[order] = (min(depths), len(mine))
    return choices, main_at


def kernel_reach(tree: DispatchTree, match: DispatchMatch
                 ) -> Tuple[Dict[str, KernelReach], List[SubKernelChoice]]:
    """kernel file -> :class:`KernelReach`, and the sub-kernel choices of the file."""
    with collector_paused():
        return _kernel_reach(tree, match)


class _Terms:
    """The distinct terms of one :func:`kernel_reach` call, numbered: term lists of
    numbers compare and intersect in C."""

    def __init__(self) -> None:
        self.terms: List[Term] = []
        self._number: Dict[Tuple[str, str], int] = {}  # (slot, C++) -> number
        self._at: Dict[Tuple[str, int, str], Tuple[int, ...]] = {}
        self.known = self._at.get  # (function, depth, condition) -> numbers, if made

    def of(self, function: str, depth: int, condition: str) -> Tuple[int, ...]:
        """The numbers of the terms of a condition at ``depth`` of ``function``."""
        found = self._at.get((function, depth, condition))
        if found is None:
            found = self._at[(function, depth, condition)] = tuple(
                self.numbered("%s/%d/%d" % (function, depth, index), cpp)
                for index, cpp in enumerate(condition_terms_cpp(condition)))
        return found

    def of_call(self, callee: str, conditions: List[str]) -> List[int]:
        """The numbers of the terms of a call of ``callee`` (slots ``<callee>/call/<index>``);
        a constant one's form is its value (``if (false and can_dispatch_v3)``)."""
        cpps = [cpp for condition in conditions for cpp in condition_terms_cpp(condition)]
        return [self.numbered("%s/call/%d" % (callee, index), cpp, constant_value(cpp))
                for index, cpp in enumerate(cpps)]

    def numbered(self, slot: str, cpp: str, form: Optional[bool] = None) -> int:
        number = self._number.get((slot, cpp))
        if number is None:
            number = self._number[(slot, cpp)] = len(self.terms)
            self.terms.append(Term(slot, cpp, condition_form(cpp) if form is None else form))
        return number


def _kernel_reach(tree: DispatchTree, match: DispatchMatch
                  ) -> Tuple[Dict[str, KernelReach], List[SubKernelChoice]]:
    choice_depths, main_at = _choice_depths(tree, match)
    # kernel file -> (leaf, its terms, a main kernel's chosen terms) of each leaf launching it
    per_kernel: DefaultDict[str, List[Tuple[DispatchLeaf, List[int], List[int]]]] = \
        collections.defaultdict(list)
    none: List[int] = []  # the main kernel's chosen terms (shared: never changed)
    no_files: List[Optional[str]] = []
    numbered = _Terms()
    terms_of = numbered.of
    known = numbered.known
    all_terms = numbered.terms
    fixed: Set[int] = set()  # terms of `if constexpr` branches within choices (no call's)
    leaf_kernels = match.leaf_kernels
    entry_terms = _entry_terms(tree, numbered)
    for leaf in tree.leaves:
        function = leaf.function
        start, stop = choice_depths.get(leaf.order, (-1, -1))  # (-1, -1): no choice
        terms: List[int] = list(entry_terms.get(function, ()))
        chosen: List[int] = []
        for depth, condition in enumerate(leaf.conditions):
            found = known((function, depth, condition)) or terms_of(function, depth, condition)
            if start <= depth < stop:
                chosen += found
                if depth in leaf.compile_time:
                    fixed.update(found)
            else:
                terms += found
        files = leaf_kernels.get(leaf.order, no_files)
        main = main_at.get(leaf.order, 0)
        for position, filename in enumerate(files):
            if filename is None:
                continue
            # the main kernel's own terms come before the choice; the chosen ones all its
            # leaves share select it too
            per_kernel[filename].append((leaf, terms, chosen) if position == main
                                        else (leaf, terms + chosen, none))
    result: Dict[str, KernelReach] = {}
    choices, changes = _sub_kernel_choices(tree, numbered)
    for filename, entries in per_kernel.items():
        common = _common([(leaf.function, terms) for leaf, terms, _ in entries], all_terms)
        varying = any(len(terms) != len(common) for _, terms, _ in entries)
        either = _either(entries, common, numbered) if varying else None
        if either is not None:  # its branches part on one term only: their `||` is exact
            common, varying = either, False
        shared = [n for n in _common([(leaf.function, terms + after)
                                      for leaf, terms, after in entries], all_terms)
                  if n not in common] if any(after for _, _, after in entries) else []
        own_choices = set(shared)
        if not varying:
            # reached wherever its terms hold only if the choices among its launches are
            # made in full (``if (c)`` and its ``else``; an ``if constexpr`` tests no call),
            # or its leaves part on one term only (2.8.3 bwd's no-``s``-pad dq_dk_dv kernels:
            # ``a.seqlen_q % 64 == 0`` or the other seqlen_q term picks their dot_do_o)
            loose = {n for _, _, after in entries for n in after
                     if all_terms[n].form is not True and n not in fixed} - own_choices
            varying = bool(loose) and not _complete(loose, all_terms)
            full = [(leaf, terms + after, none) for leaf, terms, after in entries]
            either = _either(full, _common([(leaf.function, terms) for leaf, terms, _ in full],
                                           all_terms), numbered) if varying else None
            if either is not None:
                common, shared, varying = either, [], False
            extra = list(loose) if varying else []
        else:
            said = {all_terms[n].cpp for n in common + shared}
            extra = [n for _, terms, _ in entries for n in terms if all_terms[n].cpp not in said]
        # what those other branches test that may change this kernel: not a slot whose
        # branches, paired, always launch this kernel alike (the partners' choice only)
        kind = match.kinds.get(filename, "")
        more = _names(all_terms[n].cpp for n in extra
                      if kind in changes.get(all_terms[n].slot, (kind,)))
        result[filename] = KernelReach(
            [all_terms[n] for n in common + shared], [leaf.order for leaf, _, _ in entries],
            list(dict.fromkeys([leaf.function for leaf, _, _ in entries])), varying, more)
    return result, choices


#: a member a condition tests (``t.mask_type``, ``a.seqlen_q``; ``t.data_type`` of
#: ``t.data_type.compare("fp16")``), string literals left out
_MEMBER = re.compile(r"(?<![\w.])[A-Za-z_]\w*\s*(?:\.|->)\s*[A-Za-z_]\w*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _names(cpps: Iterable[str]) -> List[str]:
    """The members the conditions ``cpps`` test, in order of first mention."""
    return list(dict.fromkeys("".join(name.split()) for cpp in dict.fromkeys(cpps)
                              for name in _MEMBER.findall(_STRING.sub('""', strip_comments(cpp)))))


#: a condition that needs parentheses inside ``||``
_LOGICAL = re.compile(r"&&|\|\||\band\b|\bor\b|\?")


def _either(entries: List[Tuple[DispatchLeaf, List[int], List[int]]], common: List[int],
            numbered: _Terms) -> Optional[List[int]]:
    """The terms of a kernel whose branches (of one function) each add one term to
    ``common``, all in one slot: ``common`` with those terms ``||``-ed in that slot
    (2024 bwd's no-``s``-pad dq_dk_dv kernel: ``a.seqlen_q % 128 == 0 and a.seqlen_q %
    256 != 0`` or ``a.seqlen_q % 256 == 0``); None when they differ otherwise."""
    if len({leaf.function for leaf, _, _ in entries}) > 1:
        return None
    kept = set(common)
    extras = [[n for n in terms if n not in kept] for _, terms, _ in entries]
    terms = numbered.terms
    if any(len(extra) != 1 for extra in extras) or len({terms[e[0]].slot for e in extras}) > 1:
        return None
    texts = list(dict.fromkeys(terms[e[0]].cpp for e in extras))
    cpp = " || ".join("(%s)" % t if _LOGICAL.search(strip_comments(t)) else t for t in texts)
    either = numbered.numbered(terms[extras[0][0]].slot, cpp)
    return [either if n == extras[0][0] else n for n in entries[0][1] if n in kept or n == extras[0][0]]


def _entry_terms(tree: DispatchTree, numbered: _Terms) -> Dict[str, List[int]]:
    """dispatch function -> the terms of every way into it from an entry point (2026 CK's
    ``fmha_fwd`` calls ``fmha_fwd_v3`` only ``if (args.max_seqlen_q > 1)``); what an
    earlier call left (v2 runs when v3 declined) is a try order, no term."""
    points = read_entry_points(tree)
    found: Dict[str, List[int]] = {}

    def of(function: str, seen: Tuple[str, ...]) -> List[int]:
        if function in found:
            return found[function]
        calls = [c for c in points.calls if c.callee == function and c.caller not in seen]
        if function in points.entries or not calls:
            return []
        found[function] = _by_text([of(c.caller, seen + (function,))
                                    + numbered.of_call(function, c.conditions) for c in calls],
                                   numbered.terms)
        return found[function]

    for function in dict.fromkeys(leaf.function for leaf in tree.leaves):
        of(function, ())
    return found


def _sub_kernel_choices(tree: DispatchTree, numbered: _Terms
                        ) -> Tuple[List[SubKernelChoice], Dict[str, Set[str]]]:
    """Read from the branches, not assumed: two branches of one function whose run-time
    terms differ in one slot only are parted by that slot's condition; the kinds whose
    traits differ between them are what it chooses, those equal are kept (2024 bwd:
    ``a.seqlen_q % 256 == 0`` keeps the dq_dk_dv kernel and picks the dot_do_o one).
    Also: slot -> the kinds some pair of branches parted there launches differently."""
    # (a term's slot, the leaf's other term numbers) -> term text -> its leaves
    parted: Dict[Tuple[str, Tuple[int, ...]], Dict[str, List[DispatchLeaf]]] = {}
    terms = numbered.terms
    for leaf in tree.leaves:
        if len(leaf.trait_args) < 2:
            continue
        numbers = tuple(number for depth, condition in enumerate(leaf.conditions)
                        if depth not in leaf.compile_time  # (an ``if constexpr`` tests no call)
                        for number in numbered.of(leaf.function, depth, condition))
        for k, number in enumerate(numbers):
            if isinstance(terms[number].form, bool):
                continue
            key = (terms[number].slot, numbers[:k] + numbers[k + 1:])
            parted.setdefault(key, {}).setdefault(terms[number].cpp, []).append(leaf)
    found: Dict[Tuple[str, Optional[str], str, str], Tuple[SubKernelChoice, Set[int]]] = {}
    changes: Dict[str, Set[str]] = {}
    for (slot, _), sides in parted.items():
        if len(sides) < 2:
            continue
        texts = list(sides)
        for i, first in enumerate(texts):
            for second in texts[i + 1:]:
                a, b = sides[first][0], sides[second][0]
                kinds = [trait_template(arg) for arg in a.trait_args]
                if kinds != [trait_template(arg) for arg in b.trait_args]:
                    continue
                differ = [x != y for x, y in zip(a.keys, b.keys)]
                changes.setdefault(slot, set()).update(
                    k for k, d in zip(kinds, differ) if d)
                kept = ", ".join(dict.fromkeys(k for k, d in zip(kinds, differ) if not d))
                chosen = ", ".join(dict.fromkeys(k for k, d in zip(kinds, differ) if d))
                if not kept or not chosen:
                    continue  # the condition picks every kernel of the call, or none
                head = _choice_head(first)
                other = None if _choice_head(second) == head else second
                said = (head, other, kept, chosen)
                if said not in found:
                    found[said] = (SubKernelChoice(
                        head, condition_form(head), other,
                        condition_form(other if other is not None else "!(%s)" % head),
                        kept, chosen), set())
                found[said][1].update(leaf.order for side in (first, second) for leaf in sides[side])
    for choice, leaves in found.values():
        choice.count = len(leaves)
    return [choice for choice, _ in found.values()], changes


def _common(branches: List[Tuple[str, List[int]]], all_terms: List[Term]) -> List[int]:
    """The terms every branch (function, term numbers) reaching a kernel has: by number
    within one function, by C++ text across functions (a number is per slot)."""
    by_function: Dict[str, List[List[int]]] = {}
    for function, terms in branches:
        by_function.setdefault(function, []).append(terms)
    return _by_text([_kept(lists[0], lists[1:]) for lists in by_function.values()], all_terms)


def _by_text(lists: List[List[int]], all_terms: List[Term]) -> List[int]:
    """The terms of the first list whose C++ text each other list has."""
    texts = [{all_terms[n].cpp for n in terms} for terms in lists[1:]]
    return [n for n in lists[0] if all(all_terms[n].cpp in other for other in texts)]


def _complete(numbers: Set[int], all_terms: List[Term]) -> bool:
    """Whether each condition of ``numbers`` is tested with its ``else`` (``c``, ``!(c)``)."""
    sides: Dict[str, Set[bool]] = {}
    for number in numbers:
        cpp = all_terms[number].cpp
        head = _choice_head(cpp)
        sides.setdefault(head, set()).add(strip_comments(cpp).strip() == head)
    return all(len(found) == 2 for found in sides.values())


def _kept(first: List[int], others: List[List[int]]) -> List[int]:
    """The terms of ``first`` that every one of ``others`` has, in order."""
    differing = [other for other in others if other != first]
    if not differing:
        return list(first)
    shared = set(first).intersection(*differing)
    return [t for t in first if t in shared]


@functools.lru_cache(maxsize=65536)
def _choice_head(cpp: str) -> str:
    """The condition a sub-kernel choice term tests (``!(c)``, its ``else``, tests ``c``)."""
    text = strip_comments(cpp).strip()
    if text.startswith("!(") and text.endswith(")") and strip_parens(text[1:]) == text[2:-1].strip():
        return text[2:-1].strip()
    return text
