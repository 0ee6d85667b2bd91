"""Does a generated set link, and which kernels can run? Without a compiler: the
specialisations the dispatch file instantiates against those the kernel files define
(:mod:`.matching`); a branch an ``if constexpr`` discards instantiates nothing, a dead
dispatch function still does; unreachable kernels are decided by :mod:`.routes`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Set, Tuple

from .lexing import trait_template
from .matching import DispatchMatch, kernel_trait_key, match_leaves_to_kernels
from .parse import DispatchTree, parse_dispatch
from .routes import routes_of

__all__ = ["LinkReport", "compiled_together", "link_report", "link_report_from_keys", "partners",
           "unreachable_kernels"]


@dataclass
class LinkReport:
    """``missing``: (dispatch function, trait template, key) instantiated but not generated,
    in try order; ``unreferenced``: kernel files no branch instantiates, sorted;
    ``unreachable``: kernel file -> :func:`unreachable_kernels` reasons."""

    missing: List[Tuple[str, str, str]] = field(default_factory=list)
    unreferenced: List[str] = field(default_factory=list)
    unreachable: Dict[str, List[Dict[str, Any]]] = field(default_factory=dict)

    @property
    def links(self) -> bool:
        return not self.missing


def link_report(api_text: str, kernel_texts: Mapping[str, str]) -> LinkReport:
    """Link check of one generated set (``kernel_texts``: kernel file -> its text)."""
    return link_report_from_keys(api_text, {name: kernel_trait_key(text)
                                            for name, text in kernel_texts.items()})


def link_report_from_keys(api_text: str, kernel_traits: Mapping[str, str]) -> LinkReport:
    """:func:`link_report` when the kernel files are already reduced to their trait keys
    (``ApiFileResult.kernel_traits``)."""
    tree = parse_dispatch(api_text)
    match = match_leaves_to_kernels(tree, kernel_traits)
    missing: Dict[str, Tuple[str, str, str]] = {}  # (a leaf's order is its place in the list)
    for order, key in match.unmatched:
        missing.setdefault(key, (tree.leaves[order].function, trait_template(key), key))
    return LinkReport(list(missing.values()), list(match.unreached),
                      unreachable_kernels(tree, match))


def unreachable_kernels(tree: DispatchTree, match: DispatchMatch) -> Dict[str, List[Dict[str, Any]]]:
    """Kernel files launched only from dispatch functions no entry point runs, or only
    from leaves no call reaches (:mod:`.routes`) -> why, one fact per such leaf (the
    same ones once): ``{"dead": function, "calls": EntryPoints.dead[function]}`` or
    ``{"branch": function, "why": View.why_not(leaf)}``."""
    result: Dict[str, List[Dict[str, Any]]] = {}
    routes = routes_of(tree)
    entry_points, view = routes.entry_points, routes.full
    for filename, orders in match.kernel_leaves.items():
        reasons: List[Dict[str, Any]] = []
        for leaf in map(tree.leaves.__getitem__, orders):
            reason: Dict[str, Any]
            if leaf.function in entry_points.dead:
                reason = {"dead": leaf.function, "calls": entry_points.dead[leaf.function]}
            elif view.leaf_way(leaf.order) is not None:
                break
            else:
                reason = {"branch": leaf.function, "why": view.why_not(leaf.order)}
            if reason not in reasons:
                reasons.append(reason)
        else:
            result[filename] = reasons
    return result


def partners(dispatch_text: str, kernel_traits: Mapping[str, str]) -> List[List[str]]:
    """The kernel files each dispatch call launches together (one list per call,
    duplicates removed): the coupling the dispatcher imposes."""
    tree = parse_dispatch(dispatch_text)
    match = match_leaves_to_kernels(tree, dict(kernel_traits))
    groups: Dict[tuple, None] = {}
    for leaf in tree.leaves:
        files = tuple(sorted(set(match.files_of(leaf.order))))
        if len(files) > 1:
            groups.setdefault(files, None)
    return [list(group) for group in groups]


def compiled_together(tree: DispatchTree, match: DispatchMatch) -> List[Dict[str, Any]]:
    """Partner kernel files of one kind that the calls launching one main kernel name
    between them, where there are several: a condition picks one per call, yet every
    call is compiled, so the main kernel needs all of them. A call's main kernel: its
    kernel of the kind :meth:`.DispatchMatch.main_rank` ranks first (split-KV's main
    kernels, not their combine kernels; bwd's dq_dk_dv kernels, not the dot_do_o kernels
    launched before them). One entry per distinct group: ``files``, ``mains`` (how many
    main kernels name that group) and ``main`` (the first such main kernel file)."""
    rank = match.main_rank()
    kind = match.kinds.__getitem__
    named: Dict[Tuple[str, str], Set[str]] = {}
    for leaf in tree.leaves:
        files = match.files_of(leaf.order)
        if len(set(map(kind, files))) < 2:
            continue
        main = max(files, key=lambda f: rank(kind(f)))
        for partner in files:
            if kind(partner) != kind(main):
                named.setdefault((main, kind(partner)), set()).add(partner)
    mains: Dict[Tuple[str, ...], List[str]] = {}  # group -> the main kernels naming it
    for (main, _), group in sorted(named.items()):
        if len(group) > 1:
            mains.setdefault(tuple(sorted(group)), []).append(main)
    return [{"files": list(group), "mains": len(them), "main": them[0]}
            for group, them in sorted(mains.items())]
