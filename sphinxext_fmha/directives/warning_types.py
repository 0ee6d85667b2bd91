"""``.. fmha-warning-types::`` -- the table of warning subtypes, from
:class:`~sphinxext_fmha.errors.WarningType` (so the documentation cannot drift)."""

from __future__ import annotations

import re
from typing import List

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from ..errors import WarningType

__all__ = ["WarningTypesDirective", "warning_types_table"]


def _inline(text: str) -> List[nodes.Node]:
    """``a `code` b`` -> text and literal nodes."""
    out: List[nodes.Node] = []
    for index, part in enumerate(re.split(r"`([^`]*)`", text)):
        if part:
            out.append(nodes.literal(part, part) if index % 2 else nodes.Text(part))
    return out


def warning_types_table() -> nodes.table:
    """A two-column table: ``fmha.<subtype>`` and when it is reported."""
    table = nodes.table(classes=["fmha-warning-types"])
    group = nodes.tgroup(cols=2)
    table += group
    group.extend([nodes.colspec(colwidth=1), nodes.colspec(colwidth=4)])
    head = nodes.thead()
    group += head
    body = nodes.tbody()
    group += body
    rows = [(nodes.Text("Subtype"), nodes.Text("When"))]
    head += nodes.row("", *[nodes.entry("", nodes.paragraph("", "", cell)) for cell in rows[0]])
    for kind in WarningType:
        when = nodes.paragraph("", "", *_inline(kind.when[0].upper() + kind.when[1:]))
        name = nodes.paragraph("", "", nodes.literal(kind.subtype, kind.subtype))
        body += nodes.row("", nodes.entry("", name), nodes.entry("", when))
    return table


class WarningTypesDirective(SphinxDirective):
    """Render :func:`warning_types_table`."""


    def run(self) -> List[nodes.Node]:
        table = warning_types_table()
        self.set_source_info(table)
        return [table]
