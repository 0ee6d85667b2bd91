"""Does a generated kernel set link, and which kernels does the dispatcher couple?

The link check itself is the C++ API reader's (:func:`..cppapi.links.link_report_from_keys`):
every kernel specialisation the dispatch file instantiates must be one of the generated
kernels, and every generated kernel should be reachable from it. Here: the coupling
the same matching gives (the kernels one dispatch call launches together).
"""

from __future__ import annotations

from typing import Dict, List, Mapping

from ..cppapi.link_check import LinkReport, link_report_from_keys
from ..cppapi.matching import match_leaves_to_kernels
from ..cppapi.parse import parse_dispatch

__all__ = ["LinkReport", "link_report", "partners"]


def link_report(dispatch_text: str, kernel_traits: Mapping[str, str]) -> LinkReport:
    """``kernel_traits``: kernel file -> its trait keys (``ApiFileResult.kernel_traits``)."""
    return link_report_from_keys(dispatch_text, kernel_traits)


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
