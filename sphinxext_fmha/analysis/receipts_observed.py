"""Receipts in the codegen's source against what it lists: the numbers it compares
``receipt`` with (the ``-r`` help does not list them all: flash-attn 2.7.4 tests
``receipt == 3``), receipt conditions no listed kernel meets (2.8.3 fwd_splitkv's ``dtype in
['fp16, bf16']``) and rules every listed kernel meets: each ``name in [constants]``/``name ==
constant`` term, tied to the kernel field the name is passed as (``Kernel(F_dtype=dtype)``),
against that field's listed values; a term of another form is left alone."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from ..model import Receipt
from .pyparse import FUNC, dotted, parse_module

__all__ = ["note_unmet_terms", "receipts_in_source"]


def note_unmet_terms(receipts: Sequence[Receipt], fmha_dir: Path,
                     records: Iterable[dict]) -> None:
    """Fill each receipt's ``unmet`` and ``met`` from the listed kernels' ``records``
    (their field values by path, as the probe observed them)."""
    # each receipt's terms first: the records are read for the fields they test only
    # (2.8.3 bwd has 7,824 records of some thirty fields each)
    terms: List[Tuple[Receipt, str, str, Set[str]]] = []  # (receipt, condition, path, wanted)
    # the receipts whose every condition is such a term, with those terms
    whole: List[Tuple[Receipt, List[Tuple[Receipt, str, str, Set[str]]]]] = []
    for receipt in receipts:
        receipt.unmet, receipt.met, receipt.terms = [], [], []
        source, _, line = receipt.where.rpartition(":")  # (the collector's path:line)
        function = _function_at(fmha_dir / source, int(line))
        if function is None:
            continue
        fields = _fields_passed(function)
        read = [(receipt, condition.strip(), *term) for condition in receipt.conditions
                for term in [_term(condition, fields)] if term is not None]
        terms.extend(read)
        # (a branch that also tests something else, ``when``, keeps less than its terms)
        if read and len(read) == len(receipt.conditions) and not receipt.when:
            whole.append((receipt, read))
            receipt.terms = [[condition, path, *sorted(wanted)]
                             for _, condition, path, wanted in read]
    values: Dict[str, Set[str]] = {path: set() for _, _, path, _ in terms}
    lacking: Set[str] = set()  # paths some listed kernel has no value at
    for record in records if values else ():
        leaves = record["leaves"]
        for path, found in values.items():
            if path in leaves and not isinstance(leaves[path], dict):  # (a dict: a repr)
                found.add(str(leaves[path]))
            else:
                lacking.add(path)
    for receipt, condition, path, wanted in terms:
        listed = values[path]
        if listed and not wanted & listed:
            receipt.unmet.append([condition, path, ", ".join(sorted(listed))])
    # a rule every listed kernel meets, term by term, drops none of them (2.8.3 bwd's
    # ``-r 600`` keeps fp16 and bf16: the only data types bwd lists)
    for receipt, read in whole:
        if all(values[path] and path not in lacking and values[path] <= wanted
               for _, _, path, wanted in read):
            receipt.met = [[condition, path, ", ".join(sorted(values[path]))]
                           for _, condition, path, _ in read]


def _function_at(path: Path, line: int) -> Optional[ast.AST]:
    """The innermost function of the module at ``path`` that holds ``line``."""
    try:
        tree = parse_module(path).tree
    except (OSError, SyntaxError, ValueError):
        return None
    return max((node for node in (ast.walk(tree) if tree is not None else ()) if isinstance(node, FUNC)
                and node.lineno <= line <= (node.end_lineno or node.lineno)),
               key=lambda node: node.lineno, default=None)


def _fields_passed(function: ast.AST) -> Dict[str, str]:
    """name -> the keyword it is passed as in the function's calls (``F_dtype=dtype``);
    a name passed as two different keywords is left out."""
    fields: Dict[str, str] = {}
    ambiguous: Set[str] = set()
    for node in ast.walk(function):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg and isinstance(keyword.value, ast.Name):
                name = keyword.value.id
                if fields.setdefault(name, keyword.arg) != keyword.arg:
                    ambiguous.add(name)
    return {name: field for name, field in fields.items() if name not in ambiguous}


def _term(condition: str, fields: Dict[str, str]) -> Optional[Tuple[str, Set[str]]]:
    """(its field, the values it keeps) when ``condition`` is a plain ``in``/``==`` term
    on a passed field; else None."""
    try:
        node = ast.parse(condition.strip(), mode="eval").body
    except SyntaxError:
        return None  # (a guarded or negated reading: "... (when ...)", "not (...)")
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.In, ast.Eq))):
        return None
    name, *attributes = (dotted(node.left) or ".").split(".")
    wanted = _constants(node.comparators[0], isinstance(node.ops[0], ast.In))
    if name not in fields or wanted is None:
        return None
    return ".".join([fields[name], *attributes]), wanted


def _constants(node: ast.AST, many: bool) -> Optional[Set[str]]:
    items = node.elts if many and isinstance(node, (ast.List, ast.Tuple, ast.Set)) else \
        [node] if not many else None
    if items is None or not all(isinstance(item, ast.Constant) for item in items):
        return None
    return {str(item.value) for item in items}  # type: ignore[attr-defined]


def _named_receipt(node: ast.AST) -> bool:
    return "receipt" in (node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")).lower()


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
        low, high = [0, *map(_int, node.args)][-2:]  # range(stop) starts at 0
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
