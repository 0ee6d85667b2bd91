"""Parsing foreign Python source read-only, with a cache, and small ``ast`` helpers.

Nothing here knows about Composable Kernel. Files are parsed once per (path, sha256 of
the content), so the collectors and the APIs of one tree share one syntax tree per file."""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple, Union

#: A ``def`` or ``async def`` (the analysis treats both alike).
FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]
FUNC = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass
class ParsedModule:
    """One parsed file: its text, syntax tree (None when it does not parse) and comments.

    ``relpath`` is the path shown in facts and gaps (``codegen/ops/fmha_fwd.py:12``)."""

    path: Path
    relpath: str
    text: str
    sha256: str
    tree: Optional[ast.Module]
    comments: Dict[int, str] = field(default_factory=dict)
    error: str = ""

    @functools.cached_property
    def lines(self) -> List[str]:
        return self.text.splitlines()

    @functools.cached_property
    def _raw_lines(self) -> List[str]:
        return _LINE.findall(self.text)

    def source_segment(self, node: ast.AST) -> Optional[str]:
        """Like ``ast.get_source_segment`` but with the line split cached."""
        try:
            first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]
            col, end_col = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
        except (AttributeError, TypeError):  # a node made here has no position
            return None
        lines = self._raw_lines
        if last >= len(lines) or end_col is None:
            return None
        if first == last:
            return lines[first].encode()[col:end_col].decode()
        return "".join([lines[first].encode()[col:].decode(), *lines[first + 1:last],
                        lines[last].encode()[:end_col].decode()])

    def where(self, node: Any) -> str:
        """``relpath:line`` of ``node`` (just ``relpath`` for a node without a line)."""
        line = getattr(node, "lineno", None)
        return f"{self.relpath}:{line}" if line else self.relpath

    @functools.cached_property
    def parents(self) -> Dict[ast.AST, ast.AST]:
        """Child node -> parent node over the whole tree."""
        return {child: node for node in (ast.walk(self.tree) if self.tree else ())
                for child in ast.iter_child_nodes(node)}

    def ancestors(self, node: ast.AST, stop: Optional[ast.AST] = None
                  ) -> Iterator[Tuple[ast.AST, ast.AST]]:
        """(ancestor, its child on the way) from ``node`` up to ``stop`` (left out)."""
        child, cur = node, self.parents.get(node)
        while cur is not None and cur is not stop:
            yield cur, child
            child, cur = cur, self.parents.get(cur)

    def comments_above(self, line: int) -> List[str]:
        """Whole-line comments immediately above ``line`` (closest last)."""
        out: List[str] = []
        i = line - 1  # the line above, 1-based
        while i >= 1 and self.lines[i - 1].strip().startswith("#"):
            out.append(self.comments.get(i, self.lines[i - 1].strip().lstrip("#").strip()))
            i -= 1
        return out[::-1]


_CACHE: Dict[Tuple[str, str], ParsedModule] = {}
#: A line with its end, split like the tokenizer does (only \r\n, \r and \n end a line).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _comments(text: str) -> Dict[int, str]:
    out: Dict[int, str] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out[tok.start[0]] = tok.string.lstrip("#").strip()
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def parse_module(path: Path, root: Optional[Path] = None) -> ParsedModule:
    """Parse ``path`` (read-only, cached by path and content); ``relpath`` is relative to
    ``root`` (posix); a syntax error is kept in ``error``."""
    data = Path(path).read_bytes()
    text = data.decode("utf-8", "surrogateescape")
    relpath = Path(path).name
    if root is not None:
        try:
            relpath = Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            relpath = Path(path).as_posix()
    sha = hashlib.sha256(data).hexdigest()
    key = (str(path), sha)
    cached = _CACHE.get(key)
    if cached is not None:
        return cached if cached.relpath == relpath else dataclasses.replace(cached, relpath=relpath)
    tree: Optional[ast.Module]
    error = ""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes
        tree = None
        error = f"{type(exc).__name__}: {exc}"
    pm = ParsedModule(Path(path), relpath, text, sha, tree, _comments(text), error)
    _CACHE[key] = pm
    return pm


def walk_no_nested(node: ast.AST) -> Iterator[ast.AST]:
    """Like ast.walk but does not descend into nested function/class definitions."""
    todo = list(ast.iter_child_nodes(node))
    while todo:
        n = todo.pop(0)
        yield n
        if isinstance(n, (*FUNC, ast.ClassDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(n))


_WS = re.compile(r"\s+")


def flat(text: str) -> str:
    """Collapse a multi-line source fragment onto one line."""
    if "\n" not in text:
        return text.strip()
    out = _WS.sub(" ", text).strip()
    out = re.sub(r"([(\[{]) ", r"\1", out)
    out = re.sub(r" ([)\]}])", r"\1", out)
    out = re.sub(r",([)\]}])", r"\1", out)
    return out


def segment(pm: Optional[ParsedModule], node: ast.AST) -> str:
    """Original source text of ``node`` on one line (falls back to ``ast.unparse``)."""
    text = pm.source_segment(node) if pm is not None else None
    if not text:  # synthesised nodes (e.g. a negated test) have no source position
        text = ast.unparse(node)
    return flat(text)


def dotted(node: ast.AST) -> Optional[str]:
    """``a.b.c`` for a chain of Name/Attribute nodes, else None."""
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def assigned_names(stmt: ast.AST) -> List[Tuple[str, ast.expr]]:
    """(name, value) pairs of ``a = b = value`` or ``a: T = value`` (other targets skipped)."""
    if isinstance(stmt, ast.Assign):
        return [(t.id, stmt.value) for t in stmt.targets if isinstance(t, ast.Name)]
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        return [(stmt.target.id, stmt.value)]
    return []


def fold_str(node: ast.AST) -> Optional[str]:
    """Fold a string built from constants and ``+`` (e.g. argparse help text)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = fold_str(node.left), fold_str(node.right)
        if a is not None and b is not None:
            return a + b
    if isinstance(node, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in node.values):
        return "".join(str(v.value) for v in node.values)  # type: ignore[attr-defined]
    return None


def decorators(node: ast.AST) -> List[str]:
    """Dotted names of the decorators of ``node`` (``@a.b(...)`` gives ``a.b``)."""
    return [dotted(d.func if isinstance(d, ast.Call) else d) or ""
            for d in getattr(node, "decorator_list", [])]


def names_in(node: ast.AST) -> Set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def key_text(key: Any) -> str:
    """A dict key as shown in facts (tuples without quotes: ``(128, 128)``)."""
    if isinstance(key, tuple):
        return "(" + ", ".join(key_text(k) for k in key) + ")"
    return str(key)


def function_params(fn: FunctionNode) -> List[str]:
    a = fn.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]


def mentions(node: ast.AST, names: Set[str]) -> bool:
    return bool(names_in(node) & names)
