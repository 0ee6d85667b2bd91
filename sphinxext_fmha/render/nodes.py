"""Turn :mod:`.ir` blocks into docutils nodes.

Only docutils here (plus the node *shape* sphinx-design expects for dropdowns, built by
hand so nothing is imported).  Two placeholder nodes are resolved by the Sphinx glue
(:mod:`sphinxext_fmha.directives.extension`):

* :class:`fmha_guide` / :class:`fmha_section`: the guide's sections; a read-time
  transform turns them into real sections, rubrics, or bare content, depending on
  where the directive sits (identically for reStructuredText and MyST).
* :class:`fmha_diagram`: the file-name diagram; a post-transform keeps its HTML for
  HTML builders and its literal-block fallback (the name with a ruler) elsewhere.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence

from docutils import nodes

from .diagram import diagram_html, diagram_text
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
    Para,
    Section,
    Strong,
    SubHeading,
    Table,
    text_of,
)

__all__ = [
    "fmha_diagram",
    "fmha_guide",
    "fmha_section",
    "LinkFactory",
    "blocks_to_nodes",
    "inlines_to_nodes",
    "sections_to_nodes",
    "dropdown_node",
    "problem_node",
]

#: Builds the node of a link to another document: (docname, content nodes) -> node.
LinkFactory = Callable[[str, List[nodes.Node]], nodes.Node]


class fmha_diagram(nodes.General, nodes.Element):  # noqa: N801 - docutils naming
    """A file-name diagram: ``node['html']`` for HTML, the children elsewhere."""


class fmha_guide(nodes.General, nodes.Element):  # noqa: N801
    """Wrapper of one guide's :class:`fmha_section` nodes; ``node['headings']`` is
    ``auto``, ``section``, ``rubric`` or ``none``; ``node['api']`` names the API."""


class fmha_section(nodes.General, nodes.Element):  # noqa: N801
    """One guide section: ``node['title']``, ``node['name']``; children = content."""


def inlines_to_nodes(parts: Sequence[Inline], link: Optional[LinkFactory] = None) -> List[nodes.Node]:
    out: List[nodes.Node] = []
    for part in parts:
        if isinstance(part, str):
            out.append(nodes.Text(part))
        elif isinstance(part, Code):
            out.append(nodes.literal(part.text, part.text))
        elif isinstance(part, Strong):
            out.append(nodes.strong(part.text, part.text))
        elif isinstance(part, Emph):
            out.append(nodes.emphasis(part.text, part.text))
        elif isinstance(part, DocLink):
            content = inlines_to_nodes(part.content, link)
            if link is not None:
                out.append(link(part.target, content))
            else:
                out.append(nodes.inline("", "", *content))
        else:  # pragma: no cover - the IR has no other inline
            raise TypeError(type(part).__name__)
    return out


def _paragraph(parts: Sequence[Inline], link: Optional[LinkFactory], classes=()) -> nodes.paragraph:
    para = nodes.paragraph("", "", *inlines_to_nodes(parts, link))
    para["classes"].extend(classes)
    return para


def _table(table: Table, link: Optional[LinkFactory]) -> nodes.table:
    node = nodes.table(classes=["colwidths-auto", "fmha-table"] + list(table.classes),
                       align="left")
    if table.title:
        node += nodes.title(text_of(table.title), "", *inlines_to_nodes(table.title, link))
    columns = len(table.header)
    group = nodes.tgroup(cols=columns)
    node += group
    for width in _widths(table):
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    group += head
    row = nodes.row()
    for title in table.header:
        row += nodes.entry("", nodes.paragraph(title, title))
    head += row
    body = nodes.tbody()
    group += body
    for cells in table.rows:
        row = nodes.row()
        for index in range(columns):
            value = cells[index] if index < len(cells) else []
            entry = nodes.entry()
            if value:
                entry += _paragraph(value, link)
            row += entry
        body += row
    return node


_MARKUP = {Code: 2, Emph: 2, Strong: 4}


def _widths(table: Table, cap: int = 40) -> List[int]:
    """Column widths for writers that use them (the text writer): the longest cell as
    that writer shows it (literals get quotes), capped."""
    widths = [max(3, len(h)) for h in table.header]
    for cells in table.rows:
        for index, value in enumerate(cells[: len(widths)]):
            shown = len(text_of(value)) + sum(_MARKUP.get(type(p), 0) for p in value)
            widths[index] = max(widths[index], min(cap, shown))
    return widths


def dropdown_node(title: List[nodes.Node], content: List[nodes.Node], opened: bool = False) -> nodes.container:
    """A sphinx-design dropdown: a container with a rubric title and the content.

    sphinx-design's HTML post-transform turns it into ``<details>``; the LaTeX, text
    and other builders render the container as is (a rubric and the content), which
    is how sphinx-design itself handles non-HTML builders.  Without sphinx-design the
    same container renders everywhere as a titled block.
    """
    node = nodes.container(
        "",
        is_div=True,
        design_component="dropdown",
        opened=opened,
        type="dropdown",
        has_title=True,
        icon=None,
        chevron=None,
        container_classes=["sd-mb-3", "fmha-dropdown"],
        title_classes=[],
        body_classes=[],
        classes=[],
    )
    node += nodes.rubric("", "", *title)
    node.extend(content)
    return node


def _diagram(diagram: Diagram) -> fmha_diagram:
    text = diagram_text(diagram)
    fallback = nodes.literal_block(text, text, classes=["fmha-name-ruler"])
    fallback["language"] = "none"
    node = fmha_diagram("", fallback, html=diagram_html(diagram))
    node["kernel_type"] = diagram.kernel_type
    return node


_ADMONITIONS = {
    "note": nodes.note,
    "tip": nodes.tip,
    "caution": nodes.caution,
    "warning": nodes.warning,
    "important": nodes.important,
}


def blocks_to_nodes(blocks: Sequence[Block], link: Optional[LinkFactory] = None) -> List[nodes.Node]:
    out: List[nodes.Node] = []
    for block in blocks:
        if isinstance(block, Para):
            out.append(_paragraph(block.inlines, link, block.classes))
        elif isinstance(block, BulletList):
            bullets = nodes.bullet_list(bullet="-")
            for item in block.items:
                bullets += nodes.list_item("", _paragraph(item, link))
            out.append(bullets)
        elif isinstance(block, Table):
            out.append(_table(block, link))
        elif isinstance(block, CodeBlock):
            literal = nodes.literal_block(block.text, block.text)
            literal["language"] = block.language or "none"
            out.append(literal)
        elif isinstance(block, SubHeading):
            out.append(nodes.rubric(text_of(block.inlines), "", *inlines_to_nodes(block.inlines, link)))
        elif isinstance(block, Dropdown):
            out.append(dropdown_node(inlines_to_nodes(block.title, link),
                                     blocks_to_nodes(block.blocks, link), block.opened))
        elif isinstance(block, Admonition):
            admonition = _ADMONITIONS.get(block.kind, nodes.note)()
            admonition.extend(blocks_to_nodes(block.blocks, link))
            out.append(admonition)
        elif isinstance(block, Diagram):
            out.append(_diagram(block))
        else:  # pragma: no cover
            raise TypeError(type(block).__name__)
    return out


def sections_to_nodes(sections: Sequence[Section], api: str, headings: str,
                      link: Optional[LinkFactory] = None,
                      before: Sequence[nodes.Node] = ()) -> fmha_guide:
    """The guide wrapper: ``before`` (header, notes) and one :class:`fmha_section` per
    section; resolved later by the read-time transform."""
    guide = fmha_guide("", api=api, headings=headings, classes=["fmha-guide"])
    guide.extend(before)
    for section in sections:
        node = fmha_section("", name=section.name, title=section.title)
        node.extend(blocks_to_nodes(section.blocks, link))
        guide += node
    return guide


def problem_node(title: str, message: str) -> nodes.Element:
    """The short admonition a directive renders instead of its content on failure."""
    node = nodes.warning(classes=["fmha-problem"])
    node += nodes.paragraph("", "", nodes.strong(title, title), nodes.Text(" " + message))
    return node
