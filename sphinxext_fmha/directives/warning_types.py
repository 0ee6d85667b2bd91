"""``.. fmha-warning-types::`` -- the table of warning subtypes, from
:class:`~sphinxext_fmha.errors.WarningType` (so the documentation cannot drift)."""

from __future__ import annotations

import re
from typing import List

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from ..errors import WarningType
from ..render.ir import Code, Inlines, Table
from ..render.nodes import blocks_to_nodes

__all__ = ["WarningTypesDirective"]


class WarningTypesDirective(SphinxDirective):
    """A two-column table: ``fmha.<subtype>`` and when it is reported."""

    def run(self) -> List[nodes.Node]:
        rows: List[List[Inlines]] = [
            [[Code(kind.subtype)],
             [Code(part) if index % 2 else part  # ``a `code` b``: text and literals
              for index, part in enumerate(re.split(r"`([^`]*)`", kind.when[0].upper()
                                                    + kind.when[1:])) if part]]
            for kind in WarningType]
        table = blocks_to_nodes([Table(["Subtype", "When"], rows, classes=["fmha-warning-types"],
                                       counts_after=None)])
        for node in table:
            self.set_source_info(node)
        return table
