"""A tiny document model: the guide is written once as these blocks and turned into
docutils nodes (:mod:`.nodes`) or Markdown (:mod:`.markdown`), so both say the same."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple, Union


@dataclass
class Code:
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


@dataclass
class LocalLink:
    """A link to an anchored :class:`Para` of the same section under the sub-heading
    ``heading`` ("" above every one); unresolved: ``content`` only."""

    heading: str
    anchor: str
    content: List[Inline] = field(default_factory=list)


@dataclass
class PlaygroundLink:
    """``before`` and a link to the page's playground of ``api`` prefilled with
    ``pattern``; left out, ``before`` included, where there is none."""

    api: str
    pattern: str
    text: str
    before: str = ""


Inline = Union[str, Code, Strong, Emph, DocLink, LocalLink, PlaygroundLink]
Inlines = List[Inline]


@dataclass
class Para:
    """A paragraph; with an ``anchor`` (a short name, unique within its section) it is
    a jump target: it gets an id and an entry in its section's jump list."""

    inlines: Inlines
    classes: List[str] = field(default_factory=list)
    anchor: str = ""


@dataclass
class BulletList:
    items: List[Inlines]


@dataclass
class Table:
    header: List[str]
    rows: List[List[Inlines]]
    title: Optional[Inlines] = None
    classes: List[str] = field(default_factory=list)
    #: Columns whose every cell is a number (counts) are shown right after the first
    #: ``counts_after`` columns, before long text; None keeps the order as written.
    counts_after: Optional[int] = 1


@dataclass
class CodeBlock:
    """Literal lines; ``bash`` blocks are shown with long command lines wrapped at
    argument boundaries with ``\\`` continuations (:func:`wrap_commands`)."""

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


@dataclass
class Admonition:
    kind: str  # note | tip | caution | warning
    blocks: List[Block]
    classes: List[str] = field(default_factory=list)


@dataclass
class DiagramPart:
    token: str
    label: str
    number: int
    literal: bool = False
    #: a field segment whose token is the same in every name of the tree
    constant: bool = False


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


def inlines(*parts: Inline) -> Inlines:
    return [p for p in parts if p != ""]


def text_of(parts: Sequence[Inline]) -> str:
    """The plain text of some inlines (for titles, alt texts, ids)."""
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, (DocLink, LocalLink)):
            out.append(text_of(part.content))
        elif not isinstance(part, PlaygroundLink):  # (shown only where the page has one)
            out.append(part.text)
    return "".join(out)


def anchor_groups(blocks: Sequence[Block]) -> List[Tuple[str, List[Tuple[int, str]]]]:
    """A section's anchored paragraphs (index, anchor) by the sub-heading above them."""
    groups: List[Tuple[str, List[Tuple[int, str]]]] = []
    heading = ""
    for index, block in enumerate(blocks):
        if isinstance(block, SubHeading):
            heading = text_of(block.inlines)
        elif isinstance(block, Para) and block.anchor:
            if not groups or groups[-1][0] != heading:
                groups.append((heading, []))
            groups[-1][1].append((index, block.anchor))
    return groups


def jump_lead(blocks: Sequence[Block]) -> int:
    """Where a section's jump list goes: after its leading paragraphs (its introduction)."""
    return next((i for i, b in enumerate(blocks) if not isinstance(b, Para) or b.anchor), len(blocks))


def join(items: Sequence[Inlines], sep: str = ", ") -> Inlines:
    out: Inlines = []
    for index, item in enumerate(items):
        if index:
            out.append(sep)
        out.extend(item)
    return out


def codes(values: Sequence[str], sep: str = ", ") -> Inlines:
    return join([[Code(v)] for v in values], sep)


_NUMBER = re.compile(r"^[-+]?[\d.,]*\d[\d.,]*\s*%?$|^-$")


def column_order(table: Table) -> List[int]:
    """The order the columns of ``table`` are shown in: count columns (every non-empty
    cell a number, ``-`` allowed) right after the first ``counts_after`` columns."""
    columns = list(range(len(table.header)))
    if table.counts_after is None or not table.rows:
        return columns

    def numeric(index: int) -> bool:
        texts = [text_of(row[index]).strip() for row in table.rows if index < len(row)]
        texts = [t for t in texts if t]
        return bool(texts) and all(_NUMBER.match(t) for t in texts)

    lead = columns[: table.counts_after]
    rest = columns[table.counts_after:]
    counts = [c for c in rest if numeric(c)]
    return lead + counts + [c for c in rest if c not in counts]


