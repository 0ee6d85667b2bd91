"""What a set of kernels runs for the calls a dropped kernel ran: exact questions over
the full API dispatch and the one generate.py writes for the set (:class:`Fate`)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import AbstractSet, Any, Dict, Iterable, List, Mapping, Optional, Tuple

from ..cppapi.condition_form import condition_form
from ..cppapi.matching import match_leaves_to_kernels
from ..cppapi.parse import parse_dispatch
from ..cppapi.reach import condition_terms_cpp
from ..cppapi.routes import DomainIndex, Routes, View, Way, routes_of
from ..cppapi.satisfiable import Theory
from ..schema.token_dispatch import Condition


@dataclass(frozen=True)
class Fate:
    """What becomes of the calls a dropped kernel ran: ``never``, why the full API never
    runs it; else ``stand_ins``, the kept kernels that now run some of them; ``lost``:
    some now run no kernel; ``only_when``: the terms every stand-in has that they do not
    all meet."""

    never: Tuple[Dict[str, Any], ...] = ()
    stand_ins: Tuple[str, ...] = ()
    lost: bool = False
    only_when: Tuple[Condition, ...] = ()


class SetDispatch:
    """The routing of one full API dispatch file, and of any set of its kernels."""

    def __init__(self, api_text: str, kernel_traits: Mapping[str, str],
                 theory: Optional[Theory] = None) -> None:
        tree = parse_dispatch(api_text)
        self.match = match_leaves_to_kernels(tree, dict(kernel_traits))
        self.routes: Routes = routes_of(tree) if theory is None else Routes(tree, theory)
        #: kernel file -> the leaves that launch it
        self.leaves_of = self.match.kernel_leaves
        self._files = [(order, frozenset(self.match.files_of(order)))
                       for order in self.match.leaf_kernels]
        self._never: Optional[Dict[str, List[Dict[str, Any]]]] = None

    def never_run(self) -> Dict[str, List[Dict[str, Any]]]:
        """Kernel files no call of the full API runs -> why (facts, see
        :func:`~sphinxext_fmha.cppapi.link_check.unreachable_kernels`)."""
        if self._never is None:
            from ..cppapi.link_check import unreachable_kernels

            self._never = unreachable_kernels(self.routes.tree, self.match)
        return self._never

    def written(self, api_text: str, kernel_traits: Mapping[str, str]) -> SetDispatch:
        """The dispatch file generate.py wrote for a set, read with this file's terms. Its
        branches can come in another order than the full file's (aiter bwd tries
        ``hdim <= 64`` before ``hdim <= 32`` only while the trload kernels register first),
        so what a set runs is read from it, not from this file without the dropped leaves."""
        return SetDispatch(api_text, kernel_traits, self.routes.theory)

    def view(self, kept: AbstractSet[str]) -> View:
        """The dispatch generate.py writes for the kernel files ``kept``: a leaf stays
        when every kernel it launches is kept."""
        kept = kept if isinstance(kept, (set, frozenset)) else set(kept)
        return self.routes.view({order for order, files in self._files
                                 if files and files <= kept})

    def ways(self, view: View, name: str) -> List[Way]:
        """The ways in of the leaves that launch ``name`` in ``view`` (none: never run)."""
        ways = (view.leaf_way(order) for order in self.leaves_of.get(name, ())
                if view.kept is None or order in view.kept)
        return [way for way in ways if way is not None]

    def loses(self, name: str, before: View, after: View) -> bool:
        """Whether some call that ran ``name`` in ``before`` runs no kernel in ``after``;
        yes for a kernel no leaf names (2024 CK's split-KV combine kernels): never dropped
        for another on calls not established."""
        if name not in self.leaves_of:
            return True
        theory = self.routes.theory
        return any(theory.satisfiable([*way.nodes, theory.negate(after.runs_some(way))], way.domain)
                   for way in self.ways(before, name))

    def runs_nothing(self, view: View, kept: Iterable[str]) -> List[str]:
        """The kernels of ``kept`` that ``view`` (their own dispatch) never runs."""
        return sorted(name for name in kept
                      if name in self.leaves_of and not self.ways(view, name))

    def fates(self, dropped: Iterable[str], kept: AbstractSet[str],
              written: Optional[SetDispatch] = None, after: Optional[View] = None
              ) -> Dict[str, Fate]:
        """The :class:`Fate` of each dropped kernel under the set ``kept``, whose dispatch
        is ``written`` (:meth:`written`) where generate.py wrote it, else this file
        without the dropped leaves; ``after``: that dispatch's view, if the caller has it."""
        never = self.never_run()
        if after is None:
            after = written.routes.full if written is not None else self.view(kept)
        theory = self.routes.theory
        # the ways of the set's kernels, found by the classes a dropped kernel's way admits
        index = DomainIndex([((other, way), way.domain) for other in sorted(kept)
                             for way in (written or self).ways(after, other)], theory.full)
        found: Dict[str, Fate] = {}
        for name in dropped:
            if name in never:
                found[name] = Fate(never=tuple(never[name]))
                continue
            ways = self.ways(self.routes.full, name)
            if not ways:
                continue  # launched by no leaf: said with the unreferenced kernels
            stand_ins: Dict[str, Way] = {}
            lost = False
            kind = self.match.kinds.get(name)
            for way in ways:
                candidates: List[Tuple[str, Way]] = index.admitting(way.domain)  # type: ignore
                for other, their in candidates:
                    # (a leaf launches partners too: a stand-in is a kernel of this kind)
                    if other not in stand_ins and self.match.kinds.get(other) == kind and \
                            theory.satisfiable(
                            [*way.nodes, *their.nodes,
                             *(theory.literal(n, m) for n, m in their.domain.items())],
                            way.domain):
                        stand_ins[other] = their
                lost = lost or theory.satisfiable(
                    [*way.nodes, theory.negate(after.runs_some(way))], way.domain)
            found[name] = Fate(stand_ins=tuple(stand_ins), lost=lost, only_when=self._narrowed(
                ways, list(stand_ins)) if lost else ())
        return found

    def _narrowed(self, ways: List[Way], stand_ins: List[str]) -> Tuple[Condition, ...]:
        """The terms of :meth:`_narrowing` every stand-in has: a call served by any of
        them meets these (the first's order)."""
        each = [self._narrowing(ways, stand_in) for stand_in in stand_ins]
        return tuple(t for t in each[0] if all(t in other for other in each[1:])) if each else ()

    def _narrowing(self, ways: List[Way], stand_in: str) -> Tuple[Condition, ...]:
        """The terms every leaf of ``stand_in`` has that some call of ``ways`` fails (a
        term only some of its leaves test, a partner's choice, narrows nothing)."""
        theory = self.routes.theory
        leaves = [self.routes.tree.leaves[order] for order in self.leaves_of.get(stand_in, ())]
        # (an ``if constexpr`` is chosen when compiling: no call's condition)
        per_leaf = [[term for depth, condition in enumerate(leaf.conditions)
                     if depth not in leaf.compile_time for term in condition_terms_cpp(condition)]
                    for leaf in leaves]
        if not per_leaf:
            return ()
        common = set(per_leaf[0]).intersection(*per_leaf[1:])
        terms: Dict[Condition, None] = {}
        for term in per_leaf[0]:
            if term not in common:
                continue
            node = theory.formula(term)
            if any(theory.satisfiable([*w.nodes, theory.negate(node)], w.domain) for w in ways):
                form = condition_form(term)
                if not isinstance(form, bool):
                    terms[form] = None
        return tuple(terms)


def set_dispatch(api_text: str, kernel_traits: Mapping[str, str]) -> SetDispatch:
    """:class:`SetDispatch` of a file, kept for the last few (the policy, the losses and
    the link check of one recommendation read the same one)."""
    return _set_dispatch(api_text, tuple(sorted(kernel_traits.items())))


@functools.lru_cache(maxsize=4)
def _set_dispatch(api_text: str, kernel_traits: Tuple[Tuple[str, str], ...]) -> SetDispatch:
    return SetDispatch(api_text, dict(kernel_traits))
