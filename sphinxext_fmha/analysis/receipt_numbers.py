"""The receipt numbers a tree's codegen compares ``receipt`` with, read with :mod:`ast`:
generate.py's ``-r`` help does not list them all (flash-attn 2.7.4 tests ``receipt == 3``)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterable, List, Optional, Set, Tuple

__all__ = ["receipts_in_source"]


def _named_receipt(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return "receipt" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return "receipt" in node.attr.lower()
    return False


def _int(node: ast.AST) -> Optional[int]:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) \
            and not isinstance(node.value, bool):
        return node.value
    return None


def _values(node: ast.AST) -> Iterable[Tuple[int, int]]:
    """Inclusive ranges a comparison operand names."""
    single = _int(node)
    if single is not None:
        yield (single, single)
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for element in node.elts:
            yield from _values(element)
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
          and node.func.id == "range" and 1 <= len(node.args) <= 2):
        bounds = [_int(arg) for arg in node.args]
        if all(b is not None for b in bounds):
            low, high = (0, bounds[0]) if len(bounds) == 1 else (bounds[0], bounds[1])
            if low is not None and high is not None and high > low:
                yield (low, high - 1)


def receipts_in_source(fmha_dir: Path) -> List[Tuple[int, int]]:
    """Sorted inclusive ranges of receipts compared with in generate.py and codegen/."""
    fmha_dir = Path(fmha_dir)
    files = [fmha_dir / "generate.py", *sorted((fmha_dir / "codegen").rglob("*.py"))]
    found: Set[Tuple[int, int]] = set()
    for path in files:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (OSError, SyntaxError, ValueError):
            continue  # an unreadable file adds nothing; the analysis reports it
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, operands, operands[1:]):
                if not isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
                    continue
                if _named_receipt(left):
                    found.update(_values(right))
                elif _named_receipt(right) and isinstance(op, (ast.Eq, ast.NotEq)):
                    found.update(_values(left))
    return sorted(found)
