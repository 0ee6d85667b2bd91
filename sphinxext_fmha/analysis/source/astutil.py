"""Small syntax-tree helpers shared by the collectors (pure functions of nodes)."""

from __future__ import annotations

import ast
from typing import Any, List, Optional, Set

from ..pyparse import FUNCTION_TYPES as FUNC
from ..pyparse import FunctionNode, ParsedModule, dotted


def decorators(node: ast.AST) -> List[str]:
    """Dotted names of the decorators of ``node`` (``@a.b(...)`` gives ``a.b``)."""
    out = []
    for d in getattr(node, "decorator_list", []):
        target = d.func if isinstance(d, ast.Call) else d
        out.append(dotted(target) or "")
    return out


def is_dataclass(node: ast.ClassDef) -> bool:
    """Whether a class's decorators make it a dataclass."""
    return any((dotted(d.func if isinstance(d, ast.Call) else d) or "").split(".")[-1]
               == "dataclass" for d in node.decorator_list)


def member(cls: ast.ClassDef, name: str) -> Optional[FunctionNode]:
    """The method ``name`` defined in the body of ``cls`` (not its bases)."""
    for stmt in cls.body:
        if isinstance(stmt, FUNC) and stmt.name == name:
            return stmt
    return None


def names_in(node: ast.AST) -> Set[str]:
    """Every name used below ``node``."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def key_text(key: Any) -> str:
    """A dict key as shown in facts (tuples without quotes: ``(128, 128)``)."""
    if isinstance(key, tuple):
        return "(" + ", ".join(key_text(k) for k in key) + ")"
    return str(key)


def wrap(text: str, node: ast.AST) -> str:
    """``text`` in parentheses when ``node`` binds looser than ``and``."""
    if isinstance(node, (ast.BoolOp, ast.IfExp, ast.Lambda)) or (
            isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        return f"({text})"
    return text


def function_params(fn: FunctionNode) -> List[str]:
    """Parameter names of a function, keyword-only ones included."""
    a = fn.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]


def mentions(node: ast.AST, names: Set[str]) -> bool:
    """Whether ``node`` uses one of ``names``."""
    return bool(names_in(node) & names)


def stmt_line(node: ast.AST, pm: ParsedModule) -> int:
    """Line of the statement holding ``node``."""
    cur = node
    parents = pm.parents
    while cur in parents and not isinstance(cur, ast.stmt):
        cur = parents[cur]
    return getattr(cur, "lineno", getattr(node, "lineno", 1))
