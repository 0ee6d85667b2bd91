"""A set for a workload: what it needs, what it costs to build, and the example
workloads a guide works out (section ``examples``)."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from ...guide_data import ExampleSet, GuideData
from ...model import BuildCost, FilterRun, Need, Recommendation, Workload
from ..ir import (
    Block,
    Code,
    CodeBlock,
    Dropdown,
    Inlines,
    Para,
    PlaygroundLink,
    Strong,
    SubHeading,
    Table,
    join,
    text_of,
)
from .cells import percent, plural, token_cell, verified_text
from .gloss import gloss_inlines

#: The title of section 5 for a workload's set (``:need:``).
WORKLOAD_TITLE = "Kernel set for the workload"
#: The Why of a segment the workload names.
NEEDED_REASON = "the workload's values (its calls use exactly these)"


def needs_inlines(needs: Sequence[Need]) -> Inlines:
    """``dtype _bf16, _fp16; hdim _d64, _d128``."""
    return join([[need.segment + " ", *join([token_cell(t) for t in need.tokens])]
                 for need in needs], "; ")


def workload_lead(rec: Recommendation) -> List[Block]:
    """What the set is for, before its keep/drop tables."""
    if not rec.needs or not rec.workload_count:
        return []  # (no kernel has them: unmet_blocks says so)
    total = rec.counts.get("total", {}).get("full", 0)
    return [Para(["For the workload ", *needs_inlines(rec.needs), " (its calls use exactly "
                  "these values; every segment not named follows the policy): of the %s "
                  "the API lists, %d %s them (with the partners their dispatch "
                  "launches); the set is chosen among those." % (
                      plural(total, "kernel"), rec.workload_count,
                      "carries" if rec.workload_count == 1 else "carry")])]


def _unmet_inlines(rec: Recommendation) -> Inlines:
    items = ["; ".join("%s %s" % (segment, token or "(no token)")
                       for segment, token in combo.items()) for combo in rec.needs_unmet]
    shown = ", ".join(items[:8]) + ("" if len(items) <= 8 else " and %d more" % (len(items) - 8))
    if not rec.workload_count:
        return ["No kernel of ", Code(rec.api), " has the workload's values together (",
                Strong(shown), "): calls with them find no kernel in any set, so there is "
                "no set to generate."]
    return ["No kernel of ", Code(rec.api), " has %s " % (
        "these combinations of the workload's values:" if len(items) > 1 else
        "this combination of the workload's values:"), Strong(shown),
        "; calls with %s find no kernel in any set (the set keeps what the other "
        "combinations need)." % ("them" if len(items) > 1 else "it")]


def unmet_blocks(rec: Recommendation) -> List[Block]:
    """The combinations of needed values no kernel has, said plainly."""
    return [Para(_unmet_inlines(rec))] if rec.needs_unmet else []


def unmet_text(rec: Recommendation) -> str:
    """:func:`unmet_blocks` as one line (a build warning, the CLI's stderr)."""
    return text_of(_unmet_inlines(rec)) if rec.needs_unmet else ""


def _bytes(count: int) -> str:
    """Bytes as a reader compares them: ``2.1 MB`` (decimal units), exact below 1 kB."""
    for unit, size in (("GB", 10 ** 9), ("MB", 10 ** 6), ("kB", 10 ** 3)):
        if count >= size:
            return "%.1f %s" % (count / size, unit)
    return "%d bytes" % count


def build_table(build: BuildCost) -> Table:
    return Table(header=["Build", "Kernel files (translation units)", "Generated source"],
                 rows=[[["The set"], [str(build.kernel_files)], [_bytes(build.source_bytes)]],
                       [["The full API"], [str(build.full_kernel_files)],
                        [_bytes(build.full_source_bytes)]],
                       [["Share"], [percent(build.kernel_files, build.full_kernel_files)],
                        [percent(build.source_bytes, build.full_source_bytes)]]],
                 classes=["fmha-build"], counts_after=None)


def build_blocks(rec: Recommendation) -> List[Block]:
    """The build cost, measured from what write mode wrote."""
    if rec.build is None:
        return []
    return [Para(["Build cost, measured from what write mode (-o) wrote (the API dispatch "
                  "file is one translation unit more):"]), build_table(rec.build)]


def run_gloss(api: str, run_filter: str, readings: Sequence[Dict]) -> List[Block]:
    """What a run's pattern keeps and excludes, and (where the page has one) a link to
    the filter playground prefilled with it."""
    if not readings:
        return []
    return [Para(["What it keeps: ", *gloss_inlines(readings, capital=False),
                  PlaygroundLink(api, run_filter, "Try it in the filter playground.", " ")])]


def runs_blocks(api: str, runs: Sequence[FilterRun], said_verified: bool) -> List[Block]:
    """Each run: how many kernels it selects (verified or not, unless ``said_verified``
    already), its command and what it keeps."""
    blocks: List[Block] = []
    for number, run in enumerate(runs, start=1):
        lead: Inlines = ["Run %d selects " % number if len(runs) > 1 else "Selects ",
                         Strong(str(run.count)), " kernels"]
        lead.append(":" if said_verified else " (%s):" % verified_text(run.verified))
        blocks += [Para(lead), CodeBlock(run.command, "bash"), *run_gloss(api, run.filter, run.reading)]
    return blocks


def _example_title(workload: Workload) -> Inlines:
    # a sub-heading stays on one line (the browser check holds it at 820 px): the values
    # themselves follow in the `:need:` line under it
    segments = " and ".join(n.segment for n in workload.needs)
    if workload.kind == "receipt":
        return ["The set within receipt ", Code("-r %s" % workload.receipt), "'s values"]
    if workload.kind == "common":
        return ["The most common pair of %s" % segments]
    return ["The two most common values of %s" % segments]


def _example_blocks(api: str, example: ExampleSet) -> List[Block]:
    workload, rec = example.workload, example.recommendation
    blocks: List[Block] = [SubHeading(_example_title(workload))]
    if workload.kind == "receipt":
        if workload.label:
            # the label is generate.py's help text or the codegen's comment on the
            # receipt's branch (the receipts table's Label), whichever named it
            blocks.append(Para(["The label of ", Code("-r %s" % workload.receipt),
                                ": %s" % workload.label]))
        blocks.append(Para(["The values below are those its rule keeps; the policy decides "
                            "every other segment, so the set can be smaller than what ",
                            Code("-r %s" % workload.receipt), " generates."]))
    if workload.kind == "common":
        # counted in one sub-type's listing (the one with the most kernels): said, since
        # the set's own count below has every sub-type
        counted: Inlines = ["%d " % workload.kernels, Code(workload.kernel_type),
                            " kernels (the sub-type with the most kernels) carry the pair below"]
        if workload.ties > 1:
            counted.append("; %d pairs have as many, the first in the segments' order is "
                           "taken" % workload.ties)
        blocks.append(Para(counted + ["."]))
    need = "; ".join("%s=%s" % (n.segment, ",".join(n.given)) for n in workload.needs)
    blocks.append(Para([Code(":need: " + need)]))
    if rec is None:
        blocks.append(Para(["Not available: %s" % example.problem]))
        return blocks
    blocks += unmet_blocks(rec)
    if not rec.runs:
        return blocks
    verified = rec.verified and (rec.write_verified or not rec.runs)
    blocks.append(Para([Strong(str(rec.union_count)), " of %d kernels (%s%s)%s:" % (
        rec.counts.get("total", {}).get("full", 0),
        verified_text(verified),
        ", it links" if rec.write_verified else "", _build_clause(rec.build))]))
    if len(rec.runs) == 1:
        blocks.append(CodeBlock(rec.runs[0].command, "bash"))
        details = run_gloss(api, rec.runs[0].filter, rec.runs[0].reading)
    else:
        # one command writes the set with one dispatch file; its runs, one by one, are
        # what generate.py itself takes
        if rec.driver_command:
            blocks.append(Para(["One run for their union (%d generate.py runs), with one "
                                "dispatch file:" % len(rec.runs)]))
            blocks.append(CodeBlock(rec.driver_command, "bash"))
        details = runs_blocks(api, rec.runs, said_verified=True)
    if details:
        blocks.append(Dropdown(["What the command keeps" if len(rec.runs) == 1 else
                                "The %d generate.py runs and what each keeps" % len(rec.runs)],
                               details))
    return blocks


def _build_clause(build: Optional[BuildCost]) -> str:
    if build is None:
        return ""
    return "; %s of generated source (the full API: %s)" % (
        _bytes(build.source_bytes), _bytes(build.full_source_bytes))


def examples_section(data: GuideData) -> List[Block]:
    if not data.examples:
        return [Para(["The tree offers no example workload for this API (it needs two "
                      "problem segments with several values, or a receipt whose every "
                      "condition tests one segment)."])]
    blocks: List[Block] = [Para([
        "Workloads chosen from this tree's own listing and receipts, each as ",
        Code(":need:"), " (", Code("--need"), " on the command line; the policy decides "
        "every segment not named), its commands run with generate.py:"])]
    for example in data.examples:
        blocks += _example_blocks(data.api, example)
    return blocks
