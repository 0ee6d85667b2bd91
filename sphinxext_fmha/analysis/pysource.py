"""Generic, read-only Python source utilities (``ast`` + ``tokenize`` only).

Nothing here knows about Composable Kernel: it parses files (cached per path and
content hash), locates nodes, renders conditions as plain English and partially
evaluates small pure functions (literal tables, f-string names) without importing
or executing the analysed code.
"""

from __future__ import annotations

import ast
import hashlib
import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

__all__ = [
    "ParsedModule",
    "parse_module",
    "parse_text",
    "clear_cache",
    "segment",
    "flat",
    "dotted",
    "display_name",
    "read_condition",
    "parent_map",
    "walk_no_nested",
    "fold_str",
    "Unknown",
    "Obj",
    "Interpreter",
]


# --------------------------------------------------------------------------------------
# parsing with an in-process cache keyed by (path, sha256 of the content)
# --------------------------------------------------------------------------------------


@dataclass
class ParsedModule:
    path: Path
    relpath: str
    text: str
    sha256: str
    tree: Optional[ast.Module]
    comments: Dict[int, str] = field(default_factory=dict)
    error: str = ""
    _parents: Optional[Dict[ast.AST, ast.AST]] = None
    _lines: Optional[List[str]] = None
    _raw_lines: Optional[List[str]] = None

    @property
    def lines(self) -> List[str]:
        if self._lines is None:
            self._lines = self.text.splitlines()
        return self._lines

    def source_segment(self, node: ast.AST) -> Optional[str]:
        """Like ``ast.get_source_segment`` but with the line split cached."""
        try:
            lineno = node.lineno - 1  # type: ignore[attr-defined]
            end_lineno = node.end_lineno - 1  # type: ignore[attr-defined]
            col = node.col_offset  # type: ignore[attr-defined]
            end_col = node.end_col_offset  # type: ignore[attr-defined]
        except AttributeError:
            return None
        if end_lineno is None or end_col is None:
            return None
        if self._raw_lines is None:
            self._raw_lines = _split_lines_keepends(self.text)
        lines = self._raw_lines
        if end_lineno >= len(lines):
            return None
        if lineno == end_lineno:
            return lines[lineno].encode()[col:end_col].decode()
        first = lines[lineno].encode()[col:].decode()
        last = lines[end_lineno].encode()[:end_col].decode()
        return "".join([first] + lines[lineno + 1:end_lineno] + [last])

    def where(self, node: Any) -> str:
        line = getattr(node, "lineno", None)
        return f"{self.relpath}:{line}" if line else self.relpath

    @property
    def parents(self) -> Dict[ast.AST, ast.AST]:
        if self._parents is None:
            self._parents = parent_map(self.tree) if self.tree is not None else {}
        return self._parents

    def comment_at(self, line: int) -> str:
        return self.comments.get(line, "")

    def comments_above(self, line: int) -> List[str]:
        """Whole-line comments immediately above ``line`` (closest last)."""
        out: List[str] = []
        lines = self.lines
        i = line - 1  # 1-based line -> index of line above is line-2
        while i - 1 >= 0:
            src = lines[i - 1].strip()
            if src.startswith("#"):
                out.append(self.comments.get(i, src.lstrip("#").strip()))
                i -= 1
                continue
            break
        return list(reversed(out))


_CACHE: Dict[Tuple[str, str], ParsedModule] = {}
_NEWLINE = re.compile(r"\r\n|\r|\n")


def _split_lines_keepends(text: str) -> List[str]:
    """Split like the tokenizer does (only \\r\\n, \\r and \\n end a line)."""
    out: List[str] = []
    start = 0
    for m in _NEWLINE.finditer(text):
        out.append(text[start:m.end()])
        start = m.end()
    if start < len(text):
        out.append(text[start:])
    return out


def clear_cache() -> None:
    _CACHE.clear()


