"""Turn :mod:`.ir` blocks into docutils nodes (sphinx-design's dropdown *shape* built by
hand); :mod:`sphinxext_fmha.directives.extension` resolves the placeholder nodes
(guide/section by where the directive sits, diagram by builder)."""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence, Tuple

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
    break_points,
    column_order,
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


def anchor_id(section: str, anchor: str) -> str:
    """The id of a jump target ``anchor`` inside the section whose id is ``section``."""
    return nodes.make_id("%s-%s" % (section, anchor))


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
    for index in order:
        group += nodes.colspec(colwidth=widths[index])
    group += nodes.thead("", nodes.row("", *[nodes.entry("", nodes.paragraph(
        table.header[i], "", *_text(table.header[i]))) for i in order]))
    body = nodes.tbody()
    group += body
    for cells in table.rows:
        row = nodes.row()
        for index in order:
            value = cells[index] if index < len(cells) else []
            entry = nodes.entry()
            if value:
                entry += _paragraph(value, link)
            row += entry
        body += row
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


def dropdown_node(title: List[nodes.Node], content: List[nodes.Node],
                  opened: bool = False) -> nodes.container:
    """A sphinx-design dropdown: ``<details>`` in HTML; elsewhere (and without
    sphinx-design) the container as is, a rubric and the content."""
    node = nodes.container("", is_div=True, design_component="dropdown", opened=opened,
                           type="dropdown", has_title=True, icon=None, chevron=None,
                           container_classes=["sd-mb-3", "fmha-dropdown"], title_classes=[],
                           body_classes=[], classes=[])
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


def blocks_to_nodes(blocks: Sequence[Block], link: Optional[LinkFactory] = None) -> List[nodes.Node]:
    out: List[nodes.Node] = []
    for block in blocks:
        if isinstance(block, Para):
            para = _paragraph(block.inlines, link, block.classes)
            if block.anchor:
                para["fmha_anchor"] = block.anchor
                para["classes"].append("fmha-anchored")
            out.append(para)
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
            rubric = nodes.rubric(text_of(block.inlines), "", *inlines_to_nodes(block.inlines, link),
                                  classes=["fmha-subheading"])
            if block.anchor:
                rubric["fmha_anchor"] = block.anchor
            out.append(rubric)
        elif isinstance(block, Dropdown):
            out.append(dropdown_node(inlines_to_nodes(block.title, link),
                                     blocks_to_nodes(block.blocks, link), block.opened))
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
        node = fmha_section("", name=section.name, title=section.title)
        content = blocks_to_nodes(section.blocks, link)
        groups = _anchor_groups(content, "fmha-%s-%s" % (api, section.name))
        if sum(len(targets) for _, targets in groups) > 1:
            # after the section's leading paragraphs (its introduction)
            lead = next((i for i, block in enumerate(content) if not isinstance(
                block, nodes.paragraph) or block.get("fmha_anchor")), len(content))
            content.insert(lead, _jump_list(groups))
        _resolve_local_links(content, groups)
        node.extend(content)
        guide += node
    return guide


def _anchor_groups(content: List[nodes.Node], prefix: str) -> List[Tuple[str, List[nodes.Element]]]:
    """The section's jump targets by sub-heading, each after a ``target`` node with id
    ``prefix-<group>-<anchor>`` (LaTeX labels paragraphs only through targets)."""
    groups: List[Tuple[str, List[nodes.Element]]] = []
    group = ""
    for block in list(content):
        if isinstance(block, nodes.rubric) and "fmha-subheading" in block["classes"] \
                and not block.get("fmha_anchor"):
            group = block.astext()
            continue
        for anchored in list(block.findall(nodes.Element)):
            if not anchored.get("fmha_anchor"):
                continue
            if not groups or groups[-1][0] != group:
                groups.append((group, []))
            groups[-1][1].append(anchored)
            name = anchored["fmha_anchor"]
            anchored["fmha_id"] = anchor_id(prefix, "%s-%s" % (group, name) if group else name)
            where = content if anchored.parent is None else anchored.parent
            where.insert(where.index(anchored), nodes.target("", "", ids=[anchored["fmha_id"]]))
    return groups


def _resolve_local_links(content: List[nodes.Node],
                         groups: Sequence[Tuple[str, List[nodes.Element]]]) -> None:
    """:class:`LocalLink` placeholders into references (plain when the target is missing)."""
    ids = {"%s\n%s" % (group, target["fmha_anchor"]): target["fmha_id"]
           for group, targets in groups for target in targets}
    for block in content:
        if not isinstance(block, nodes.Element):
            continue
        for inline in list(block.findall(nodes.inline)):
            refid = ids.get(inline.get("fmha_local", ""))
            if refid is None:
                continue
            reference = nodes.reference("", "", *inline.children, refid=refid, internal=True)
            inline.replace_self(reference)


def _jump_list(groups: Sequence[Tuple[str, List[nodes.Element]]]) -> nodes.Element:
    """``Jump to: a · b · c``, one line per sub-heading group."""
    container = nodes.container("", classes=["fmha-jump"])
    for group, targets in groups:
        lead = "Jump to %s:" % group if group else "Jump to:"
        para = nodes.paragraph("", "", nodes.strong(lead, lead), nodes.Text(" "))
        for index, target in enumerate(targets):
            if index:
                para += nodes.Text(" \u00b7 ")
            label = target["fmha_anchor"]
            para += nodes.reference(label, label, refid=target["fmha_id"], internal=True)
        container += para
    return container


def problem_node(title: str, message: str) -> nodes.Element:
    """The short admonition a directive renders instead of its content on failure."""
    node = nodes.warning(classes=["fmha-problem"])
    node += nodes.paragraph("", "", nodes.strong(title, title), nodes.Text(" " + message))
    return node
