"""A partial interpreter of small, pure functions of the analysed code.

:class:`Interpreter` extends the one expression :class:`~.pyeval.Evaluator` with
statements (assignments, ``if``, ``for``, ``return``, nested functions), calls of the
analysed module's functions and instances of its (data)classes, so that tile tables
and kernel names built by plain functions can be read without importing anything.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .pyeval import ClassRef, Closure, Evaluator, Obj, Unknown
from .pyparse import FunctionNode, ParsedModule, dotted, segment

__all__ = ["Interpreter"]


class _Return(Exception):
    """Unwinds a function body at ``return`` (carries the value)."""

    def __init__(self, value: Any) -> None:
        self.value = value


@dataclass
class _Lazy:
    """A constructor argument evaluated when the field is first read."""

    node: Optional[ast.AST]
    env: Dict[str, Any]


class _Missing:
    """A field that the constructor call did not give and that has no default."""


class Interpreter(Evaluator):
    """Evaluate simple, side-effect-free function bodies over literal data.

    ``global_lookup(name)`` resolves module-level names (raise ``Unknown`` when not
    possible); ``classes`` maps class names to their ``ast.ClassDef`` so that
    constructor calls become :class:`~.pyeval.Obj` and ``Class.method(...)`` calls and
    properties can be evaluated. Anything else raises :class:`~.pyeval.Unknown`.
    """

    MAX_DEPTH = 12

    def __init__(self, classes: Dict[str, ast.ClassDef],
                 global_lookup: Callable[[str], Any],
                 functions: Optional[Dict[str, FunctionNode]] = None,
                 node_modules: Optional[Dict[int, ParsedModule]] = None) -> None:
        super().__init__(global_lookup)
        self.classes = classes
        self.functions = functions or {}
        self.node_modules = node_modules or {}
        self.pm_stack: List[ParsedModule] = []
        self.depth = 0

    # ---- classes ----------------------------------------------------------------------

    def class_fields(self, cls_name: str) -> List[Tuple[str, Optional[ast.AST]]]:
        """(field name, default) of a dataclass, base classes' fields first."""
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
        """The class and its analysed bases, depth first (enough for these codegens)."""
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
        """The method or class attribute ``member`` of a class or its bases."""
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

    def construct(self, cls_name: str, args: List[ast.expr], keywords: List[ast.keyword],
                  env: Dict[str, Any], source: str = "") -> Obj:
        """An object of ``cls_name`` whose fields are evaluated when first read."""
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
        """A field, property or method of an analysed object."""
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
            return Closure(member, {}, obj)
        if isinstance(member, ast.Assign):
            return self.eval(member.value, {})
        raise Unknown(f"{obj.class_name}.{name}")

    # ---- hooks of the expression evaluator --------------------------------------------

    def definition(self, name: str) -> Any:
        """A class of the analysed code as :class:`ClassRef`, a function as :class:`Closure`."""
        if name in self.classes:
            return ClassRef(name)
        if name in self.functions:
            return Closure(self.functions[name], {})
        return None

    def construct_call(self, node: ast.Call, env: Dict[str, Any]) -> Optional[Obj]:
        """``Class(...)`` of an analysed class (not shadowed by a local name)."""
        func = node.func
        if isinstance(func, ast.Name) and func.id not in env and func.id in self.classes:
            pm = self.pm_stack[-1] if self.pm_stack else None
            return self.construct(func.id, node.args, node.keywords, env, source=segment(pm, node))
        return None

    def call_closure(self, closure: Closure, args: List[Any], kwargs: Dict[str, Any]) -> Any:
        """Call an analysed function (a bound method carries its ``self``)."""
        return self.call_function(closure.node, args, kwargs, self_obj=closure.self_obj,
                                  closure_env=closure.env)

    def class_attribute(self, ref: ClassRef, name: str) -> Any:
        """``Class.method`` (unbound) or ``Class.CONSTANT``."""
        member = self.find_member(ref.name, name)
        if isinstance(member, ast.FunctionDef):
            return Closure(member, {}, None)
        if isinstance(member, (ast.Assign, ast.AnnAssign)) and member.value is not None:
            return self.eval(member.value, {})
        raise Unknown(f"{ref.name}.{name}")

    # ---- function calls -----------------------------------------------------------------

    def call_function(self, fn: FunctionNode, args: List[Any], kwargs: Dict[str, Any],
                      self_obj: Any = None, closure_env: Optional[Dict[str, Any]] = None) -> Any:
        """Run ``fn``'s body with the given arguments and return what it returns."""
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

    # ---- statements -----------------------------------------------------------------------

    def exec_block(self, stmts: Sequence[ast.stmt], env: Dict[str, Any]) -> None:
        """Run statements in order."""
        for stmt in stmts:
            self.exec_stmt(stmt, env)

    def exec_stmt(self, stmt: ast.stmt, env: Dict[str, Any]) -> None:
        """Run one statement; unsupported statements raise :class:`Unknown`."""
        self.tick()
        if isinstance(stmt, ast.Return):
            raise _Return(self.eval(stmt.value, env) if stmt.value is not None else None)
        if isinstance(stmt, ast.If):
            self.exec_block(stmt.body if self.truth(self.eval(stmt.test, env)) else stmt.orelse, env)
        elif isinstance(stmt, ast.Expr):
            if not isinstance(stmt.value, ast.Constant):  # a docstring or a bare constant
                self.eval(stmt.value, env)
        elif isinstance(stmt, ast.Assign):
            value = self.eval(stmt.value, env)
            for t in stmt.targets:
                self.assign(t, value, env)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self.assign(stmt.target, self.eval(stmt.value, env), env)
        elif isinstance(stmt, ast.AugAssign):
            if not isinstance(stmt.target, ast.Name):
                raise Unknown("augmented assignment target")
            cur = self.lookup(stmt.target.id, env)
            env[stmt.target.id] = self.binop(stmt.op, cur, self.eval(stmt.value, env))
        elif isinstance(stmt, ast.For):
            for item in self.iterate(self.eval(stmt.iter, env)):
                self.assign(stmt.target, item, env)
                self.exec_block(stmt.body, env)
            self.exec_block(stmt.orelse, env)
        elif isinstance(stmt, ast.FunctionDef):
            env[stmt.name] = Closure(stmt, env)
        elif not isinstance(stmt, (ast.Pass, ast.Assert)):
            raise Unknown(f"unsupported statement {type(stmt).__name__}")

    def assign(self, target: ast.AST, value: Any, env: Dict[str, Any]) -> None:
        """Bind ``value`` to an assignment target (names, tuples, subscripts)."""
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            vals = self.iterate(value)
            if len(vals) != len(target.elts):
                raise Unknown("unpacking mismatch")
            for t, v in zip(target.elts, vals):
                self.assign(t, v, env)
        elif isinstance(target, ast.Subscript):
            container = self.eval(target.value, env)
            key = self.eval(target.slice, env)
            if not isinstance(container, (list, dict)):
                raise Unknown("subscript assignment")
            try:
                container[key] = value
            except (TypeError, IndexError) as exc:
                raise Unknown("subscript assignment") from exc
        else:
            raise Unknown(f"assignment target {type(target).__name__}")