def _comments(text: str) -> Dict[int, str]:
    out: Dict[int, str] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out[tok.start[0]] = tok.string.lstrip("#").strip()
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def parse_text(text: str, relpath: str = "<string>", path: Optional[Path] = None) -> ParsedModule:
    sha = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
    key = (str(path) if path is not None else relpath, sha)
    cached = _CACHE.get(key)
    if cached is not None:
        if cached.relpath == relpath:
            return cached
        return ParsedModule(cached.path, relpath, cached.text, sha, cached.tree,
                            cached.comments, cached.error, cached._parents, cached._lines, cached._raw_lines)
    tree: Optional[ast.Module]
    error = ""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes
        tree = None
        error = f"{type(exc).__name__}: {exc}"
    pm = ParsedModule(path or Path(relpath), relpath, text, sha, tree, _comments(text), error)
    _CACHE[key] = pm
    return pm


def parse_module(path: Path, root: Optional[Path] = None) -> ParsedModule:
    """Parse ``path`` (read-only); ``relpath`` is relative to ``root`` (posix)."""
    data = Path(path).read_bytes()
    text = data.decode("utf-8", "surrogateescape")
    if root is not None:
        try:
            rel = Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            rel = Path(path).as_posix()
    else:
        rel = Path(path).name
    return parse_text(text, rel, Path(path))


# --------------------------------------------------------------------------------------
# small AST helpers
# --------------------------------------------------------------------------------------


def parent_map(tree: ast.AST) -> Dict[ast.AST, ast.AST]:
    out: Dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            out[child] = node
    return out


def walk_no_nested(node: ast.AST) -> Iterator[ast.AST]:
    """Like ast.walk but does not descend into nested function/class definitions."""
    todo = list(ast.iter_child_nodes(node))
    while todo:
        n = todo.pop(0)
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
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
    text = None
    if pm is not None:
        try:
            text = pm.source_segment(node)
        except Exception:  # pragma: no cover - defensive
            text = None
    if not text:
        try:
            text = ast.unparse(node)
        except Exception:  # pragma: no cover
            text = type(node).__name__
    return flat(text)


def dotted(node: ast.AST) -> Optional[str]:
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


_PREFIX = re.compile(r"^[A-Z]_(?=[A-Za-z0-9])")


def display_name(path: str) -> str:
    """``self.F_pipeline.F_spad`` -> ``pipeline.spad`` (heuristic, naming-neutral)."""
    parts = path.split(".")
    if parts and parts[0] == "self" and len(parts) > 1:
        parts = parts[1:]
    return ".".join(_PREFIX.sub("", p) for p in parts)


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


# --------------------------------------------------------------------------------------
# plain-English reading of conditions
# --------------------------------------------------------------------------------------

_BARE = re.compile(r"^[\w.\-/*+]+$")


def _const(v: Any) -> str:
    if isinstance(v, str):
        if v == "":
            return '""'
        return v if _BARE.match(v) else repr(v).replace("'", '"')
    return repr(v)


def _term(node: ast.AST) -> str:
    if isinstance(node, ast.Constant):
        return _const(node.value)
    d = dotted(node)
    if d is not None:
        return display_name(d)
    if isinstance(node, ast.List):
        return "[" + ", ".join(_term(e) for e in node.elts) + "]"
    if isinstance(node, (ast.Tuple, ast.Set)):
        return "(" + ", ".join(_term(e) for e in node.elts) + ")"
    if isinstance(node, ast.Call):
        return _read_call(node)
    if isinstance(node, ast.Subscript):
        return _term(node.value) + "[" + _slice_text(node.slice) + "]"
    try:
        return ast.unparse(node)
    except Exception:  # pragma: no cover
        return type(node).__name__


def _slice_text(node: ast.AST) -> str:
    if isinstance(node, ast.Slice):
        lo = _term(node.lower) if node.lower else ""
        hi = _term(node.upper) if node.upper else ""
        return f"{lo}:{hi}"
    return _term(node)


def _alts(elts: Sequence[ast.AST], word: str) -> str:
    items = [_term(e) for e in elts]
    if not items:
        return "nothing"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + f" {word} " + items[-1]


def _read_call(node: ast.Call) -> str:
    f = node.func
    if isinstance(f, ast.Attribute) and len(node.args) == 1 and not node.keywords:
        obj = _term(f.value)
        arg = _term(node.args[0])
        words = {"startswith": "starts with", "endswith": "ends with"}
        if f.attr in words:
            return f"{obj} {words[f.attr]} {arg}"
    try:
        return ast.unparse(node)
    except Exception:  # pragma: no cover
        return "call"


def _is_seq(node: ast.AST) -> bool:
    return isinstance(node, (ast.List, ast.Tuple, ast.Set))


