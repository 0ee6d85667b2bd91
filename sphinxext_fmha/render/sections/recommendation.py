"""Sections 5-8: the minimal set, what you lose, the filter commands and the counts."""

from __future__ import annotations

from typing import Dict, List, Optional

from ...guide_data import SECTION_TITLES, GuideData
from ...model import ApiModel, Decision, Recommendation, natural
from ..ir import (
    Admonition,
    Block,
    BulletList,
    Code,
    CodeBlock,
    Dropdown,
    Inlines,
    Para,
    Section,
    Strong,
    SubHeading,
    Table,
    join,
)
from .cells import FOLD_ITEMS, fold, percent, token_cell, tokens_natural, verified_text, where_commands_run
from .dispatch import never_run_texts
from .loss_words import loss_lead, loss_sentences, served_by
from .reasons import (
    MERGE_CAUTION,
    coupling_sentence,
    decision_reason,
    follower_usage,
    kept_with_text,
    set_notes,
)
from .workload import NEEDED_REASON, WORKLOAD_TITLE, build_blocks, runs_blocks, unmet_blocks, workload_lead

#: What sections 6 and 7 say of a workload whose values no kernel has together.
NO_SET = "No set to generate: no kernel has the workload's values together."


def _never_run_blocks(rec: Recommendation) -> List[Block]:
    """What the set does with the kernels the full API never runs (dropping them loses
    no call): left out, or selected all the same; of those, the ones the set's own
    dispatch runs (calls of dropped kernels reach them) are said apart from the others
    (``-f`` cannot leave out a kernel named as a kept one but for the arch suffix)."""
    left, selected = rec.never_run_left_out, rec.never_run_selected
    if not selected:
        return [Para(["The %d kernels the full API never runs (listed under Dispatch) are "
                      "left out: dropping them loses no call." % left])] if left else []
    reached, needed = rec.never_run_reached, rec.never_run_needed
    idle = selected - reached
    # (the name reason only for those the set does not run either: the others it needs)
    why = (": their names equal kept kernels' but for the arch suffix, which -f patterns "
           "are not matched against" if rec.never_run_namesakes == idle else "")
    text = "Of the %d kernels the full API never runs (listed under Dispatch), %d are left " \
        "out (dropping them loses no call); the commands still select %d" % (
            left + selected, left, selected)
    if not reached:
        return [Para([text + why + "."])]
    # the set's own dispatch runs them: the kernels that took their calls are gone
    text += ". The set's own dispatch file runs %s: calls that dropped kernels ran in the " \
        "full build reach them there" % ("all of them" if not idle else "%d of them" % reached)
    if needed:
        text += "; without any one of %s, some of those calls find no kernel" % (
            "them" if needed == reached else "%d of these" % needed)
    if idle:
        text += ". The set does not run the other %d either%s" % (idle, why)
    return [Para([text + "."])]


def minimal_section(data: GuideData) -> List[Block]:
    assert data.recommendation is not None
    return _minimal_blocks(data.recommendation)


def _minimal_blocks(rec: Recommendation) -> List[Block]:
    blocks: List[Block] = workload_lead(rec) + unmet_blocks(rec)
    if rec.needs and not rec.runs:
        return blocks
    which = "The set" if rec.needs else "The minimal set"
    if rec.keep_count == rec.union_count or not rec.runs:
        blocks.append(Para([which + " has ", Strong(str(rec.union_count or rec.keep_count)),
                            " kernels (%s); every token below is read from what the "
                            "commands generate." % verified_text(rec.verified)]))
    else:
        blocks.append(Para(["The keep set has ", Strong(str(rec.keep_count)), " kernels; the "
                            "filter commands select ", Strong(str(rec.union_count)),
                            " (%s; see the notes below). The tables describe what the "
                            "commands select." % verified_text(rec.verified)]))
    coupling = coupling_sentence(rec)
    if coupling:
        blocks.append(Para([coupling[0].upper() + coupling[1:] + "."]))
    blocks += _never_run_blocks(rec)
    grouped: Dict[str, List[Decision]] = {}
    for decision in rec.decisions:
        grouped.setdefault(decision.kernel_type, []).append(decision)
    for class_name, decisions in grouped.items():
        if len(grouped) > 1:
            blocks.append(SubHeading([Code(class_name)]))
        blocks += _type_blocks(rec, class_name, decisions)
    blocks += _emptied_blocks(rec)
    notes = set_notes(rec)
    if notes:
        blocks.append(Para(["Notes:"]))
        blocks.append(BulletList([[note] for note in notes]))
    return blocks


