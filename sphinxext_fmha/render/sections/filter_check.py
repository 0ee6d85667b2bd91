"""What one ``-f`` filter selects (the ``fmha-filter-check`` directive)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from ...model import ApiModel, FilterCheck, FilterMiss, FilterRun, SegmentBreakdown, token_list
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
    inlines,
    join,
)
from .cells import FOLD_ROWS, fold, plural, token_cell, where_commands_run
from .filter_write import write_blocks


def filter_check_blocks(check: FilterCheck, expectations: Iterable[Tuple[str, bool]] = (),
                        model: Optional[ApiModel] = None) -> List[Block]:
    """The command, counts per sub-type and the per-segment breakdown of a filter."""
    blocks: List[Block] = ([Para(where_commands_run(model, several=False))]
                           if model is not None else [])
    blocks.append(CodeBlock(check.command, "bash"))
    summary: Inlines = ["generate.py selects ", Strong(str(check.count)), " of %d kernels"
                        % check.baseline_count]
    summary.append("; the model predicts the same set." if check.verified else
                   "; the model predicts %d (the model is wrong for this filter)." % check.predicted)
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
    blocks.extend(write_blocks(check))
    if check.untested_matches:
        blocks.append(Para(["%s match the pattern by name, yet " % plural(
            check.untested_matches, "kernel"), Code("-f"), " never tests their names: each is "
            "generated with another kernel and kept or dropped with it (see the filter "
            "mechanism)."]))
    by_type = sorted({row.kernel_type for row in check.breakdown},
                     key=lambda name: (classes.index(name) if name in classes else len(classes), name))
    blocks.extend(_breakdown_blocks(check, by_type))
    effects = side_effect_texts(check)
    if effects:
        blocks.append(Admonition("note", [Para(["Side effects (tokens dropped that the filter "
                                                "does not name):"]),
                                          BulletList([[s] for s in effects])]))
    if check.misses:
        blocks.append(Admonition("warning", [BulletList([[miss_text(m)] for m in check.misses])],
                                 classes=["fmha-miss"]))
    notes = check_notes(check)
    if notes:
        blocks.append(BulletList([[n] for n in notes]))
    blocks.extend(_expectation_blocks(list(expectations)))
    return blocks


_SAY: Dict[str, Callable[[Dict[str, Any]], str]] = {
    "mispredicted": lambda v: "the model predicts %d kernels but generate.py selected %d (%d "
                              "only predicted, %d only selected): the model is wrong for this "
                              "filter" % (v["predicted"], v["selected"], v["only_predicted"],
                                          v["only_selected"]),
    "unparsed": lambda v: "%d selected file names do not parse with the model's grammar"
                          % v["count"],
    "absent": lambda v: "%r occurs in no kernel name of this tree%s, so a pattern that requires "
                        "it cannot match" % (v["piece"], " (it is in the file names' arch "
                                             "suffix, which -f patterns are not matched against)"
                                             if v["in_suffix"] else ""),
    "selects_none": lambda v: "the filter selects no kernel",
    "listing_differs": lambda v: "generate.py -o wrote %d kernels but -l listed %d"
                                 % (v["written"], v["listed"]),
    "unreached": lambda v: "%d generated kernels are reached by no dispatch branch" % v["count"],
    "write_failed": lambda v: "write mode failed: %s" % v["error"],
}


def check_notes(check: FilterCheck) -> List[str]:
    """What did not go as the model predicts, in words."""
    return [_SAY[note.kind](note.values) for note in check.note_facts]


def side_effect_texts(check: FilterCheck) -> List[str]:
    """The segments whose tokens the filter drops without naming them, in words."""
    return ["%s: %s dropped (not named by the filter)" % (row.segment, token_list(row.dropped))
            for row in check.breakdown if row.side_effect]


def fill_check_words(check: FilterCheck) -> FilterCheck:
    """``notes`` and ``side_effects`` in words, for the CLI and the build log (the cache
    keeps the facts they are made from)."""
    check.notes = check_notes(check)
    check.side_effects = side_effect_texts(check)
    return check


def miss_text(miss: FilterMiss) -> str:
    """Why a filter selects nothing of a sub-type it addresses, naming the pieces of
    its pattern that no name of the sub-type has."""
    text = "none of the %d %s kernels is selected (their pattern: %r)" % (
        miss.baseline, miss.kernel_type, miss.pattern)
    if miss.absent:
        return text + ": %s occur%s in no %s name of this tree" % (
            ", ".join(repr(p) for p in miss.absent), "s" if len(miss.absent) == 1 else "",
            miss.kernel_type)
    return text + ": no %s name matches it" % miss.kernel_type


def miss_warnings(api: str, filter: str, misses: Iterable[FilterMiss]) -> List[str]:
    """The warning lines of a filter's misses (the build log and ``check`` on stderr)."""
    return ["%s -f %r: %s" % (api, filter, miss_text(miss)) for miss in misses]


