"""The file-name diagram, labelled segments over a real kernel file name: HTML (styled by
``static/fmha.css``) or a numbered ruler (LaTeX, text and Markdown)."""

from __future__ import annotations

import html
from typing import List

from .ir import Diagram


def diagram_html(diagram: Diagram) -> str:
    label = "%s: %s" % (diagram.kernel_type, diagram.name) if diagram.kernel_type else diagram.name
    out: List[str] = ['<div class="fmha-name" role="group" aria-label="%s">'
                      % html.escape("kernel file name " + label, quote=True)]
    for part in diagram.parts:
        if not part.token:
            continue
        classes = "fmha-seg fmha-lit" if part.literal else "fmha-seg"
        title = "%d: %s%s" % (part.number, part.label,
                              " (constant in this tree)" if part.constant else "")
        out.append('<span class="%s" title="%s"><code class="fmha-tok">%s</code>'
                   '<span class="fmha-lbl">%s</span></span>'
                   % (classes, html.escape(title, quote=True),
                      html.escape(part.token), html.escape(part.label)))
    if diagram.suffix:
        out.append('<span class="fmha-seg fmha-sfx"><code class="fmha-tok">%s</code>'
                   '<span class="fmha-lbl">%s</span></span>'
                   % (html.escape(diagram.suffix), html.escape(diagram.suffix_label)))
    out.append("</div>")
    return "".join(out)


def diagram_text(diagram: Diagram, width: int = 72) -> str:
    """The name, a ruler marking each segment, and the segment numbers below it::

        fmha_fwd_appendkv_d128_bf16_b64x64x128x128
        =================-----=====---------------
        1                2    3    4

    A name longer than ``width`` is cut at segment boundaries into chunks, each with
    its own ruler, so no line wraps (LaTeX/PDF, narrow terminals).
    """
    shown = [part for part in diagram.parts if part.token]
    pieces = [(part.token, str(part.number), "=-"[index % 2]) for index, part in enumerate(shown)]
    if diagram.suffix:
        pieces.append((diagram.suffix, "s", "."))
    chunks: List[List[tuple]] = [[]]
    used = 0
    for piece in pieces:
        if chunks[-1] and used + len(piece[0]) > width:
            chunks.append([])
            used = 0
        chunks[-1].append(piece)
        used += len(piece[0])
    return "\n\n".join(_chunk_text(chunk) for chunk in chunks)


def _chunk_text(pieces: List[tuple]) -> str:
    name = "".join(token for token, _, _ in pieces)
    ruler = "".join(fill * len(token) for token, _, fill in pieces)
    # numbers on as few lines as needed so that none overlaps another
    lines: List[str] = []
    position = 0
    for token, label, _ in pieces:
        index = next((i for i, line in enumerate(lines) if position > len(line)), len(lines))
        if index == len(lines):
            lines.append("")
        lines[index] = lines[index].ljust(position) + label
        position += len(token)
    return "\n".join([name, ruler] + lines)