#: Where a long word of a literal may break: after ``::``, ``<``, ``,`` or ``.`` (not in
#: a number, not before a file name's extension) ...
_STRONG = re.compile(r"(?<=::)(?=[^:])|(?<=[<,])(?=\S)|(?<=\.)(?=[A-Za-z_])(?!(?:cpp|hpp|h|py)$)")
#: ... and, in a part still longer than :data:`_WHOLE`, before an inner ``_`` that starts
#: the next token (``fmha_fwd`` | ``_d128``).
_TOKEN = re.compile(r"(?<=[A-Za-z0-9])(?=_[A-Za-z0-9])")
#: Words (and parts) this long or shorter never break.
_WHOLE = 12
#: A kernel name's token (``_dropout_wg16_storerandval``): it breaks only where it is
#: a tile shape, before the ``x`` between two of its numbers (``_b16x128x128x16...``).
_TOKEN_WORD = re.compile(r"^_[A-Za-z0-9_]+$")
_SHAPE = re.compile(r"(?<=\d)(?=x\d)")
#: A source path or ``file.py:line`` reference: it breaks after its slashes only.
_PATH = re.compile(r"^[\w.-]+(/[\w.-]+)+(:\d+)?$|^[\w.-]+\.\w+:\d+$")
_AFTER_SLASH = re.compile(r"(?<=/)")


def break_points(text: str) -> List[str]:
    """``text`` cut where a line may break (the patterns above say where; short words,
    numbers and ``file.py:line`` references stay whole); whitespace breaks as it does."""
    pieces: List[str] = []
    for word in re.split(r"(\s+)", text):
        if len(word) <= _WHOLE or word.isspace():
            parts = [word]
        elif _TOKEN_WORD.match(word):
            parts = _SHAPE.split(word)
        elif _PATH.match(word):
            parts = _AFTER_SLASH.split(word)
        else:
            parts = [piece for part in _STRONG.split(word)
                     for token in (_TOKEN.split(part) if len(part) > _WHOLE else [part])
                     for piece in (_SHAPE.split(token) if len(token) > _WHOLE else [token])]
        if pieces and parts and (word.isspace() or pieces[-1][-1:].isspace()):
            pieces[-1] += parts[0]  # a blank stays with its neighbours: it breaks anyway
            parts = parts[1:]
        pieces.extend(p for p in parts if p)
    return pieces or [text]


#: Shell words (quotes kept as written, an unclosed one to the end), split at unquoted blanks.
_SHELL_WORD = re.compile(r"""(?:[^ '"]+|'[^']*(?:'|$)|"[^"]*(?:"|$))+""")


def wrap_commands(text: str, width: int = 76, indent: str = "    ") -> str:
    """Shell lines longer than ``width`` wrapped with ``\\`` continuations, an option
    and its value kept on one line; the result runs exactly as the original."""
    out: List[str] = []
    for line in text.split("\n"):
        if len(line) <= width or line.rstrip().endswith("\\") or line.lstrip().startswith("#"):
            out.append(line)
            continue
        words = _SHELL_WORD.findall(line)
        groups: List[str] = []
        for index, word in enumerate(words):
            option_value = (index > 0 and words[index - 1].startswith("-")
                            and not word.startswith("-") and groups
                            and groups[-1] == words[index - 1])
            if option_value or word in (">", ">>", "|", "&&") or (groups and groups[-1] in (">", ">>")):
                groups[-1] = groups[-1] + " " + word if groups else word
            else:
                groups.append(word)
        lines: List[str] = []
        current = ""
        for group in groups:
            candidate = current + " " + group if current else group
            prefix = indent if lines else ""
            if current and len(prefix + candidate) + 2 > width:
                lines.append(current)
                current = group
            else:
                current = candidate
        lines.append(current)
        out.append(" \\\n".join((indent if i else "") + text for i, text in enumerate(lines)))
    return "\n".join(out)
