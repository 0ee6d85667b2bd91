"""The guide as GitHub-flavoured Markdown (what ``sphinxext-fmha guide API -o FILE``
writes): folded blocks become ``<details>``, admonitions GitHub alerts, the file-name
diagram a fenced block with a numbered ruler."""

from __future__ import annotations

import html
import re
from typing import List, Optional, Sequence

from ..bump_data import FilterComparison
from ..guide_data import RECOMMENDATION_SECTIONS, GuideData, parse_sections
from ..model import Recommendation
from .diagram import diagram_text
from .guide_blocks import guide_sections, header_inlines, recommendation_sections
from .ir import (
    Admonition,
    Block,
    BulletList,
    Code,
    CodeBlock,
    Diagram,
    DocLink,
    Dropdown,
    Emph,
    Inline,
    LocalLink,
    Para,
    PlaygroundLink,
    Section,
    Strong,
    SubHeading,
    Table,
    anchor_groups,
    column_order,
    jump_lead,
    text_of,
    wrap_commands,
)
from .sections.filter_diff import comparison_blocks

_ESCAPE = re.compile(r"([\\`*_\[\]<>])")


def _escape(text: str, in_table: bool = False) -> str:
    text = _ESCAPE.sub(r"\\\1", text)
    if in_table:
        text = text.replace("|", "\\|")
    return " ".join(text.split("\n"))


def _code(text: str, in_table: bool = False) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    body = text.replace("\n", " ")
    padded = body.startswith(" ") and body.endswith(" ") and body.strip()
    if body.startswith("`") or body.endswith("`") or padded:
        body = " " + body + " "
    if in_table:
        body = body.replace("|", "\\|")
    return fence + body + fence


_MARKUP = {Strong: ("**%s**", "<strong>%s</strong>"), Emph: ("*%s*", "<em>%s</em>"),
           Code: ("", "<code>%s</code>")}


def _inline(parts: Sequence[Inline], in_table: bool = False, as_html: bool = False) -> str:
    """Markdown, or the HTML of a ``<summary>`` (``as_html``: links as their text)."""
    out: List[str] = []
    for part in parts:
        if isinstance(part, (DocLink, LocalLink)):
            text = _inline(part.content, in_table, as_html)
            if isinstance(part, LocalLink) and not as_html:
                text = "[%s](#%s)" % (text, _slug(part.heading + " " + part.anchor))
            out.append(text)
        elif isinstance(part, str):
            out.append(html.escape(part) if as_html else _escape(part, in_table))
        elif isinstance(part, Code) and not as_html:
            out.append(_code(part.text, in_table))
        elif not isinstance(part, PlaygroundLink):  # (a Markdown guide has no playground)
            out.append(_MARKUP[type(part)][as_html] % (
                html.escape(part.text) if as_html else _escape(part.text, in_table)))
    return "".join(out)


def _fence(text: str, language: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"^`{3,}", text, re.M)), default=2)
    fence = "`" * max(3, longest + 1)
    return "%s%s\n%s\n%s" % (fence, language if language != "none" else "", text.rstrip("\n"), fence)


def blocks_markdown(blocks: Sequence[Block], level: int = 2) -> List[str]:
    """Markdown chunks (to be joined with blank lines); ``level``: the heading level
    of the enclosing section."""
    out: List[str] = []
    heading = ""
    for block in blocks:
        if isinstance(block, SubHeading):
            heading = text_of(block.inlines)
        if isinstance(block, Para):
            anchor = '<a id="%s"></a>' % _slug(heading + " " + block.anchor) if block.anchor else ""
            out.append(anchor + _inline(block.inlines))
        elif isinstance(block, BulletList):
            out.append("\n".join("- " + _inline(item) for item in block.items))
        elif isinstance(block, Table):
            lines = ["**%s**" % _inline(block.title).replace("**", ""), ""] if block.title else []
            order = column_order(block)
            lines.append("| " + " | ".join(_escape(block.header[i], True) for i in order) + " |")
            lines.append("|" + "|".join(" --- " for _ in order) + "|")
            for row in block.rows:
                cells = [_inline(row[i], True) if i < len(row) else "" for i in order]
                lines.append("| " + " | ".join(cells) + " |")
            out.append("\n".join(lines))
        elif isinstance(block, CodeBlock):
            text = wrap_commands(block.text) if block.language in ("bash", "sh", "shell") else block.text
            out.append(_fence(text, block.language))
        elif isinstance(block, SubHeading):
            out.append("#" * min(level + 1, 6) + " " + _inline(block.inlines))
        elif isinstance(block, Dropdown):
            inner = "\n\n".join(blocks_markdown(block.blocks, level))
            out.append("<details>\n<summary>%s</summary>\n\n%s\n\n</details>"
                       % (_inline(block.title, as_html=True), inner))
        elif isinstance(block, Admonition):
            inner = "\n\n".join(blocks_markdown(block.blocks, level))
            quoted = "\n".join(("> " + line) if line else ">" for line in inner.split("\n"))
            out.append("> [!%s]\n%s" % (block.kind.upper(), quoted))
        elif isinstance(block, Diagram):
            out.append(_fence(diagram_text(block)))
    return out


def _slug(text: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower()))


def _section_markdown(blocks: Sequence[Block], level: int) -> List[str]:
    """A section's blocks, with ``**Jump to:**`` lines (one per sub-heading group) to its
    anchored paragraphs after the leading ones where it has two or more."""
    chunks = blocks_markdown(blocks, level)
    groups = anchor_groups(blocks)
    if sum(len(anchored) for _, anchored in groups) > 1:
        lead = jump_lead(blocks)
        chunks[lead:lead] = ["\n\n".join("**Jump to%s:** %s" % (
            " " + _escape(heading) if heading else "", " \u00b7 ".join(
                "[%s](#%s)" % (_escape(anchor), _slug(heading + " " + anchor)) for _, anchor in anchored))
            for heading, anchored in groups)]
    return chunks


def _document(head: List[str], sections: Sequence[Section]) -> str:
    """A title and lead chunks, then each section under a ``##`` heading."""
    for section in sections:
        head += ["## " + _escape(section.title)] + _section_markdown(section.blocks, 2)
    return "\n\n".join(head).rstrip() + "\n"


def guide_markdown(data: GuideData, sections: Optional[Sequence[str]] = None,
                   title: Optional[str] = None) -> str:
    """The guide of ``data`` as one Markdown document."""
    names = list(sections) if sections is not None else parse_sections(None)
    chunks = ["# " + (title or "FMHA kernel guide: %s" % _code(data.api)), _inline(header_inlines(data))]
    problem = data.recommendation_problem
    if problem is not None and any(n in names for n in RECOMMENDATION_SECTIONS):
        chunks += blocks_markdown([Admonition("note", [Para([
            "Recommended minimal set, what you lose and filter commands: not available. "
            + problem.message])])])
    return _document(chunks, guide_sections(data, names))


def comparison_markdown(comparison: FilterComparison) -> str:
    """``sphinxext-fmha diff``: one filter in two trees, as Markdown."""
    return _document(["# Filter diff: %s %s" % (_code(comparison.api), _code(comparison.filter))]
                     + blocks_markdown(comparison_blocks(comparison), 1), [])


def render_recommendation_markdown(rec: Recommendation) -> str:
    """The recommended minimal set, losses, commands and counts as Markdown."""
    return _document(["# %s: %s" % ("Kernel set for a workload" if rec.needs else "Recommended minimal set",
                                    _code(rec.api))], recommendation_sections(rec))
