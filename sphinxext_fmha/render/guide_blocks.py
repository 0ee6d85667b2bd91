"""The kernel selection guide as :mod:`.ir` sections, in order (each built by its
module in :mod:`.sections`), and the table of APIs; deterministic: no date but the
header's, no absolute path."""

from __future__ import annotations

import importlib
from typing import Callable, List, Optional, Sequence, Tuple, cast

from ..guide_data import SECTION_BY_NAME, SECTION_TITLES, GuideData, SectionNeed
from .ir import Block, Code, DocLink, Inlines, Section, Table
from .sections.filename import filename_blocks
from .sections.filter_check import (
    commands_miss_warnings,
    fill_check_words,
    filter_check_blocks,
    miss_text,
    miss_warnings,
)
from .sections.filter_diff import comparison_blocks
from .sections.overview import header_inlines
from .sections.recommendation import recommendation_sections
from .sections.workload import WORKLOAD_TITLE

__all__ = ["api_list_table", "comparison_blocks", "commands_miss_warnings", "filename_blocks",
           "fill_check_words", "filter_check_blocks", "guide_sections", "header_inlines", "miss_text",
           "miss_warnings", "recommendation_sections"]


def guide_sections(data: GuideData, names: Sequence[str]) -> List[Section]:
    """The sections ``names``; one that shows the set is left out without it."""
    sections = []
    for name in names:
        if SectionNeed.SET in SECTION_BY_NAME[name].needs and data.recommendation is None:
            continue
        sections.append(Section(name=name, title=_title(name, data),
                                blocks=_builder(name)(data)))
    return sections


def _builder(name: str) -> Callable[[GuideData], List[Block]]:
    module, _, function = SECTION_BY_NAME[name].builder.partition(":")
    return cast(Callable[[GuideData], List[Block]],
                getattr(importlib.import_module(".sections." + module, __package__), function))


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


def api_list_table(rows: Sequence[Tuple[str, str, Optional[int], str]],
                   link: Optional[str] = None) -> Table:
    """``rows``: (api, module, kernels or None, note); ``link``: a docname template
    with ``{api}``."""
    body: List[List[Inlines]] = []
    notes = any(note for _, _, _, note in rows)
    for api, module, count, note in rows:
        name: Inlines = [DocLink(target=link.format(api=api), content=[Code(api)])] if link else [Code(api)]
        row: List[Inlines] = [name, [Code(module)], [str(count)] if count is not None else ["-"]]
        if notes:
            row.append([note] if note else [])
        body.append(row)
    # A Notes column only when some API has a note (an empty column tells nothing).
    return Table(header=["API", "Module", "Kernels"] + (["Notes"] if notes else []), rows=body,
                 classes=["fmha-apis"])
