"""The table of APIs (the ``fmha-api-list`` directive)."""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from ..ir import Code, DocLink, Inlines, Table


def api_list_table(rows: Sequence[Tuple[str, str, Optional[int], str]],
                   link: Optional[str] = None) -> Table:
    """``rows``: (api, module, kernels or None, note); ``link``: a docname template
    with ``{api}``."""
    body: List[List[Inlines]] = []
    notes = any(note for _, _, _, note in rows)
    for api, module, count, note in rows:
        name: Inlines = [Code(api)]
        if link:
            name = [DocLink(target=link.format(api=api), content=[Code(api)])]
        row: List[Inlines] = [name, [Code(module)], [str(count)] if count is not None else ["-"]]
        if notes:
            row.append([note] if note else [])
        body.append(row)
    # A Notes column only when some API has a note (an empty column tells nothing).
    return Table(header=["API", "Module", "Kernels"] + (["Notes"] if notes else []), rows=body,
                 classes=["fmha-apis"])