def _emptied_blocks(rec: Recommendation) -> List[Block]:
    """The dispatch functions the set leaves without a kernel, and where their calls go."""
    blocks: List[Block] = []
    for function, instead in sorted(rec.emptied.items()):
        lost, ran = rec.emptied_lost.get(function) or (0, 0)
        where: Inlines = ["the calls it ran now run the kernels of ", *join(
            [[Code(f)] for f in instead])] if instead else ["the calls it ran find no kernel"]
        if instead and lost:  # said only where those functions have a kernel for the call
            where = ["its calls go on to ", *join([[Code(f)] for f in instead]),
                     ", which run%s those %s a kernel for. Of the %d kernels " % (
                         "s" if len(instead) == 1 else "", "it has" if len(instead) == 1
                         else "they have", ran), Code(function),
                     " ran, %d ran calls that now find no kernel; What you lose says which, "
                     "per dropped variant" % lost]
        blocks.append(Para(["The set keeps no kernel of ", Code(function), ": ", *where, "."]))
    return blocks


def _keep_drop_cells(decision: Decision) -> List[Inlines]:
    """The Keep and Drop cells. A token kept only where nothing else serves a problem
    value is in both: under Keep "only with" the values of other segments it is kept
    with ("mode _group"), under Drop "except with" them, so that a reader looking for
    what is dropped finds it there too."""
    partial = {p["token"]: kept_with_text(p.get("kept_with") or {}) for p in decision.partial}
    # (a token kept with every value it exists with is dropped nowhere)
    dropped = sorted(dict.fromkeys(p["token"] for p in decision.partial if p.get("dropped", True)),
                     key=natural)

    def noted(token: str, only: bool) -> Inlines:
        where = partial[token]
        if only:
            note = " (only with %s)" % where if where else " (where nothing else exists)"
        else:
            note = " (except with %s)" % where if where else " (except where nothing else exists)"
        return token_cell(token) + [note]
    keep = [noted(t, True) if t in partial else token_cell(t) for t in sorted(decision.keep, key=natural)]
    drop = [token_cell(t) for t in sorted(decision.drop, key=natural)] + [noted(t, False) for t in dropped]
    return [join(keep) or ["-"], join(drop) or ["-"]]


def _type_blocks(rec: Recommendation, class_name: str, decisions: List[Decision]) -> List[Block]:
    blocks: List[Block] = []
    follows = next((d.follows for d in decisions if d.follows), "")
    if follows:
        blocks.append(Para(follower_usage(rec, class_name)))
    rows: List[List[Inlines]] = []
    whole: List[Inlines] = []
    tiles: List[Inlines] = []
    reasons: Dict[str, str] = {}  # a reason said once: later rows name the first segment
    for decision in decisions:
        if decision.category == "tile":
            tiles.append([Strong(decision.segment), ": ", *tokens_natural(decision.keep)])
            continue
        if not decision.drop and not decision.partial:
            kept_whole: Inlines = [Strong(decision.segment)]
            if decision.category == "subject":
                kept_whole.append(" (%s)" % decision_reason(decision).split(": ", 1)[-1])
            whole.append(kept_whole)
            continue
        why = NEEDED_REASON if decision.category == "needed" and not follows \
            else "" if follows else decision_reason(decision)
        first = reasons.setdefault(why, decision.segment)
        rows.append([[decision.segment], *_keep_drop_cells(decision),
                     ["as for ", Strong(first)] if why and first != decision.segment
                     else [why] if why else ["-"]])
    if rows:
        table: List[Block] = [Table(header=["Segment", "Keep", "Drop", "Why"], rows=rows,
                                    classes=["fmha-decisions"], counts_after=None)]
        blocks += fold(["Keep/drop per segment (%d rows)" % len(rows)], table, len(rows))
    if whole:
        blocks.append(Para(["Every value kept: ", *join(whole), "."]))
    if tiles:
        # information, not a decision (the filter does not choose tiles): folded
        blocks.append(Dropdown(["Tiles in the set (%d)" % sum(len(d.keep) for d in decisions
                                                              if d.category == "tile")],
                               [Para(["The filter does not choose tiles; these come with the "
                                      "kept kernels:"]), BulletList(tiles)]))
    return blocks


def losses_section(data: GuideData) -> List[Block]:
    assert data.recommendation is not None
    return _losses_blocks(data.recommendation)


