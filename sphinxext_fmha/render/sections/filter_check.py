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
    SubHeading,
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
    rows = [[[Code(c)], [str(check.baseline_per_type.get(c, 0))], [str(check.per_type.get(c, 0))],
             [str(check.predicted_per_type.get(c, 0))]] for c in classes]
    blocks.append(Table(header=["Sub-type", "All", "Selected", "Predicted"], rows=rows,
                        classes=["fmha-check-counts"]))
    changed = [row for row in check.breakdown if any(c.selected != c.baseline for c in row.counts)]
    unchanged = [row for row in check.breakdown if row not in changed]
    by_type = sorted({row.kernel_type for row in check.breakdown},
                     key=lambda name: (classes.index(name) if name in classes else len(classes), name))
    several = len(by_type) > 1
    if changed:
        blocks.append(Para(["Segments the filter changes:"]))
    for kernel_type in by_type:
        rows = []
        for row in changed:
            if row.kernel_type != kernel_type:
                continue
            for count in row.counts:
                if not count.baseline and not count.selected:
                    continue
                rows.append([[row.segment], token_cell(count.token), [str(count.baseline)],
                             [str(count.selected)], [count.meaning]])
        if not rows:
            continue
        table = Table(header=["Segment", "Token", "All", "Selected", "Meaning"], rows=rows,
                      classes=["fmha-breakdown"], counts_after=None)
        title: Inlines = (["Breakdown of ", Code(kernel_type), ": %s" % plural(len(rows), "row")]
                          if several else ["Breakdown: %s" % plural(len(rows), "row")])
        if several and len(rows) <= FOLD_ROWS:
            blocks.append(SubHeading([Code(kernel_type)]))
        blocks.extend(fold(title, [table], len(rows), FOLD_ROWS))
    if unchanged:
        items: List[Inlines] = []
        for kernel_type in by_type:
            segments = sorted({row.segment for row in unchanged if row.kernel_type == kernel_type})
            if segments:
                items.append(([Code(kernel_type), ": "] if several else [])
                             + join([[s] for s in segments]))
        if several:
            blocks.append(Para(["Unchanged segments:"]))
            blocks.append(BulletList(items))
        else:
            blocks.append(Para(["Unchanged segments: "] + items[0] + ["."]))
    if check.side_effects:
        blocks.append(Admonition("note", [Para(["Side effects (tokens dropped that the filter "
                                                "does not name):"]),
                                          BulletList([[s] for s in check.side_effects])]))
    if check.notes:
        blocks.append(BulletList([[n] for n in check.notes]))
    expectations = list(expectations)
    met = [text for text, ok in expectations if ok]
    failed = [text for text, ok in expectations if not ok]
    if failed:
        blocks.append(Admonition("warning", [
            Para([Strong("Expectation not met:" if len(failed) == 1 else "Expectations not met:")]),
            BulletList([["Expected ", text, "."] for text in failed])],
            classes=["fmha-expectation"]))
    if met:
        blocks.append(BulletList([[text, ": ", Strong("met")] for text in met]))
    return blocks
