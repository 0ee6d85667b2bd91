"""Section 4: the field reference (tokens, meanings, C++ symbols, dispatch conditions)."""

from __future__ import annotations

import re
from typing import Dict, List

from ...model import (
    ApiModel,
    FieldInfo,
    KernelType,
    Segment,
)
from ..collect import GuideData
from ..ir import (
    Block,
    BulletList,
    Code,
    Dropdown,
    Inlines,
    Para,
    Strong,
    SubHeading,
    Table,
    codes,
    join,
)
from .common import FOLD_ROWS, filterable, natural, plural, short_field, token_cell


def _cpp_symbol(token_values: List[Dict[str, str]], infos: Dict[str, FieldInfo]) -> Inlines:
    """C++ symbols of a token's field values (from the module's symbol maps)."""
    found: List[str] = []
    mapped = [p for p in sorted({p for combo in token_values for p in combo})
              if infos.get(p) and infos[p].cpp_symbols]
    for combo in token_values:
        pieces = []
        for path in mapped:
            value = combo.get(path)
            symbol = infos[path].cpp_symbols.get(value) if value is not None else None
            if symbol is None:
                continue
            pieces.append(symbol if len(mapped) == 1 else "%s=%s" % (short_field(path), symbol))
        if pieces:
            text = ", ".join(pieces)
            if text not in found:
                found.append(text)
    return join([[Code(t)] for t in found], "; ")


def _dispatch_levels(model: ApiModel, segment: Segment) -> List[str]:
    names = {segment.label} | {short_field(p) for p in segment.fields}
    levels = []
    for level in model.dispatch.order:
        words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", level))
        if words & names:
            levels.append(level)
    return levels


_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def _related(term: str, segment: Segment) -> bool:
    """Whether a dispatch-condition term talks about the segment's own fields."""
    names = set()
    for text in [segment.label] + [short_field(p) for p in segment.fields]:
        names.update(w.lower() for w in re.split(r"[^A-Za-z0-9]+", text) if len(w) >= 3)
    words = {w.lower() for w in _WORD.findall(term) if len(w) >= 3}
    return any(a in b or b in a for a in names for b in words)


def _condition_cell(terms: List[str], segment: Segment, limit: int = 3) -> Inlines:
    """The terms about this segment first; at most ``limit``, then how many more."""
    if not terms:
        return ["-"]
    ordered = [t for t in terms if _related(t, segment)] + [t for t in terms if not _related(t, segment)]
    cell = join([[Code(t)] for t in ordered[:limit]], "; ")
    if len(ordered) > limit:
        cell.append(" (+%d more)" % (len(ordered) - limit))
    return cell


def fields_section(data: GuideData) -> List[Block]:
    model = data.model
    infos = {f.path: f for f in model.fields}
    blocks: List[Block] = []
    filtered_types = [k for k in model.kernel_types if filterable(model, k)]
    blocks.append(Para(["One table per segment of the kernel name that ", Code("-f"),
                        " can select on: each token, what it means, the C++ symbol the "
                        "codegen substitutes for it (where the module maps one), the condition "
                        "under which the generated dispatcher calls its kernels (where the "
                        "API dispatch file shows one), and how many kernels of the full "
                        "listing carry it."]))
    for kernel_type in model.kernel_types:
        if kernel_type not in filtered_types:
            blocks.append(Para([Code(kernel_type.class_name), " is not filtered by ", Code("-f"),
                                "; its segments are shown in the file name section."]))
    for kernel_type in filtered_types:
        if len(model.kernel_types) > 1:
            blocks.append(SubHeading([Code(kernel_type.class_name), " (filter %s)"
                                      % ("part %d" % kernel_type.filter_position
                                         if model.filter.api_split else "pattern")]))
        for index, segment in enumerate(kernel_type.segments):
            if segment.literal:
                continue
            blocks.extend(_segment_table(data, kernel_type, index, segment, infos))
    return blocks


def _segment_table(data: GuideData, kernel_type: KernelType, index: int, segment: Segment,
                   infos: Dict[str, FieldInfo]) -> List[Block]:
    model = data.model
    counts = data.token_counts.get((kernel_type.class_name, index), {})
    described: List[Block] = [Para(["Segment ", Strong(segment.label), " (%s)"
                                    % plural(len(segment.tokens), "token")],
                                   ["fmha-segment"])]
    field_items: List[Inlines] = []
    for path in segment.fields:
        info = infos.get(path)
        item: Inlines = [Code(path)]
        if info is not None:
            if info.comment:
                item.append(": " + " ".join(info.comment.split()))
            if info.defined_at:
                item += [" (", Code(info.defined_at), ")"]
            if info.symbol_map:
                item += [", C++ symbols from ", Code(info.symbol_map)]
            if info.hard_coded:
                item += ["; values without a symbol-map entry (hard-coded): ",
                         *codes(info.hard_coded)]
        field_items.append(item)
    if field_items:
        described.append(BulletList(field_items))
    levels = _dispatch_levels(model, segment)
    if levels:
        described.append(Para(["Dispatch: the API dispatcher selects on ",
                               *codes(levels), " (dispatch order: ",
                               " > ".join(model.dispatch.order), ")."]))
    show_cpp = any(infos.get(p) and infos[p].cpp_symbols for p in segment.fields)
    conditions = data.token_conditions.get((kernel_type.class_name, index), {})
    show_dispatch = any(conditions.get(t) for t in segment.tokens)
    header = (["Token", "Meaning"] + (["C++ symbol"] if show_cpp else [])
              + (["Dispatch condition"] if show_dispatch else []) + ["Kernels"])
    rows = []
    for token in sorted(segment.tokens, key=natural):
        row = [token_cell(token), [segment.tokens[token]]]
        if show_cpp:
            row.append(_cpp_symbol(segment.values.get(token, []), infos))
        if show_dispatch:
            row.append(_condition_cell(conditions.get(token, []), segment))
        row.append([str(counts.get(token, 0))])
        rows.append(row)
    table = Table(header=header, rows=rows, classes=["fmha-field"])
    if len(rows) > FOLD_ROWS:
        return described + [Dropdown(title=["Tokens of ", Strong(segment.label), " (%d)"
                                            % len(rows)], blocks=[table])]
    return described + [table]
