"""Parse the API dispatch ``.cpp`` generate.py writes into blocks and ordered leaves: each
call site launching kernels (``return fmha_fwd_<trait_, arch>(s, a);`` under ``if``/``else``
chains) is a :class:`DispatchLeaf`, numbered in the order the C++ tries them."""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from .allocation import collector_paused
from .call_sites import CallFacts, Scope, statement_block_calls
from .lexing import _match_angle, constant_of, match_paren, normalize_cpp, squeeze, trait_key
from .masking import _mask

__all__ = ["DispatchBlock", "DispatchLeaf", "DispatchScope", "DispatchTree", "parse_dispatch"]


@dataclass
class DispatchBlock:
    """One ``{...}`` block: ``kind`` (``if``, ``else if``, ``else``, ``if constexpr``,
    ``function``, ``namespace``, ``other``...), ``condition`` (comments
    kept, blanks squeezed; an ``else``'s: the chain's earlier ones negated), ``items``
    (statements comment-free and squeezed, and nested blocks, in source order)."""

    kind: str
    condition: str = ""
    name: str = ""
    line: int = 0
    items: List[Union[DispatchBlock, str]] = field(default_factory=list)

    @property
    def blocks(self) -> List[DispatchBlock]:
        return [item for item in self.items if isinstance(item, DispatchBlock)]

    @property
    def statements(self) -> List[str]:
        return [item for item in self.items if isinstance(item, str)]


@dataclass
class DispatchLeaf:
    """A call site that launches kernels; ``order``: the try order (0-based).
    ``path_conditions``: the enclosing branches' (outermost first) but the innermost
    (``condition``); ``trait_args``: one normalised trait per launched kernel;
    ``extra_args`` (arch tag) follow each in :attr:`keys`."""

    order: int
    path_conditions: List[str]
    condition: str
    trait_args: List[str]
    extra_args: List[str] = field(default_factory=list)
    undecided: List[str] = field(default_factory=list)
    function: str = ""
    line: int = 0
    discarded: bool = False
    #: depths (into :attr:`conditions`) of ``if constexpr`` branches (and their ``else``)
    compile_time: Tuple[int, ...] = ()
    #: the innermost :class:`DispatchScope` around the call (a number; -1: none)
    scope: int = -1

    @property
    def keys(self) -> List[str]:
        if not self.extra_args:
            return list(self.trait_args)  # (a trait alone is its key)
        return [trait_key(t, self.extra_args) for t in self.trait_args]

    @property
    def conditions(self) -> List[str]:
        return [*self.path_conditions, self.condition] if self.condition else list(self.path_conditions)


@dataclass
class DispatchScope:
    """A function body or one branch of an if-else chain: ``parent`` scope (-1: none),
    ``chain`` number (its earlier branches: the chain's scopes before it), ``items``: what
    it runs in order that may launch, ``("chain", number)`` or ``("leaf", order)``."""

    condition: str
    parent: int
    chain: int
    kind: str
    function: str
    items: List[Tuple[str, int]] = field(default_factory=list)


@dataclass
class DispatchTree:
    root: DispatchBlock
    leaves: List[DispatchLeaf] = field(default_factory=list)
    functions: List[str] = field(default_factory=list)
    discarded: List[DispatchLeaf] = field(default_factory=list)
    scopes: List[DispatchScope] = field(default_factory=list)
    #: what readers work out from the tree once (its routes, entry points, matches)
    derived: Dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    def once(self, key: Any, make: Callable[[], Any]) -> Any:
        """What ``make`` works out from the tree, made once and shared: never change it."""
        if key not in self.derived:
            self.derived[key] = make()
        return self.derived[key]


_HEADER_KW_RE = re.compile(r"^(else\s+)?if\b\s*(constexpr\b)?\s*\(")
_TEMPLATE_PREFIX_RE = re.compile(r"^\s*template\s*<")
_ATTR_RE = re.compile(r"\[\[.*?\]\]")
_FUNC_NAME_RE = re.compile(r"((?:::)?[A-Za-z_~][\w:]*(?:\s*<[^()]*>)?)\s*\($")
_NAMESPACE_RE = re.compile(r"^(inline\s+)?namespace\b")
_SWAP_PARENS = str.maketrans("()", ")(")
_CONTROL_RE = re.compile(r"^(?:(?:for|while|switch)\b|do$)")
_TRAILING_QUALIFIERS_RE = re.compile(r"\)\s*(?:const|noexcept|override|final|mutable|\s)*(?:->\s*[^)]*)?$")


