"""The dispatch section: entry points, the order the API file tries, sub-kernel choices,
and the kernels that are generated but unreachable, with why the API never runs a kernel
in words (from the facts of :func:`~sphinxext_fmha.cppapi.link_check.unreachable_kernels`
and ``EntryPoints.dead``)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from ...guide_data import GuideData
from ..ir import Block, BulletList, Code, Dropdown, Inlines, Para, Strong, Table, join
from .cells import FOLD_ITEMS, condition_inlines, fold, plural, token_cell
from .condition_words import condition_words

_NEVER_TRIED = {
    "same_condition": "an earlier branch of its if-else chain has the same condition",
    "taken_together": "the earlier branches of its if-else chain take every call its "
                      "condition admits between them, none alone",
    "returns_before_chain": "the statements before its chain return for every call it admits",
}


#: conditions longer than this are not named in a reason (one reason is said once for
#: all the kernels that share it)
_QUOTED = 80


def dead_text(calls: Sequence[Mapping[str, str]], function: str) -> str:
    """Why no entry point runs the dispatch function ``function``."""
    if not calls:
        return "no entry point calls %s" % function
    return "; ".join(dict.fromkeys(
        "%s calls it only when `%s`, which is always false" % (c["caller"], c["false_when"])
        if "false_when" in c else "its caller %s is not reachable" % c["caller"]
        for c in calls))


def _why_text(why: Mapping[str, Any]) -> str:
    kind = why["kind"]
    if kind == "no_entry":
        return "no entry point runs %s" % why["function"]
    if kind == "returns_before":
        return "earlier statements of its function return for every call that reaches it"
    if kind == "never_holds":
        terms = list(map(condition_words, why["terms"]))
        return "never holds: " + (
            "its conditions exclude each other" if not terms else
            "its term `%s` holds for no call" % terms[0] if len(terms) == 1 else
            "%s hold together for no call" % " and ".join(terms))
    if kind == "taken_by":
        earlier, own = (condition_words(why[k]) for k in ("earlier", "own"))
        return "is never tried: " + (
            "an earlier branch of its if-else chain, `%s`, takes every call its condition "
            "`%s` admits" % (earlier, own) if max(len(earlier), len(own)) <= _QUOTED else
            "an earlier branch of its if-else chain takes every call its condition admits")
    return "is never tried: " + _NEVER_TRIED[kind]


def _reason_text(reason: Mapping[str, Any]) -> str:
    if "dead" in reason:
        return "launched only by %s: %s" % (reason["dead"],
                                            dead_text(reason["calls"], reason["dead"]))
    if "branch" in reason:
        return "its branch in %s %s" % (reason["branch"] or "the API file",
                                        _why_text(reason["why"]))
    return "no dispatch branch names it"  # {"unreferenced": True}


def never_run_text(reasons: Sequence[Mapping[str, Any]]) -> str:
    """Why the API never runs a kernel (its reasons, one per leaf that launches it)."""
    return "; ".join(dict.fromkeys(_reason_text(r) for r in reasons))


def never_run_texts(unreachable: Mapping[str, List[Dict[str, Any]]]) -> Dict[str, str]:
    """:func:`never_run_text` of each kernel."""
    return {name: never_run_text(reasons) for name, reasons in unreachable.items()}



def dispatch_section(data: GuideData) -> List[Block]:
    dispatch = data.model.dispatch
    reading = data.dispatch_reading or {}
    blocks: List[Block] = []
    if dispatch.mechanism:
        lead: Inlines = ["The dispatch file is written by ", Code(dispatch.mechanism)]
        if dispatch.where:
            lead += [" (", Code(dispatch.where), ")"]
        blocks.append(Para(lead + ["."]))
    blocks.extend(_entry_points(reading))
    blocks.extend(_levels(reading))
    if dispatch.order:
        blocks.append(Para(["Dispatch order read from the codegen: ",
                            *join([[Code(o)] for o in dispatch.order], " > "), "."]))
    if dispatch.sorts:
        blocks.append(Para(["Sorting that decides which kernel is tried first:"]))
        blocks.append(BulletList([[s] for s in dispatch.sorts]))
    if dispatch.padding_order:
        notes = [n.strip() for n in dispatch.padding_order.split("; ") if n.strip()]
        blocks.extend(fold(["Order and padding notes from the source (%d)" % len(notes)],
                            [BulletList([[n] for n in notes])], len(notes), FOLD_ITEMS // 4))
    blocks.extend(_try_orders(data))
    blocks.extend(_choices(reading))
    blocks.extend(_unreachable(reading))
    return blocks


def _entry_points(reading: Mapping[str, Any]) -> List[Block]:
    entries = reading.get("entries") or []
    if not entries:
        return []
    blocks: List[Block] = [Para([
        "Entry points of the API file: ", *join([[Code(e)] for e in entries]),
        "." if len(reading.get("dispatchers", [])) <= 1 else
        "; dispatch functions: %s." % ", ".join(reading.get("dispatchers", []))])]
    for twin, of in sorted((reading.get("twins") or {}).items()):
        blocks.append(Para([Code(twin), " is an entry point too: it tests the branches of ",
                            Code(of["of"]), " and declares the same kernel traits, statement "
                            "for statement, and passes them to ", Code(of["call"]),
                            " where ", Code(of["of"]), " launches the kernels. What this guide "
                            "reads from ", Code(of["of"]), " holds for it."]))
    calls = reading.get("calls") or []
    if calls:
        items: List[Inlines] = []
        callers: Dict[str, int] = {}  # caller -> its calls listed so far
        for call in calls:
            item: Inlines = [Code(call["caller"]), " calls ", Code(call["callee"])]
            if call["when"]:
                item += [" when ", *condition_inlines(call["when"], call["form"])]
            elif callers.get(call["caller"]):
                # (newest CK: v2 runs when the v3 call before it declined, r < 0)
                item += [" when the calls before it have not returned"]
            else:
                item += [" unconditionally"]
            callers[call["caller"]] = callers.get(call["caller"], 0) + 1
            if call["never"]:
                item += [": ", Strong("never"), ", the condition is always false"]
            items.append(item + [" — ", Code(call["statement"])])
        blocks.append(Para(["Which dispatch function serves which inputs, in source order:"]))
        blocks.append(BulletList(items))
    for name, calls in sorted((reading.get("dead") or {}).items()):
        blocks.append(Para([Strong("Not reachable:"), " ", Code(name),
                            ": %s." % dead_text(calls, name)]))
    return blocks


def _levels(reading: Mapping[str, Any]) -> List[Block]:
    levels = reading.get("levels") or []
    if not levels:
        return []
    rows: List[List[Inlines]] = [
        [[Code(level["function"])], [str(level["depth"])], [str(level["distinct"])],
         [Code(level["example"])]] for level in levels]
    table = Table(header=["Function", "Depth", "Distinct", "First condition"],
                  rows=rows, classes=["fmha-dispatch-levels"])
    lead = Para(["The API file's nested ", Code("if"), " levels, outermost first (branches "
                 "are tried in source order; the first match returns):"])
    return [lead] + fold(["Dispatch levels (%d)" % len(rows)], [table], len(rows))


def _try_orders(data: GuideData) -> List[Block]:
    """Trait and padding order as the API file has it, per segment."""
    orders = data.token_dispatch.orders if data.token_dispatch is not None else {}
    by_class: Dict[str, List[Inlines]] = {}
    for (class_name, label), counts in sorted(orders.items()):
        total = sum(counts.values())
        parts = [join([token_cell(t) for t in order], " > ")
                 + ([" (%d of %d)" % (count, total)] if len(counts) > 1 else [])
                 for order, count in counts.items()]
        by_class.setdefault(class_name, []).append([Strong(label), ": ", *join(parts, "; ")])
    if not by_class:
        return []
    lists: List[Block] = []
    for class_name, segments in by_class.items():  # the class named once, its segments after
        if len(data.model.kernel_types) > 1:
            lists.append(Para([Code(class_name), ":"]))
        lists.append(BulletList(segments))
    items = [item for segments in by_class.values() for item in segments]
    return [Para(["The order (", Code("a > b"), ": ", Code("a"), " first) in which the API "
                  "file tries a segment's tokens among kernels equal in every other segment; "
                  "where it differs, counts of such sets:"])] + fold(
        ["Try order per segment (%d)" % len(items)], lists, len(items), 3)


def _choices(reading: Mapping[str, Any]) -> List[Block]:
    """The branches that differ in one condition only and keep some kernels of the call:
    said once per (kept, chosen) pair of kernel kinds, with the conditions in a table."""
    pairs: Dict[Tuple[str, str], List[Mapping[str, Any]]] = {}
    for choice in reading.get("choices") or []:
        pairs.setdefault((choice["kept_kinds"], choice["chosen_kinds"]), []).append(choice)
    blocks: List[Block] = []
    for (kept, chosen), found in pairs.items():
        keeps = join([[Code(kind)] for kind in kept.split(", ")])
        picks = join([[Code(kind)] for kind in chosen.split(", ")])
        one = found[0] if len(found) == 1 else None
        blocks.append(Para([
            "Sub-kernel choices: branches that differ only in ",
            *(["the two conditions of a row below"] if one is None else _against(one)),
            " launch the same ", *keeps, _kernels(kept), " with different ", *picks,
            " kernels: ", "those conditions select" if one is None else "it selects", " the ",
            *picks, _kernels(chosen), ", not the ", *keeps, _kernels(kept),
            " (read from the API file; ",
            "Launch calls: the launch calls in such branches)." if one is None else
            "%s)." % plural(one["count"], "launch call")]))
        if one is None:
            rows: List[List[Inlines]] = [
                [condition_inlines(c["condition"], c["form"]),
                 condition_inlines(c["other"], c["other_form"]) if c["other"] is not None
                 else ["its ", Code("else")], [str(c["count"])]] for c in found]
            blocks.append(Table(header=["Condition", "Other branch", "Launch calls"], rows=rows,
                                classes=["fmha-choices"], counts_after=None))
    # folded: which launched kernel a condition picks matters to few readers
    conditions = sum(len(found) for found in pairs.values())
    return [Dropdown(["Sub-kernel choices: conditions that pick one launched kernel and keep "
                      "the others (%s)" % plural(conditions, "condition")], blocks)] if blocks else []


def _kernels(kinds: str) -> str:
    return " kernels" if ", " in kinds else " kernel"


def _against(choice: Mapping[str, Any]) -> Inlines:
    """``c`` (and its ``else``) or ``c`` against the other branch's condition."""
    if choice["other"] is None:
        return [Code(choice["condition"]), " (and its ", Code("else"), ")"]
    return [Code(choice["condition"]), " against ", Code(choice["other"])]


