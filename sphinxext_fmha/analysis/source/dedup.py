"""Collector: how duplicate kernels are avoided (ordered-set dicts, sets, checks).
"""

from __future__ import annotations

import ast
import re
from typing import Dict, List, Tuple

from ..pyparse import ParsedModule, dotted, segment
from .astutil import (
    FUNC,
)
from .context import Context
from .facts import (
    DedupInfo,
)

__all__ = ["collect_dedup"]


def collect_dedup(ctx: Context) -> None:
    """Record how the blob functions and the pool avoid duplicate kernels (``facts.dedup``)."""
    out = ctx.facts.dedup
    scopes: List[Tuple[ast.AST, ParsedModule]] = [(fn, ctx.pm) for fn in ctx.blob_functions]
    pool = ctx.pool_class()
    if pool is not None:
        scopes.append((pool, ctx.pm))
    for scope, pm in scopes:
        inits: Dict[str, ast.stmt] = {}
        for n in ast.walk(scope):
            if isinstance(n, ast.Assign) and len(n.targets) == 1:
                t = n.targets[0]
                name = t.id if isinstance(t, ast.Name) else None
                v = n.value
                if name and (isinstance(v, ast.Dict) and not v.keys or isinstance(v, ast.Call)
                             and (dotted(v.func) or "").split(".")[-1] in ("dict", "OrderedDict")):
                    inits[name] = n
            elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value is not None:
                v = n.value
                if isinstance(v, ast.Dict) and not v.keys or isinstance(v, ast.Call) \
                        and (dotted(v.func) or "").split(".")[-1] in ("dict", "OrderedDict"):
                    inits[n.target.id] = n
        for n in ast.walk(scope):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Subscript) \
                    and isinstance(n.targets[0].value, ast.Name) and n.targets[0].value.id in inits \
                    and isinstance(n.value, ast.Constant) and n.value.value is True:
                init = inits[n.targets[0].value.id]
                detail = " ".join(pm.comments_above(init.lineno)) or "dict used as an ordered set"
                out.append(DedupInfo("ordered-set dict", segment(pm, n), pm.where(n),
                                     f"{detail} (initialised at {pm.where(init)}: {segment(pm, init)})"))
            elif isinstance(n, ast.Call):
                fname = (dotted(n.func) or "").split(".")[-1]
                if fname == "set" or (isinstance(n.func, ast.Attribute) and n.func.attr == "add"):
                    out.append(DedupInfo("set", segment(pm, n), pm.where(n)))
                elif "dup" in fname.lower():
                    got = ctx.universe.origin_of(fname)
                    doc = ""
                    loc = ""
                    if got is not None and isinstance(got[1], FUNC):
                        doc = " ".join((ast.get_docstring(got[1]) or "").split())
                        loc = got[0].where(got[1])
                    out.append(DedupInfo("check", segment(pm, n), pm.where(n),
                                         (f"{fname} defined at {loc}: {doc}" if loc else doc).strip()))
            elif isinstance(n, ast.If) and isinstance(n.test, ast.Compare) and len(n.test.ops) == 1 \
                    and isinstance(n.test.ops[0], ast.NotIn):
                container = dotted(n.test.comparators[0]) or ""
                container = container[:-len(".keys")] if container.endswith(".keys") else container
                fills = any(
                    (isinstance(x, ast.Call) and isinstance(x.func, ast.Attribute)
                     and x.func.attr in ("append", "add", "setdefault") and dotted(x.func.value) == container)
                    or (isinstance(x, ast.Assign)
                        and any(isinstance(t, ast.Subscript) and dotted(t.value) == container
                                for t in x.targets))
                    for b in n.body for x in ast.walk(b))
                if container and fills:
                    out.append(DedupInfo("membership", segment(pm, n.test), pm.where(n)))
    for line, text in sorted(ctx.pm.comments.items()):
        if re.search(r"duplicat|dedup", text, re.I):
            out.append(DedupInfo("comment", text, f"{ctx.rel}:{line}"))
