"""Where the shown commands run: generate.py's own folder, and what its ``-l`` does to
an existing file."""

from __future__ import annotations

import posixpath

from ...model import ApiModel
from ..ir import Code, Inlines

__all__ = ["where_commands_run"]


def where_commands_run(model: ApiModel, driver: bool = False, several: bool = True) -> Inlines:
    """"Run these commands in example/ck_tile/01_fmha ..." (``driver``: a
    ``sphinxext-fmha generate`` command is among them)."""
    folder = model.fmha_dir or "the folder of generate.py"
    out: Inlines = ["Run %s in " % ("these commands" if several else "this command"),
                    Code(folder), " of the CK tree (where generate.py is)"]
    if driver and model.fmha_dir:
        out += ["; the driver command runs there too (", Code("--ck-root %s" % posixpath.relpath(
            ".", model.fmha_dir)), " is the CK tree's root)"]
    out.append(".")
    if model.list_appends:
        out += [" This tree's generate.py appends to the ", Code("-l"), " file instead of "
                "writing it afresh, so each listing command removes its file first."]
    return out