def _positions_of(text: str, chars: str) -> List[int]:
    """Where any of ``chars`` occurs, in order (``str.find`` scans memory far faster than
    a pattern tries every character of a 17 MB dispatch file)."""
    found: List[int] = []
    find = text.find
    append = found.append
    for c in chars:
        at = find(c)
        while at >= 0:
            append(at)
            at = find(c, at + 1)
    found.sort()
    return found


def _strip_template_prefix(code: str) -> str:
    code = code.strip()
    while _TEMPLATE_PREFIX_RE.match(code):
        close = _match_angle(code, code.index("<"))
        if close is None:
            break
        code = code[close + 1 :].strip()
    return code


# The dispatch file of a filtered run repeats the full file's branch headers verbatim.
@functools.lru_cache(maxsize=1 << 16)
def _header(code: str, raw: str) -> Tuple[str, str, str]:
    """(kind, condition, name) of a block header (code: masked, raw: with comments)."""
    code_s = code.strip()
    m = _HEADER_KW_RE.match(code_s)
    if m:
        kind = ("else if" if m.group(1) else "if") + (" constexpr" if m.group(2) else "")
        open_at = m.end() - 1
        close = match_paren(code_s, open_at)
        # code and raw have the same length: indices carry over
        lead = len(code) - len(code.lstrip())
        cond_raw = raw[lead + open_at + 1 : lead + close] if close is not None else raw.strip()
        return kind, " ".join(cond_raw.split()), ""  # (`\s` and str.split: one idea of a blank)
    if code_s == "else":
        return "else", "", ""
    if _NAMESPACE_RE.match(code_s):
        return "namespace", "", ""
    if _CONTROL_RE.match(code_s):  # (not a function named `for`)
        return "other", "", ""
    # without attributes and the qualifiers after the parameter list
    head = _TRAILING_QUALIFIERS_RE.sub(")", _ATTR_RE.sub(" ", _strip_template_prefix(code_s)).strip())
    if head.endswith(")") and "=" not in head.split("(", 1)[0] and not head.startswith(("[", "(")):
        # the `(` opening the parameter list: the `)` closing the reversed text's first `(`
        close = match_paren(head[::-1].translate(_SWAP_PARENS), 0)
        if close is not None:
            m2 = _FUNC_NAME_RE.search(head[: len(head) - close])
            if m2:
                return "function", "", squeeze(m2.group(1))
    return "other", "", ""


@functools.lru_cache(maxsize=8)
def parse_dispatch(text: str) -> DispatchTree:
    """The blocks and ordered leaves of a dispatch file; one build reads a file several
    times (reading, link check, coupling): the tree is shared, never change it."""
    with collector_paused():
        return _parse(text)


def _parse(text: str) -> DispatchTree:
    code, raw = _mask(text)
    # blocks open left to right: the line of each counts on from the previous one's
    line, counted_to = 1, 0
    root = DispatchBlock(kind="file")
    stack: List[DispatchBlock] = [root]
    expr_depth = 0  # braces inside an expression (lambda bodies, init lists in calls)
    paren = 0
    seg_start = 0
    last = 0
    chains: List[List[str]] = [[]]  # per open block: conditions of the current if-chain

    for pos in _positions_of(code, "{};"):
        between = code[last:pos]  # (the segment itself, unless inside an expression)
        if "(" in between:
            paren += between.count("(") - between.count(")")
        elif ")" in between:
            paren -= between.count(")")
        c = code[pos]
        if expr_depth or paren > 0:
            last = pos + 1
            if c == "{":
                expr_depth += 1
            elif c == "}":
                expr_depth = max(0, expr_depth - 1)
            continue
        if last != seg_start:
            between = code[seg_start:pos]
        last = pos + 1
        if c == "{":
            kind, cond, name = _header(between, raw[seg_start:pos])
            line += code.count("\n", counted_to, pos)
            counted_to = pos
            chain = chains[-1]
            if kind.startswith("if"):
                chain[:] = [cond]
            elif kind.startswith("else if"):
                chain.append(cond)
            elif kind == "else":
                cond = " && ".join(f"!({c_})" for c_ in chain if c_)
                chain[:] = []
            else:
                chain[:] = []
            block = DispatchBlock(kind=kind, condition=cond, name=name, line=line)
            stack[-1].items.append(block)
            stack.append(block)
            chains.append([])
        else:
            stmt = _statement_text(between)
            if stmt:  # (before a "}": a trailing statement without ';')
                stack[-1].items.append(stmt)
                if c == ";":
                    chains[-1] = []
            if c == "}" and len(stack) > 1:
                stack.pop()
                chains.pop()
        seg_start = pos + 1
    tree = DispatchTree(root=root)
    _collect_leaves(tree)
    return tree


