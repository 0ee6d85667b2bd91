"""The one evaluator of foreign Python expressions (``ast`` only, nothing is executed).

:class:`Evaluator` computes the value of an expression over literal data: constants,
containers, operators, comparisons, f-strings, ``%``-formatting, subscripts, a few safe
builtins and string/container methods.  Whatever it cannot determine raises
:class:`Unknown`; callers turn that into a gap or a fallback.  generate.py's reader
uses it (:mod:`.generate_py`, :mod:`.generate_options`: its constants, handler table
and argparse options).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from .pyparse import dotted

__all__ = ["Unknown", "ModuleRef", "SAFE_BUILTINS", "SAFE_METHODS", "Evaluator"]


class Unknown(Exception):
    """Raised when a value cannot be determined statically."""


@dataclass(frozen=True)
class ModuleRef:
    """A module used as a value: only its dotted ``__name__`` is known."""

    name: str


#: Values that stand for analysed code: never formatted, compared by operators or iterated.
_OPAQUE = (ModuleRef,)

#: Errors a builtin or an operator raises on values it does not accept: the analysed
#: code would fail (or do something else) there, so the value is unknown.
_VALUE_ERRORS = (TypeError, ValueError, KeyError, IndexError, AttributeError, ZeroDivisionError,
                 OverflowError)

SAFE_BUILTINS: Dict[str, Callable[..., Any]] = {
    "str": str, "int": int, "float": float, "bool": bool, "len": len, "list": list,
    "tuple": tuple, "dict": dict, "set": set, "sorted": sorted, "min": min, "max": max,
    "abs": abs, "any": any, "all": all, "range": range, "zip": zip, "enumerate": enumerate,
    "reversed": reversed,
}

SAFE_METHODS = frozenset({
    "keys", "values", "items", "get", "startswith", "endswith", "upper", "lower", "strip",
    "lstrip", "rstrip", "join", "split", "rsplit", "partition", "rpartition", "removeprefix",
    "removesuffix", "capitalize", "title", "append", "extend", "insert", "copy", "index",
    "count", "replace", "setdefault", "pop", "format",
})

_BINOPS: Dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda x, y: x + y, ast.Sub: lambda x, y: x - y,
    ast.Mult: lambda x, y: x * y, ast.FloorDiv: lambda x, y: x // y,
    ast.Div: lambda x, y: x / y, ast.Mod: lambda x, y: x % y,
    ast.BitAnd: lambda x, y: x & y, ast.BitOr: lambda x, y: x | y,
}

_CMPOPS: Dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
    ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
    ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
}

_CONSTANT_NAMES = {"True": True, "False": False, "None": None}


def _holds_opaque(value: Any) -> bool:
    if isinstance(value, _OPAQUE):
        return True
    if isinstance(value, (list, tuple, set)):
        return any(_holds_opaque(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_opaque(v) for v in value.values())
    return False


class Evaluator:
    """Evaluate side-effect-free expressions; anything else raises :class:`Unknown`.

    ``global_lookup(name)`` resolves a name that is neither local (``env``) nor a safe
    builtin, or raises :class:`Unknown`.  With ``module_names`` an attribute
    ``a.b.__name__`` whose base cannot be resolved reads as the dotted path ``"a.b"``
    (generate.py names the ops package that way).
    """

    MAX_STEPS = 200_000

    def __init__(self, global_lookup: Callable[[str], Any], module_names: bool = False) -> None:
        self.global_lookup = global_lookup
        self.module_names = module_names
        self.steps = 0

    # ---- names, truth, operators ----------------------------------------------------

    def tick(self) -> None:
        """Count one evaluation step; raise :class:`Unknown` past the budget."""
        self.steps += 1
        if self.steps > self.MAX_STEPS:
            raise Unknown("evaluation budget exceeded")

    def lookup(self, name: str, env: Dict[str, Any]) -> Any:
        """The value of ``name``: local, constant, builtin, global."""
        if name in env:
            return env[name]
        if name in _CONSTANT_NAMES:
            return _CONSTANT_NAMES[name]
        if name in SAFE_BUILTINS:
            return SAFE_BUILTINS[name]
        return self.global_lookup(name)

    @staticmethod
    def truth(v: Any) -> bool:
        """``bool(v)``; a module is true."""
        if isinstance(v, _OPAQUE):
            return True
        try:
            return bool(v)
        except _VALUE_ERRORS as exc:
            raise Unknown("truth value") from exc

    def binop(self, op: ast.operator, a: Any, b: Any) -> Any:
        """``a <op> b`` for data values."""
        if isinstance(a, _OPAQUE) or isinstance(b, _OPAQUE):
            raise Unknown("operator on object")
        fn = _BINOPS.get(type(op))
        if fn is None:
            raise Unknown("operator")
        if isinstance(op, ast.Mod) and isinstance(a, str) and _holds_opaque(b):
            raise Unknown("formatting an object")
        if isinstance(op, ast.Mult) and (isinstance(a, (list, str)) or isinstance(b, (list, str))):
            n = b if isinstance(a, (list, str)) else a
            if not isinstance(n, int) or n > 10_000:
                raise Unknown("sequence repetition")
        try:
            return fn(a, b)
        except _VALUE_ERRORS as exc:
            raise Unknown("operator failed") from exc

    @staticmethod
    def compare(op: ast.cmpop, a: Any, b: Any) -> bool:
        """``a <op> b``."""
        fn = _CMPOPS.get(type(op))
        if fn is None:
            raise Unknown("comparison operator")
        try:
            return fn(a, b)
        except _VALUE_ERRORS as exc:
            raise Unknown("comparison") from exc

    # ---- expressions ----------------------------------------------------------------

    def eval(self, node: Optional[ast.AST], env: Dict[str, Any]) -> Any:
        """The value of expression ``node`` with local names ``env`` (None for no node)."""
        if node is None:
            return None
        self.tick()
        handler = _HANDLERS.get(type(node))
        if handler is None:
            raise Unknown(f"unsupported expression {type(node).__name__}")
        return handler(self, node, env)

    def _constant(self, node: ast.Constant, env: Dict[str, Any]) -> Any:
        return node.value

    def _name(self, node: ast.Name, env: Dict[str, Any]) -> Any:
        return self.lookup(node.id, env)

    def _elements(self, elts: List[ast.expr], env: Dict[str, Any]) -> List[Any]:
        vals: List[Any] = []
        for e in elts:
            if isinstance(e, ast.Starred):
                vals.extend(self.iterate(self.eval(e.value, env)))
            else:
                vals.append(self.eval(e, env))
        return vals

    def iterate(self, value: Any) -> List[Any]:
        """``list(value)``, or :class:`Unknown` when it is not iterable."""
        if isinstance(value, _OPAQUE):
            raise Unknown("iteration over an object")
        try:
            return list(value)
        except TypeError as exc:
            raise Unknown("iteration over non-iterable") from exc

    def _list(self, node: ast.List, env: Dict[str, Any]) -> Any:
        return self._elements(node.elts, env)

    def _tuple(self, node: ast.Tuple, env: Dict[str, Any]) -> Any:
        return tuple(self._elements(node.elts, env))

    def _set(self, node: ast.Set, env: Dict[str, Any]) -> Any:
        try:
            return set(self._elements(node.elts, env))
        except TypeError as exc:
            raise Unknown("unhashable set element") from exc

    def _dict(self, node: ast.Dict, env: Dict[str, Any]) -> Any:
        out: Dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                rest = self.eval(v, env)
                if not isinstance(rest, dict):
                    raise Unknown("** of a non-dict")
                out.update(rest)
                continue
            key = self.eval(k, env)
            try:
                out[key] = self.eval(v, env)
            except TypeError as exc:
                raise Unknown("unhashable key") from exc
        return out

    def _binop(self, node: ast.BinOp, env: Dict[str, Any]) -> Any:
        return self.binop(node.op, self.eval(node.left, env), self.eval(node.right, env))

    def _unaryop(self, node: ast.UnaryOp, env: Dict[str, Any]) -> Any:
        v = self.eval(node.operand, env)
        if isinstance(node.op, ast.Not):
            return not self.truth(v)
        if isinstance(node.op, (ast.USub, ast.UAdd)) and isinstance(v, (int, float)):
            return -v if isinstance(node.op, ast.USub) else +v
        raise Unknown("unary operator")

    def _boolop(self, node: ast.BoolOp, env: Dict[str, Any]) -> Any:
        is_and = isinstance(node.op, ast.And)
        result: Any = None
        for v in node.values:
            result = self.eval(v, env)
            if self.truth(result) != is_and:
                return result
        return result

    def _compare(self, node: ast.Compare, env: Dict[str, Any]) -> Any:
        left = self.eval(node.left, env)
        for op, rnode in zip(node.ops, node.comparators):
            right = self.eval(rnode, env)
            if not self.compare(op, left, right):
                return False
            left = right
        return True

    def _ifexp(self, node: ast.IfExp, env: Dict[str, Any]) -> Any:
        return self.eval(node.body if self.truth(self.eval(node.test, env)) else node.orelse, env)

    def _joinedstr(self, node: ast.JoinedStr, env: Dict[str, Any]) -> Any:
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
                continue
            if not isinstance(v, ast.FormattedValue):
                raise Unknown("f-string part")
            val = self.eval(v.value, env)
            if _holds_opaque(val):
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
            except _VALUE_ERRORS as exc:
                raise Unknown("format spec") from exc
        return "".join(parts)

    def _subscript(self, node: ast.Subscript, env: Dict[str, Any]) -> Any:
        container = self.eval(node.value, env)
        if isinstance(container, _OPAQUE):
            raise Unknown("subscript of an object")
        if isinstance(node.slice, ast.Slice):
            key: Any = slice(self.eval(node.slice.lower, env), self.eval(node.slice.upper, env),
                             self.eval(node.slice.step, env))
        else:
            key = self.eval(node.slice, env)
        try:
            return container[key]
        except _VALUE_ERRORS as exc:
            raise Unknown("subscript") from exc

    def _attribute(self, node: ast.Attribute, env: Dict[str, Any]) -> Any:
        try:
            base = self.eval(node.value, env)
        except Unknown:
            path = dotted(node.value) if self.module_names and node.attr == "__name__" else None
            if path is None:
                raise
            return path  # ``codegen.ops.__name__``: the module named by its dotted path
        if isinstance(base, ModuleRef):
            if node.attr == "__name__":
                return base.name
            raise Unknown(f"{base.name}.{node.attr}")
        if node.attr in SAFE_METHODS and not isinstance(base, _OPAQUE):
            try:
                return getattr(base, node.attr)
            except AttributeError as exc:
                raise Unknown(f"attribute {node.attr}") from exc
        raise Unknown(f"attribute {node.attr}")

    def _call(self, node: ast.Call, env: Dict[str, Any]) -> Any:
        callee = self.eval(node.func, env)
        args = self._elements(node.args, env)
        kwargs: Dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise Unknown("**kwargs call")
            kwargs[kw.arg] = self.eval(kw.value, env)
        if isinstance(callee, _OPAQUE) or not callable(callee):
            raise Unknown("call of unknown callee")
        try:
            return callee(*args, **kwargs)
        except _VALUE_ERRORS as exc:
            raise Unknown("builtin call failed") from exc

    def _lambda(self, node: ast.Lambda, env: Dict[str, Any]) -> Any:
        raise Unknown("lambda")


_HANDLERS: Dict[type, Callable[[Evaluator, Any, Dict[str, Any]], Any]] = {
    ast.Constant: Evaluator._constant,
    ast.Name: Evaluator._name,
    ast.List: Evaluator._list,
    ast.Tuple: Evaluator._tuple,
    ast.Set: Evaluator._set,
    ast.Dict: Evaluator._dict,
    ast.BinOp: Evaluator._binop,
    ast.UnaryOp: Evaluator._unaryop,
    ast.BoolOp: Evaluator._boolop,
    ast.Compare: Evaluator._compare,
    ast.IfExp: Evaluator._ifexp,
    ast.JoinedStr: Evaluator._joinedstr,
    ast.Subscript: Evaluator._subscript,
    ast.Attribute: Evaluator._attribute,
    ast.Call: Evaluator._call,
    ast.Lambda: Evaluator._lambda,
}
