"""The header line and section 1: the kernel sub-types."""

from __future__ import annotations

from typing import List

from ...guide_data import GuideData, source_rel
from ..ir import Block, BulletList, Code, Inlines, Para, Table
from .cells import arch_suffixes, part_label, plural


def header_inlines(data: GuideData) -> Inlines:
    """``Generated: YYYY-MM-DD | Source: codegen/ops/fmha_<api>.py | Targets: ... | Mask mode: ...``"""
    model = data.model
    opts = model.options
    targets = (", ".join(t for t in str(opts.get("targets") or "").split(",") if t) or "all"
               if "targets" in opts else "all (not selectable in this tree)")
    mask = opts.get("mask") or "not selectable in this tree"
    parts = ["Generated: %s" % data.date, "Source: %s" % source_rel(model),
             "Targets: %s" % targets, "Mask mode: %s" % mask]
    if data.options.receipt is not None:
        parts.append("Receipt: %s" % data.options.receipt)
    if data.options.optdim is not None:
        parts.append("optdim: %s" % data.options.optdim)
    return [" | ".join(parts)]


def types_section(data: GuideData) -> List[Block]:
    model = data.model
    total = sum(k.count for k in model.kernel_types)
    intro: Inlines = [Code("generate.py -a %s" % model.api), " lists %s" % plural(total, "kernel file"),
                      " of %s" % plural(len(model.kernel_types), "sub-type"),
                      " (codegen classes whose objects become ", Code(".cpp"), " files)"]
    if data.api_file:
        intro += [", plus the API dispatch file ", Code(data.api_file)]
    intro.append(".")
    rows: List[List[Inlines]] = [
        [[Code(k.class_name)], [str(k.count)], part_label(k, model), arch_suffixes(k),
         [Code(k.defined_at)] if k.defined_at else [], [Code(k.example)] if k.example else []]
        for k in model.kernel_types]
    blocks: List[Block] = [Para(intro), Table(
        header=["Class", "Kernels", "Filter position", "Arch suffixes", "Defined at",
                "Example file name"],
        rows=rows, classes=["fmha-types"])]
    described = [k for k in model.kernel_types if k.description.strip()]
    if described:
        blocks.append(BulletList([[Code(k.class_name), ": " + " ".join(k.description.split())]
                                  for k in described]))
    return blocks
