"""One filter in an old and a new CK tree (``sphinxext-fmha diff``, ``fmha-filter-check
:against:``): the counts, why they differ, the runs that keep the old selection."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ...bump_data import Change, FilterComparison, MigratedRun, TreeSelection
from ...model import to_dict
from ..ir import Block, BulletList, Code, CodeBlock, Inlines, Para, Strong, SubHeading, Table, codes, join
from ..ir import text_of as plain_text
from .cells import FOLD_ITEMS, fold, plural, token_cell
from .filter_check import _expectation_blocks as expectation_blocks

#: Change kinds said under "Names" (folded when many), after the others.
_NAMING = ("segment-added", "segment-removed", "token-renamed", "token-added", "token-removed")


def comparison_blocks(c: FilterComparison,
                      expectations: Iterable[Tuple[str, bool]] = ()) -> List[Block]:
    """The comparison as blocks: counts, reasons, the migrated runs (then the filter
    check's expectations, met or not, of the new tree's selection)."""
    blocks: List[Block] = [Para([
        Code("-f '%s'" % c.filter), " for ", Code(c.api), ": generate.py of the old tree (",
        c.old.tree, ") lists ", Strong(str(c.old.count)), " kernels, the new tree's (",
        c.new.tree, ") ", Strong(str(c.new.count)), ". ",
        "The filter selects the same kernels in both trees." if c.same else
        "The filter does not select the same kernels in the new tree."])]
    blocks.append(CodeBlock("# in each tree's example/ck_tile/01_fmha\n" + c.new.command, "bash"))
    blocks.append(_counts_table(c))
    reasons = [change_inlines(ch, c) for ch in c.changes if ch.kind not in _NAMING]
    naming = [change_inlines(ch, c) for ch in c.changes if ch.kind in _NAMING]
    if reasons or naming:
        blocks.append(SubHeading(["What differs between the trees"]))
    if reasons:
        blocks.append(BulletList(reasons))
    if naming:
        blocks.extend(fold(["Names: %s" % plural(len(naming), "change")],
                           [Para(["Names:"]), BulletList(naming)], len(naming), FOLD_ITEMS))
    blocks.append(SubHeading(["The old selection in the new tree"]))
    blocks.extend(_migrated_blocks(c))
    return blocks + expectation_blocks(list(expectations))


def comparison_json(c: FilterComparison) -> Dict[str, Any]:
    """The JSON of ``sphinxext-fmha diff``: the comparison with each change's ``text`` and
    each run's ``gloss`` filled."""
    data = to_dict(c)
    for change, item in zip(c.changes, data["changes"]):
        item["text"] = plain_text(change_inlines(change, c))
    for run, item in zip(c.migrated.runs, data["migrated"]["runs"]):
        item["gloss"] = run_gloss(run, c.new.all_per_type)
    return data


def _counts_table(c: FilterComparison) -> Table:
    order = list(c.old.all_per_type) + [t for t in c.new.all_per_type if t not in c.old.all_per_type]
    rows: List[List[Inlines]] = [[[Code(t)], *_side(c.old, t), *_side(c.new, t)] for t in order]
    rows.append([["Total"], [], ["%d of %d" % (c.old.count, c.old.all)], [],
                 ["%d of %d" % (c.new.count, c.new.all)]])
    return Table(header=["Sub-type", "Old pattern", "Old tree", "New pattern", "New tree"],
                 rows=rows, classes=["fmha-diff-counts"], counts_after=None)


def _side(side: TreeSelection, class_name: str) -> List[Inlines]:
    """The pattern the sub-type's names meet (and how many of them it matches alone),
    and how many of them the filter selects."""
    if class_name not in side.all_per_type:
        return [["-"], ["-"]]
    pattern = side.patterns.get(class_name)
    return [["not filtered"] if pattern is None else
            [Code(pattern), " (%d match)" % side.matched_per_type.get(class_name, 0)],
            ["%d of %d" % (side.per_type.get(class_name, 0), side.all_per_type[class_name])]]


def _becomes(value: Optional[str]) -> Inlines:
    """What a missing or empty part becomes, in words."""
    if value is None:
        return ["not applied (every name passes)"]
    if value == "*":
        return [Code("*"), " (every name passes)"]
    if value == "":
        return ["the empty pattern, which matches no name"]
    return [Code(value)]


def _how(how: str, part: Optional[int]) -> str:
    return {"whole": "the whole filter", "part": "part %s" % part,
            "missing": "part %s, which the filter does not have" % part,
            "empty": "part %s, which is empty" % part,
            "unfiltered": "the sub-type is never filtered"}.get(how, how)


def _parts(side: TreeSelection) -> Inlines:
    return join([["part %d: " % i, *codes(types)] for i, types in enumerate(side.parts)], "; ")


def _values(values: Dict[str, List[str]]) -> str:
    return "; ".join("%s %s" % (path, ", ".join(found)) for path, found in values.items())


def _examples(change: Change) -> Inlines:
    return [" (e.g. ", Code(change.examples[0]), ")"] if change.examples else []


