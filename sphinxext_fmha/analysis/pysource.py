"""Generic, read-only Python source utilities (``ast`` + ``tokenize`` only): one import.

The pieces live in modules of their own: :mod:`.pyparse` (the parse cache and small
``ast`` helpers), :mod:`.conditions` (conditions read as plain English),
:mod:`.pyeval` (the one expression evaluator) and :mod:`.pyinterp` (the partial
interpreter of small pure functions).  Nothing here knows about Composable Kernel.
"""

from __future__ import annotations

from .pyeval import Obj, Unknown
from .pyinterp import Interpreter
from .pyparse import (
    ParsedModule,
    clear_cache,
    display_name,
    dotted,
    flat,
    fold_str,
    parent_map,
    parse_module,
    parse_text,
    segment,
    walk_no_nested,
)
from .python_conditions import read_condition

__all__ = [
    "ParsedModule",
    "parse_module",
    "parse_text",
    "clear_cache",
    "segment",
    "flat",
    "dotted",
    "display_name",
    "read_condition",
    "parent_map",
    "walk_no_nested",
    "fold_str",
    "Unknown",
    "Obj",
    "Interpreter",
]
