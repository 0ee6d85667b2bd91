"""Collector: the loops of the blob functions and helpers (``product`` axes, ``for``).
"""

from __future__ import annotations

import ast
from typing import Dict

from ...model import Gap
from ..pyparse import dotted, walk_no_nested
from .astutil import (
    expand_axes,
    flat_targets,
)
from .context import Context
from .facts import (
    LoopInfo,
)

__all__ = ["collect_enumeration"]


def collect_enumeration(ctx: Context) -> None:
    """Record every ``for`` loop of the blob and helper functions (``facts.enumeration.loops``)."""
    for fn, label in ctx.loop_functions():
        local_assigns: Dict[str, ast.AST] = {}
        for n in walk_no_nested(fn):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                local_assigns[n.targets[0].id] = n.value
        for n in walk_no_nested(fn):
            if not isinstance(n, ast.For):
                continue
            it = n.iter
            targets = [ctx.seg(t) for t in flat_targets(n.target)]
            if isinstance(it, ast.Call) and (dotted(it.func) or "").endswith("product"):
                axes_nodes = expand_axes(it.args)
                axes = [ctx.seg(a) for a in axes_nodes]
                resolved = []
                for a in axes_nodes:
                    if isinstance(a, ast.Name) and a.id in local_assigns:
                        resolved.append(ctx.seg(local_assigns[a.id]))
                    else:
                        resolved.append(ctx.seg(a))
                info = LoopInfo(label, "product", targets, axes, resolved, ctx.seg(it), ctx.where(n))
                if len(targets) != len(axes):
                    ctx.gaps.append(Gap(f"product axes of {label}", ctx.where(n),
                                        f"{len(targets)} loop targets but {len(axes)} axes"))
            else:
                src = ctx.seg(it)
                shown = src
                if isinstance(it, ast.Name) and it.id in local_assigns:
                    shown = ctx.seg(local_assigns[it.id])
                info = LoopInfo(label, "for", targets, [src], [shown], src, ctx.where(n))
            ctx.facts.enumeration.loops.append(info)
