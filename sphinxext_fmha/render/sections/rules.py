"""The rules section: skip conditions and receipts."""

from __future__ import annotations

from typing import List

from ...guide_data import GuideData
from ..ir import (
    Block,
    Code,
    Inlines,
    Para,
    Table,
    codes,
    join,
)
from .common import fold, plural


def rules_section(data: GuideData) -> List[Block]:
    model = data.model
    blocks: List[Block] = []
    if model.skip_conditions:
        rows: List[List[Inlines]] = [
            [[s.kind], [Code(s.source)], [s.reading], [Code(s.where)] if s.where else []]
            for s in model.skip_conditions]
        table = Table(header=["Kind", "Condition", "Reading", "Where"], rows=rows,
                      classes=["fmha-skips"])
        blocks.append(Para(["Conditions under which the codegen skips a combination or a "
                            "kernel (", plural(len(rows), "condition"), "):"]))
        blocks.extend(fold(["Skip conditions: %s" % plural(len(rows), "condition")], [table],
                            len(rows)))
    else:
        blocks.append(Para(["No skip condition was found."]))
    if model.receipts:
        rows = [[[Code(r.value)], [r.label], [r.reading], [Code(r.where)] if r.where else []]
                for r in model.receipts]
        table = Table(header=["Receipt", "Label", "Keeps", "Where"], rows=rows,
                      classes=["fmha-receipts"])
        blocks.append(Para(["Receipts (", Code("-r"), ") narrow the set for an integration:"]))
        blocks.extend(fold(["Receipts: %s" % plural(len(rows), "receipt")], [table], len(rows)))
    else:
        blocks.append(Para(["This API has no receipt-specific rule."]))
    blocks.extend(_mask_modes(data))
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