def _kernels(count: int, kernel: Inlines, what: str = "") -> Inlines:
    """``7680 FmhaBwdDQDKDVKernel kernels`` (``what``: words before the sub-type)."""
    return ["%d %s" % (count, what), *kernel, " kernel" if count == 1 else " kernels"]


def change_inlines(ch: Change, c: FilterComparison) -> Inlines:
    """One change in words."""
    kind = ch.kind
    kernel: Inlines = [Code(ch.kernel_type)] if ch.kernel_type else []
    out: Inlines
    if kind == "cli-split" and ch.new:
        return ["The new generate.py splits ", Code("-f"), " on ", Code(ch.new), " into one "
                "filter per API; the old one passed the whole value to every API."]
    if kind == "cli-split":
        return ["The new generate.py passes the whole ", Code("-f"), " value to every API; the "
                "old one split it on ", Code(ch.old or ""), "."]
    if kind == "api-split" and ch.new:
        return ["The new tree splits this API's filter on ", Code(ch.new), " into %s ("
                % plural(len(c.new.parts), "part"), *_parts(c.new), "); the old tree ",
                *(["split it on ", Code(ch.old), "."] if ch.old else
                  ["matched the whole filter against every sub-type's names."])]
    if kind == "api-split":
        return ["The new tree matches the whole filter against every sub-type's names; the "
                "old tree split it on ", Code(ch.old or ""), " into parts (", *_parts(c.old), ")."]
    if kind in ("missing-part", "empty-part"):
        what = ("A part %s missing from the filter" if kind == "missing-part"
                else "An empty part %s") % ch.new_part
        return [what, " used to become ", *_becomes(ch.old), "; it now becomes ",
                *_becomes(ch.new), "."]
    if kind == "drops":
        if ch.new != "trait":
            return ["A name that fails its pattern used to drop the whole trait; the new "
                    "tree drops that kernel alone."]
        out = ["A name that fails its pattern used to drop that kernel alone; the new "
               "tree drops the whole trait (every kernel generated with it)."]
        none = [t for t, n in c.new.matched_per_type.items()
                if n == 0 and c.new.all_per_type.get(t) and c.new.patterns.get(t) is not None]
        if none:
            out += [" Here ", Code(c.new.patterns[none[0]] or ""), " matches none of the ",
                    str(c.new.all_per_type[none[0]]), " ", Code(none[0]),
                    " names, so every trait that has one is dropped."]
        return out
    if kind == "pattern":
        return kernel + [*([" names are not filtered in the new tree ("] if ch.new is None else
                           [" names are now matched against ", Code(ch.new), " ("]),
                         _how(ch.new_how, ch.new_part),
                         *(["); the old tree did not filter them ("] if ch.old is None else
                           ["); the old tree matched them against ", Code(ch.old), " ("]),
                         _how(ch.old_how, ch.old_part), ")."]
    if kind in ("type-added", "type-removed"):
        return kernel + [" is a sub-type only the %s tree has (%s)."
                         % ("new" if kind == "type-added" else "old",
                            plural(ch.count, "kernel"))]
    if kind in ("lost", "gained"):
        return _kernels(ch.count, kernel) + [(
            " the old tree selected %s left out in the new tree" if kind == "lost" else
            " of both trees the old filter left out %s selected in the new tree")
            % ("is" if ch.count == 1 else "are"), *_examples(ch), "."]
    if kind in ("new-only", "old-only"):
        tree = "new" if kind == "new-only" else "old"
        picked = ("none of them" if not ch.count else
                  "all of them" if ch.count == ch.total else "%d of them" % ch.count)
        out = _kernels(ch.total, kernel) + [" exist%s only in the %s tree; the filter "
                                            "selects %s" % ("s" if ch.total == 1 else "",
                                                            tree, picked)]
        if kind == "old-only" and ch.count:
            out.append(": they cannot be kept")
        return out + _examples(ch) + ["."]
    if kind == "several":
        arch = ch.values.get("arch")
        told = [_values({k: v for k, v in ch.values.items() if k != "arch"})]
        if arch:
            told.append("their arch suffix (%s)" % ", ".join(arch))
        return _kernels(ch.count, kernel, "selected old ") + [
                " each have several counterparts in the new tree, told apart by ",
                " and ".join(t for t in told if t) or "nothing in their names", "."]
    if kind == "renamed-kernels":
        return _kernels(ch.count, kernel, "selected old ") + [
            " changed names; each is matched by its field values", *_examples(ch), "."]
    if kind in ("segment-added", "segment-removed"):
        verb = "gain" if kind == "segment-added" else "lose"
        return kernel + [" names %s the segment %s (%s)." % (verb, ch.segment, _values(ch.values))]
    if kind == "token-renamed":
        return kernel + [" %s: " % ch.segment, *token_cell(ch.old or ""), " is now ",
                         *token_cell(ch.new or ""), " (%s)." % _values(ch.values)]
    if kind == "token-added":
        return kernel + [" %s: new token " % ch.segment, *token_cell(ch.new or ""),
                         " (%s; %s)." % (_values(ch.values), plural(ch.count, "kernel"))]
    if kind == "token-removed":
        return kernel + [" %s: token " % ch.segment, *token_cell(ch.old or ""),
                         " is gone (%s; %s in the old tree)."
                         % (_values(ch.values), plural(ch.count, "kernel"))]
    return [kind]


