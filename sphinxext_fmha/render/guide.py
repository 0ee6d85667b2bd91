"""The kernel selection guide, written once as :mod:`.ir` blocks.

Input: a :class:`~sphinxext_fmha.guide_data.GuideData` (model, measured token
counts, recommendation) or a :class:`~sphinxext_fmha.model.FilterCheck`.  Output:
:class:`~sphinxext_fmha.render.ir.Section` lists that :mod:`.nodes` and
:mod:`.markdown` render.  Each section is built by its own module in
:mod:`.sections`; this module only puts them in order.  Deterministic: no dates
except the header's, no absolute paths, every list in a fixed order.
"""

from __future__ import annotations

from typing import List, Sequence

from ..guide_data import SECTION_TITLES, GuideData
from .ir import Section
from .sections.api_list import api_list_table
from .sections.bump import comparison_blocks
from .sections.common import FOLD_ROWS
from .sections.dispatch import dispatch_section
from .sections.fields import fields_section
from .sections.filename import diagram_of, filename_blocks, filename_section
from .sections.filter import filter_section
from .sections.filter_check import commands_miss_warnings, filter_check_blocks, miss_text, miss_warnings
from .sections.gaps import gaps_section
from .sections.overview import header_inlines, types_section
from .sections.recommendation import (
    commands_section,
    counts_section,
    losses_section,
    minimal_section,
    recommendation_sections,
)
from .sections.rules import rules_section
from .sections.tiles import tiles_section
from .sections.workload import WORKLOAD_TITLE, examples_section

__all__ = [
    "FOLD_ROWS",
    "api_list_table",
    "comparison_blocks",
    "commands_miss_warnings",
    "diagram_of",
    "filename_blocks",
    "filter_check_blocks",
    "guide_sections",
    "header_inlines",
    "miss_text",
    "miss_warnings",
    "recommendation_sections",
]


def guide_sections(data: GuideData, names: Sequence[str]) -> List[Section]:
    builders = {
        "types": types_section,
        "filename": filename_section,
        "filter": filter_section,
        "fields": fields_section,
        "minimal": minimal_section,
        "losses": losses_section,
        "commands": commands_section,
        "counts": counts_section,
        "tiles": tiles_section,
        "rules": rules_section,
        "dispatch": dispatch_section,
        "gaps": gaps_section,
        "examples": examples_section,
    }
    sections = []
    for name in names:
        if name in ("minimal", "losses", "commands") and data.recommendation is None:
            continue
        sections.append(Section(name=name, title=_title(name, data),
                                blocks=builders[name](data)))
    return sections


def _title(name: str, data: GuideData) -> str:
    """The section's title; the tiles section names architectures only where the
    listing's names carry one (older trees have a single, unnamed target)."""
    if name == "tiles" and not any(
        row.keys.get("arch") for table in data.tile_tables for row in table.rows
    ):
        return "Tiles"
    if name == "minimal" and data.recommendation is not None and data.recommendation.needs:
        return WORKLOAD_TITLE
    return SECTION_TITLES[name]
