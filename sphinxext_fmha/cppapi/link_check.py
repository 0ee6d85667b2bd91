"""Does a generated set link, and which generated kernels can run?  Without a compiler.

:func:`link_report` compares the kernel specialisations the API dispatch file
instantiates with the ones the generated kernel files define (the same normalised
template-argument text on both sides, see :mod:`.matching`):

* ``missing``: specialisations the dispatch file instantiates that no generated file
  defines.  The build would fail to link.  Branches an ``if constexpr`` discards do
  not instantiate anything and are not counted; a dispatch function that no entry
  point can run (a disabled ``fmha_fwd_v3``) still instantiates its kernels.
* ``unreferenced``: generated kernels no dispatch branch instantiates (e.g. split-KV
  combine kernels no ``fmha_fwd_splitkv_combine_traits_<...>`` of any entry names).
* ``unreachable``: generated kernels that are instantiated, but only in dispatch
  functions no entry point can run, only in branches whose conditions hold for no
  call, or only in branches the earlier branches of their if-else chain always take
  (:mod:`.routes`), with the reason.

Pure: text in, data out; no process, no file system.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Tuple

from .entry_points import EntryPoints, read_entry_points
from .lexing import trait_template
from .matching import DispatchMatch, kernel_trait_key, match_leaves_to_kernels
from .parse import DispatchTree, parse_dispatch
from .routes import Routes, routes_of

__all__ = ["LinkReport", "link_report", "link_report_from_keys", "partners", "unreachable_kernels"]


@dataclass
class LinkReport:
    """What :func:`link_report` found; see the module docstring.

    ``missing``: (dispatch function, trait template, specialisation key), in try order;
    ``unreferenced``: kernel files, sorted; ``unreachable``: kernel file -> reasons
    (see :func:`unreachable_kernels`).
    """

    missing: List[Tuple[str, str, str]] = field(default_factory=list)
    unreferenced: List[str] = field(default_factory=list)
    unreachable: Dict[str, List[Dict[str, Any]]] = field(default_factory=dict)

    @property
    def links(self) -> bool:
        """Every instantiated specialisation is generated."""
        return not self.missing


def link_report(api_text: str, kernel_texts: Mapping[str, str]) -> LinkReport:
    """Link check of one generated set.

    ``api_text``: the API dispatch ``.cpp``; ``kernel_texts``: kernel file name -> its
    text (every ``.cpp`` that ``generate.py -o`` wrote besides the API file).
    """
    return link_report_from_keys(api_text, {name: kernel_trait_key(text)
                                            for name, text in kernel_texts.items()})


def link_report_from_keys(api_text: str, kernel_traits: Mapping[str, str]) -> LinkReport:
    """:func:`link_report` when the kernel files are already reduced to their trait keys
    (``ApiFileResult.kernel_traits``)."""
    tree = parse_dispatch(api_text)
    match = match_leaves_to_kernels(tree, kernel_traits)
    entry_points = read_entry_points(tree)
    report = LinkReport()
    by_order = {leaf.order: leaf for leaf in tree.leaves}
    seen = set()
    for order, key in match.unmatched:
        if key in seen:
            continue
        seen.add(key)
        report.missing.append((by_order[order].function, trait_template(key), key))
    report.unreferenced = list(match.unreached)
    report.unreachable = unreachable_kernels(tree, match, entry_points)
    return report


def unreachable_kernels(tree: DispatchTree, match: DispatchMatch,
                        entry_points: EntryPoints) -> Dict[str, List[Dict[str, Any]]]:
    """Kernel files launched only from dispatch functions no entry point runs, or only
    from leaves no call reaches (:mod:`.routes`) -> why, one fact per such leaf (the
    same ones once): ``{"dead": function, "calls": EntryPoints.dead[function]}`` or
    ``{"branch": function, "why": View.why_not(leaf)}``."""
    result: Dict[str, List[Dict[str, Any]]] = {}
    routes = routes_of(tree)
    view = routes.full if routes.entry_points is entry_points else \
        Routes(tree, entry_points).full
    by_order = {leaf.order: leaf for leaf in tree.leaves}
    for filename, orders in match.kernel_leaves.items():
        leaves = [by_order[order] for order in orders if order in by_order]
        if not leaves:
            continue
        reasons: List[Dict[str, Any]] = []
        for leaf in leaves:
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
