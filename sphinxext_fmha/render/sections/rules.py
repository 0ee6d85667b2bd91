"""The rules section: skip conditions and receipts."""

from __future__ import annotations

import re
from typing import Dict, List, Sequence, Tuple

from ...guide_data import GuideData
from ...model import Receipt, SkipCondition
from ..ir import (
    Block,
    BulletList,
    Code,
    Dropdown,
    Inlines,
    Para,
    Table,
    codes,
    join,
)
from .cells import fold, plural

#: Reference tables of this section (the codegen's own rules) fold above this many rows.
FOLD_SHORT = 4


def rules_section(data: GuideData) -> List[Block]:
    model = data.model
    blocks: List[Block] = _skip_blocks(model.skip_conditions)
    blocks.extend(_receipt_blocks(model.receipts))
    blocks.extend(_mask_modes(data))
    return blocks


def _skip_blocks(skips: Sequence[SkipCondition]) -> List[Block]:
    """One row per distinct condition (the places it occurs together); the reading only
    for an assertion, whose message says why."""
    if not skips:
        return [Para(["No skip condition was found."])]
    merged: Dict[Tuple[str, str], List[SkipCondition]] = {}
    for skip in skips:
        merged.setdefault((skip.kind, skip.source), []).append(skip)
    rows: List[List[Inlines]] = []
    for (kind, source), found in merged.items():
        condition: Inlines = [Code(source)]
        if kind == "assert" and found[0].reading:
            condition.append(" (%s)" % found[0].reading)
        rows.append([[kind], condition, codes([s.where for s in found if s.where])])
    table = Table(header=["Kind", "Condition", "Where"], rows=rows, classes=["fmha-skips"])
    return [Para(["Conditions under which the codegen skips a combination or a kernel (",
                  plural(len(rows), "condition"), "):"])] + fold(
        ["Skip conditions: %s" % plural(len(rows), "condition")], [table], len(rows), FOLD_SHORT)


def _observed(receipt: Receipt) -> Inlines:
    """What the kernels listed without ``-r`` make of the rule: it keeps none of them
    (a term none meets), or it drops none (every term each meets)."""
    if receipt.unmet:
        return [". No kernel generate.py lists without ", Code("-r"), " meets ",
                *_terms(receipt.unmet), ", so this rule keeps none"]
    if receipt.met:
        return [". Every kernel generate.py lists without ", Code("-r"), " meets ",
                *_terms(receipt.met), ", so this rule drops none of them"]
    return []


def _terms(terms: Sequence[Sequence[str]]) -> Inlines:
    return join([[Code(condition), " (their ", Code(path), ": %s)" % values]
                 for condition, path, values in terms], "; ")


def _receipt_blocks(receipts: Sequence[Receipt]) -> List[Block]:
    if not receipts:
        return [Para(["This API has no receipt-specific rule."])]
    used = [r for r in receipts if "referenced in this module" not in r.reading]
    unused = [r for r in receipts if r not in used]
    blocks: List[Block] = [Para(["Receipts (", Code("-r"), ") narrow the set for an integration:"])]
    if used:
        keeps = [re.sub(r"^receipt %s: " % re.escape(r.value), "", r.reading) for r in used]
        prefix = "keeps only kernels where "
        common = all(k.startswith(prefix) for k in keeps)
        header = "Keeps only kernels where" if common else "Keeps"
        keeps = [k[len(prefix):] if common else k for k in keeps]
        suffix = re.search(r" \(in [\w.]+\)$", keeps[0])  # the function, said once
        if suffix and all(k.endswith(suffix.group(0)) for k in keeps):
            keeps = [k[:-len(suffix.group(0))] for k in keeps]
            header += suffix.group(0)
        rows: List[List[Inlines]] = [
            [[Code(r.value)], [r.label], [k, *_observed(r)], [Code(r.where)] if r.where else []]
            for r, k in zip(used, keeps)]
        table = Table(header=["Receipt", "Label", header, "Where"], rows=rows,
                      classes=["fmha-receipts"])
        blocks.extend(fold(["Receipts: %s" % plural(len(rows), "receipt")], [table], len(rows),
                           FOLD_SHORT))
    if unused:
        wheres = sorted({r.where for r in unused if r.where})
        named: List[Inlines] = []
        for receipt in unused:
            item: Inlines = [Code(receipt.value)]
            if receipt.label:
                item.append(" (%s)" % receipt.label)
            named.append(item)
        lead: Inlines = [plural(len(unused), "receipt"), " not referenced in this module, so "
                         "only the conditions that apply to every receipt hold"]
        lead += [" (", *codes(wheres), ")"] if wheres else []
        if len(named) > FOLD_SHORT:
            blocks.append(Para(lead + ["."]))
            blocks.append(Dropdown(["Not referenced: %s" % plural(len(named), "receipt")],
                                   [BulletList(named)]))
        else:
            blocks.append(Para(lead + [": ", *join(named), "."]))
    return blocks


def _mask_modes(data: GuideData) -> List[Block]:
    """What ``--mask`` changes, measured by listing the API in both modes."""
    modes = data.mask_modes
    if modes is None:
        return []
    lead: Inlines = ["Mask mode: this guide lists ", Code("--mask %s" % modes.this_mode),
                     " (%d kernels); " % modes.this_count, Code("-m %s" % modes.other_mode),
                     " lists %d." % modes.other_count]
    if modes.changes:
        lead += [" The mask words of the kernel names change: ",
                 *(codes(modes.only_this) or ["-"]), " occur only with ",
                 Code(modes.this_mode), ", ", *(codes(modes.only_other) or ["-"]),
                 " only with ", Code(modes.other_mode),
                 "; a filter written for one mode selects nothing of these in the other."]
    else:
        lead += [" The kernel names carry the same words in both modes."]
    blocks: List[Block] = [Para(lead)]
    if modes.hard_coded:
        blocks.append(Para(["Hard-coded mask values: ", *join(
            [[Code(word), " (%d kernels)" % count] for word, count in modes.hard_coded.items()]),
            " occur with ", Code("--mask %s" % modes.this_mode), " too, although they belong "
            "to the other mode's words: some pipeline sets this mask value whatever the mask "
            "mode."]))
    return blocks
