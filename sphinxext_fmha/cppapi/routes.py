"""Which dispatch leaf a call reaches, decided exactly (:mod:`.satisfiable`): the first
leaf whose branch conditions hold, no earlier branch of each chain's does and nothing
run before it in its scope returned; entry points' calls compose the same way. A
:class:`View` is the dispatch generate.py writes for a filtered set (dropped kernels'
branches left out)."""

from __future__ import annotations

import functools
import itertools
from typing import AbstractSet, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .condition_form import condition_form
from .entry_points import read_entry_points
from .parse import DispatchTree
from .reach import condition_terms_cpp
from .satisfiable import Node, Theory, Way, conjoin, disjoin, narrow

__all__ = ["DomainIndex", "Routes", "View", "Way", "routes_of"]


class Routes:
    """The routing formulas of one parsed dispatch file (a :class:`Theory` of all its
    conditions)."""

    def __init__(self, tree: DispatchTree, theory: Optional[Theory] = None) -> None:
        self.tree = tree
        self.entry_points = read_entry_points(tree)
        calls = self.entry_points.calls
        # (``theory``: another file's, whose conditions include these: a set's written file
        # read with the full file's, so that the full file's ways are questions to it)
        self.theory = theory or Theory([s.condition for s in tree.scopes if s.kind != "else"]
                                       + [c for call in calls for c in call.conditions])
        theory = self.theory
        self.own: List[Node] = [
            True if scope.kind in ("else", "function") or not scope.condition
            else theory.formula(scope.condition) for scope in tree.scopes]
        self.units = [theory.units(node) for node in self.own]
        self.chains: Dict[int, List[int]] = {}
        for number, scope in enumerate(tree.scopes):
            if scope.chain >= 0:
                self.chains.setdefault(scope.chain, []).append(number)
        self.function_scope = {s.function: n for n, s in enumerate(tree.scopes)
                               if s.kind == "function"}
        self.filled = _with_leaves(tree, None)  # (the scopes with a leaf below them)
        self._index: Dict[int, DomainIndex] = {}
        self.path_units = functools.cache(self._path_units)
        self.full = View(self, None)

    def _path_units(self, scope: int) -> Dict[int, int]:
        """The classes each variable may take under the top-level literals of the branches
        from the function body down to ``scope``."""
        parent = self.tree.scopes[scope].parent
        found = dict(self.path_units(parent)) if parent >= 0 else {}
        for number, mask in self.units[scope].items():
            found[number] = found.get(number, self.theory.full[number]) & mask
        return found

    def compatible(self, number: int, domain: Mapping[int, int]) -> List[int]:
        """The branches before ``number`` in its chain whose top-level literals admit
        ``domain`` (the others take none of its calls)."""
        chain = self.tree.scopes[number].chain
        index = self._index.get(chain)
        if index is None:
            index = self._index[chain] = DomainIndex(
                [(s, self.units[s]) for s in self.chains[chain]], self.theory.full)
        return index.admitting(domain, self.chains[chain].index(number))  # type: ignore[return-value]

    def view(self, kept: AbstractSet[int]) -> View:
        """The dispatch generate.py writes for the leaves ``kept`` (leaf orders)."""
        return View(self, kept)


