"""Collector: the classes of the module and of the local modules it imports.
"""

from __future__ import annotations

import ast

from ..pyparse import ParsedModule, segment
from .astutil import (
    FUNC,
    decorators,
    is_dataclass,
)
from .context import Context
from .facts import (
    ClassField,
    ClassInfo,
)

__all__ = ["collect_classes"]


def _class_info(pm: ParsedModule, node: ast.ClassDef, imported_from: str) -> ClassInfo:
    is_dc = is_dataclass(node)
    info = ClassInfo(
        name=node.name,
        defined_at=pm.where(node),
        imported_from=imported_from,
        is_dataclass=is_dc,
    )
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            ann = segment(pm, stmt.annotation)
            entry = ClassField(
                name=stmt.target.id,
                annotation=ann,
                comment=pm.comment_at(stmt.end_lineno or stmt.lineno),
                line=stmt.lineno,
            )
            if is_dc and not ann.startswith("ClassVar"):
                info.fields.append(entry)
        elif isinstance(stmt, FUNC) and stmt.name == "name":
            decos = decorators(stmt)
            if "property" in decos or any(d.endswith(".getter") for d in decos):
                info.name_source = pm.source_segment(stmt) or ast.unparse(stmt)
    return info


def collect_classes(ctx: Context) -> None:
    """List the visible classes (``facts.classes``); fill ``ctx.class_infos``."""
    for pm, node, imported_from in ctx.universe.visible_classes():
        info = _class_info(pm, node, imported_from)
        ctx.facts.classes.append(info)
        ctx.class_infos[node.name] = info
    # classes defined elsewhere in the universe (bases etc.) are known but not listed
    for name, (pm, node) in ctx.universe.classes.items():
        if name not in ctx.class_infos:
            ctx.class_infos[name] = _class_info(pm, node, pm.relpath)