def _compare_one(left: ast.AST, op: ast.cmpop, right: ast.AST, negate: bool = False) -> str:
    if negate:
        inv = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
               ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.Lt: ast.GtE, ast.GtE: ast.Lt,
               ast.Gt: ast.LtE, ast.LtE: ast.Gt}
        op = inv[type(op)]()
    l = _term(left)
    if isinstance(op, (ast.Eq, ast.Is)):
        if isinstance(right, ast.Constant) and right.value is None:
            return f"{l} is None"
        return f"{l} is {_term(right)}"
    if isinstance(op, (ast.NotEq, ast.IsNot)):
        if isinstance(right, ast.Constant) and right.value is None:
            return f"{l} is not None"
        return f"{l} is not {_term(right)}"
    if isinstance(op, ast.In):
        if _is_seq(right):
            return f"{l} is {_alts(right.elts, 'or')}"  # type: ignore[attr-defined]
        if isinstance(left, ast.Constant) and isinstance(left.value, str):
            return f"{_term(right)} contains {l}"
        return f"{l} is in {_term(right)}"
    if isinstance(op, ast.NotIn):
        if _is_seq(right):
            elts = right.elts  # type: ignore[attr-defined]
            if len(elts) == 1:
                return f"{l} is not {_term(elts[0])}"
            if len(elts) == 2:
                return f"{l} is neither {_term(elts[0])} nor {_term(elts[1])}"
            return f"{l} is none of {_alts(elts, 'or')}"
        if isinstance(left, ast.Constant) and isinstance(left.value, str):
            return f"{_term(right)} does not contain {l}"
        return f"{l} is not in {_term(right)}"
    sym = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}.get(type(op), "?")
    return f"{l} {sym} {_term(right)}"


