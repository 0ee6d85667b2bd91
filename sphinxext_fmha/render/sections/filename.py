"""Section 2: the file-name diagram and its legend."""

from __future__ import annotations

from typing import List, Optional, Sequence

from ...guide_data import GuideData
from ...model import ApiModel, KernelType, Segment
from ..ir import Block, Code, Diagram, DiagramPart, Emph, Inlines, Para, SubHeading, Table, codes, join
from .cells import natural, token_cell


def diagram_of(kernel_type: KernelType) -> Optional[Diagram]:
    """The example file name of ``kernel_type`` cut into its segments (the analysis
    cut it: :attr:`~sphinxext_fmha.model.KernelType.example_tokens`)."""
    example = kernel_type.example
    tokens = kernel_type.example_tokens
    name = "".join(tokens)
    if not example or not tokens or not example.startswith(name):
        return None
    parts = [DiagramPart(token=token, label=segment.label, number=index + 1,
                         literal=segment.literal, constant=segment.constant)
             for index, (segment, token) in enumerate(zip(kernel_type.segments, tokens))]
    suffix = example[len(name):]
    suffix_label = "arch suffix + .cpp" if suffix != ".cpp" else "extension"
    return Diagram(name=example, parts=parts, suffix=suffix, suffix_label=suffix_label,
                   kernel_type=kernel_type.class_name)


def _segment_tokens_summary(segment: Segment, limit: int = 6) -> Inlines:
    tokens = sorted(segment.tokens, key=natural)
    shown = join([token_cell(t) for t in tokens[:limit]])
    if len(tokens) > limit:
        shown = shown + [" ... (%d in all)" % len(tokens)]
    if segment.constant:
        shown = shown + [" ", Emph("(constant)")]
    return shown


def _legend(kernel_type: KernelType, diagram: Optional[Diagram]) -> Table:
    tokens = {p.number: p.token for p in diagram.parts} if diagram else {}
    rows: List[List[Inlines]] = []
    for index, segment in enumerate(kernel_type.segments, start=1):
        example_token = tokens.get(index)
        rows.append([[str(index)], [segment.label],
                     token_cell(example_token) if example_token is not None else [],
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
        blocks.append(diagram if diagram is not None else Para([
            "No example name of ", Code(kernel_type.class_name), " could be cut into its segments."]))
        if legend:
            blocks.append(_legend(kernel_type, diagram))
    return blocks


def filename_section(data: GuideData) -> List[Block]:
    model = data.model
    suffixes = sorted({s for k in model.kernel_types for s in k.arch_suffixes if s})
    intro: Inlines = ["A kernel file name is the kernel name followed by "]
    if suffixes:
        intro += ["an arch suffix (", *codes(suffixes), ") and "]
    intro += [Code(".cpp"), ". ", Code("-f"), " patterns are matched against the kernel name "
              "alone. The kernel name is a sequence of segments; a segment token may be empty "
              "when the feature is off. Each diagram cuts a real file name of this tree."]
    if any(s.constant for k in model.kernel_types for s in k.segments):
        intro += [" A segment whose fields have one value in every kernel of this tree is "
                  "still named by its fields (", Emph("constant"), "): it "
                  "selects nothing, but tells which fields write that text."]
    return [Para(intro)] + filename_blocks(model)