#: kernels named per reason of the unreachable list
_LISTED = 24


def _unreachable(reading: Mapping[str, Any]) -> List[Block]:
    blocks: List[Block] = []
    kinds: Dict[str, str] = reading.get("kinds") or {}
    unreferenced = reading.get("unreferenced") or []
    if unreferenced:
        by_kind = Counter(kinds.get(name, "") for name in unreferenced)
        blocks.append(Para([Strong("Generated but never referenced:"), " ",
                            plural(len(unreferenced), "kernel"), " (",
                            *join([[Code(k or "?"), " %d" % n] for k, n in sorted(by_kind.items())]),
                            ") that no dispatch branch instantiates; the API never launches "
                            "them, they only cost compile time."]))
        blocks.extend(fold(["Never referenced: %s" % plural(len(unreferenced), "kernel")],
                            [BulletList([[Code(n)] for n in unreferenced])],
                            len(unreferenced), FOLD_ITEMS))
    unreachable = never_run_texts(reading.get("unreachable") or {})
    if unreachable:
        blocks.append(Para([Strong("Referenced but unreachable:"), " ",
                            plural(len(unreachable), "kernel"), " instantiated only where no "
                            "call arrives: in dispatch functions no entry point runs, or under "
                            "branch conditions that hold for no call. They still have to "
                            "link, and no call is lost without them."]))
        by_reason: Dict[str, List[str]] = {}
        for name, reason in sorted(unreachable.items()):
            by_reason.setdefault(reason, []).append(name)
        for reason, names in sorted(by_reason.items(), key=lambda item: -len(item[1])):
            blocks.append(Para([plural(len(names), "kernel"), ": " + reason + "."]))
            # thousands of names say less than a few: the rest are counted
            shown: List[Inlines] = [[Code(name)] for name in names[:_LISTED]]
            if len(names) > _LISTED:
                shown.append(["… and %d more" % (len(names) - _LISTED)])
            blocks.extend(fold(["Unreachable: %s" % plural(len(names), "kernel")],
                                [BulletList(shown)], len(names), FOLD_ITEMS))
    missing = reading.get("missing") or []
    if missing:
        blocks.append(Para([Strong("Does not link:"), " ", "the API file instantiates ",
                            plural(len(missing), "kernel specialisation"),
                            " that no generated file defines."]))
    if reading.get("discarded"):
        blocks.append(Para([plural(reading["discarded"], "call site"), " sit in branches an ",
                            Code("if constexpr"), " discards (nothing is instantiated there)."]))
    if not blocks and reading:
        blocks.append(Para(["Every generated kernel is referenced by the API file and "
                            "reachable from an entry point."]))
    elif not blocks:
        blocks.append(Para(["The API dispatch file could not be read, so reachability is "
                            "not established."]))
    return blocks