def read_condition(node: ast.AST, negate: bool = False) -> str:
    """Render a boolean expression in plain English (``x in [a, b]`` -> ``x is a or b``)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return read_condition(node.operand, not negate)
    if isinstance(node, ast.BoolOp):
        is_and = isinstance(node.op, ast.And)
        if negate:  # De Morgan
            is_and = not is_and
        word = " and " if is_and else " or "
        parts = []
        for v in node.values:
            text = read_condition(v, negate)
            inner = v.operand if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.Not) else v
            if isinstance(inner, ast.BoolOp):
                inner_and = isinstance(inner.op, ast.And) != (negate != (inner is not v))
                if inner_and != is_and:
                    text = f"({text})"
            parts.append(text)
        return word.join(parts)
    if isinstance(node, ast.Compare):
        pieces = []
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            pieces.append(_compare_one(left, op, right))
            left = right
        text = " and ".join(pieces)
        if negate:
            if len(pieces) == 1:
                return _compare_one(node.left, node.ops[0], node.comparators[0], negate=True)
            return f"not ({text})"
        return text
    if isinstance(node, ast.Constant):
        val = bool(node.value)
        return str(val != negate).lower() if isinstance(node.value, bool) else (
            f"not {_const(node.value)}" if negate else _const(node.value))
    text = _term(node)
    if negate:
        if isinstance(node, ast.Call) and " starts with " in text:
            return text.replace(" starts with ", " does not start with ", 1)
        if isinstance(node, ast.Call) and " ends with " in text:
            return text.replace(" ends with ", " does not end with ", 1)
        return f"not {text}" if re.match(r"^[\w.]+$", text) else f"not ({text})"
    return text


# --------------------------------------------------------------------------------------
# a tiny partial evaluator for pure table/name functions
# --------------------------------------------------------------------------------------


class Unknown(Exception):
    """Raised when a value cannot be determined statically."""


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


@dataclass(eq=False)
class Obj:
    """An instance of an analysed class built from literal constructor arguments."""

    class_name: str
    args: Dict[str, Any]  # field name -> ast node (lazy) or python value
    source: str = ""
    _resolved: Dict[str, Any] = field(default_factory=dict)


@dataclass
class _Closure:
    node: ast.FunctionDef
    env: Dict[str, Any]
    self_obj: Any = None


_SAFE_BUILTINS: Dict[str, Callable[..., Any]] = {
    "str": str, "int": int, "float": float, "bool": bool, "len": len, "list": list,
    "tuple": tuple, "dict": dict, "set": set, "sorted": sorted, "min": min, "max": max,
    "abs": abs, "any": any, "all": all, "range": range, "zip": zip, "enumerate": enumerate,
    "reversed": reversed,
}

_SAFE_METHODS = {
    "keys", "values", "items", "get", "startswith", "endswith", "upper", "lower", "strip",
    "join", "split", "append", "extend", "insert", "copy", "index", "count", "replace",
    "setdefault", "pop", "format",
}


class Interpreter:
    """Evaluate simple, side-effect-free function bodies over literal data.

    ``global_lookup(name)`` resolves module-level names (raise ``Unknown`` when not
    possible); ``classes`` maps class names to their ``ast.ClassDef`` so that
    constructor calls become :class:`Obj` and ``Class.method(...)`` calls and
    properties can be evaluated. Anything else raises :class:`Unknown`.
    """

    MAX_DEPTH = 12
    MAX_STEPS = 200_000

    def __init__(self, classes: Dict[str, ast.ClassDef],
                 global_lookup: Callable[[str], Any],
                 functions: Optional[Dict[str, ast.FunctionDef]] = None,
                 node_modules: Optional[Dict[int, ParsedModule]] = None) -> None:
        self.classes = classes
        self.global_lookup = global_lookup
        self.functions = functions or {}
        self.node_modules = node_modules or {}
        self.pm_stack: List[ParsedModule] = []
        self.depth = 0
        self.steps = 0

    # ---- class helpers --------------------------------------------------------------

    def class_fields(self, cls_name: str) -> List[Tuple[str, Optional[ast.AST]]]:
        out: List[Tuple[str, Optional[ast.AST]]] = []
        for base in reversed(self.mro(cls_name)):
            cdef = self.classes.get(base)
            if cdef is None:
                continue
            for stmt in cdef.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    ann = ast.unparse(stmt.annotation)
                    if ann.startswith("ClassVar"):
                        continue
                    names = [n for n, _ in out]
                    if stmt.target.id in names:
                        out[names.index(stmt.target.id)] = (stmt.target.id, stmt.value)
                    else:
                        out.append((stmt.target.id, stmt.value))
        return out

    def mro(self, cls_name: str) -> List[str]:
        out: List[str] = []

        def visit(name: str) -> None:
            if name in out:
                return
            out.append(name)
            cdef = self.classes.get(name)
            if cdef is None:
                return
            for b in cdef.bases:
                bn = dotted(b)
                if bn:
                    visit(bn.split(".")[-1])

        visit(cls_name)
        return out

    def find_member(self, cls_name: str, member: str) -> Optional[ast.AST]:
        for name in self.mro(cls_name):
            cdef = self.classes.get(name)
            if cdef is None:
                continue
            for stmt in cdef.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == member:
                    return stmt
                if isinstance(stmt, ast.Assign):
                    for t in stmt.targets:
                        if isinstance(t, ast.Name) and t.id == member:
                            return stmt
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) \
                        and stmt.target.id == member and stmt.value is not None:
                    return stmt
        return None

    def construct(self, cls_name: str, args: List[ast.AST], keywords: List[ast.keyword],
                  env: Dict[str, Any], source: str = "") -> Obj:
        fields = self.class_fields(cls_name)
        values: Dict[str, Any] = {}
        for (fname, _), a in zip(fields, args):
            if isinstance(a, ast.Starred):
                raise Unknown("starred constructor argument")
            values[fname] = _Lazy(a, env)
        if len(args) > len(fields):
            raise Unknown(f"too many arguments for {cls_name}")
        for kw in keywords:
            if kw.arg is None:
                raise Unknown("**kwargs in constructor")
            values[kw.arg] = _Lazy(kw.value, env)
        for fname, default in fields:
            if fname not in values:
                values[fname] = _Lazy(default, {}) if default is not None else _Missing()
        return Obj(cls_name, values, source)

    def get_field(self, obj: Obj, name: str) -> Any:
        if name in obj._resolved:
            return obj._resolved[name]
        if name in obj.args:
            raw = obj.args[name]
            if isinstance(raw, _Missing):
                raise Unknown(f"{obj.class_name}.{name} not given")
            if isinstance(raw, _Lazy):
                if raw.node is None:
                    raise Unknown(f"{obj.class_name}.{name} has no value")
                if isinstance(raw.node, ast.Call) and dotted(raw.node.func) in ("field", "dataclasses.field"):
                    raise Unknown("dataclasses.field default")
                val = self.eval(raw.node, raw.env)
            else:
                val = raw
            obj._resolved[name] = val
            return val
        member = self.find_member(obj.class_name, name)
        if isinstance(member, ast.FunctionDef):
            decos = {dotted(d) for d in member.decorator_list}
            if "property" in decos:
                return self.call_function(member, [], {}, self_obj=obj)
            return _Closure(member, {}, obj)
        if isinstance(member, ast.Assign):
            return self.eval(member.value, {})
        raise Unknown(f"{obj.class_name}.{name}")

    # ---- function calls -------------------------------------------------------------

    def call_function(self, fn: ast.FunctionDef, args: List[Any], kwargs: Dict[str, Any],
                      self_obj: Any = None, closure_env: Optional[Dict[str, Any]] = None) -> Any:
        if self.depth >= self.MAX_DEPTH:
            raise Unknown("recursion depth")
        env: Dict[str, Any] = dict(closure_env or {})
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        decos = {dotted(d) for d in fn.decorator_list}
        if self_obj is not None and "staticmethod" not in decos and params:
            env[params[0]] = self_obj
            params = params[1:]
        defaults = fn.args.defaults
        if len(args) > len(params):
            raise Unknown("too many positional arguments")
        for p, v in zip(params, args):
            env[p] = v
        for k, v in kwargs.items():
            env[k] = v
        # defaults
        for p, d in zip(params[len(params) - len(defaults):], defaults):
            if p not in env:
                env[p] = self.eval(d, {})
        for kwa, kwd in zip(fn.args.kwonlyargs, fn.args.kw_defaults):
            if kwa.arg not in env:
                if kwd is None:
                    raise Unknown(f"missing argument {kwa.arg}")
                env[kwa.arg] = self.eval(kwd, {})
        for p in params:
            if p not in env:
                raise Unknown(f"missing argument {p}")
        self.depth += 1
        pm = self.node_modules.get(id(fn))
        if pm is not None:
            self.pm_stack.append(pm)
        try:
            self.exec_block(fn.body, env)
        except _Return as r:
            return r.value
        finally:
            self.depth -= 1
            if pm is not None:
                self.pm_stack.pop()
        return None

    # ---- statements -----------------------------------------------------------------

    def exec_block(self, stmts: Sequence[ast.stmt], env: Dict[str, Any]) -> None:
        for stmt in stmts:
            self.exec_stmt(stmt, env)

    def exec_stmt(self, stmt: ast.stmt, env: Dict[str, Any]) -> None:
        self.steps += 1
        if self.steps > self.MAX_STEPS:
            raise Unknown("evaluation budget exceeded")
        if isinstance(stmt, ast.Return):
            raise _Return(self.eval(stmt.value, env) if stmt.value is not None else None)
        if isinstance(stmt, ast.If):
            if self.truth(self.eval(stmt.test, env)):
                self.exec_block(stmt.body, env)
            else:
                self.exec_block(stmt.orelse, env)
            return
        if isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Constant):
                return  # docstring / bare constant (e.g. ``None``)
            self.eval(stmt.value, env)
            return
        if isinstance(stmt, ast.Pass):
            return
        if isinstance(stmt, ast.Assign):
            value = self.eval(stmt.value, env)
            for t in stmt.targets:
                self.assign(t, value, env)
            return
        if isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self.assign(stmt.target, self.eval(stmt.value, env), env)
            return
        if isinstance(stmt, ast.AugAssign):
            if not isinstance(stmt.target, ast.Name):
                raise Unknown("augmented assignment target")
            cur = self.lookup(stmt.target.id, env)
            env[stmt.target.id] = self.binop(stmt.op, cur, self.eval(stmt.value, env))
            return
        if isinstance(stmt, ast.For):
            it = self.eval(stmt.iter, env)
            try:
                seq = list(it)
            except TypeError:
                raise Unknown("iteration over non-iterable")
            for item in seq:
                self.assign(stmt.target, item, env)
                self.exec_block(stmt.body, env)
            self.exec_block(stmt.orelse, env)
            return
        if isinstance(stmt, ast.FunctionDef):
            env[stmt.name] = _Closure(stmt, env)
            return
        if isinstance(stmt, ast.Assert):
            return
        raise Unknown(f"unsupported statement {type(stmt).__name__}")

    def assign(self, target: ast.AST, value: Any, env: Dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            vals = list(value)
            if len(vals) != len(target.elts):
                raise Unknown("unpacking mismatch")
            for t, v in zip(target.elts, vals):
                self.assign(t, v, env)
        elif isinstance(target, ast.Subscript):
            container = self.eval(target.value, env)
            key = self.eval(target.slice, env)
            try:
                container[key] = value
            except Exception:
                raise Unknown("subscript assignment")
        else:
            raise Unknown(f"assignment target {type(target).__name__}")

    # ---- expressions ----------------------------------------------------------------

    def lookup(self, name: str, env: Dict[str, Any]) -> Any:
        if name in env:
            return env[name]
        if name in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[name]
        if name in self.classes:
            return _ClassRef(name)
        if name in self.functions:
            return _Closure(self.functions[name], {})
        if name in _SAFE_BUILTINS:
            return _SAFE_BUILTINS[name]
        return self.global_lookup(name)

    @staticmethod
    def truth(v: Any) -> bool:
        if isinstance(v, (Obj, _Closure, _ClassRef)):
            return True
        try:
            return bool(v)
        except Exception:
            raise Unknown("truth value")

    def binop(self, op: ast.operator, a: Any, b: Any) -> Any:
        if isinstance(a, (Obj, _Closure, _ClassRef)) or isinstance(b, (Obj, _Closure, _ClassRef)):
            raise Unknown("operator on object")
        ops = {ast.Add: lambda x, y: x + y, ast.Sub: lambda x, y: x - y,
               ast.Mult: lambda x, y: x * y, ast.FloorDiv: lambda x, y: x // y,
               ast.Div: lambda x, y: x / y, ast.Mod: lambda x, y: x % y,
               ast.BitAnd: lambda x, y: x & y, ast.BitOr: lambda x, y: x | y}
        fn = ops.get(type(op))
        if fn is None:
            raise Unknown("operator")
        if isinstance(op, ast.Mod) and isinstance(a, str):
            raise Unknown("%-formatting")
        if isinstance(op, ast.Mult) and (isinstance(a, (list, str)) or isinstance(b, (list, str))):
            n = b if isinstance(a, (list, str)) else a
            if not isinstance(n, int) or n > 10_000:
                raise Unknown("sequence repetition")
        try:
            return fn(a, b)
        except Exception:
            raise Unknown("operator failed")

    def eval(self, node: Optional[ast.AST], env: Dict[str, Any]) -> Any:
        if node is None:
            return None
        self.steps += 1
        if self.steps > self.MAX_STEPS:
            raise Unknown("evaluation budget exceeded")
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.lookup(node.id, env)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            vals: List[Any] = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    vals.extend(list(self.eval(e.value, env)))
                else:
                    vals.append(self.eval(e, env))
            if isinstance(node, ast.Tuple):
                return tuple(vals)
            if isinstance(node, ast.Set):
                try:
                    return set(vals)
                except TypeError:
                    raise Unknown("unhashable set element")
            return vals
        if isinstance(node, ast.Dict):
            out: Dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values):
                if k is None:
                    out.update(self.eval(v, env))
                    continue
                key = self.eval(k, env)
                try:
                    out[key] = self.eval(v, env)
                except TypeError:
                    raise Unknown("unhashable key")
            return out
        if isinstance(node, ast.BinOp):
            return self.binop(node.op, self.eval(node.left, env), self.eval(node.right, env))
        if isinstance(node, ast.UnaryOp):
            v = self.eval(node.operand, env)
            if isinstance(node.op, ast.Not):
                return not self.truth(v)
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return +v
            raise Unknown("unary operator")
        if isinstance(node, ast.BoolOp):
            is_and = isinstance(node.op, ast.And)
            result: Any = None
            for v in node.values:
                result = self.eval(v, env)
                if self.truth(result) != is_and:
                    return result
            return result
        if isinstance(node, ast.Compare):
            left = self.eval(node.left, env)
            for op, rnode in zip(node.ops, node.comparators):
                right = self.eval(rnode, env)
                if not self.compare(op, left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self.eval(node.body if self.truth(self.eval(node.test, env)) else node.orelse, env)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif isinstance(v, ast.FormattedValue):
                    val = self.eval(v.value, env)
                    if isinstance(val, (Obj, _Closure, _ClassRef)):
                        raise Unknown("formatting an object")
                    if v.conversion == ord("r"):
                        val = repr(val)
                    elif v.conversion == ord("s"):
                        val = str(val)
                    elif v.conversion == ord("a"):
                        val = ascii(val)
                    spec = self.eval(v.format_spec, env) if v.format_spec is not None else ""
                    try:
                        parts.append(format(val, spec))
                    except Exception:
                        raise Unknown("format spec")
                else:
                    raise Unknown("f-string part")
            return "".join(parts)
        if isinstance(node, ast.Subscript):
            container = self.eval(node.value, env)
            if isinstance(node.slice, ast.Slice):
                lo = self.eval(node.slice.lower, env)
                hi = self.eval(node.slice.upper, env)
                st = self.eval(node.slice.step, env)
                try:
                    return container[slice(lo, hi, st)]
                except Exception:
                    raise Unknown("slice")
            key = self.eval(node.slice, env)
            try:
                return container[key]
            except Exception:
                raise Unknown("subscript")
        if isinstance(node, ast.Attribute):
            base = self.eval(node.value, env)
            if isinstance(base, Obj):
                return self.get_field(base, node.attr)
            if isinstance(base, _ClassRef):
                member = self.find_member(base.name, node.attr)
                if isinstance(member, ast.FunctionDef):
                    return _Closure(member, {}, None)
                if isinstance(member, (ast.Assign, ast.AnnAssign)) and member.value is not None:
                    return self.eval(member.value, {})
                raise Unknown(f"{base.name}.{node.attr}")
            if node.attr in _SAFE_METHODS and not node.attr.startswith("_"):
                try:
                    return getattr(base, node.attr)
                except AttributeError:
                    raise Unknown(f"attribute {node.attr}")
            raise Unknown(f"attribute {node.attr}")
        if isinstance(node, ast.Call):
            return self.eval_call(node, env)
        if isinstance(node, ast.Lambda):
            raise Unknown("lambda")
        raise Unknown(f"unsupported expression {type(node).__name__}")

    def compare(self, op: ast.cmpop, a: Any, b: Any) -> bool:
        try:
            if isinstance(op, ast.Eq):
                return a == b
            if isinstance(op, ast.NotEq):
                return a != b
            if isinstance(op, ast.In):
                return a in b
            if isinstance(op, ast.NotIn):
                return a not in b
            if isinstance(op, ast.Is):
                return a is b
            if isinstance(op, ast.IsNot):
                return a is not b
            if isinstance(op, ast.Lt):
                return a < b
            if isinstance(op, ast.LtE):
                return a <= b
            if isinstance(op, ast.Gt):
                return a > b
            if isinstance(op, ast.GtE):
                return a >= b
        except Exception:
            raise Unknown("comparison")
        raise Unknown("comparison operator")

    def eval_call(self, node: ast.Call, env: Dict[str, Any]) -> Any:
        func = node.func
        # Class constructor
        if isinstance(func, ast.Name) and func.id not in env and func.id in self.classes:
            pm = self.pm_stack[-1] if self.pm_stack else None
            return self.construct(func.id, node.args, node.keywords, env, source=segment(pm, node))
        callee = self.eval(func, env)
        args: List[Any] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(list(self.eval(a.value, env)))
            else:
                args.append(self.eval(a, env))
        kwargs: Dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise Unknown("**kwargs call")
            kwargs[kw.arg] = self.eval(kw.value, env)
        if isinstance(callee, _Closure):
            return self.call_function(callee.node, args, kwargs, self_obj=callee.self_obj,
                                      closure_env=callee.env)
        if isinstance(callee, _ClassRef):
            raise Unknown("indirect constructor")
        if callable(callee):
            try:
                return callee(*args, **kwargs)
            except Unknown:
                raise
            except Exception:
                raise Unknown("builtin call failed")
        raise Unknown("call of unknown callee")


@dataclass
class _Lazy:
    node: Optional[ast.AST]
    env: Dict[str, Any]


class _Missing:
    pass


@dataclass(frozen=True)
class _ClassRef:
    name: str
