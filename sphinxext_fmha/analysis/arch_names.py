"""The GPU architecture families a tree's codegen names (``ArchTrait("gfx950")``).

Read from the source of every module below ``codegen/``; what ``--targets`` each of
them gives is measured by the caller (a ``generate.py -l --targets NAME`` run), never
assumed from this reading.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import List

from ..model import natural
from .pyparse import dotted, parse_module

__all__ = ["arch_names"]

#: an AMD GPU target or target family (``gfx9``, ``gfx950``, ``gfx1201``)
_TARGET = re.compile(r"gfx[0-9a-z]+")


def arch_names(fmha_dir: Path) -> List[str]:
    """The first arguments of the ``ArchTrait(...)`` calls of the codegen that name a
    GPU target family, in natural order (``gfx9`` < ``gfx11`` < ``gfx950``)."""
    found = set()
    for path in sorted((fmha_dir / "codegen").rglob("*.py")):
        tree = parse_module(path, fmha_dir).tree
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (dotted(node.func) or "").split(".")[-1] \
                    == "ArchTrait" and node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str) \
                    and _TARGET.fullmatch(node.args[0].value):
                found.add(node.args[0].value)
    return sorted(found, key=natural)
