"""A tiny document model shared by the docutils and the Markdown renderers.

The guide is written once, as these blocks (:mod:`.guide`), and turned into docutils
nodes (:mod:`.nodes`) or GitHub-flavoured Markdown (:mod:`.markdown`), so both outputs
say exactly the same thing.  Plain data, no docutils, no Sphinx.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Union


@dataclass
class Code:
    """Inline literal text (``code``)."""

    text: str


@dataclass
class Strong:
    text: str


@dataclass
class Emph:
    text: str


@dataclass
class DocLink:
    """A link to another document of the project (``target`` is a docname);
    renderers without documents show ``content`` only."""

    target: str
    content: List[Inline] = field(default_factory=list)


Inline = Union[str, Code, Strong, Emph, DocLink]
Inlines = List[Inline]


@dataclass
class Para:
    inlines: Inlines
    classes: List[str] = field(default_factory=list)


@dataclass
class BulletList:
    items: List[Inlines]


@dataclass
class Table:
    header: List[str]
    rows: List[List[Inlines]]
    title: Optional[Inlines] = None
    classes: List[str] = field(default_factory=list)


@dataclass
class CodeBlock:
    text: str
    language: str = ""


@dataclass
class SubHeading:
    """A heading inside a section (a rubric in docutils, ``###`` in Markdown)."""

    inlines: Inlines


@dataclass
class Dropdown:
    """Folded content: a sphinx-design dropdown in HTML, a titled block elsewhere."""

    title: Inlines
    blocks: List[Block]
    opened: bool = False


@dataclass
class Admonition:
    kind: str  # note | tip | caution | warning
    blocks: List[Block]


@dataclass
class DiagramPart:
    token: str
    label: str
    number: int
    literal: bool = False


@dataclass
class Diagram:
    """A real kernel file name cut into labelled segments."""

    name: str
    parts: List[DiagramPart]
    suffix: str = ""
    suffix_label: str = ""
    kernel_type: str = ""


Block = Union[Para, BulletList, Table, CodeBlock, SubHeading, Dropdown, Admonition, Diagram]


@dataclass
class Section:
    name: str
    title: str
    blocks: List[Block]


# --------------------------------------------------------------------------- helpers


def inlines(*parts: Inline) -> Inlines:
    return [p for p in parts if p != ""]


def text_of(parts: Sequence[Inline]) -> str:
    """The plain text of some inlines (for titles, alt texts, ids)."""
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, DocLink):
            out.append(text_of(part.content))
        else:
            out.append(part.text)
    return "".join(out)


def cell(value: Union[Inline, Inlines, int, None]) -> Inlines:
    """Normalise one table cell."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    if isinstance(value, int):
        return [str(value)]
    return [value]


def join(items: Sequence[Inlines], sep: str = ", ") -> Inlines:
    out: Inlines = []
    for index, item in enumerate(items):
        if index:
            out.append(sep)
        out.extend(item)
    return out


def codes(values: Sequence[str], sep: str = ", ") -> Inlines:
    return join([[Code(v)] for v in values], sep)
