"""Turn :mod:`.ir` blocks into docutils nodes (sphinx-design's dropdown *shape* built by
hand); :mod:`sphinxext_fmha.directives.extension` resolves the placeholder nodes
(guide/section by where the directive sits, diagram by builder)."""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple

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
    LocalLink,
    Para,
    PlaygroundLink,
    Section,
    Strong,
    SubHeading,
    Table,
    anchor_groups,
    break_points,
    column_order,
    jump_lead,
    text_of,
    wrap_commands,
)

#: Builds the node of a link to another document: (docname, content nodes) -> node.
LinkFactory = Callable[[str, List[nodes.Node]], nodes.Node]


class fmha_diagram(nodes.General, nodes.Element):  # noqa: N801 - docutils naming
    """A file-name diagram: ``node['html']`` for HTML, the children elsewhere."""


class fmha_guide(nodes.General, nodes.Element):  # noqa: N801
    """Wrapper of one guide's :class:`fmha_section` nodes; ``node['headings']`` is
    ``auto``, ``section``, ``rubric`` or ``none``; ``node['api']`` names the API."""


class fmha_section(nodes.General, nodes.Element):  # noqa: N801
    """One guide section: ``node['title']``, ``node['name']``; children = content."""


class fmha_playground_link(nodes.Inline, nodes.Element):  # noqa: N801
    """A link to the page's playground of ``node['api']`` prefilled with ``node['pattern']``
    (children: the text before it, the link's text); removed where there is none."""


def inlines_to_nodes(parts: Sequence[Inline], link: Optional[LinkFactory] = None) -> List[nodes.Node]:
    out: List[nodes.Node] = []
    for part in parts:
        if isinstance(part, str):
            out.extend(_text(part))
        elif isinstance(part, Code):
            out.append(_literal(part.text))
        elif isinstance(part, Strong):
            out.append(nodes.strong(part.text, part.text))
        elif isinstance(part, Emph):
            out.append(nodes.emphasis(part.text, part.text))
        elif isinstance(part, DocLink):
            content = inlines_to_nodes(part.content, link)
            out.append(link(part.target, content) if link is not None else nodes.inline("", "", *content))
        elif isinstance(part, LocalLink):
            # resolved into a reference by sections_to_nodes, which knows the ids
            out.append(nodes.inline("", "", *inlines_to_nodes(part.content, link),
                                    fmha_local="%s\n%s" % (part.heading, part.anchor)))
        elif isinstance(part, PlaygroundLink):
            out.append(fmha_playground_link("", nodes.Text(part.before),
                                            nodes.inline(part.text, part.text),
                                            api=part.api, pattern=part.pattern))
    return out


def _text(text: str) -> List[nodes.Node]:
    """Text that may wrap at :func:`break_points`: an empty ``fmha-wbr`` inline between
    pieces, a break opportunity in ``fmha.css`` (copied text stays exact)."""
    pieces = break_points(text)
    out: List[nodes.Node] = [nodes.Text(pieces[0])]
    for piece in pieces[1:]:
        out += [nodes.inline("", "", classes=["fmha-wbr"]), nodes.Text(piece)]
    return out


def _literal(text: str) -> nodes.literal:
    node = nodes.literal(text, "", *(_text(text) if text else []))
    if len(node.children) > 1:
        node["classes"].append("fmha-brk")
    return node


def _paragraph(parts: Sequence[Inline], link: Optional[LinkFactory], classes=()) -> nodes.paragraph:
    para = nodes.paragraph("", "", *inlines_to_nodes(parts, link))
    para["classes"].extend(classes)
    return para


def _table(table: Table, link: Optional[LinkFactory]) -> nodes.table:
    node = nodes.table(classes=["colwidths-auto", "fmha-table"] + list(table.classes),
                       align="left")
    if table.title:
        node += nodes.title(text_of(table.title), "", *inlines_to_nodes(table.title, link))
    order = column_order(table)
    group = nodes.tgroup(cols=len(order))
    node += group
    widths = _widths(table)
    group.extend(nodes.colspec(colwidth=widths[index]) for index in order)
    group += nodes.thead("", nodes.row("", *[nodes.entry("", nodes.paragraph(
        table.header[i], "", *_text(table.header[i]))) for i in order]))
    group += nodes.tbody("", *[nodes.row("", *[nodes.entry("", *(
        [_paragraph(cells[i], link)] if i < len(cells) and cells[i] else [])) for i in order])
        for cells in table.rows])
    return node


_MARKUP = {Code: 2, Emph: 2, Strong: 4}


def _widths(table: Table, cap: int = 40) -> List[int]:
    """Column widths for the text writer: the longest cell as it shows it, capped."""
    widths = [max(3, len(h)) for h in table.header]
    for cells in table.rows:
        for index, value in enumerate(cells[: len(widths)]):
            shown = len(text_of(value)) + sum(_MARKUP.get(type(p), 0) for p in value)
            widths[index] = max(widths[index], min(cap, shown))
    return widths


