"""Small, reviewable views of what a directive produced, for the snapshot tests.

A full doctree dump is hundreds of lines that change whenever a sentence does, so nobody
reviews it. These views keep what is stable and worth a human look: the sections (ids,
titles, order), the file-name diagrams of real kernel names, and the numbers of a
filter check. Written with docutils only (nothing of sphinxext_fmha), so they are also
the tests' own reading of the output.
"""

from __future__ import annotations

import re
from typing import Iterable, List

from docutils import nodes


def tables(node: nodes.Node, css_class: str) -> List[nodes.table]:
    """The tables under ``node`` that carry ``css_class``."""
    return [t for t in node.findall(nodes.table) if css_class in t["classes"]]


def table_rows(table: nodes.table) -> List[List[str]]:
    """Header row first, then the body rows; each cell as plain text."""
    return [[entry.astext().strip() for entry in row.findall(nodes.entry)]
            for row in table.findall(nodes.row)]


def column(table: nodes.table, header: str) -> List[str]:
    """The body cells of the column titled ``header``."""
    rows = table_rows(table)
    index = rows[0].index(header)
    return [row[index] for row in rows[1:]]


def diagrams(node: nodes.Node) -> List[nodes.Element]:
    return [n for n in node.findall(nodes.Element) if n.tagname == "fmha_diagram"]


def diagram_lines(diagram: nodes.Element) -> List[str]:
    """The plain-text diagram: the file name, its ruler, the segment numbers."""
    return diagram[0].astext().splitlines()


def outline(node: nodes.Node) -> str:
    """Sections and heading rubrics (id and title, nested as on the page) and the
    file-name diagrams, one line each (a diagram: its text lines)."""
    lines: List[str] = []

    def walk(parent: nodes.Element, depth: int) -> None:
        indent = "  " * depth
        for child in parent.children:
            if isinstance(child, nodes.section):
                lines.append("%s%s: %s" % (indent, child["ids"][0], child[0].astext()))
                walk(child, depth + 1)
            elif isinstance(child, nodes.rubric) and "fmha-rubric" in child["classes"]:
                lines.append("%s%s: %s (rubric)" % (indent, child["ids"][0], child.astext()))
            elif isinstance(child, nodes.Element) and child.tagname == "fmha_diagram":
                lines.append("%sdiagram of %s:" % (indent, child["kernel_type"]))
                lines.extend("%s  %s" % (indent, text) for text in diagram_lines(child))
            elif isinstance(child, nodes.Element):
                walk(child, depth)

    walk(node, 0)
    return "\n".join(lines) + "\n"


def table_summary(node: nodes.Node, css_class: str, headers: Iterable[str]) -> str:
    """Some columns of the first ``css_class`` table under ``node``, one row a line."""
    table = tables(node, css_class)[0]
    wanted = list(headers)
    cells = [column(table, header) for header in wanted]
    lines = [" | ".join(wanted)] + [" | ".join(row) for row in zip(*cells)]
    return "\n".join(lines) + "\n"


def filter_check_summary(node: nodes.Node) -> str:
    """The command, the per-sub-type counts and the expectation verdicts of the (only)
    filter check under ``node``."""
    (check,) = [n for n in node.findall(nodes.container) if "fmha-filter-check" in n["classes"]]
    command = next(iter(check.findall(nodes.literal_block))).astext()
    lines = ["command: " + command]
    for row in table_rows(tables(check, "fmha-check-counts")[0]):
        lines.append(" | ".join(row))
    for item in check.findall(nodes.list_item):
        lines.append("expectation: " + " ".join(item.astext().split()))
    return "\n".join(lines) + "\n"


def filter_of(command: str) -> str:
    """The ``-f`` pattern of a shell command line (single-quoted or bare)."""
    match = re.search(r"-f (?:'([^']*)'|(\S+))", command)
    assert match, command
    return match.group(1) if match.group(1) is not None else match.group(2)


def carrying(names: Iterable[str], token: str) -> int:
    """How many file names carry ``token`` as a whole segment: followed by the next
    segment's ``_``, an arch suffix or ``.cpp``."""
    pattern = re.compile(re.escape(token) + r"(?=_|\.cpp$)")
    return sum(1 for name in names if pattern.search(name))
