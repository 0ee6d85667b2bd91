"""The options ``01_fmha/generate.py`` takes, and how it splits them, read from its
source with :mod:`ast` (nothing of CK is imported or run)."""

from __future__ import annotations

import ast
import copy
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

from ..locate import fmha_dir
from ..model import GenerateOption
from .pyeval import Evaluator, Unknown
from .pyparse import assigned_names

__all__ = ["PathLike", "evaluate_in", "generate_options", "module_constants", "read_ast"]

PathLike = Union[str, "os.PathLike[str]"]


def read_ast(path: Path) -> ast.Module:
    source = path.read_text(encoding="utf-8", errors="replace")
    return ast.parse(source, filename=str(path))


def _no_global(name: str) -> Any:
    raise Unknown(f"name {name}")


def evaluate_in(node: ast.AST, consts: Dict[str, Any], env: Optional[Dict[str, Any]] = None) -> Any:
    """The value of ``node`` given generate.py's module constants (and loop variables).

    Constants are copied in so that a method call in the expression (``.append``) cannot
    change them; ``a.b.__name__`` of an unresolved module reads as ``"a.b"``.
    """
    names = copy.deepcopy(consts)
    names.update(env or {})
    return Evaluator(_no_global, module_names=True).eval(node, names)


def module_constants(module: ast.Module) -> Dict[str, Any]:
    """Module-level ``NAME = <constant expression>`` assignments (last one wins)."""
    consts: Dict[str, Any] = {}
    for stmt in module.body:
        for name, value in assigned_names(stmt):
            try:
                consts[name] = evaluate_in(value, consts)
            except Unknown:
                consts.pop(name, None)
    return consts


def _argparse_dest(flags: Sequence[str]) -> str:
    """argparse's rule: first long option, dashes stripped, '-' -> '_'."""
    if not flags:
        return ""
    if not flags[0].startswith("-"):
        return flags[0]  # positional
    for flag in flags:
        if flag.startswith("--"):
            return flag.lstrip("-").replace("-", "_")
    return flags[0].lstrip("-").replace("-", "_")


def _load_generate(ck_root: PathLike) -> ast.Module:
    path = fmha_dir(ck_root) / "generate.py"
    if not path.is_file():
        raise FileNotFoundError(f"no generate.py in {fmha_dir(ck_root)}")
    return read_ast(path)


def _add_argument_calls(module: ast.Module) -> List[ast.Call]:
    calls = [
        node for node in ast.walk(module)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "add_argument"
    ]
    return sorted(calls, key=lambda c: (c.lineno, c.col_offset))


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def generate_options(ck_root: PathLike) -> List[GenerateOption]:
    """Every ``add_argument(...)`` of generate.py, in source order.

    ``default`` is the evaluated default as a string (argparse's implicit defaults
    for ``store_true``/``store_false`` included), or None when there is none;
    ``help`` is the concatenated help text.  Raises FileNotFoundError without a
    generate.py and SyntaxError if it does not parse.
    """
    return generate_options_of(_load_generate(ck_root))


def generate_options_of(module: ast.Module) -> List[GenerateOption]:
    consts = module_constants(module)

    def evaluate(node: ast.AST) -> Any:
        return evaluate_in(node, consts)

    options: List[GenerateOption] = []
    for call in _add_argument_calls(module):
        flags: List[str] = []
        for arg in call.args:
            try:
                value = evaluate(arg)
            except Unknown:
                continue
            if isinstance(value, str):
                flags.append(value)
        keywords = {kw.arg: kw.value for kw in call.keywords if kw.arg}
        dest = _argparse_dest(flags)
        if "dest" in keywords:
            try:
                dest = _as_text(evaluate(keywords["dest"]))
            except Unknown:
                pass
        default: Optional[str] = None
        if "default" in keywords:
            try:
                value = evaluate(keywords["default"])
                default = None if value is None else _as_text(value)
            except Unknown:
                default = ast.unparse(keywords["default"]) if hasattr(ast, "unparse") else None
        elif "action" in keywords:
            try:
                action = evaluate(keywords["action"])
            except Unknown:
                action = None
            if action == "store_true":
                default = "False"
            elif action == "store_false":
                default = "True"
        help_text = ""
        if "help" in keywords:
            try:
                value = evaluate(keywords["help"])
                help_text = value if isinstance(value, str) else ""
            except Unknown:
                help_text = ""
        options.append(GenerateOption(flags=flags, dest=dest, default=default, help=help_text))
    return options
