"""Collector: the functions enumerating kernels (blob functions), their helpers, the
names of ``fnmatch`` and of the receipt parameter."""

from __future__ import annotations

import ast
import re
from typing import List

from ...model import Gap
from ..pyparse import FUNC, FunctionNode, dotted, function_params, walk_no_nested
from .context import Context


def find_blob_functions(ctx: Context) -> None:
    """Find the blob functions (loops with ``continue`` or ``product``) and their helpers.

    Sets ``ctx.fnmatch_names``, ``ctx.blob_functions``, ``ctx.receipt_names`` and
    ``ctx.helper_functions``; records the blob functions in ``facts.enumeration``.
    """
    tree = ctx.tree
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "fnmatch":
            ctx.fnmatch_names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            ctx.fnmatch_names.update(f"{a.asname or a.name}.{f}" for a in node.names
                                     if a.name == "fnmatch" for f in ("fnmatch", "fnmatchcase"))
    if not ctx.fnmatch_names:
        ctx.fnmatch_names = {"fnmatch.fnmatch", "fnmatch"}
    candidates: List[FunctionNode] = []
    for node in tree.body:
        if not isinstance(node, FUNC):
            continue
        loops = [n for n in walk_no_nested(node) if isinstance(n, (ast.For, ast.While))]
        if loops and (any(isinstance(n, ast.Continue) for loop in loops for n in ast.walk(loop))
                      or any(isinstance(n, ast.Call) and (dotted(n.func) or "").endswith("product")
                             for n in walk_no_nested(node))):
            candidates.append(node)
    named = [f for f in candidates if "blob" in f.name.lower()
             and not re.match(r"^(write|list)_", f.name)]
    ctx.blob_functions = named or candidates
    if not ctx.blob_functions:
        ctx.gaps.append(Gap("blob functions", ctx.rel,
                            "no module-level function enumerating kernels (loops with continue/product)"))
    for fn in ctx.blob_functions:
        ctx.facts.enumeration.functions[fn.name] = ctx.where(fn)
        if any(arg.arg == "targets" for arg in fn.args.args):
            ctx.facts.enumeration.takes_targets = True
        for params in function_params(fn):
            if "receipt" in params.lower():
                ctx.receipt_names.add(params)
    if ctx.blob_functions and not ctx.receipt_names:
        ctx.gaps.append(Gap("receipt parameter", ctx.rel,
                            "no blob-function parameter whose name contains 'receipt'"))
    # helpers: nested functions of blob functions and loop-bearing factory/pipeline methods
    for fn in ctx.blob_functions:
        for n in walk_no_nested(fn):
            if isinstance(n, FUNC):
                ctx.helper_functions.append((n, fn.name))
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            info = ctx.class_infos.get(node.name)
            if info is not None and info.is_dataclass:
                continue
            if "pool" in node.name.lower():
                continue
            for stmt in node.body:
                if isinstance(stmt, FUNC) and any(isinstance(n, (ast.For, ast.While))
                                                   for n in walk_no_nested(stmt)):
                    ctx.helper_functions.append((stmt, node.name))