class View:
    """The dispatch of a set of leaves (``None``: every leaf of the file)."""

    def __init__(self, routes: Routes, kept: Optional[AbstractSet[int]]) -> None:
        self.routes = routes
        tree = routes.tree
        self.kept = kept
        #: the scopes the view writes: all of the full file's (an empty branch takes the
        #: calls it admits: they run nothing, no later branch of its chain); a set's, those
        #: with a kept leaf below, and the branches empty in the full file under a written
        #: one (a filtered run may drop them: "runs nothing" is the lesser error)
        self.present = [True] * len(tree.scopes) if kept is None else _with_leaves(tree, kept)
        for number, scope in enumerate(tree.scopes if kept is not None else ()):
            if not routes.filled[number] and scope.parent >= 0:  # (parents come first)
                self.present[number] = self.present[scope.parent]
        # (memos of their own, not functools.cache: a view would hold itself in a cycle)
        self._ways: Dict[int, Optional[Way]] = {}
        self._why: Dict[int, Dict[str, Any]] = {}
        self._taken: Dict[int, Node] = {}
        self._entry: Dict[str, Node] = {}
        self._index: Optional[DomainIndex] = None

    def takers(self, way: Way) -> List[int]:
        """The leaves of the view whose branches' literals admit a call of ``way``."""
        if self._index is None:
            routes = self.routes
            self._index = DomainIndex(
                [(leaf.order, routes.path_units(leaf.scope) if leaf.scope >= 0 else {})
                 for leaf in routes.tree.leaves
                 if self.kept is None or leaf.order in self.kept], routes.theory.full)
        return self._index.admitting(way.domain)  # type: ignore[return-value]

    def runs_some(self, way: Way) -> Node:
        """The calls of ``way`` for which some leaf of the view runs (a formula)."""
        theory = self.routes.theory
        found = []
        for order in self.takers(way):
            other = self.leaf_way(order)
            if other is not None:
                found.append(conjoin([*other.nodes, *(theory.literal(n, m)
                                                        for n, m in other.domain.items())]))
        return disjoin(found)

    def leaf_way(self, order: int) -> Optional[Way]:
        """The calls that run leaf ``order`` (None: none does)."""
        leaf = self.routes.tree.leaves[order]
        if leaf.scope < 0:
            return Way({}, ())
        way = self.scope_way(leaf.scope)
        if way is None:
            return None
        before = self._before(leaf.scope, ("leaf", order))
        return self._extend(way, [self.routes.theory.negate(disjoin(before))]) if before else way

    def why_not(self, order: int) -> Dict[str, Any]:
        """Why no call runs leaf ``order`` (after :meth:`leaf_way`): ``kind`` ``no_entry``
        (``function``), ``never_holds`` (``terms``: the fewest that exclude each other),
        ``same_condition``, ``taken_by`` (``earlier``, ``own``), ``taken_together``,
        ``returns_before_chain`` or ``returns_before``."""
        scope = self.routes.tree.leaves[order].scope
        while scope >= 0:
            if scope in self._why:
                return self._why[scope]
            scope = self.routes.tree.scopes[scope].parent
        return {"kind": "returns_before"}

    def scope_way(self, number: int) -> Optional[Way]:
        if number in self._ways:
            return self._ways[number]
        routes = self.routes
        scope = routes.tree.scopes[number]
        theory = routes.theory
        if scope.parent < 0:
            entry = self.entry(scope.function)
            way = narrow(theory, Way({}, ()), [entry])
            if way is None:
                self._why[number] = {"kind": "no_entry", "function": scope.function}
        else:
            parent = self.scope_way(scope.parent)
            way = None if parent is None else self._branch_way(number, parent)
        self._ways[number] = way
        return way

    def _branch_way(self, number: int, parent: Way) -> Optional[Way]:
        routes = self.routes
        theory = routes.theory
        scope = routes.tree.scopes[number]
        own = self._extend(parent, [routes.own[number]])
        if own is None:
            self._why[number] = {"kind": "never_holds", "terms": self._never_holds(number)}
            return None
        earlier = [s for s in routes.compatible(number, own.domain) if self.present[s]]
        before = self._before(scope.parent, ("chain", scope.chain))
        extra = [theory.negate(routes.own[s]) for s in earlier]
        if before:
            extra.append(theory.negate(disjoin(before)))
        way = self._extend(own, extra) if extra else own
        if way is None:
            self._why[number] = self._shadowed_by(number, own, earlier)
        return way

    def _before(self, parent: int, item: Tuple[str, int]) -> List[Node]:
        """What returns in scope ``parent`` before ``item`` runs (formulas)."""
        taken = [self._item_taken(other) for other in
                 itertools.takewhile(item.__ne__, self.routes.tree.scopes[parent].items)]
        return [node for node in taken if node is not False]

    def _item_taken(self, item: Tuple[str, int]) -> Node:
        kind, number = item
        if kind == "leaf":
            return self.kept is None or number in self.kept
        parts = []
        theory = self.routes.theory
        earlier: List[Node] = []
        for scope in self.routes.chains[number]:
            if not self.present[scope]:
                continue
            own = self.routes.own[scope]
            parts.append(conjoin([own, *[theory.negate(e) for e in earlier],
                                  self.taken(scope)]))
            earlier.append(own)
        return disjoin(parts)

    def taken(self, number: int) -> Node:
        """The calls for which scope ``number``, once entered, runs a leaf."""
        found = self._taken.get(number)
        if found is None:
            found = self._taken[number] = self.present[number] and disjoin(
                self._item_taken(item) for item in self.routes.tree.scopes[number].items)
        return found

    def entry(self, function: str) -> Node:
        """The calls for which ``function`` runs (its callers' way to the call)."""
        found = self._entry.get(function)
        if found is not None:
            return found
        self._entry[function] = False  # (a call cycle runs nothing more)
        points = self.routes.entry_points
        if function in points.entries or not any(c.callee == function for c in points.calls):
            found = True
        else:
            found = disjoin([conjoin([self.entry(call.caller), *self._call_condition(call)])
                             for call in points.calls if call.callee == function])
        self._entry[function] = found
        return found

    def _call_condition(self, call) -> List[Node]:
        """The call's conditions, and that no earlier call of its caller returned."""
        theory = self.routes.theory
        nodes = [theory.formula(c) for c in call.conditions]
        for earlier in self.routes.entry_points.calls:
            if earlier is call:
                break
            if earlier.caller != call.caller or earlier.callee == call.callee:
                continue
            stops = [theory.formula(c) for c in earlier.conditions]
            if not earlier.statement.lstrip().startswith("return"):
                callee = self.routes.function_scope.get(earlier.callee)
                stops.append(self.taken(callee) if callee is not None else False)
            nodes.append(theory.negate(conjoin(stops)))
        return nodes

    def _extend(self, way: Way, nodes: Sequence[Node]) -> Optional[Way]:
        found = narrow(self.routes.theory, way, nodes)
        if found is None or not self.routes.theory.satisfiable(found.nodes, found.domain):
            return None
        return found

    def _never_holds(self, number: int) -> List[Any]:
        """Which terms around a branch exclude each other."""
        tree = self.routes.tree
        texts = []
        scope = number
        while scope >= 0:
            texts.append(tree.scopes[scope].condition)
            scope = tree.scopes[scope].parent
        terms = [t for text in reversed(texts) if text for t in condition_terms_cpp(text)]
        return _excluding_terms(self.routes.theory, tuple(terms))

    def _shadowed_by(self, number: int, own: Way, earlier: Sequence[int]) -> Dict[str, Any]:
        routes = self.routes
        theory = routes.theory
        alone = [s for s in earlier if self._extend(own, [theory.negate(routes.own[s])]) is None]
        scopes = routes.tree.scopes
        if alone:
            first = alone[0]
            if routes.own[first] == routes.own[number]:
                return {"kind": "same_condition"}
            return {"kind": "taken_by", "earlier": condition_form(scopes[first].condition),
                    "own": condition_form(scopes[number].condition)}
        return {"kind": "taken_together" if earlier else "returns_before_chain"}


