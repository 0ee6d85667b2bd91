"""The rules section: skip conditions and receipts."""

from __future__ import annotations

from typing import List

from ..collect import GuideData
from ..ir import (
    Block,
    Code,
    Inlines,
    Para,
    Table,
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
    return blocks
