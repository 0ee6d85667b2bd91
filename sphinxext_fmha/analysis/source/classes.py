"""Collectors: the classes of the module and of the local modules it imports, and
which of them are tile dataclasses (named ``*Tile*`` or made of ints used in their ``name``)."""

from __future__ import annotations

import ast
import re

from ...model import Gap, TileClass, TileField
from ..pyparse import FUNC, ParsedModule, decorators, is_dataclass, segment
from .context import ClassField, ClassInfo, Context


def _class_info(pm: ParsedModule, node: ast.ClassDef, imported_from: str) -> ClassInfo:
    is_dc = is_dataclass(node)
    info = ClassInfo(name=node.name, defined_at=pm.where(node), imported_from=imported_from,
                     is_dataclass=is_dc)
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            ann = segment(pm, stmt.annotation)
            if is_dc and not ann.startswith("ClassVar"):
                info.fields.append(ClassField(stmt.target.id, ann, line=stmt.lineno,
                                              comment=pm.comment_at(stmt.end_lineno or stmt.lineno)))
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


def collect_tiles(ctx: Context) -> None:
    """Record the tile dataclasses (``facts.tiles``) and their names in ``ctx.tile_names``."""
    for info in ctx.facts.classes:
        if not info.is_dataclass or not info.fields:
            continue
        named = "tile" in info.name.lower()
        ints = [f for f in info.fields if f.annotation in ("int", "builtins.int")]
        used = set(re.findall(r"self\.(\w+)", info.name_source))
        int_heavy = (len(ints) >= max(3, len(info.fields) * 0.6)
                     and len([f for f in ints if f.name in used]) >= len(ints) * 0.6)
        if not (named or int_heavy):
            continue
        ctx.tile_names.add(info.name)
        ctx.facts.tiles.append(TileClass(
            class_name=info.name, defined_at=info.defined_at, imported_from=info.imported_from,
            fields=[TileField(f.name, f.comment) for f in info.fields], name_source=info.name_source))
    if not ctx.facts.tiles:
        ctx.gaps.append(Gap("tile classes", ctx.rel, "no dataclass looks like a tile "
                            "(name contains 'Tile' or int fields used in name)"))