def _with_leaves(tree: DispatchTree, kept: Optional[AbstractSet[int]]) -> List[bool]:
    """Which scopes have a leaf of ``kept`` (None: any) below them."""
    found = [False] * len(tree.scopes)
    for leaf in tree.leaves if kept is None else map(tree.leaves.__getitem__, kept):
        scope = leaf.scope
        while scope >= 0 and not found[scope]:
            found[scope] = True
            scope = tree.scopes[scope].parent
    return found


def _excluding_terms(theory: Theory, terms: Tuple[str, ...]) -> List[Any]:
    """The fewest terms (in order) that hold together for no call, as forms."""
    nodes = [theory.formula(t) for t in terms]
    if theory.satisfiable(nodes):
        return []
    needed = list(range(len(terms)))
    for index in range(len(terms)):
        trial = [i for i in needed if i != index]
        if not theory.satisfiable([nodes[i] for i in trial]):
            needed = trial
    return [condition_form(terms[i]) for i in needed]


class DomainIndex:
    """Items found by the classes their domains (variable number -> bits) admit: a large
    fwd file's chain has a hundred branches, each asked about all those before it."""

    def __init__(self, items: Sequence[Tuple[object, Mapping[int, int]]],
                 full: Sequence[int]) -> None:
        self.items = [item for item, _ in items]
        self.full = full
        everyone = (1 << len(self.items)) - 1
        # variable -> (the items free on it, {mask: the items with that literal})
        self.by_variable: Dict[int, Tuple[int, Dict[int, int]]] = {}
        for i, (_, domain) in enumerate(items):
            for number, mask in domain.items():
                free, masks = self.by_variable.setdefault(number, (everyone, {}))
                masks[mask] = masks.get(mask, 0) | (1 << i)
                self.by_variable[number] = (free & ~(1 << i), masks)

    def admitting(self, domain: Mapping[int, int], among: int = -1) -> List[object]:
        """The items (of the first ``among``, all when -1) whose domain meets ``domain``."""
        bits = (1 << (len(self.items) if among < 0 else among)) - 1
        for number, (free, masks) in self.by_variable.items():
            allowed = domain.get(number, self.full[number])
            fitting = free
            for mask, members in masks.items():
                if allowed & mask:
                    fitting |= members
            bits &= fitting
            if not bits:
                return []
        return [self.items[i] for i in range(bits.bit_length()) if bits >> i & 1]


def routes_of(tree: DispatchTree) -> Routes:
    """The :class:`Routes` of a parsed tree (once per tree)."""
    return tree.once("routes", lambda: Routes(tree))
