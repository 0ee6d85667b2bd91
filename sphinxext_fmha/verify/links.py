"""Does a generated kernel set link? Read from the API dispatch file, no compiler.

Every kernel specialisation the dispatch file instantiates (each trait a call passes,
e.g. a split-KV kernel and the combine kernel its ``has_lse`` branch picks) must be
one of the generated kernels, and every generated kernel should be reachable from
it. Matching is by template arguments: the traits of each dispatch call against the
explicit specialisations in the generated ``.cpp`` files.

The narrow interface (:func:`link_report` over the dispatch text and
``{kernel file: trait keys}``) is meant to be swapped for the C++ API reader's own
report once it offers one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Mapping

from ..cppapi.dispatch_file import match_leaves_to_kernels, parse_dispatch

__all__ = ["LinkReport", "link_report", "partners"]


@dataclass
class LinkReport:
    """``missing``: instantiated trait keys no generated kernel specialises (the
    build fails to link); ``unreferenced``: generated kernel files no dispatch call
    reaches (compiled for nothing)."""

    missing: List[str] = field(default_factory=list)
    unreferenced: List[str] = field(default_factory=list)
    calls: int = 0

    @property
    def links(self) -> bool:
        return not self.missing


def link_report(dispatch_text: str, kernel_traits: Mapping[str, str]) -> LinkReport:
    tree = parse_dispatch(dispatch_text)
    match = match_leaves_to_kernels(tree, dict(kernel_traits))
    return LinkReport(missing=sorted({key for _, key in match.unmatched}),
                      unreferenced=list(match.unreached), calls=len(tree.leaves))


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
