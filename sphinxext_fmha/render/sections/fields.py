"""Section 4: the field reference (tokens, meanings, C++ symbols, dispatch conditions)."""

from __future__ import annotations

import re
from typing import Any, Dict, List

from ...guide_data import GuideData
from ...model import (
    ApiModel,
    FieldInfo,
    KernelType,
    Segment,
)
from ..ir import (
    Block,
    BulletList,
    Code,
    Dropdown,
    Emph,
    Inlines,
    Para,
    Strong,
    SubHeading,
    Table,
    codes,
    join,
)
from .common import FOLD_ROWS, filterable, fold, natural, plural, short_field, token_cell

#: a :class:`~sphinxext_fmha.verify.token_facts.ConditionGroup` (renderers take data and
#: do not import the verification layer)
ConditionGroup = Any


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


def _condition_inlines(group: ConditionGroup) -> Inlines:
    """C++ and plain words of one condition group."""
    if group.unreached:
        return [Emph("not launched by any dispatch branch")]
    if not group.cpp:
        return ["-"]
    cpp = " && ".join("(%s)" % term if "||" in term else term for term in group.cpp)
    return [Code(cpp), " (" + "; ".join(group.words) + ")"]


def _where_inlines(group: ConditionGroup) -> Inlines:
    parts: List[Inlines] = []
    for label, tokens in group.where.items():
        parts.append([label + ": ", *join([token_cell(t) for t in sorted(tokens, key=natural)])])
    text: Inlines = join(parts, "; ") if parts else ["every kernel of the token"]
    return text + [" (%s%s)" % (plural(group.kernels, "kernel"),
                               ", reached by branches with differing extra conditions"
                               if group.varying else "")]


def _condition_cell(groups: List[ConditionGroup], label: str) -> Inlines:
    """One condition in the cell; several are listed in full below the table."""
    if not groups:
        return ["-"]
    if len(groups) == 1:
        return _condition_inlines(groups[0])
    return ["%d conditions, by kernel group: see " % len(groups),
            Strong("Dispatch conditions of %s" % label), " below"]


def _condition_details(groups_by_token: Dict[str, List[ConditionGroup]], label: str) -> List[Block]:
    rows = [[token_cell(token), _condition_inlines(group), _where_inlines(group)]
            for token in sorted(groups_by_token, key=natural)
            if len(groups_by_token[token]) > 1
            for group in groups_by_token[token]]
    if not rows:
        return []
    table = Table(header=["Token", "Dispatch condition", "Kernels"], rows=rows,
                  classes=["fmha-field-dispatch"])
    return fold([Strong("Dispatch conditions of %s" % label), " (%d)" % len(rows)], [table],
                len(rows))


def _shared_conditions(data: GuideData, kernel_type: KernelType) -> List[Block]:
    dispatch = data.token_dispatch
    if dispatch is None:
        return []
    blocks: List[Block] = []
    shared = dispatch.shared.get(kernel_type.class_name, [])
    if shared:
        blocks.append(Para(["Every dispatched ", Code(kernel_type.class_name),
                            " kernel also needs (not repeated per token): ",
                            *join([[Code(cpp), " (%s)" % words] for cpp, words in shared], "; "),
                            "."]))
    undetermined = dispatch.undetermined.get(kernel_type.class_name, [])
    if undetermined:
        blocks.append(Para(["Conditions whose text no segment of the kernel name decides "
                            "(shown here, not per token): ",
                            *codes(undetermined), "."]))
    return blocks


def fields_section(data: GuideData) -> List[Block]:
    model = data.model
    infos = {f.path: f for f in model.fields}
    blocks: List[Block] = []
    filtered_types = [k for k in model.kernel_types if filterable(model, k)]
    blocks.append(Para(["One table per segment of the kernel name that ", Code("-f"),
                        " can select on: each token, what it means, the C++ symbol the "
                        "codegen substitutes for it (where the module maps one), the exact "
                        "condition under which the generated dispatcher calls its kernels "
                        "(the terms of the API dispatch file that this segment's tokens "
                        "decide, per kernel group where they differ), and how many kernels "
                        "of the full listing carry it."]))
    for kernel_type in model.kernel_types:
        if kernel_type not in filtered_types:
            blocks.append(Para([Code(kernel_type.class_name), " is not filtered by ", Code("-f"),
                                "; its segments are shown in the file name section."]))
    for kernel_type in filtered_types:
        if len(model.kernel_types) > 1:
            blocks.append(SubHeading([Code(kernel_type.class_name), " (filter %s)"
                                      % ("part %s" % kernel_type.filter_position
                                         if model.filter.api_split else "pattern")]))
        blocks.extend(_shared_conditions(data, kernel_type))
        for index, segment in enumerate(kernel_type.segments):
            if segment.literal or segment.constant:
                continue
            blocks.extend(_segment_table(data, kernel_type, index, segment, infos))
        blocks.extend(_constant_segments(kernel_type))
    return blocks


def _constant_segments(kernel_type: KernelType) -> List[Block]:
    """Segments with one token in this tree: named briefly, nothing to select."""
    items = [[Strong(s.label), " ", *token_cell(next(iter(s.tokens))), " (", *codes(s.fields), ")"]
             for s in kernel_type.segments if s.constant]
    if not items:
        return []
    return [Para(["Constant in this tree (one token each, so ", Code("-f"), " has nothing to "
                  "choose): ", *join(items, "; "), "."])]


def _segment_table(data: GuideData, kernel_type: KernelType, index: int, segment: Segment,
                   infos: Dict[str, FieldInfo]) -> List[Block]:
    model = data.model
    counts = data.token_counts.get((kernel_type.class_name, index), {})
    described: List[Block] = [Para(["Segment ", Strong(segment.label), " (%s)"
                                    % plural(len(segment.tokens), "token")],
                                   ["fmha-segment"], anchor=segment.label)]
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
    conditions = (data.token_dispatch.groups.get((kernel_type.class_name, index), {})
                  if data.token_dispatch is not None else {})
    show_dispatch = any(g.cpp or g.unreached for groups in conditions.values() for g in groups)
    header = (["Token", "Meaning"] + (["C++ symbol"] if show_cpp else [])
              + (["Dispatch condition"] if show_dispatch else []) + ["Kernels"])
    rows: List[List[Inlines]] = []
    for token in sorted(segment.tokens, key=natural):
        row: List[Inlines] = [token_cell(token), [segment.tokens[token]]]
        if show_cpp:
            row.append(_cpp_symbol(segment.values.get(token, []), infos))
        if show_dispatch:
            row.append(_condition_cell(conditions.get(token, []), segment.label))
        row.append([str(counts.get(token, 0))])
        rows.append(row)
    table = Table(header=header, rows=rows, classes=["fmha-field"])
    details = _condition_details(conditions, segment.label) if show_dispatch else []
    if len(rows) > FOLD_ROWS:
        return described + [Dropdown(title=["Tokens of ", Strong(segment.label), " (%d)"
                                            % len(rows)], blocks=[table])] + details
    return described + [table] + details