def _losses_blocks(rec: Recommendation) -> List[Block]:
    """Per dropped variant, one plain sentence; the loss in full (problem classes,
    kernels never launched, the kept fallback) follows, folded."""
    if rec.needs and not rec.workload_count:
        return [Para([NO_SET])]
    items: List[Inlines] = []
    details: List[Inlines] = []
    several = len({d.kernel_type for d in rec.decisions}) > 1
    substituted = False  # some dropped variant's calls run a kept variant instead
    for decision in rec.decisions:
        losses = loss_sentences(decision)
        for token in [t for t in decision.drop + [p["token"] for p in decision.partial]
                      if t in losses or t in decision.drop]:
            loss = losses.get(token, "")
            name: Inlines = token_cell(token) + [" (%s" % decision.segment]
            if several:
                name += [", ", Code(decision.kernel_type)]
            name.append(")")
            facts = decision.loss_facts.get(token)
            if facts:
                parts = decision.loss_parts.get(token, {})
                items.append(name + [": ", *loss_lead(dict(facts, served_by=served_by(parts)))])
                substituted = substituted or bool(facts.get("served"))
                if loss:
                    details.append(name + [": " + loss])
            else:
                items.append(name + ([": " + loss] if loss else []))
    if not items:
        return [Para(["Nothing: the %s keeps every token." % (
            "set" if rec.needs else "minimal set")])]
    lead = Para(["Per dropped variant, read from the dispatch conditions: the calls its "
                 "kernels served, and what those calls find now:"])
    blocks = [lead] + fold(
        ["What you lose (%d variants)" % len(items)], [BulletList(items)], len(items), FOLD_ITEMS)
    if substituted:
        blocks.append(Para(["The set is chosen for coverage, not speed: where a kept variant "
                            "runs a dropped variant's calls, how fast it runs them is not "
                            "measured here."]))
    if details:
        blocks.append(Dropdown(["In full: the kernels not generated, the calls that now find "
                                "no kernel and the kept kernel that runs them instead "
                                "(%d variants)" % len(details)], [BulletList(details)]))
    return blocks


def commands_section(data: GuideData) -> List[Block]:
    assert data.recommendation is not None
    rec = data.recommendation
    blocks = _commands_blocks(rec)
    if rec.runs:
        blocks.insert(0, Para(where_commands_run(data.model, bool(rec.driver_command),
                                                 len(rec.runs) > 1 or bool(rec.driver_command))))
    return blocks


def _commands_blocks(rec: Recommendation) -> List[Block]:
    """The runs one by one, folded when there are many ("verified" is said once when
    every run is), then, for several, the one-shot driver command (it writes one
    dispatch file for their union), and whether the written set links."""
    if rec.needs and not rec.workload_count:
        return [Para([NO_SET])]
    if not rec.runs:
        return [Para(["No filter run is needed: the minimal set is the full set."])]
    all_verified = all(run.verified for run in rec.runs)
    runs = runs_blocks(rec.api, rec.runs, all_verified and len(rec.runs) > 1)
    if len(rec.runs) == 1:
        blocks = runs
    else:
        runs.append(Para(["Together the runs select ", Strong(str(rec.union_count)),
                          " kernels; merge their listings with:"]))
        if rec.merge_command:
            runs.append(CodeBlock(rec.merge_command, "bash"))
        runs.append(Admonition("caution", [Para([rec.merge_caution or MERGE_CAUTION])]))
        blocks = [Para(["The %s takes %d generate.py runs%s." % (
            "set" if rec.needs else "minimal set", len(rec.runs),
            " (each verified with generate.py)" if all_verified else "")])]
        blocks += fold(["The %d runs one by one, and merging their listings" % len(rec.runs)],
                       runs, len(rec.runs), 3)
    if rec.driver_command:
        blocks.append(Para(["One generate.py run for the union, with one dispatch file "
                            "(%s). generate.py takes one filter per API, so this command, "
                            "which comes with this extension (the " % verified_text(rec.driver_verified),
                            Code("sphinxext-fmha"), " command of the Python environment that "
                            "builds these docs; CK has no such command), "
                            "runs the tree's generate.py once with its fnmatch widened to the "
                            "union of the filters:"]))
        blocks.append(CodeBlock(rec.driver_command, "bash"))
    blocks.append(Para([_links_text(rec)]))
    return blocks


