"""The dispatch section: order, sorting and unreachable kernels."""

from __future__ import annotations

from typing import List

from ..collect import GuideData
from ..ir import (
    Block,
    BulletList,
    Code,
    Inlines,
    Para,
    Strong,
    join,
)
from .common import FOLD_ITEMS, fold, plural


def dispatch_section(data: GuideData) -> List[Block]:
    dispatch = data.model.dispatch
    blocks: List[Block] = []
    if dispatch.mechanism:
        lead: Inlines = ["The dispatch file is written by ", Code(dispatch.mechanism)]
        if dispatch.where:
            lead += [" (", Code(dispatch.where), ")"]
        blocks.append(Para(lead + ["."]))
    if dispatch.order:
        blocks.append(Para(["Dispatch order: ",
                            *join([[Code(o)] for o in dispatch.order], " > "), "."]))
    if dispatch.sorts:
        blocks.append(Para(["Sorting that decides which kernel is tried first:"]))
        blocks.append(BulletList([[s] for s in dispatch.sorts]))
    if dispatch.padding_order:
        notes = [n.strip() for n in dispatch.padding_order.split("; ") if n.strip()]
        blocks.extend(fold(["Order and padding notes from the source (%d)" % len(notes)],
                            [BulletList([[n] for n in notes])], len(notes), FOLD_ITEMS // 4))
    if dispatch.unreachable:
        items: List[Inlines] = [["; ".join("%s: %s" % (k, v) for k, v in sorted(entry.items()))]
                 for entry in dispatch.unreachable]
        blocks.append(Para([Strong("Unreachable kernels"), " (an earlier dispatch branch always "
                            "catches their calls):"]))
        blocks.extend(fold(["Unreachable: %s" % plural(len(items), "finding")],
                            [BulletList(items)], len(items), FOLD_ITEMS))
    else:
        blocks.append(Para(["No unreachable kernel was found."]))
    return blocks