def commands_miss_warnings(api: str, runs: Sequence[FilterRun]) -> List[str]:
    """The warning lines of a guide's filter commands: a sub-type none of them selects a
    kernel of (the runs of a minimal set select sub-types apart, their union counts)."""
    if len(runs) == 1:
        return miss_warnings(api, runs[0].filter, runs[0].misses)
    return ["%s: the %d filter commands select none of the %d %s kernels" % (
                api, len(runs), miss.baseline, miss.kernel_type)
            for miss in (runs[0].misses if runs else [])
            if all(any(m.kernel_type == miss.kernel_type for m in run.misses) for run in runs)]


def _changed(row: SegmentBreakdown) -> bool:
    return any(c.selected != c.baseline for c in row.counts)


def _breakdown_blocks(check: FilterCheck, by_type: List[str]) -> List[Block]:
    """One table per sub-type of the segments the filter changes (the sub-type is the
    table's heading, not a column repeated in every row), then the unchanged ones."""
    blocks: List[Block] = []
    several = len(by_type) > 1
    if any(_changed(row) for row in check.breakdown):
        blocks.append(Para(["Segments the filter changes:"]))
    for kernel_type in by_type:
        rows: List[List[Inlines]] = [
            [[row.segment], token_cell(count.token), [str(count.baseline)],
             [str(count.selected)], [count.meaning]]
            for row in check.breakdown if row.kernel_type == kernel_type and _changed(row)
            for count in row.counts if count.baseline or count.selected]
        if not rows:
            continue
        table = Table(header=["Segment", "Token", "All", "Selected", "Meaning"], rows=rows,
                      classes=["fmha-breakdown"], counts_after=None)
        title: Inlines = (["Breakdown of ", Code(kernel_type), ": %s" % plural(len(rows), "row")]
                          if several else ["Breakdown: %s" % plural(len(rows), "row")])
        folded = fold(title, [table], len(rows), FOLD_ROWS * 2)
        if several and folded[0] is table:  # not folded: a heading names the sub-type
            blocks.append(SubHeading([Code(kernel_type)]))
        blocks.extend(folded)
    items: List[Inlines] = []
    for kernel_type in by_type:
        segments = sorted({row.segment for row in check.breakdown
                           if row.kernel_type == kernel_type and not _changed(row)})
        if segments:
            lead: Inlines = [Code(kernel_type), ": "] if several else []
            items.append(lead + join([[s] for s in segments]))
    if several and items:
        blocks += [Para(["Unchanged segments:"]), BulletList(items)]
    elif items:
        blocks.append(Para(["Unchanged segments: "] + items[0] + ["."]))
    return blocks


def _expectation_blocks(expectations: List[Tuple[str, bool]]) -> List[Block]:
    """Failed expectations as a warning admonition (hard to miss), met ones as a list."""
    blocks: List[Block] = []
    failed = [text for text, ok in expectations if not ok]
    if failed:
        blocks.append(Admonition("warning", [
            Para([Strong("Expectation not met:" if len(failed) == 1 else "Expectations not met:")]),
            BulletList([inlines("Expected ", text, ".") for text in failed])],
            classes=["fmha-expectation"]))
    met = [inlines(text, ": ", Strong("met")) for text, ok in expectations if ok]
    if met:
        blocks.append(BulletList(met))
    return blocks
