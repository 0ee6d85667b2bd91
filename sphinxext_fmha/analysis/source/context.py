"""The state the collectors share: the analysed module, the facts so far, and what
earlier collectors found (blob functions, tile classes, receipt parameters ...)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from ...model import Gap
from ..pyparse import FUNC, FunctionNode, ParsedModule, dotted, segment
from .facts import ClassInfo, SourceFacts
from .universe import Universe

__all__ = ["Context"]


@dataclass
class Context:
    """One analysis of one ops module (``pm``, parsed: ``tree``) below the FMHA folder
    ``root`` at ``rel``; the fields after ``universe`` are filled by the collectors."""

    root: Path
    rel: str
    facts: SourceFacts
    universe: Universe
    pm: ParsedModule
    tree: ast.Module
    class_infos: Dict[str, ClassInfo] = field(default_factory=dict)
    tile_names: Set[str] = field(default_factory=set)
    blob_functions: List[FunctionNode] = field(default_factory=list)
    helper_functions: List[Tuple[FunctionNode, str]] = field(default_factory=list)  # (fn, owner)
    fnmatch_names: Set[str] = field(default_factory=set)
    receipt_names: Set[str] = field(default_factory=set)

    @property
    def gaps(self) -> List[Gap]:
        """The gaps of the facts (what could not be determined)."""
        return self.facts.gaps

    def where(self, node: ast.AST, pm: Optional[ParsedModule] = None) -> str:
        """``path:line`` of ``node`` in ``pm`` (default: the analysed module)."""
        return (pm or self.pm).where(node)

    def seg(self, node: ast.AST, pm: Optional[ParsedModule] = None) -> str:
        """Source text of ``node`` on one line."""
        return segment(pm or self.pm, node)

    def owner_of(self, node: ast.AST) -> str:
        """The class holding ``node``, else the innermost function, else ``""``."""
        parents = self.pm.parents
        cur = parents.get(node)
        fn_name = ""
        while cur is not None:
            if isinstance(cur, ast.ClassDef):
                return cur.name
            if isinstance(cur, FUNC) and not fn_name:
                fn_name = cur.name
            cur = parents.get(cur)
        return fn_name

    def mro(self, name: str) -> List[str]:
        """A class and its bases that are classes of the analysed modules."""
        classes = self.universe.classes
        out: List[str] = []

        def visit(n: str) -> None:
            if n in out or n not in classes:
                return
            out.append(n)
            for b in classes[n][1].bases:
                bn = dotted(b)
                if bn:
                    visit(bn.split(".")[-1])

        visit(name)
        return out

    def loop_functions(self) -> List[Tuple[FunctionNode, str]]:
        """The blob functions and their helpers, with the label facts show for each."""
        out = [(fn, fn.name) for fn in self.blob_functions]
        out += [(fn, f"{owner}.{fn.name}") for fn, owner in self.helper_functions]
        return out

    def pool_class(self) -> Optional[ast.ClassDef]:
        """The class collecting kernels into the dispatcher (``*ApiPool``, ``register*``)."""
        classes = [n for n in self.tree.body if isinstance(n, ast.ClassDef)]
        for c in classes:
            if "apipool" in c.name.lower():
                return c
        for c in classes:
            if any(isinstance(s, FUNC) and s.name.startswith("register") for s in c.body):
                return c
        for c in classes:
            if "pool" in c.name.lower():
                return c
        return None
