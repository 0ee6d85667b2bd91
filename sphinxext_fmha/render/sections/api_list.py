"""The table of APIs (the ``fmha-api-list`` directive)."""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from ..ir import (
    Code,
    DocLink,
    Inlines,
    Table,
)


def api_list_table(rows: Sequence[Tuple[str, str, Optional[int], str]],
                   link: Optional[str] = None) -> Table:
    """``rows``: (api, module, kernels or None, note); ``link``: a docname template
    with ``{api}``."""
    body: List[List[Inlines]] = []
    for api, module, count, note in rows:
        name: Inlines = [Code(api)]
        if link:
            name = [DocLink(target=link.format(api=api), content=[Code(api)])]
        body.append([name, [Code(module)], [str(count)] if count is not None else ["-"],
                     [note] if note else []])
    return Table(header=["API", "Module", "Kernels", "Notes"], rows=body,
                 classes=["fmha-apis"])