# The dispatch file of a filtered run repeats the full file's statements verbatim.
_statement_text = functools.lru_cache(maxsize=1 << 17)(squeeze)


_CONDITIONAL_KINDS = ("if", "else if", "else", "if constexpr", "else if constexpr", "else constexpr")


def _constexpr_value(cond: str) -> Optional[bool]:
    """Value of an ``if constexpr`` condition when certain (:func:`.lexing.constant_of`),
    else None."""
    value = constant_of(normalize_cpp(cond))
    return None if value is None else value not in ("false", "0")


def _collect_leaves(tree: DispatchTree) -> None:
    leaves: List[DispatchLeaf] = []
    discarded: List[DispatchLeaf] = []
    functions: List[str] = []
    scopes: List[DispatchScope] = []
    chain_numbers = itertools.count()

    def add(facts: CallFacts, block: DispatchBlock, conds: List[str], function: str,
            dead: bool, compile_time: Tuple[int, ...], scope: int) -> None:
        leaf = DispatchLeaf(
            -1 if dead else len(leaves), list(conds[:-1]), conds[-1] if conds else "",
            list(facts.trait_args), list(facts.extra_args), list(facts.undecided),
            function, block.line, dead, compile_time, scope)
        (discarded if dead else leaves).append(leaf)
        if scope >= 0 and not dead:
            scopes[scope].items.append(("leaf", leaf.order))

    def open_scope(condition: str, parent: int, chain: int, kind: str, function: str) -> int:
        scopes.append(DispatchScope(condition, parent, chain, kind, function))
        if parent >= 0 and chain >= 0:
            items = scopes[parent].items
            if not items or items[-1] != ("chain", chain):
                items.append(("chain", chain))
        return len(scopes) - 1

    def walk(block: DispatchBlock, outer: Dict[str, str], conds: List[str], function: str,
             dead: bool, compile_time: Tuple[int, ...] = (), scope: int = -1) -> None:
        if not any(type(item) is DispatchBlock for item in block.items):
            for facts in statement_block_calls(tuple(block.items), tuple(outer.items())):
                add(facts, block, conds, function, dead, compile_time, scope)
            return
        visible = Scope(outer)
        # values of the current `if constexpr` chain (None: not a constexpr chain)
        cx_chain: Optional[List[Optional[bool]]] = None
        chain = -1  # the current if / else-if chain (a number; -1: not in one)
        for item in block.items:
            if isinstance(item, DispatchBlock):
                func, sub_dead, sub_scope, sub_conds, sub_constant = \
                    function, dead, scope, conds, compile_time
                if item.kind in _CONDITIONAL_KINDS:
                    if item.kind.startswith("if") or chain < 0:
                        chain = next(chain_numbers)
                    sub_scope = open_scope(item.condition, scope, chain, item.kind, function)
                    sub_conds = [*conds, item.condition]
                    # a branch of an `if constexpr` chain (its `else` too) is chosen when
                    # the code is compiled, not by a call's arguments
                    if item.kind.endswith("constexpr") or (item.kind == "else" and cx_chain is not None):
                        sub_constant = (*compile_time, len(conds))
                else:
                    chain = -1
                    if item.kind == "function":
                        func = item.name
                        functions.append(func)
                        sub_scope = open_scope("", -1, -1, "function", func)
                        sub_conds, sub_constant = [], ()
                if item.kind == "if constexpr":
                    value = _constexpr_value(item.condition)
                    cx_chain = [value]
                    sub_dead = dead or value is False
                elif item.kind == "else if constexpr" and cx_chain is not None:
                    taken = any(v is True for v in cx_chain)
                    value = _constexpr_value(item.condition)
                    cx_chain.append(value)
                    sub_dead = dead or taken or value is False
                elif item.kind == "else" and cx_chain is not None:
                    sub_dead = dead or any(v is True for v in cx_chain)
                    cx_chain = None
                elif item.kind.startswith("if") or item.kind not in _CONDITIONAL_KINDS:
                    cx_chain = None
                walk(item, visible.visible, sub_conds, func, sub_dead, sub_constant,
                     sub_scope)
                if item.kind == "else":
                    chain = -1
                continue
            cx_chain = None
            chain = -1
            for facts in visible.statement(item):
                add(facts, block, conds, function, dead, compile_time, scope)

    walk(tree.root, {}, [], "", False)
    tree.leaves = leaves
    tree.discarded = discarded
    tree.functions = functions
    tree.scopes = scopes