def _diagram(diagram: Diagram) -> fmha_diagram:
    text = diagram_text(diagram)
    fallback = nodes.literal_block(text, text, classes=["fmha-name-ruler"])
    fallback["language"] = "none"
    node = fmha_diagram("", fallback, html=diagram_html(diagram))
    node["kernel_type"] = diagram.kernel_type
    return node


def blocks_to_nodes(blocks: Sequence[Block], link: Optional[LinkFactory] = None) -> List[nodes.Node]:
    out: List[nodes.Node] = []
    for block in blocks:
        if isinstance(block, Para):
            out.append(_paragraph(block.inlines, link, block.classes
                                  + (["fmha-anchored"] if block.anchor else [])))
        elif isinstance(block, BulletList):
            out.append(nodes.bullet_list("", *[nodes.list_item("", _paragraph(item, link))
                                               for item in block.items], bullet="-"))
        elif isinstance(block, Table):
            out.append(_table(block, link))
        elif isinstance(block, CodeBlock):
            text = wrap_commands(block.text) if block.language in ("bash", "sh", "shell") else block.text
            literal = nodes.literal_block(text, text, classes=["fmha-code"])
            literal["language"] = block.language or "none"
            out.append(literal)
        elif isinstance(block, SubHeading):
            out.append(nodes.rubric(text_of(block.inlines), "", *inlines_to_nodes(block.inlines, link),
                                    classes=["fmha-subheading"]))
        elif isinstance(block, Dropdown):
            # sphinx-design's dropdown: <details> in HTML; elsewhere a rubric and the content
            out.append(nodes.container(
                "", nodes.rubric("", "", *inlines_to_nodes(block.title, link)),
                *blocks_to_nodes(block.blocks, link), is_div=True, design_component="dropdown",
                opened=False, type="dropdown", has_title=True, icon=None, chevron=None,
                container_classes=["sd-mb-3", "fmha-dropdown"], title_classes=[], body_classes=[],
                classes=[]))
        elif isinstance(block, Admonition):
            admonition = getattr(nodes, block.kind)(classes=list(block.classes))
            admonition.extend(blocks_to_nodes(block.blocks, link))
            out.append(admonition)
        elif isinstance(block, Diagram):
            out.append(_diagram(block))
    return out


def sections_to_nodes(sections: Sequence[Section], api: str, headings: str,
                      link: Optional[LinkFactory] = None,
                      before: Sequence[nodes.Node] = ()) -> fmha_guide:
    guide = fmha_guide("", api=api, headings=headings, classes=["fmha-guide"])
    guide.extend(before)
    for section in sections:
        content = blocks_to_nodes(section.blocks, link)
        groups = anchor_groups(section.blocks)
        prefix = "fmha-%s-%s" % (api, section.name)
        ids = {"%s\n%s" % (group, anchor): nodes.make_id("-".join(filter(None, (prefix, group, anchor))))
               for group, anchored in groups for _, anchor in anchored}
        # each anchored paragraph after a target (LaTeX labels paragraphs only through targets)
        for index, key in sorted(((i, "%s\n%s" % (g, a)) for g, anchored in groups
                                  for i, a in anchored), reverse=True):
            content.insert(index, nodes.target("", "", ids=[ids[key]]))
        if sum(len(anchored) for _, anchored in groups) > 1:
            content.insert(jump_lead(section.blocks), _jump_list(groups, ids))
        _resolve_local_links(content, ids)
        guide += fmha_section("", *content, name=section.name, title=section.title)
    return guide


def _resolve_local_links(content: List[nodes.Node], ids: Dict[str, str]) -> None:
    """:class:`LocalLink` placeholders into references (plain when the target is missing)."""
    for block in content:
        if not isinstance(block, nodes.Element):
            continue
        for inline in list(block.findall(nodes.inline)):
            refid = ids.get(inline.get("fmha_local", ""))
            if refid is not None:
                inline.replace_self(nodes.reference("", "", *inline.children, refid=refid, internal=True))


def _jump_list(groups: Sequence[Tuple[str, List[Tuple[int, str]]]], ids: Dict[str, str]) -> nodes.Element:
    """``Jump to: a · b · c``, one line per sub-heading group."""
    container = nodes.container("", classes=["fmha-jump"])
    for group, anchored in groups:
        lead = "Jump to %s:" % group if group else "Jump to:"
        para = nodes.paragraph("", "", nodes.strong(lead, lead), nodes.Text(" "))
        for index, (_, anchor) in enumerate(anchored):
            if index:
                para += nodes.Text(" \u00b7 ")
            para += nodes.reference(anchor, anchor, refid=ids["%s\n%s" % (group, anchor)], internal=True)
        container += para
    return container


def problem_node(title: str, message: str) -> nodes.Element:
    """The short admonition a directive renders instead of its content on failure."""
    node = nodes.warning(classes=["fmha-problem"])
    node += nodes.paragraph("", "", nodes.strong(title, title), nodes.Text(" " + message))
    return node
