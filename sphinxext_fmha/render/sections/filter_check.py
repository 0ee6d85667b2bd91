"""What one ``-f`` filter selects (the ``fmha-filter-check`` directive)."""

from __future__ import annotations

from typing import Iterable, List, Optional, Tuple

from ...model import (
    ApiModel,
    FilterCheck,
)
from ..ir import (
    Admonition,
    Block,
    BulletList,
    Code,
    CodeBlock,
    Inlines,
    Para,
    Strong,
    Table,
    join,
)
from .common import FOLD_ROWS, fold, plural, token_cell


def filter_check_blocks(check: FilterCheck, expectations: Iterable[Tuple[str, bool]] = (),
                        model: Optional[ApiModel] = None) -> List[Block]:
    """The command, counts per sub-type and the per-segment breakdown of a filter."""
    blocks: List[Block] = [CodeBlock(check.command, "bash")]
    summary: Inlines = ["generate.py selects ", Strong(str(check.count)), " of %d kernels"
                        % check.baseline_count]
    if check.verified:
        summary.append("; the model predicts the same set.")
    else:
        summary.append("; the model predicts %d (the model is wrong for this filter)."
                       % check.predicted)
    blocks.append(Para(summary))
    classes = list(check.baseline_per_type) or list(check.per_type)
    if model is not None:
        order = [k.class_name for k in model.kernel_types]
        classes = [c for c in order if c in classes] + [c for c in classes if c not in order]
    rows: List[List[Inlines]] = [
        [[Code(c)], [str(check.baseline_per_type.get(c, 0))], [str(check.per_type.get(c, 0))],
         [str(check.predicted_per_type.get(c, 0))]] for c in classes]
    blocks.append(Table(header=["Sub-type", "All", "Selected", "Predicted"], rows=rows,
                        classes=["fmha-check-counts"]))
    changed = [row for row in check.breakdown if any(c.selected != c.baseline for c in row.counts)]
    unchanged = [row for row in check.breakdown if row not in changed]
    several = len({row.kernel_type for row in check.breakdown}) > 1
    if changed:
        rows = []
        for row in changed:
            for count in row.counts:
                if not count.baseline and not count.selected:
                    continue
                cells: List[Inlines] = [[row.segment], token_cell(count.token), [count.meaning],
                         [str(count.baseline)], [str(count.selected)]]
                if several:
                    cells.insert(0, [Code(row.kernel_type)])
                rows.append(cells)
        header = ["Segment", "Token", "Meaning", "All", "Selected"]
        if several:
            header.insert(0, "Sub-type")
        table = Table(header=header, rows=rows, classes=["fmha-breakdown"])
        blocks.append(Para(["Segments the filter changes:"]))
        blocks.extend(fold(["Breakdown: %s" % plural(len(rows), "row")], [table], len(rows),
                            FOLD_ROWS * 2))
    if unchanged:
        names = sorted({(row.kernel_type, row.segment) for row in unchanged},
                       key=lambda p: (classes.index(p[0]) if p[0] in classes else 99, p[1]))
        blocks.append(Para(["Unchanged segments: "] + join(
            [[row_seg if not several else "%s %s" % (row_type, row_seg)]
             for row_type, row_seg in names]) + ["."]))
    if check.side_effects:
        blocks.append(Admonition("note", [Para(["Side effects (tokens dropped that the filter "
                                                "does not name):"]),
                                          BulletList([[s] for s in check.side_effects])]))
    if check.notes:
        blocks.append(BulletList([[n] for n in check.notes]))
    expectations = list(expectations)
    if expectations:
        blocks.append(BulletList([[text, ": ", Strong("met" if ok else "NOT met")]
                                  for text, ok in expectations]))
    return blocks