def run_gloss(run: MigratedRun, all_per_type: Dict[str, int]) -> str:
    """What one run keeps, plainly: per sub-type, none, every kernel, or the tokens that
    tell its kernels (with how many of how many)."""
    parts = []
    for class_name, total in all_per_type.items():
        count = run.per_type.get(class_name, 0)
        if not count:
            parts.append("no %s" % class_name)
        elif count == total:
            parts.append("every %s (%d)" % (class_name, total))
        else:
            told = "; ".join("%s %s" % (segment, ", ".join(t or "(no token)" for t in tokens))
                             for segment, tokens in run.kept.get(class_name, {}).items())
            among = "among those with " if class_name in run.loose else "with "
            parts.append("%d of %d %s (%s%s)" % (count, total, class_name, among, told))
    return "; ".join(parts)


def _migrated_blocks(c: FilterComparison) -> List[Block]:
    m = c.migrated
    if not c.old.count:
        return [Para(["The filter selects no kernel in the old tree: there is nothing to keep."])]
    if m.verdict == "impossible" and not m.runs:
        return [Para([Strong("No longer possible:"), " none of the %s the old tree selected "
                      "exists in the new tree." % plural(c.old.count, "kernel")])] + \
            _missing_blocks(m.missing)
    lead: Inlines
    if m.verdict == "same":
        lead = [Strong("Same set:"), " the new tree's generate.py selects exactly the old "
                "selection's %s with " % plural(m.target, "kernel")]
        lead.append("the filter itself." if m.unchanged_filter else
                    "%s:" % ("this run" if len(m.runs) == 1 else "these %d runs" % len(m.runs)))
    elif m.verdict == "impossible":
        lead = [Strong("No longer possible:"), " generate.py lists the set but refuses to "
                "write it (", Code(_short(m.write_error)), ")."]
    else:
        runs = "this run selects" if len(m.runs) == 1 else "these %d runs select" % len(m.runs)
        lead = [Strong("Changed:"), " %s %s in the new tree: the %d counterparts of the old "
                "selection" % (runs, plural(m.count, "kernel"), m.count - len(m.extra))]
        if m.extra:
            lead += [" and %d more (" % len(m.extra)]
            lead += join([[str(n), " ", Code(t)] for t, n in m.extra_per_type.items()])
            lead.append(") that its filter semantics select along" if not m.refused else
                        ") launched or generated with them: generate.py refuses to write the "
                        "counterparts alone (")
            if m.refused:
                lead += [Code(_short(m.refused)), ")"]
        lead.append(".")
        if m.missing:
            lead.append(" %s of the old selection %s none (listed below)."
                        % (plural(len(m.missing), "kernel"),
                           "has" if len(m.missing) == 1 else "have"))
    blocks: List[Block] = [Para(lead)]
    if m.runs and not m.unchanged_filter:
        blocks.append(CodeBlock("\n".join(r.command for r in m.runs), "bash"))
    if m.runs:
        blocks.append(BulletList([
            [Code(r.filter), ": ", run_gloss(r, c.new.all_per_type), " (%d kernels, %s)"
             % (r.count, "verified with generate.py in list and write mode" if r.verified else
                "NOT verified" if r.written else "generate.py refuses to write it")]
            for r in m.runs]))
    if m.driver_command:
        blocks.append(Para(["One dispatch file for their union: ", Code(m.driver_command), "."]))
    facts: List[Inlines] = []
    several = [ch for ch in c.changes if ch.kind == "several"]
    if several:
        facts.append(["Old kernels with several counterparts keep all of them (%d old kernels)."
                      % sum(ch.count for ch in several)])
    if m.runs and not m.links and not m.write_error:
        facts.append(["Written together, the set does not link: its dispatch file instantiates "
                      "kernels it does not generate%s." % (
                          " (neither did the old selection's)" if not c.old.links else "")])
    if not m.verified:
        facts.append([Strong("Not verified:"), " the runs' listings are not what the model "
                      "predicts for them."])
    if facts:
        blocks.append(BulletList(facts))
    return blocks + _missing_blocks(m.missing)


def _short(line: str, most: int = 100) -> str:
    """A stderr line as a page quotes it (an assertion may print a whole object)."""
    return line if len(line) <= most else line[:most].rstrip() + " ..."


def _missing_blocks(missing: Sequence[str]) -> List[Block]:
    if not missing:
        return []
    title: Inlines = ["Old kernels with no counterpart in the new tree: %d" % len(missing)]
    return fold(title, [Para(title + [":"]), BulletList([[Code(f)] for f in missing])],
                len(missing), FOLD_ITEMS)
