"""The file-name diagram: labelled segments over a real kernel file name.

Two forms of the same :class:`~sphinxext_fmha.render.ir.Diagram`: :func:`diagram_html`
(small HTML styled by ``static/fmha.css`` through CSS variables and ``currentColor``,
so it follows light and dark themes) and :func:`diagram_text` (the name with a
numbered ruler underneath, for LaTeX, text and Markdown).  ASCII only.
"""

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
        out.append('<span class="%s" title="%s"><code class="fmha-tok">%s</code>'
                   '<span class="fmha-lbl">%s</span></span>'
                   % (classes, html.escape("%d: %s" % (part.number, part.label), quote=True),
                      html.escape(part.token), html.escape(part.label)))
    if diagram.suffix:
        out.append('<span class="fmha-seg fmha-sfx"><code class="fmha-tok">%s</code>'
                   '<span class="fmha-lbl">%s</span></span>'
                   % (html.escape(diagram.suffix), html.escape(diagram.suffix_label)))
    out.append("</div>")
    return "".join(out)


def diagram_text(diagram: Diagram) -> str:
    """The name, a ruler marking each segment, and the segment numbers below it::

        fmha_fwd_appendkv_d128_bf16_b64x64x128x128
        =================-----=====---------------
        1                2    3    4
    """
    name = "".join(p.token for p in diagram.parts) + diagram.suffix
    ruler: List[str] = []
    starts = []
    position = 0
    fill = "="
    shown = [p for p in diagram.parts if p.token]
    for part in shown:
        starts.append((position, str(part.number)))
        ruler.append(fill * len(part.token))
        position += len(part.token)
        fill = "-" if fill == "=" else "="
    if diagram.suffix:
        starts.append((position, "s"))
        ruler.append("." * len(diagram.suffix))
    # Numbers on as few lines as needed so that none overlaps another.
    lines: List[List[str]] = []
    ends: List[int] = []
    for start, label in starts:
        free = [i for i, end in enumerate(ends) if start > end]  # lines this label fits on
        if free:
            index = free[0]
        else:
            index = len(lines)
            lines.append([])
            ends.append(-1)
        row = lines[index]
        row.extend(" " * (start - len(row)))
        row.extend(label)
        ends[index] = start + len(label)
    text = [name, "".join(ruler)] + ["".join(row).rstrip() for row in lines]
    return "\n".join(text)
