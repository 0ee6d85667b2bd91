"""The kernel selection guide, written once as :mod:`.ir` blocks.

Input: a :class:`~sphinxext_fmha.render.collect.GuideData` (model, measured token
counts, recommendation) or a :class:`~sphinxext_fmha.model.FilterCheck`.  Output:
:class:`~sphinxext_fmha.render.ir.Section` lists that :mod:`.nodes` and
:mod:`.markdown` render.  Deterministic: no dates except the header's, no absolute
paths, every list in a fixed order.
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from ..model import (
    ApiModel,
    Decision,
    FieldInfo,
    FilterCheck,
    KernelType,
    Recommendation,
    Segment,
)
from .collect import SECTION_TITLES, GuideData, source_rel
from .ir import (
    Admonition,
    Block,
    BulletList,
    Code,
    CodeBlock,
    Diagram,
    DiagramPart,
    DocLink,
    Dropdown,
    Emph,
    Inlines,
    Para,
    Section,
    Strong,
    SubHeading,
    Table,
    codes,
    join,
)

#: Tables with more rows than this are folded into a dropdown.
FOLD_ROWS = 12
#: Lists with more items than this are folded into a dropdown.
FOLD_ITEMS = 8

__all__ = [
    "FOLD_ROWS",
    "api_list_table",
    "diagram_of",
    "filename_blocks",
    "filter_check_blocks",
    "guide_sections",
    "recommendation_sections",
    "header_inlines",
]

_NUM = re.compile(r"(\d+)")


def _natural(text: str):
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in _NUM.split(text)]


def _token(token: str) -> Inlines:
    return [Code(token)] if token else [Emph("(no token)")]


def _plural(count: int, word: str, plural: Optional[str] = None) -> str:
    return "%d %s" % (count, word if count == 1 else (plural or word + "s"))


def _fold(title: Inlines, blocks: List[Block], size: int, limit: int = FOLD_ROWS) -> List[Block]:
    """``blocks`` as they are, or folded into a dropdown when ``size`` > ``limit``."""
    if size > limit:
        return [Dropdown(title=title, blocks=blocks)]
    return blocks


def _short(path: str) -> str:
    return path.split(".")[-1][2:] if path.split(".")[-1].startswith("F_") else path.split(".")[-1]


def _filterable(model: ApiModel, kernel_type: KernelType) -> bool:
    return (kernel_type.filter_position is not None
            and kernel_type.class_name not in model.filter.unfiltered_types)


def _part_label(kernel_type: KernelType, model: ApiModel) -> Inlines:
    if not _filterable(model, kernel_type):
        return [Emph("not filtered")]
    if model.filter.api_split:
        return ["part %d" % kernel_type.filter_position]
    return ["the whole pattern"]


def _arch_suffixes(kernel_type: KernelType) -> Inlines:
    suffixes = [s for s in kernel_type.arch_suffixes if s]
    if not suffixes:
        return [Emph("none")]
    return codes(suffixes)


# --------------------------------------------------------------------------- header


def header_inlines(data: GuideData) -> Inlines:
    """``Generated: YYYY-MM-DD | Source: codegen/ops/fmha_<api>.py | Targets: ... | Mask mode: ...``"""
    model = data.model
    opts = model.options
    if "targets" in opts:
        targets = ", ".join(t for t in str(opts.get("targets") or "").split(",") if t) or "all"
    else:
        targets = "all (not selectable in this tree)"
    mask = opts.get("mask") or "not selectable in this tree"
    parts = ["Generated: %s" % data.date, "Source: %s" % source_rel(model),
             "Targets: %s" % targets, "Mask mode: %s" % mask]
    if data.options.receipt is not None:
        parts.append("Receipt: %s" % data.options.receipt)
    if data.options.optdim is not None:
        parts.append("optdim: %s" % data.options.optdim)
    return [" | ".join(parts)]


# --------------------------------------------------------------------------- sections


def guide_sections(data: GuideData, names: Sequence[str]) -> List[Section]:
    builders = {
        "types": _types,
        "filename": _filename,
        "filter": _filter,
        "fields": _fields,
        "minimal": _minimal,
        "losses": _losses,
        "commands": _commands,
        "counts": _counts,
        "tiles": _tiles,
        "rules": _rules,
        "dispatch": _dispatch,
        "gaps": _gaps,
    }
    sections = []
    for name in names:
        if name in ("minimal", "losses", "commands") and data.recommendation is None:
            continue
        sections.append(Section(name=name, title=SECTION_TITLES[name],
                                blocks=builders[name](data)))
    return sections


def _types(data: GuideData) -> List[Block]:
    model = data.model
    total = sum(k.count for k in model.kernel_types)
    intro: Inlines = [Code("generate.py -a %s" % model.api), " lists %s" % _plural(total, "kernel file"),
                      " of %s" % _plural(len(model.kernel_types), "sub-type"),
                      " (codegen classes whose objects become ", Code(".cpp"), " files)"]
    if data.api_file:
        intro += [", plus the API dispatch file ", Code(data.api_file)]
    intro.append(".")
    rows = []
    for kernel_type in model.kernel_types:
        rows.append([[Code(kernel_type.class_name)], [str(kernel_type.count)],
                     _part_label(kernel_type, model), _arch_suffixes(kernel_type),
                     [Code(kernel_type.defined_at)] if kernel_type.defined_at else [],
                     [Code(kernel_type.example)] if kernel_type.example else []])
    blocks: List[Block] = [Para(intro), Table(
        header=["Class", "Kernels", "Filter position", "Arch suffixes", "Defined at",
                "Example file name"],
        rows=rows, classes=["fmha-types"])]
    described = [k for k in model.kernel_types if k.description.strip()]
    if described:
        blocks.append(BulletList([[Code(k.class_name), ": " + " ".join(k.description.split())]
                                  for k in described]))
    return blocks


def diagram_of(kernel_type: KernelType) -> Optional[Diagram]:
    """The example file name of ``kernel_type`` cut into its segments."""
    from ..analysis.grammar import Grammar
    from ..analysis.analyze import split_filename

    example = kernel_type.example
    if not example:
        return None
    name = split_filename(example, kernel_type.arch_suffixes)
    if name is None:
        return None
    tokens = Grammar(segments=kernel_type.segments).parse(name)
    if tokens is None or len(tokens) != len(kernel_type.segments):
        return None
    parts = [DiagramPart(token=token, label=segment.label, number=index + 1,
                         literal=segment.literal)
             for index, (segment, token) in enumerate(zip(kernel_type.segments, tokens))]
    suffix = example[len(name):]
    suffix_label = "arch suffix + .cpp" if suffix != ".cpp" else "extension"
    return Diagram(name=example, parts=parts, suffix=suffix, suffix_label=suffix_label,
                   kernel_type=kernel_type.class_name)


def _segment_tokens_summary(segment: Segment, limit: int = 6) -> Inlines:
    tokens = sorted(segment.tokens, key=_natural)
    shown = join([_token(t) for t in tokens[:limit]])
    if len(tokens) > limit:
        shown = shown + [" ... (%d in all)" % len(tokens)]
    return shown


def _legend(kernel_type: KernelType, diagram: Optional[Diagram]) -> Table:
    tokens = {p.number: p.token for p in diagram.parts} if diagram else {}
    rows = []
    for index, segment in enumerate(kernel_type.segments, start=1):
        example_token = tokens.get(index)
        rows.append([[str(index)], [segment.label],
                     _token(example_token) if example_token is not None else [],
                     codes(segment.fields) if segment.fields else [Emph("literal text")],
                     _segment_tokens_summary(segment)])
    return Table(header=["#", "Segment", "In the example", "Fields", "Tokens"], rows=rows,
                 classes=["fmha-legend"])


def filename_blocks(model: ApiModel, kernel_types: Optional[Sequence[KernelType]] = None,
                    legend: bool = True, headings: bool = True) -> List[Block]:
    blocks: List[Block] = []
    kernel_types = list(kernel_types if kernel_types is not None else model.kernel_types)
    for kernel_type in kernel_types:
        if headings and len(model.kernel_types) > 1:
            blocks.append(SubHeading([Code(kernel_type.class_name)]))
        diagram = diagram_of(kernel_type)
        if diagram is not None:
            blocks.append(diagram)
        else:
            blocks.append(Para(["No example name of ", Code(kernel_type.class_name),
                                " could be cut into its segments."]))
        if legend:
            blocks.append(_legend(kernel_type, diagram))
    return blocks


def _filename(data: GuideData) -> List[Block]:
    model = data.model
    suffixes = sorted({s for k in model.kernel_types for s in k.arch_suffixes if s})
    intro: Inlines = ["A kernel file name is the kernel name followed by "]
    if suffixes:
        intro += ["an arch suffix (", *codes(suffixes), ") and "]
    intro += [Code(".cpp"), ". ", Code("-f"), " patterns are matched against the kernel name "
              "alone. The kernel name is a sequence of segments; a segment token may be empty "
              "when the feature is off. Each diagram cuts a real file name of this tree."]
    return [Para(intro)] + filename_blocks(model)


def _filter(data: GuideData) -> List[Block]:
    model = data.model
    spec = model.filter
    by_class = {k.class_name: k for k in model.kernel_types}
    items: List[Inlines] = []
    if spec.cli_split:
        items.append(["generate.py splits the ", Code("-f"), " value on ", Code(spec.cli_split),
                      " into one filter per API named in ", Code("-a"), " (same order); with ",
                      Code("-a %s" % model.api), " alone, this API's filter is the text before "
                      "the first ", Code(spec.cli_split), "."])
    else:
        items.append(["generate.py passes the whole ", Code("-f"), " value to every API named "
                      "in ", Code("-a"), " (it is not split per API)."])
    if spec.api_split:
        items.append(["Within this API's filter, ", Code(spec.api_split), " separates %s, "
                      "each matched against the kernel names of its own sub-types (see below)."
                      % _plural(len(spec.parts), "part")])
    items.append(["Patterns are shell-style wildcards (Python ", Code("fnmatch"),
                  ": ", Code("*"), ", ", Code("?"), ", ", Code("[seq]"), ") matched against the "
                  "whole kernel name, so a pattern usually starts and ends with ", Code("*"), "."])
    if spec.drops == "trait":
        items.append(["Kernels generated together from one trait (one kernel of each filtered "
                      "sub-type) are kept or dropped together: a trait is kept only if every "
                      "part matches its kernel, so ", Strong("one failed match drops the whole "
                                                            "trait"), "."])
    else:
        items.append(["A kernel whose name does not match is ", Strong("dropped on its own"),
                      "; no other kernel is affected."])
    if spec.unfiltered_types:
        items.append(["Never filtered (always generated): ", *codes(spec.unfiltered_types), "."])
    if spec.empty_filter:
        items.append(["An empty ", Code("-f"), ": " + spec.empty_filter])
    else:
        items.append(["Without ", Code("-f"), " (or with an empty one) every kernel is "
                      "generated."])
    if not spec.api_split and spec.parts:
        items.insert(1, ["The pattern is matched against the kernel names of ",
                         *codes([c for p in spec.parts for c in p.applies_to]), "."])
    blocks: List[Block] = [BulletList(items)]
    if spec.api_split and spec.parts:
        rows = []
        for part in spec.parts:
            classes = part.applies_to
            if part.position == 0:
                missing: Inlines = [Emph("(always present)")]
            elif part.missing_becomes is None or part.missing_becomes == "":
                missing = ["not applied (no filtering)"]
            else:
                missing = [Code(part.missing_becomes)]
            rows.append([[str(part.position)], codes(classes), missing])
        blocks.append(Table(header=["Part", "Applies to", "When missing"], rows=rows,
                            classes=["fmha-parts"]))
        if spec.api_split and len(spec.parts) > 1:
            example = spec.api_split.join(
                "<%s>" % "|".join(_leading_literal(by_class.get(c)) or c for c in part.applies_to)
                for part in spec.parts)
            blocks.append(Para(["Shape of a filter: ", Code("-f '%s'" % example),
                                " where each ", Code("<...>"), " is a pattern for the names "
                                "that start with that text."]))
    if spec.source:
        blocks.append(Para(["Read from: ", *codes(spec.source), "."]))
    return blocks


def _leading_literal(kernel_type: Optional[KernelType]) -> str:
    if kernel_type and kernel_type.segments and kernel_type.segments[0].literal:
        tokens = list(kernel_type.segments[0].tokens)
        if len(tokens) == 1:
            return tokens[0] + "*"
    return ""


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
            pieces.append(symbol if len(mapped) == 1 else "%s=%s" % (_short(path), symbol))
        if pieces:
            text = ", ".join(pieces)
            if text not in found:
                found.append(text)
    return join([[Code(t)] for t in found], "; ")


def _dispatch_levels(model: ApiModel, segment: Segment) -> List[str]:
    names = {segment.label} | {_short(p) for p in segment.fields}
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
    for text in [segment.label] + [_short(p) for p in segment.fields]:
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


def _fields(data: GuideData) -> List[Block]:
    model = data.model
    infos = {f.path: f for f in model.fields}
    blocks: List[Block] = []
    filterable = [k for k in model.kernel_types if _filterable(model, k)]
    blocks.append(Para(["One table per segment of the kernel name that ", Code("-f"),
                        " can select on: each token, what it means, the C++ symbol the "
                        "codegen substitutes for it (where the module maps one), the condition "
                        "under which the generated dispatcher calls its kernels (where the "
                        "API dispatch file shows one), and how many kernels of the full "
                        "listing carry it."]))
    for kernel_type in model.kernel_types:
        if kernel_type not in filterable:
            blocks.append(Para([Code(kernel_type.class_name), " is not filtered by ", Code("-f"),
                                "; its segments are shown in the file name section."]))
    for kernel_type in filterable:
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
                                    % _plural(len(segment.tokens), "token")],
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
    for token in sorted(segment.tokens, key=_natural):
        row = [_token(token), [segment.tokens[token]]]
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


# --------------------------------------------------------------------------- recommendation


def _decisions_by_type(rec: Recommendation) -> List[Tuple[str, List[Decision]]]:
    order: List[str] = []
    grouped: Dict[str, List[Decision]] = {}
    for decision in rec.decisions:
        if decision.kernel_type not in grouped:
            order.append(decision.kernel_type)
            grouped[decision.kernel_type] = []
        grouped[decision.kernel_type].append(decision)
    return [(k, grouped[k]) for k in order]


def _verified(flag: bool) -> str:
    return "verified with generate.py" if flag else "NOT verified"


def _minimal(data: GuideData) -> List[Block]:
    assert data.recommendation is not None
    return _minimal_blocks(data.recommendation)


def _tokens_natural(tokens: Sequence[str]) -> Inlines:
    return join([_token(t) for t in sorted(tokens, key=_natural)]) or ["-"]


def _minimal_blocks(rec: Recommendation) -> List[Block]:
    blocks: List[Block] = []
    if rec.keep_count == rec.union_count or not rec.runs:
        blocks.append(Para(["The minimal set has ", Strong(str(rec.keep_count)), " kernels (%s)."
                            % _verified(rec.verified)]))
    else:
        blocks.append(Para(["The keep set has ", Strong(str(rec.keep_count)), " kernels; the "
                            "filter commands select ", Strong(str(rec.union_count)),
                            " (%s; see the notes below)." % _verified(rec.verified)]))
    grouped = _decisions_by_type(rec)
    for class_name, decisions in grouped:
        if len(grouped) > 1:
            blocks.append(SubHeading([Code(class_name)]))
        whole: Dict[str, List[str]] = {}
        rows = []
        for decision in decisions:
            if not decision.drop:
                whole.setdefault(decision.reason or decision.category, []).append(decision.segment)
                continue
            why = decision.reason
            if decision.category and decision.category != "other":
                why = "%s: %s" % (decision.category, why) if why else decision.category
            rows.append([[decision.segment], _tokens_natural(decision.keep),
                         _tokens_natural(decision.drop), [why]])
        if rows:
            blocks.append(Table(header=["Segment", "Keep", "Drop", "Why"], rows=rows,
                                classes=["fmha-decisions"]))
        for reason, segments in whole.items():
            blocks.append(Para(["Kept whole: ", *join([[Strong(g)] for g in segments]), "."]
                               + ([" Why: %s." % reason.rstrip(".")] if reason else [])))
    if rec.notes:
        blocks.append(Para(["Notes:"]))
        blocks.append(BulletList([[note] for note in rec.notes]))
    return blocks


def _losses(data: GuideData) -> List[Block]:
    assert data.recommendation is not None
    return _losses_blocks(data.recommendation)


def _losses_blocks(rec: Recommendation) -> List[Block]:
    items: List[Inlines] = []
    for decision in rec.decisions:
        for token in decision.drop:
            loss = decision.losses.get(token, "")
            item: Inlines = _token(token) + [" (%s" % decision.segment]
            if len({d.kernel_type for d in rec.decisions}) > 1:
                item += [", ", Code(decision.kernel_type)]
            item.append(")")
            if loss:
                item.append(": " + loss)
            items.append(item)
    if not items:
        return [Para(["Nothing: the minimal set keeps every token."])]
    return [Para(["Without these kernels, calls that need them find no kernel in the "
                  "dispatcher:"]), BulletList(items)]


def _commands(data: GuideData) -> List[Block]:
    assert data.recommendation is not None
    return _commands_blocks(data.recommendation)


def _commands_blocks(rec: Recommendation) -> List[Block]:
    blocks: List[Block] = []
    if not rec.runs:
        return [Para(["No filter run is needed: the minimal set is the full set."])]
    for index, run in enumerate(rec.runs, start=1):
        lead: Inlines = ["Run %d selects " % index if len(rec.runs) > 1 else "Selects ",
                         Strong(str(run.count)), " kernels (%s):" % _verified(run.verified)]
        blocks.append(Para(lead))
        blocks.append(CodeBlock(run.command, "bash"))
    if len(rec.runs) > 1:
        blocks.append(Para(["Together the runs select ", Strong(str(rec.union_count)),
                            " kernels; merge their listings with:"]))
        if rec.merge_command:
            blocks.append(CodeBlock(rec.merge_command, "bash"))
        caution = rec.merge_caution or (
            "Each run writes the API dispatch file again: the file of the last run only "
            "dispatches to that run's kernels. Regenerate the dispatch file for the union "
            "(see the driver command) instead of keeping one run's file.")
        blocks.append(Admonition("caution", [Para([caution])]))
    if rec.driver_command:
        blocks.append(Para(["Driver (%s):" % _verified(rec.driver_verified)]))
        blocks.append(CodeBlock(rec.driver_command, "bash"))
    return blocks


def _count_table(rec: Optional[Recommendation], model: Optional[ApiModel]) -> Table:
    """Full vs minimal kernels per sub-type (``rec.counts``: class -> {full, minimal},
    plus ``total``)."""
    counts = dict(rec.counts) if rec is not None and rec.counts else {}
    total = counts.pop("total", None)
    if model is not None:
        classes = [k.class_name for k in model.kernel_types]
        full: Dict[str, int] = {k.class_name: k.count for k in model.kernel_types}
    else:
        classes = list(counts)
        full = {}
    minimal: Dict[str, int] = {}
    for class_name, values in counts.items():
        if not isinstance(values, dict):
            continue
        if class_name not in classes:
            classes.append(class_name)
        if "full" in values:
            full[class_name] = int(values["full"])
        if "minimal" in values:
            minimal[class_name] = int(values["minimal"])
    with_minimal = rec is not None and bool(minimal or total)
    header = ["Sub-type", "Full"] + (["Minimal", "Reduction"] if with_minimal else [])
    rows = []
    for class_name in classes:
        row = [[Code(class_name)], [str(full.get(class_name, 0))]]
        if with_minimal:
            row += [[str(minimal.get(class_name, 0))],
                    [_reduction(full.get(class_name, 0), minimal.get(class_name, 0))]]
        rows.append(row)
    total_full = sum(full.get(c, 0) for c in classes)
    total_min = sum(minimal.get(c, 0) for c in classes)
    if isinstance(total, dict):
        total_full = int(total.get("full", total_full))
        total_min = int(total.get("minimal", total_min))
    total_row = [[Strong("Total")], [Strong(str(total_full))]]
    if with_minimal:
        total_row += [[Strong(str(total_min))], [Strong(_reduction(total_full, total_min))]]
    rows.append(total_row)
    return Table(header=header, rows=rows, classes=["fmha-counts"])


def recommendation_sections(rec: Recommendation, model: Optional[ApiModel] = None) -> List[Section]:
    """Sections 5-8 from a recommendation alone (the CLI's ``recommend``)."""
    return [
        Section("minimal", SECTION_TITLES["minimal"], _minimal_blocks(rec)),
        Section("losses", SECTION_TITLES["losses"], _losses_blocks(rec)),
        Section("commands", SECTION_TITLES["commands"], _commands_blocks(rec)),
        Section("counts", SECTION_TITLES["counts"], [_count_table(rec, model)]),
    ]


def _reduction(full: int, minimal: int) -> str:
    if not full:
        return "-"
    return "%.1f %%" % (100.0 * (full - minimal) / full)


def _counts(data: GuideData) -> List[Block]:
    blocks: List[Block] = []
    if data.recommendation is None:
        blocks.append(Para(["Kernels per sub-type in the full listing (", Code(
            data.listing_command or "generate.py -l"), "):"]))
    else:
        blocks.append(Para(["Kernels per sub-type, full listing and recommended minimal set:"]))
    blocks.append(_count_table(data.recommendation, data.model))
    return blocks


# --------------------------------------------------------------------------- details


def _hdim_key(key: str):
    return _natural(key)


def _tiles(data: GuideData) -> List[Block]:
    model = data.model
    blocks: List[Block] = []
    if not model.factories:
        blocks.append(Para(["No tile table was found in the module."]))
    for factory in model.factories:
        heading: Inlines = [Code(factory.class_name)]
        if factory.arch:
            heading.append(" (%s)" % factory.arch)
        blocks.append(SubHeading(heading))
        facts: List[Inlines] = []
        if factory.defined_at:
            facts.append(["Defined at ", Code(factory.defined_at)])
        if factory.selected_by:
            facts.append(["Used when ", Code(factory.selected_by)])
        if factory.bases:
            facts.append(["Bases: ", *codes(factory.bases)])
        if factory.dtypes:
            facts.append(["Data types: ", *codes(factory.dtypes)])
        if factory.unsupported_dtypes:
            facts.append(["No tiles for: ", *codes(factory.unsupported_dtypes)])
        if facts:
            blocks.append(BulletList(facts))
        rows = []
        for dtype in factory.tiles:
            for hdim in sorted(factory.tiles[dtype], key=_hdim_key):
                tiles = factory.tiles[dtype][hdim]
                rows.append([[Code(dtype)], [Code(hdim)], join([[Code(t)] for t in tiles], " ")])
        if rows:
            table = Table(header=["dtype", "hdim", "Tiles"], rows=rows, classes=["fmha-tiles"])
            blocks.extend(_fold([Code(factory.class_name), ": %s" % _plural(len(rows), "tile row")],
                                [table], len(rows)))
    for tile in model.tiles:
        rows = [[[Code(f.name)], [" ".join(f.comment.split())]] for f in tile.fields]
        inner: List[Block] = []
        if tile.defined_at:
            origin: Inlines = ["Defined at ", Code(tile.defined_at)]
            if tile.imported_from:
                origin += [" (imported from ", Code(tile.imported_from), ")"]
            inner.append(Para(origin + ["."]))
        if rows:
            inner.append(Table(header=["Field", "Comment"], rows=rows, classes=["fmha-tilefields"]))
        if tile.name_source:
            inner.append(Para(["How the tile names itself:"]))
            inner.append(CodeBlock(tile.name_source, "python"))
        blocks.append(Dropdown(title=["Tile class ", Code(tile.class_name)], blocks=inner))
    return blocks


def _rules(data: GuideData) -> List[Block]:
    model = data.model
    blocks: List[Block] = []
    if model.skip_conditions:
        rows = [[[s.kind], [Code(s.source)], [s.reading], [Code(s.where)] if s.where else []]
                for s in model.skip_conditions]
        table = Table(header=["Kind", "Condition", "Reading", "Where"], rows=rows,
                      classes=["fmha-skips"])
        blocks.append(Para(["Conditions under which the codegen skips a combination or a "
                            "kernel (", _plural(len(rows), "condition"), "):"]))
        blocks.extend(_fold(["Skip conditions: %s" % _plural(len(rows), "condition")], [table],
                            len(rows)))
    else:
        blocks.append(Para(["No skip condition was found."]))
    if model.receipts:
        rows = [[[Code(r.value)], [r.label], [r.reading], [Code(r.where)] if r.where else []]
                for r in model.receipts]
        table = Table(header=["Receipt", "Label", "Keeps", "Where"], rows=rows,
                      classes=["fmha-receipts"])
        blocks.append(Para(["Receipts (", Code("-r"), ") narrow the set for an integration:"]))
        blocks.extend(_fold(["Receipts: %s" % _plural(len(rows), "receipt")], [table], len(rows)))
    else:
        blocks.append(Para(["This API has no receipt-specific rule."]))
    return blocks


def _dispatch(data: GuideData) -> List[Block]:
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
        blocks.extend(_fold(["Order and padding notes from the source (%d)" % len(notes)],
                            [BulletList([[n] for n in notes])], len(notes), FOLD_ITEMS // 4))
    if dispatch.unreachable:
        items = [["; ".join("%s: %s" % (k, v) for k, v in sorted(entry.items()))]
                 for entry in dispatch.unreachable]
        blocks.append(Para([Strong("Unreachable kernels"), " (an earlier dispatch branch always "
                            "catches their calls):"]))
        blocks.extend(_fold(["Unreachable: %s" % _plural(len(items), "finding")],
                            [BulletList(items)], len(items), FOLD_ITEMS))
    else:
        blocks.append(Para(["No unreachable kernel was found."]))
    return blocks


def _gaps(data: GuideData) -> List[Block]:
    model = data.model
    baseline = model.baseline
    blocks: List[Block] = [Para([
        "All %d listed file names parse with the derived grammar." % baseline.count
        if baseline.parsed == baseline.count else
        "%d of %d listed file names parse with the derived grammar (%d unparsed, %d ambiguous)."
        % (baseline.parsed, baseline.count, len(baseline.unparsed), len(baseline.ambiguous))])]
    odd = sorted(baseline.unparsed) + sorted(baseline.ambiguous)
    if odd:
        blocks.extend(_fold(["Names that do not parse: %d" % len(odd)],
                            [BulletList([[Code(n)] for n in odd])], len(odd), FOLD_ITEMS))
    if model.gaps:
        items = []
        for gap in model.gaps:
            item: Inlines = [gap.what]
            if gap.where:
                item += [" (", Code(gap.where), ")"]
            if gap.why:
                item.append(": " + gap.why)
            items.append(item)
        blocks.append(Para([Strong("Gaps"), ": what the analysis could not determine "
                            "(nothing is guessed):"]))
        blocks.append(BulletList(items))
    else:
        blocks.append(Para(["The analysis left no gap."]))
    if model.checks:
        rows = [[[Code(str(k))], [_check_value(v)]] for k, v in sorted(model.checks.items())]
        blocks.append(Dropdown(title=["Analysis checks (%d)" % len(rows)],
                               blocks=[Table(header=["Check", "Value"], rows=rows,
                                             classes=["fmha-checks"])]))
    return blocks


def _check_value(value: object) -> str:
    if isinstance(value, dict):
        return ", ".join("%s: %s" % (k, _check_value(v)) for k, v in sorted(value.items()))
    if isinstance(value, (list, tuple)):
        return ", ".join(_check_value(v) for v in value) or "none"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


# --------------------------------------------------------------------------- filter check


def filter_check_blocks(check: FilterCheck, expectations: Iterable[Tuple[str, bool]] = (),
                        model: Optional[ApiModel] = None) -> List[Block]:
    """The command, counts per sub-type and the per-segment breakdown of a filter."""
    blocks: List[Block] = [CodeBlock(check.command, "bash")]
    summary: Inlines = ["generate.py selects ", Strong(str(check.count)), " of %d kernels"
                        % check.baseline_count]
    if check.verified:
        summary.append("; the model predicts the same set.")
    else:
        summary.append("; the model predicts %d (the model is wrong for this filter)."
                       % check.predicted)
    blocks.append(Para(summary))
    classes = list(check.baseline_per_type) or list(check.per_type)
    if model is not None:
        order = [k.class_name for k in model.kernel_types]
        classes = [c for c in order if c in classes] + [c for c in classes if c not in order]
    rows = [[[Code(c)], [str(check.baseline_per_type.get(c, 0))], [str(check.per_type.get(c, 0))],
             [str(check.predicted_per_type.get(c, 0))]] for c in classes]
    blocks.append(Table(header=["Sub-type", "All", "Selected", "Predicted"], rows=rows,
                        classes=["fmha-check-counts"]))
    changed = [row for row in check.breakdown if any(c.selected != c.baseline for c in row.counts)]
    unchanged = [row for row in check.breakdown if row not in changed]
    several = len({row.kernel_type for row in check.breakdown}) > 1
    if changed:
        rows = []
        for row in changed:
            for count in row.counts:
                if not count.baseline and not count.selected:
                    continue
                cells = [[row.segment], _token(count.token), [count.meaning],
                         [str(count.baseline)], [str(count.selected)]]
                if several:
                    cells.insert(0, [Code(row.kernel_type)])
                rows.append(cells)
        header = ["Segment", "Token", "Meaning", "All", "Selected"]
        if several:
            header.insert(0, "Sub-type")
        table = Table(header=header, rows=rows, classes=["fmha-breakdown"])
        blocks.append(Para(["Segments the filter changes:"]))
        blocks.extend(_fold(["Breakdown: %s" % _plural(len(rows), "row")], [table], len(rows),
                            FOLD_ROWS * 2))
    if unchanged:
        names = sorted({(row.kernel_type, row.segment) for row in unchanged},
                       key=lambda p: (classes.index(p[0]) if p[0] in classes else 99, p[1]))
        blocks.append(Para(["Unchanged segments: "] + join(
            [[row_seg if not several else "%s %s" % (row_type, row_seg)]
             for row_type, row_seg in names]) + ["."]))
    if check.side_effects:
        blocks.append(Admonition("note", [Para(["Side effects (tokens dropped that the filter "
                                                "does not name):"]),
                                          BulletList([[s] for s in check.side_effects])]))
    if check.notes:
        blocks.append(BulletList([[n] for n in check.notes]))
    expectations = list(expectations)
    if expectations:
        blocks.append(BulletList([[text, ": ", Strong("met" if ok else "NOT met")]
                                  for text, ok in expectations]))
    return blocks


# --------------------------------------------------------------------------- api list


def api_list_table(rows: Sequence[Tuple[str, str, Optional[int], str]],
                   link: Optional[str] = None) -> Table:
    """``rows``: (api, module, kernels or None, note); ``link``: a docname template
    with ``{api}``."""
    body = []
    for api, module, count, note in rows:
        name: Inlines = [Code(api)]
        if link:
            name = [DocLink(target=link.format(api=api), content=[Code(api)])]
        body.append([name, [Code(module)], [str(count)] if count is not None else ["-"],
                     [note] if note else []])
    return Table(header=["API", "Module", "Kernels", "Notes"], rows=body,
                 classes=["fmha-apis"])
