"""Notes read from the collected facts: suspicious literals and rules that never trigger."""

from __future__ import annotations

import ast
import re
from typing import Any, List, Set, Tuple

from ..pyparse import segment
from .context import Context
from .facts import SourceFacts

__all__ = ["note_dead_rules", "note_suspicious_literals"]

_NOT_LITERAL = object()


def _table_head_dims(facts: SourceFacts) -> Set[Any]:
    dims: Set[Any] = set()
    for table in facts.factory_tables:
        for per_dtype in table.tiles.values():
            for key in per_dtype:
                raw = key.split(" [", 1)[0]
                dims.add(_literal(raw, raw))
    return dims


def _literal(text: Any, fallback: Any) -> Any:
    """The hashable Python literal ``text`` spells (a node or source text), else ``fallback``."""
    try:
        value = ast.literal_eval(text)
        hash(value)
    except (ValueError, TypeError, SyntaxError):  # not a literal, or a list / dict
        return fallback
    return value


def _dim_key(v: Any) -> Tuple[int, Any]:
    return (0, v) if isinstance(v, int) else (1, str(v))


def note_dead_rules(ctx: Context) -> None:
    """Skip rules testing a head dim that no tile table provides (they never trigger)."""
    facts = ctx.facts
    dims = _table_head_dims(facts)
    if not dims or "*" in dims:
        return
    scalars = {d[0] if isinstance(d, tuple) else d for d in dims}
    for sc in facts.skip_conditions:
        if sc.kind not in ("continue", "option") or not sc.source:
            continue
        try:
            tree = ast.parse(sc.source, mode="eval").body
        except SyntaxError:
            continue
        conjuncts: List[ast.AST] = []
        todo: List[ast.AST] = [tree]
        while todo:
            node = todo.pop(0)
            if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
                todo[:0] = node.values
            else:
                conjuncts.append(node)
        for c in conjuncts:
            if not (isinstance(c, ast.Compare) and len(c.ops) == 1 and isinstance(c.ops[0], ast.Eq)):
                continue
            left, right = c.left, c.comparators[0]
            if isinstance(left, ast.Name) and "hdim" in left.id.lower() and isinstance(right, ast.Constant):
                if right.value not in scalars:
                    facts.notes.append({
                        "what": "skip rule never triggers",
                        "where": sc.where,
                        "detail": f"{sc.source}: no tile table has head dim {right.value!r} "
                                  f"(tables have {', '.join(str(v) for v in sorted(scalars, key=_dim_key))})",
                    })
            elif isinstance(left, ast.Tuple) and left.elts and isinstance(left.elts[0], ast.Name) \
                    and "hdim" in left.elts[0].id.lower():
                value = _literal(right, _NOT_LITERAL)
                if value is not _NOT_LITERAL and value not in dims:
                    facts.notes.append({
                        "what": "skip rule never triggers",
                        "where": sc.where,
                        "detail": f"{sc.source}: no tile table has head dims {value!r}",
                    })


def note_suspicious_literals(ctx: Context) -> None:
    """Membership lists holding one comma-joined string (e.g. ``["a, b"]``): always false."""
    pm = ctx.pm
    for n in ast.walk(ctx.tree):
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.In, ast.NotIn)) \
                and isinstance(n.comparators[0], (ast.List, ast.Tuple, ast.Set)):
            for e in n.comparators[0].elts:
                if isinstance(e, ast.Constant) and isinstance(e.value, str) \
                        and re.search(r"\w,\s*\w", e.value):
                    ctx.facts.notes.append({
                        "what": f"suspicious literal {e.value!r}",
                        "where": pm.where(n),
                        "detail": f"{segment(pm, n)} compares against one comma-joined string, "
                                  "so it is true only for that exact text",
                    })
