"""Sections 5-8: the minimal set, what you lose, the filter commands and the counts."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ...model import (
    ApiModel,
    Decision,
    Recommendation,
)
from ...guide_data import SECTION_TITLES, GuideData
from ..ir import (
    Admonition,
    Block,
    BulletList,
    Code,
    CodeBlock,
    Inlines,
    Para,
    Section,
    Strong,
    SubHeading,
    Table,
    join,
)
from .common import token_cell, tokens_natural, verified_text


def _decisions_by_type(rec: Recommendation) -> List[Tuple[str, List[Decision]]]:
    order: List[str] = []
    grouped: Dict[str, List[Decision]] = {}
    for decision in rec.decisions:
        if decision.kernel_type not in grouped:
            order.append(decision.kernel_type)
            grouped[decision.kernel_type] = []
        grouped[decision.kernel_type].append(decision)
    return [(k, grouped[k]) for k in order]


def minimal_section(data: GuideData) -> List[Block]:
    assert data.recommendation is not None
    return _minimal_blocks(data.recommendation)


def _minimal_blocks(rec: Recommendation) -> List[Block]:
    blocks: List[Block] = []
    if rec.keep_count == rec.union_count or not rec.runs:
        blocks.append(Para(["The minimal set has ", Strong(str(rec.keep_count)), " kernels (%s)."
                            % verified_text(rec.verified)]))
    else:
        blocks.append(Para(["The keep set has ", Strong(str(rec.keep_count)), " kernels; the "
                            "filter commands select ", Strong(str(rec.union_count)),
                            " (%s; see the notes below)." % verified_text(rec.verified)]))
    grouped = _decisions_by_type(rec)
    for class_name, decisions in grouped:
        if len(grouped) > 1:
            blocks.append(SubHeading([Code(class_name)]))
        whole: Dict[str, List[str]] = {}
        rows = []
        for decision in decisions:
            if not decision.drop:
                whole.setdefault(decision.reason or decision.category, []).append(decision.segment)
                continue
            why = decision.reason
            if decision.category and decision.category != "other":
                why = "%s: %s" % (decision.category, why) if why else decision.category
            rows.append([[decision.segment], tokens_natural(decision.keep),
                         tokens_natural(decision.drop), [why]])
        if rows:
            blocks.append(Table(header=["Segment", "Keep", "Drop", "Why"], rows=rows,
                                classes=["fmha-decisions"]))
        for reason, segments in whole.items():
            blocks.append(Para(["Kept whole: ", *join([[Strong(g)] for g in segments]), "."]
                               + ([" Why: %s." % reason.rstrip(".")] if reason else [])))
    if rec.notes:
        blocks.append(Para(["Notes:"]))
        blocks.append(BulletList([[note] for note in rec.notes]))
    return blocks


def losses_section(data: GuideData) -> List[Block]:
    assert data.recommendation is not None
    return _losses_blocks(data.recommendation)


def _losses_blocks(rec: Recommendation) -> List[Block]:
    items: List[Inlines] = []
    for decision in rec.decisions:
        for token in decision.drop:
            loss = decision.losses.get(token, "")
            item: Inlines = token_cell(token) + [" (%s" % decision.segment]
            if len({d.kernel_type for d in rec.decisions}) > 1:
                item += [", ", Code(decision.kernel_type)]
            item.append(")")
            if loss:
                item.append(": " + loss)
            items.append(item)
    if not items:
        return [Para(["Nothing: the minimal set keeps every token."])]
    return [Para(["Without these kernels, calls that need them find no kernel in the "
                  "dispatcher:"]), BulletList(items)]


def commands_section(data: GuideData) -> List[Block]:
    assert data.recommendation is not None
    return _commands_blocks(data.recommendation)


def _commands_blocks(rec: Recommendation) -> List[Block]:
    blocks: List[Block] = []
    if not rec.runs:
        return [Para(["No filter run is needed: the minimal set is the full set."])]
    for index, run in enumerate(rec.runs, start=1):
        lead: Inlines = ["Run %d selects " % index if len(rec.runs) > 1 else "Selects ",
                         Strong(str(run.count)), " kernels (%s):" % verified_text(run.verified)]
        blocks.append(Para(lead))
        blocks.append(CodeBlock(run.command, "bash"))
    if len(rec.runs) > 1:
        blocks.append(Para(["Together the runs select ", Strong(str(rec.union_count)),
                            " kernels; merge their listings with:"]))
        if rec.merge_command:
            blocks.append(CodeBlock(rec.merge_command, "bash"))
        caution = rec.merge_caution or (
            "Each run writes the API dispatch file again: the file of the last run only "
            "dispatches to that run's kernels. Regenerate the dispatch file for the union "
            "(see the driver command) instead of keeping one run's file.")
        blocks.append(Admonition("caution", [Para([caution])]))
    if rec.driver_command:
        blocks.append(Para(["Driver (%s):" % verified_text(rec.driver_verified)]))
        blocks.append(CodeBlock(rec.driver_command, "bash"))
    return blocks


def _count_table(rec: Optional[Recommendation], model: Optional[ApiModel]) -> Table:
    """Full vs minimal kernels per sub-type (``rec.counts``: class -> {full, minimal},
    plus ``total``)."""
    counts = dict(rec.counts) if rec is not None and rec.counts else {}
    total = counts.pop("total", None)
    if model is not None:
        classes = [k.class_name for k in model.kernel_types]
        full: Dict[str, int] = {k.class_name: k.count for k in model.kernel_types}
    else:
        classes = list(counts)
        full = {}
    minimal: Dict[str, int] = {}
    for class_name, values in counts.items():
        if not isinstance(values, dict):
            continue
        if class_name not in classes:
            classes.append(class_name)
        if "full" in values:
            full[class_name] = int(values["full"])
        if "minimal" in values:
            minimal[class_name] = int(values["minimal"])
    with_minimal = rec is not None and bool(minimal or total)
    header = ["Sub-type", "Full"] + (["Minimal", "Reduction"] if with_minimal else [])
    rows = []
    for class_name in classes:
        row = [[Code(class_name)], [str(full.get(class_name, 0))]]
        if with_minimal:
            row += [[str(minimal.get(class_name, 0))],
                    [_reduction(full.get(class_name, 0), minimal.get(class_name, 0))]]
        rows.append(row)
    total_full = sum(full.get(c, 0) for c in classes)
    total_min = sum(minimal.get(c, 0) for c in classes)
    if isinstance(total, dict):
        total_full = int(total.get("full", total_full))
        total_min = int(total.get("minimal", total_min))
    total_row = [[Strong("Total")], [Strong(str(total_full))]]
    if with_minimal:
        total_row += [[Strong(str(total_min))], [Strong(_reduction(total_full, total_min))]]
    rows.append(total_row)
    return Table(header=header, rows=rows, classes=["fmha-counts"])


def recommendation_sections(rec: Recommendation, model: Optional[ApiModel] = None) -> List[Section]:
    """Sections 5-8 from a recommendation alone (the CLI's ``recommend``)."""
    return [
        Section("minimal", SECTION_TITLES["minimal"], _minimal_blocks(rec)),
        Section("losses", SECTION_TITLES["losses"], _losses_blocks(rec)),
        Section("commands", SECTION_TITLES["commands"], _commands_blocks(rec)),
        Section("counts", SECTION_TITLES["counts"], [_count_table(rec, model)]),
    ]


def _reduction(full: int, minimal: int) -> str:
    if not full:
        return "-"
    return "%.1f %%" % (100.0 * (full - minimal) / full)


def counts_section(data: GuideData) -> List[Block]:
    blocks: List[Block] = []
    if data.recommendation is None:
        blocks.append(Para(["Kernels per sub-type in the full listing (", Code(
            data.listing_command or "generate.py -l"), "):"]))
    else:
        blocks.append(Para(["Kernels per sub-type, full listing and recommended minimal set:"]))
    blocks.append(_count_table(data.recommendation, data.model))
    return blocks