def _links_text(rec: Recommendation) -> str:
    parts = []
    if rec.runs and all(run.written for run in rec.runs):
        parts.append("%s also succeeds in write mode (-o)." % (
            "Every command" if rec.driver_command else "The command"))
    if rec.links_missing:
        parts.append("In write mode the dispatch file instantiates %d kernel specialisations "
                     "that are not generated, so the set does not link." % len(rec.links_missing))
    elif rec.write_verified:
        parts.append("The set links: every kernel specialisation the written dispatch file "
                     "instantiates is generated%s." % (
                         "" if rec.links_unreferenced or rec.unreachable_facts else
                         ", and every generated kernel is reached from it"))
    else:
        parts.append("Write mode (-o) was not verified (see the notes).")
    if rec.links_unreferenced:
        parts.append("%d generated kernels are reached by no dispatch call."
                     % len(rec.links_unreferenced))
    if rec.unreachable_facts:
        reasons = sorted(set(never_run_texts(rec.unreachable_facts).values()))
        shown = "; ".join(reasons[:3]) + (
            "; and %d other reasons" % (len(reasons) - 3) if len(reasons) > 3 else "")
        parts.append("%d generated kernels are never run: %s." % (
            len(rec.unreachable_facts), shown))
        if rec.arch_namesakes:
            suffixes = sorted(set(rec.arch_namesakes.values()))
            parts.append("%s come with kernels the set runs: their names differ only in "
                         "the arch suffix (%s), which -f patterns are not matched against, so "
                         "only --targets can leave them out (with the rest of that "
                         "architecture)." % (
                             "All of them" if len(rec.arch_namesakes) ==
                             len(rec.unreachable_facts) else "%d of them"
                             % len(rec.arch_namesakes), ", ".join(suffixes)))
    if rec.reached_only_in_set:
        parts.append("%d kernels of the set that the full API never runs are reached from "
                     "the set's dispatch file (without the dropped kernels its branches are "
                     "tried in another order): calls they serve here ran other kernels in "
                     "the full build." % len(rec.reached_only_in_set))
    if rec.full_unreferenced:
        parts.append("In the full listing, %d kernels are reached by no dispatch call."
                     % len(rec.full_unreferenced))
    return " ".join(parts)


def _count_table(rec: Optional[Recommendation], model: Optional[ApiModel]) -> Table:
    """Full vs minimal kernels per sub-type (``rec.counts``: class -> {full, minimal,
    workload}, plus ``total``)."""
    counts = dict(rec.counts) if rec is not None and rec.counts else {}
    total = counts.pop("total", None)
    counts = {c: v for c, v in counts.items() if isinstance(v, dict)}
    full: Dict[str, int] = {k.class_name: k.count for k in model.kernel_types} if model is not None else {}
    classes = list(full) + [c for c in counts if c not in full]
    full.update((c, int(v["full"])) for c, v in counts.items() if "full" in v)
    minimal = {c: int(v["minimal"]) for c, v in counts.items() if "minimal" in v}
    workload = {c: int(v["workload"]) for c, v in counts.items() if "workload" in v}
    with_minimal = rec is not None and bool(minimal or total)
    header = ["Sub-type", "Full"] + (["Workload"] if workload else []) + (
        ["Set" if workload else "Minimal", "Reduction"] if with_minimal else [])
    rows: List[List[Inlines]] = []
    for class_name in classes:
        whole, kept = full.get(class_name, 0), minimal.get(class_name, 0)
        row: List[Inlines] = [[Code(class_name)], [str(whole)]]
        rows.append(row + ([[str(workload.get(class_name, 0))]] if workload else [])
                    + ([[str(kept)], [percent(whole - kept, whole)]] if with_minimal else []))
    totals = total if isinstance(total, dict) else {}
    whole = int(totals.get("full", sum(full.get(c, 0) for c in classes)))
    kept = int(totals.get("minimal", sum(minimal.get(c, 0) for c in classes)))
    shown = ([str(whole)] + ([str(totals.get("workload", 0))] if workload and isinstance(total, dict)
                             else []) + ([str(kept), percent(whole - kept, whole)] if with_minimal else []))
    total_row: List[Inlines] = [[Strong(text)] for text in ["Total"] + shown]
    return Table(header=header, rows=rows + [total_row], classes=["fmha-counts"])


def recommendation_sections(rec: Recommendation) -> List[Section]:
    """Sections 5-8 from a recommendation alone (the CLI's ``recommend``)."""
    return [
        Section("minimal", WORKLOAD_TITLE if rec.needs else SECTION_TITLES["minimal"],
                _minimal_blocks(rec)),
        Section("losses", SECTION_TITLES["losses"], _losses_blocks(rec)),
        Section("commands", SECTION_TITLES["commands"], _commands_blocks(rec)),
        Section("counts", SECTION_TITLES["counts"], [_count_table(rec, None)] + build_blocks(rec)),
    ]


def counts_section(data: GuideData) -> List[Block]:
    blocks: List[Block] = []
    if data.recommendation is None:
        blocks.append(Para(["Kernels per sub-type in the full listing (", Code(
            data.listing_command or "generate.py -l"), "):"]))
    elif data.recommendation.needs:
        blocks.append(Para(["Kernels per sub-type, full listing, the kernels the workload's "
                            "values allow and the set:"]))
    else:
        blocks.append(Para(["Kernels per sub-type, full listing and recommended minimal set:"]))
    blocks.append(_count_table(data.recommendation, data.model))
    if data.recommendation is not None:
        blocks += build_blocks(data.recommendation)
    return blocks
