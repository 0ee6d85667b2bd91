"""Parse the API dispatch ``.cpp`` that generate.py writes (``fmha_fwd_api.cpp``,
``fmha_bwd_api.cpp``, ``fmha_fwd_splitkv_api.cpp``, ...) into an ordered model.

The dispatcher is a tree of ``if(cond) {...} else if(cond) {...}`` chains whose
innermost blocks declare kernel traits and call a kernel template with them::

    using trait_ = fmha_fwd_traits_<64, FmhaFwdFp16, ...>;
    return fmha_fwd_<trait_, <arch tag>>(s, a);

Each such call site is a :class:`DispatchLeaf`, numbered in source order, which
is the order the C++ tries them (first match wins; every leaf returns).

Leaves are linked to generated kernel ``.cpp`` files by the template arguments
both sides use: every kernel file explicitly specialises the same template with
the same ``fmha_*_traits_<...>`` argument list (spelled through local ``using``
aliases), plus the same extra arguments such as the arch tag.  Both sides are
normalised (:func:`normalize_cpp`: comments and insignificant blanks dropped,
aliases expanded, ``(8 > 0)``-style integer comparisons and
``std::conditional_t<true|false, A, B>`` folded) and compared as text, see
:func:`kernel_trait_key` and :func:`match_leaves_to_kernels`.

Call sites that take several traits (bwd: ``fmha_bwd_<dot_do_o_trait_,
dq_dk_dv_trait_, convert_dq_trait_>``, splitkv: ``fmha_fwd_splitkv_<traits_,
traits2_>``) reach one kernel per trait: the called helper template, defined at
the top of the same file, launches each of them.

No Sphinx imports here.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Mapping as _AbcMapping
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

__all__ = [
    "DispatchBlock",
    "DispatchLeaf",
    "DispatchTree",
    "DispatchMatch",
    "parse_dispatch",
    "match_leaves_to_kernels",
    "describe_condition",
    "normalize_cpp",
    "kernel_trait_keys",
    "kernel_trait_key",
    "trait_key",
    "trait_template",
    "strip_comments",
    "find_template_calls",
    "split_template_args",
]


# --------------------------------------------------------------------------- lexing

_MASK_RE = re.compile(
    r"""
      (?P<line_comment>//[^\n]*)
    | (?P<block_comment>/\*[\s\S]*?\*/)
    | (?P<string>"(?:\\.|[^"\\\n])*")
    | (?P<char>'(?:\\.|[^'\\\n])')
    | (?P<pp>^[ \t]*\#(?:[^\n]*\\\n)*[^\n]*)
    """,
    re.VERBOSE | re.MULTILINE,
)


def _blank(text: str) -> str:
    """Same length, newlines kept, everything else a space."""
    return re.sub(r"[^\n]", " ", text)


def _mask(text: str) -> Tuple[str, str]:
    """Return (code, raw):

    * ``code``: comments, string/char literals and preprocessor lines blanked
      (same length as ``text``), for structure and for trait text;
    * ``raw``: only preprocessor lines blanked, comments and strings kept, for
      condition text.
    """
    code_parts: List[str] = []
    raw_parts: List[str] = []
    last = 0
    for m in _MASK_RE.finditer(text):
        start, end = m.span()
        code_parts.append(text[last:start])
        raw_parts.append(text[last:start])
        piece = m.group(0)
        if m.lastgroup == "string":
            # keep the quotes so that `compare("fp16")` stays a call with an argument
            code_parts.append('"' + " " * (len(piece) - 2) + '"')
            raw_parts.append(piece)
        elif m.lastgroup == "char":
            code_parts.append("'" + " " * (len(piece) - 2) + "'")
            raw_parts.append(piece)
        elif m.lastgroup == "pp":
            code_parts.append(_blank(piece))
            raw_parts.append(_blank(piece))
        else:  # comments
            code_parts.append(_blank(piece))
            raw_parts.append(piece)
        last = end
    code_parts.append(text[last:])
    raw_parts.append(text[last:])
    return "".join(code_parts), "".join(raw_parts)


def strip_comments(text: str) -> str:
    """Remove C/C++ comments (not inside string literals)."""

    def repl(m: "re.Match[str]") -> str:
        if m.lastgroup in ("line_comment", "block_comment"):
            return " "
        return m.group(0)

    return _MASK_RE.sub(repl, text)


# --------------------------------------------------------------------------- normalising

_WS_RE = re.compile(r"\s+")
_SPACE_RE = re.compile(r" (?=\W)|(?<=\W) ")
_CMP_RE = re.compile(r"\((-?\d+)(==|!=|<=|>=|<|>)(-?\d+)\)")
_CMP_OPS = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    ">": lambda a, b: a > b,
}
_IDENT_RE = re.compile(r"(?<![\w.:])(?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*")


def _squeeze(text: str) -> str:
    """Collapse blanks; keep one space only between two word characters."""
    text = _WS_RE.sub(" ", text).strip()
    return _SPACE_RE.sub("", text)


def _fold_constants(text: str) -> str:
    """Fold ``(8>0)`` -> ``true`` and ``std::conditional_t<true,A,B>`` -> ``A``."""
    for _ in range(100):
        new = _CMP_RE.sub(
            lambda m: "true" if _CMP_OPS[m.group(2)](int(m.group(1)), int(m.group(3))) else "false",
            text,
        )
        new = _fold_conditional(new)
        if new == text:
            return new
        text = new
    return text


def _fold_conditional(text: str) -> str:
    pos = 0
    while True:
        i = text.find("std::conditional_t<", pos)
        if i < 0:
            return text
        open_at = i + len("std::conditional_t")
        close = _match_angle(text, open_at)
        if close is None:
            return text
        args = split_template_args(text[open_at + 1 : close])
        if len(args) == 3 and args[0] in ("true", "false"):
            chosen = args[1] if args[0] == "true" else args[2]
            text = text[:i] + chosen + text[close + 1 :]
            pos = i
        else:
            pos = close + 1


def normalize_cpp(text: str, aliases: Optional[Mapping[str, str]] = None) -> str:
    """Canonical text of a C++ type/expression for comparisons.

    Comments are dropped, blanks squeezed, identifiers found in ``aliases``
    (already normalised values) replaced by their values (repeatedly), and
    integer comparisons in parentheses and ``std::conditional_t`` with a
    literal condition folded.
    """
    text = _squeeze(strip_comments(text))
    if aliases:
        for _ in range(20):
            changed = False

            def repl(m: "re.Match[str]") -> str:
                nonlocal changed
                name = m.group(0)
                if name in aliases:
                    changed = True
                    return aliases[name]
                return name

            new = _IDENT_RE.sub(repl, text)
            text = new
            if not changed:
                break
    return _fold_constants(text)


# --------------------------------------------------------------------------- templates


def _match_angle(text: str, open_at: int) -> Optional[int]:
    """Index of the ``>`` closing the ``<`` at ``open_at`` (parentheses and
    brackets are opaque: ``<(0 > 0)>`` works)."""
    depth = 0
    paren = 0
    i = open_at
    n = len(text)
    while i < n:
        c = text[i]
        if c in "([{":
            paren += 1
        elif c in ")]}":
            paren -= 1
            if paren < 0:
                return None
        elif paren == 0:
            if c == "<":
                depth += 1
            elif c == ">":
                depth -= 1
                if depth == 0:
                    return i
            elif c == ";":
                return None
        i += 1
    return None


def split_template_args(text: str) -> List[str]:
    """Split a template argument list on top-level commas (items squeezed)."""
    args: List[str] = []
    paren = 0  # (), [], {}: opaque, `<`/`>` inside them are operators
    angle = 0
    start = 0
    for i, c in enumerate(text):
        if c in "([{":
            paren += 1
        elif c in ")]}":
            paren -= 1
        elif paren == 0 and c == "<":
            angle += 1
        elif paren == 0 and c == ">":
            angle -= 1
        elif c == "," and paren == 0 and angle == 0:
            args.append(_squeeze(text[start:i]))
            start = i + 1
    tail = _squeeze(text[start:])
    if tail or args:
        args.append(tail)
    return args


_TEMPLATE_NAME_RE = re.compile(r"(?<![\w.:>])((?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)\s*<")


def find_template_calls(code: str) -> List[Tuple[str, List[str], int, int]]:
    """Every ``name<args>(`` in comment-free ``code``: (name, args, start, end)
    where ``end`` is the index of the ``(``."""
    out: List[Tuple[str, List[str], int, int]] = []
    pos = 0
    while True:
        m = _TEMPLATE_NAME_RE.search(code, pos)
        if not m:
            return out
        open_at = m.end() - 1
        close = _match_angle(code, open_at)
        if close is None:
            pos = m.end()
            continue
        j = close + 1
        while j < len(code) and code[j] in " \t\r\n":
            j += 1
        if j < len(code) and code[j] == "(":
            out.append((m.group(1), split_template_args(code[open_at + 1 : close]), m.start(), j))
            pos = j
        else:
            pos = m.end()


def trait_template(trait: str) -> str:
    """``fmha_fwd_traits_<...>`` -> ``fmha_fwd_traits_`` (the trait's kind)."""
    i = trait.find("<")
    return trait[:i] if i >= 0 else trait


def trait_key(trait: str, extra_args: Sequence[str] = ()) -> str:
    """The text a leaf and a kernel file must share: the normalised trait
    followed by the call's other template arguments (e.g. the arch tag)."""
    return ",".join([trait, *extra_args])


def _classify_args(
    args: Sequence[str], aliases: Mapping[str, str]
) -> Tuple[List[Tuple[str, str]], List[str], List[str]]:
    """Split call template arguments into traits, extra arguments, dropped.

    A trait is an argument that names a ``using`` alias whose value is a
    template-id; ``void`` (e.g. from ``std::conditional_t<false, X, void>``)
    means "not launched"; anything else (``<arch tag>``) is extra.
    Returns ([(alias, trait text)], extras, dropped aliases).
    """
    traits: List[Tuple[str, str]] = []
    extras: List[str] = []
    dropped: List[str] = []
    for arg in args:
        names_in_arg = [n for n in _IDENT_RE.findall(arg) if n in aliases]
        folded = normalize_cpp(arg, aliases)
        if folded == "void":
            dropped.extend(names_in_arg)
            continue
        if arg in aliases or (names_in_arg and folded in {aliases[n] for n in names_in_arg}):
            alias = arg if arg in aliases else next(n for n in names_in_arg if aliases[n] == folded)
            if "<" in folded:
                traits.append((alias, folded))
                continue
        extras.append(folded)
    return traits, extras, dropped


# --------------------------------------------------------------------------- model


@dataclass
class DispatchBlock:
    """One ``{...}`` block of the dispatch file.

    ``kind``: ``if``, ``else if``, ``else``, ``if constexpr``, ``else if constexpr``,
    ``function``, ``namespace``, ``loop``, ``switch`` or ``other``.
    ``condition``: the text inside the parentheses (comments kept, blanks
    squeezed); for ``else`` the negation of the chain's previous conditions.
    ``items``: statements (str, comment-free, squeezed) and nested blocks, in
    source order.
    """

    kind: str
    header: str = ""
    condition: str = ""
    name: str = ""
    line: int = 0
    items: List[Union["DispatchBlock", str]] = field(default_factory=list)

    @property
    def blocks(self) -> List["DispatchBlock"]:
        return [item for item in self.items if isinstance(item, DispatchBlock)]

    @property
    def statements(self) -> List[str]:
        return [item for item in self.items if isinstance(item, str)]


@dataclass
class DispatchLeaf:
    """A call site that launches kernels; ``order`` is the try order (0-based).

    ``path_conditions``: conditions of the enclosing branches, outermost first,
    excluding ``condition`` (the innermost branch's).  ``trait_args``: the
    normalised trait types the call passes (one per launched kernel), in
    argument order; ``extra_args``: the call's other template arguments (arch
    tag), appended to each trait to form :attr:`keys`.  ``declared_traits``:
    every trait alias in scope (alias -> text), launched or not.
    """

    order: int
    path_conditions: List[str]
    condition: str
    trait_args: List[str]
    call: str
    extra_args: List[str] = field(default_factory=list)
    trait_names: List[str] = field(default_factory=list)
    declared_traits: Dict[str, str] = field(default_factory=dict)
    not_launched: List[str] = field(default_factory=list)
    function: str = ""
    line: int = 0
    branch_kind: str = ""
    discarded: bool = False

    @property
    def keys(self) -> List[str]:
        return [trait_key(t, self.extra_args) for t in self.trait_args]

    @property
    def conditions(self) -> List[str]:
        """All conditions from the outermost branch to the leaf's own."""
        return [*self.path_conditions, self.condition] if self.condition else list(self.path_conditions)


@dataclass
class DispatchTree:
    root: DispatchBlock
    leaves: List[DispatchLeaf] = field(default_factory=list)
    functions: List[str] = field(default_factory=list)
    discarded: List[DispatchLeaf] = field(default_factory=list)

    def leaves_in(self, function: str) -> List[DispatchLeaf]:
        return [leaf for leaf in self.leaves if leaf.function == function]


# --------------------------------------------------------------------------- parsing

_HEADER_KW_RE = re.compile(r"^(else\s+)?if\b\s*(constexpr\b)?\s*\(")
_TEMPLATE_PREFIX_RE = re.compile(r"^\s*template\s*<")
_ATTR_RE = re.compile(r"\[\[.*?\]\]")
_FUNC_NAME_RE = re.compile(r"((?:::)?[A-Za-z_~][\w:]*(?:\s*<[^()]*>)?)\s*\($")
_USING_RE = re.compile(r"^using\s+([A-Za-z_]\w*)\s*=\s*(.*)$", re.S)


def _match_paren(text: str, open_at: int) -> Optional[int]:
    depth = 0
    for i in range(open_at, len(text)):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
    return None


def _strip_template_prefix(code: str) -> str:
    code = code.strip()
    while _TEMPLATE_PREFIX_RE.match(code):
        close = _match_angle(code, code.index("<"))
        if close is None:
            break
        code = code[close + 1 :].strip()
    return code


def _classify_header(code: str, raw: str) -> Tuple[str, str, str]:
    """(kind, condition, name) of a block header (code: masked, raw: with comments)."""
    code_s = code.strip()
    raw_s = raw.strip()
    m = _HEADER_KW_RE.match(code_s)
    if m:
        kind = ("else if" if m.group(1) else "if") + (" constexpr" if m.group(2) else "")
        open_at = m.end() - 1
        close = _match_paren(code_s, open_at)
        # code and raw have the same length, so indices carry over (comments
        # before the keyword are blank in code, not in raw)
        lead = len(code) - len(code.lstrip())
        cond_raw = raw[lead + open_at + 1 : lead + close] if close is not None else raw_s
        return kind, _WS_RE.sub(" ", cond_raw).strip(), ""
    if code_s == "else":
        return "else", "", ""
    if re.match(r"^(inline\s+)?namespace\b", code_s):
        return "namespace", "", code_s.split(None, 1)[1] if " " in code_s else ""
    if re.match(r"^(for|while)\b", code_s) or code_s == "do":
        return "loop", "", ""
    if re.match(r"^switch\b", code_s):
        return "switch", "", ""
    head = _ATTR_RE.sub(" ", _strip_template_prefix(code_s)).strip()
    # drop trailing qualifiers after the parameter list
    head = re.sub(r"\)\s*(?:const|noexcept|override|final|mutable|\s)*(?:->\s*[^)]*)?$", ")", head)
    if head.endswith(")") and "=" not in head.split("(", 1)[0] and not head.startswith(("[", "(")):
        open_at = _find_params_open(head)
        if open_at is not None:
            m2 = _FUNC_NAME_RE.search(head[: open_at + 1])
            if m2:
                return "function", "", _squeeze(m2.group(1))
    return "other", "", ""


def _find_params_open(head: str) -> Optional[int]:
    """Index of the ``(`` that opens the parameter list ending ``head``."""
    depth = 0
    for i in range(len(head) - 1, -1, -1):
        c = head[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return i
    return None


def parse_dispatch(text: str) -> DispatchTree:
    """Parse a generated API dispatch file into blocks and ordered leaves."""
    code, raw = _mask(text)
    newlines = _newline_index(code)

    def line_of(pos: int) -> int:
        return bisect.bisect_right(newlines, pos) + 1

    root = DispatchBlock(kind="file")
    stack: List[DispatchBlock] = [root]
    expr_depth = 0  # braces inside an expression (lambda bodies, init lists in calls)
    paren = 0
    seg_start = 0
    last = 0
    chains: List[List[str]] = [[]]  # per open block: conditions of the current if-chain

    for m in re.finditer(r"[{};]", code):
        pos = m.start()
        chunk = code[last:pos]
        paren += chunk.count("(") - chunk.count(")")
        last = pos + 1
        c = m.group(0)
        if expr_depth or paren > 0:
            if c == "{":
                expr_depth += 1
            elif c == "}":
                expr_depth = max(0, expr_depth - 1)
            continue
        if c == ";":
            stmt = _squeeze(code[seg_start:pos])
            if stmt:
                stack[-1].items.append(stmt)
                chains[-1] = []
            seg_start = pos + 1
        elif c == "{":
            header_code = code[seg_start:pos]
            header_raw = raw[seg_start:pos]
            kind, cond, name = _classify_header(header_code, header_raw)
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
            block = DispatchBlock(
                kind=kind,
                header=_squeeze(header_raw[len(header_code) - len(header_code.lstrip()) :]),
                condition=cond,
                name=name,
                line=line_of(pos),
            )
            stack[-1].items.append(block)
            stack.append(block)
            chains.append([])
            seg_start = pos + 1
        else:  # "}"
            stmt = _squeeze(code[seg_start:pos])
            if stmt:  # trailing statement without ';' (should not happen)
                stack[-1].items.append(stmt)
            if len(stack) > 1:
                stack.pop()
                chains.pop()
            seg_start = pos + 1
    tree = DispatchTree(root=root)
    _collect_leaves(tree)
    return tree


def _newline_index(code: str) -> List[int]:
    out: List[int] = []
    i = code.find("\n")
    while i >= 0:
        out.append(i)
        i = code.find("\n", i + 1)
    return out


_CONDITIONAL_KINDS = ("if", "else if", "else", "if constexpr", "else if constexpr", "else constexpr")


def _constexpr_value(cond: str) -> Optional[bool]:
    """Value of an ``if constexpr`` condition when it is certain, else None.

    Only literal ``true``/``false`` and ``std::is_same_v<A, A>`` (identical
    arguments) are decided; ``std::is_same_v<A, B>`` with different names is
    left undecided (they could be aliases of one type).
    """
    text = normalize_cpp(cond)

    def same(m: "re.Match[str]") -> str:
        args = split_template_args(m.group(1))
        if len(args) == 2 and args[0] == args[1]:
            return "true"
        return m.group(0)

    for _ in range(10):
        new = re.sub(r"std::is_same_v<([^<>]*(?:<[^<>]*>[^<>]*)*)>", same, text)
        new = re.sub(r"\(\s*(true|false)\s*\)", r"\1", new)
        new = new.replace("!true", "false").replace("!false", "true")
        if new == text:
            break
        text = new
    if text == "true":
        return True
    if text == "false":
        return False
    return None


def _collect_leaves(tree: DispatchTree) -> None:
    leaves: List[DispatchLeaf] = []
    discarded: List[DispatchLeaf] = []
    functions: List[str] = []

    def walk(
        block: DispatchBlock,
        scopes: List[Dict[str, str]],
        conds: List[str],
        function: str,
        kind: str,
        dead: bool,
    ) -> None:
        scope: Dict[str, str] = {}
        scopes = [*scopes, scope]
        # values of the current `if constexpr` chain (None: not a constexpr chain)
        cx_chain: Optional[List[Optional[bool]]] = None
        for item in block.items:
            if isinstance(item, DispatchBlock):
                func = function
                sub_dead = dead
                if item.kind == "function":
                    func = item.name
                    functions.append(item.name)
                if item.kind in ("if constexpr",):
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
                sub_conds = conds
                sub_kind = kind
                if item.kind in _CONDITIONAL_KINDS:
                    sub_conds = [*conds, item.condition]
                    sub_kind = item.kind
                elif item.kind == "function":
                    sub_conds = []
                    sub_kind = ""
                walk(item, scopes, sub_conds, func, sub_kind, sub_dead)
                continue
            cx_chain = None
            m = _USING_RE.match(item)
            if m:
                visible = _visible(scopes)
                scope[m.group(1)] = normalize_cpp(m.group(2), visible)
                continue
            if "<" not in item:
                continue
            visible = _visible(scopes)
            if not visible:
                continue
            for name, args, start, end in find_template_calls(item):
                traits, extras, dropped = _classify_args(args, visible)
                if not traits:
                    continue
                close = _match_paren(item, end)
                call = item[start : close + 1] if close is not None else item[start:]
                leaf = DispatchLeaf(
                    order=-1 if dead else len(leaves),
                    path_conditions=list(conds[:-1]),
                    condition=conds[-1] if conds else "",
                    trait_args=[t for _, t in traits],
                    call=_squeeze(call),
                    extra_args=extras,
                    trait_names=[a for a, _ in traits],
                    declared_traits={k: v for k, v in visible.items() if "<" in v and _looks_like_trait(v)},
                    not_launched=dropped,
                    function=function,
                    line=block.line,
                    branch_kind=kind,
                    discarded=dead,
                )
                (discarded if dead else leaves).append(leaf)

    walk(tree.root, [], [], "", "", False)
    tree.leaves = leaves
    tree.discarded = discarded
    tree.functions = functions


def _visible(scopes: List[Dict[str, str]]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for scope in scopes:
        out.update(scope)
    return out


def _looks_like_trait(value: str) -> bool:
    return "traits" in trait_template(value).rsplit("::", 1)[-1].lower()


# --------------------------------------------------------------------------- kernel files


def kernel_trait_keys(text: str) -> List[str]:
    """Keys of every explicit specialisation ``template<> R f<trait, ...>(...)``
    in a generated kernel ``.cpp`` (aliases of the file expanded), in order,
    without duplicates."""
    code, _ = _mask(text)
    aliases = _LazyAliases(
        {m.group(1): m.group(2) for m in re.finditer(r"\busing\s+([A-Za-z_]\w*)\s*=\s*([^;]*);", code)}
    )
    keys: List[str] = []
    for m in re.finditer(r"\btemplate\s*<\s*>", code):
        stop = len(code)
        for ch in "{;":
            k = code.find(ch, m.end())
            if k >= 0:
                stop = min(stop, k)
        head = code[m.end() : stop]
        calls = find_template_calls(head)
        if not calls:
            continue
        _, args, _, _ = calls[0]
        traits, extras, _ = _classify_args(args, aliases)
        for _, trait in traits:
            key = trait_key(trait, extras)
            if key not in keys:
                keys.append(key)
    return keys


class _LazyAliases(_AbcMapping):
    """``using`` aliases of a file, each normalised (and expanded) on first use."""

    def __init__(self, raw: Dict[str, str]) -> None:
        self._raw = raw
        self._done: Dict[str, str] = {}
        self._busy: set = set()

    def __contains__(self, name: object) -> bool:
        return name in self._raw

    def __getitem__(self, name: str) -> str:
        done = self._done.get(name)
        if done is not None:
            return done
        if name in self._busy:  # self-reference: leave the name as is
            return name
        self._busy.add(name)
        try:
            value = normalize_cpp(self._raw[name], self)
        finally:
            self._busy.discard(name)
        self._done[name] = value
        return value

    def __iter__(self):
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


def kernel_trait_key(text: str) -> str:
    """The specialised trait key(s) of a kernel file, one per line."""
    return "\n".join(kernel_trait_keys(text))


# --------------------------------------------------------------------------- matching


@dataclass
class DispatchMatch:
    """Result of :func:`match_leaves_to_kernels`.

    ``leaf_kernels``: leaf order -> kernel files it launches (one list entry per
    trait argument, ``None`` when no generated kernel specialises it).
    ``kernel_leaves``: kernel file -> orders of the leaves that launch it.
    ``unmatched``: (leaf order, key) for traits no generated kernel specialises.
    ``unreached``: kernel files no leaf launches, sorted.
    ``kinds``: kernel file -> trait template name (``fmha_bwd_dot_do_o_traits_``).
    """

    leaf_kernels: Dict[int, List[Optional[str]]] = field(default_factory=dict)
    kernel_leaves: Dict[str, List[int]] = field(default_factory=dict)
    unmatched: List[Tuple[int, str]] = field(default_factory=list)
    unreached: List[str] = field(default_factory=list)
    ambiguous: Dict[str, List[str]] = field(default_factory=dict)
    kinds: Dict[str, str] = field(default_factory=dict)

    @property
    def unmatched_leaves(self) -> List[int]:
        return sorted({order for order, _ in self.unmatched})

    def files_of(self, order: int) -> List[str]:
        return [f for f in self.leaf_kernels.get(order, []) if f]


def match_leaves_to_kernels(
    leaves: Union[DispatchTree, Iterable[DispatchLeaf]],
    kernel_traits: Mapping[str, str],
) -> DispatchMatch:
    """Link each leaf to the kernel files that specialise its traits.

    ``kernel_traits`` maps kernel file name -> :func:`kernel_trait_key` of its
    text (``GenerateRunner.generate_api_file(...).kernel_traits``; the
    ApiFileResult itself is accepted too).  Kernel files
    with an empty key (nothing specialised) are reported as unreached.
    """
    if isinstance(leaves, DispatchTree):
        leaves = leaves.leaves
    kernel_traits = getattr(kernel_traits, "kernel_traits", kernel_traits)  # an ApiFileResult
    if not isinstance(kernel_traits, _AbcMapping):
        raise TypeError(
            "match_leaves_to_kernels needs {kernel file: trait key} "
            "(GenerateRunner.generate_api_file(...).kernel_traits), not bare names"
        )
    by_key: Dict[str, List[str]] = {}
    result = DispatchMatch()
    for name in sorted(kernel_traits):
        keys = [k for k in kernel_traits[name].split("\n") if k]
        result.kinds[name] = trait_template(keys[0]) if keys else ""
        for key in keys:
            by_key.setdefault(key, []).append(name)
    for key, names in by_key.items():
        if len(names) > 1:
            result.ambiguous[key] = names
    reached: Dict[str, List[int]] = {}
    for leaf in leaves:
        files: List[Optional[str]] = []
        for key in leaf.keys:
            names = by_key.get(key)
            if not names:
                files.append(None)
                result.unmatched.append((leaf.order, key))
                continue
            files.append(names[0] if len(names) == 1 else names[0])
            for name in names:
                orders = reached.setdefault(name, [])
                if not orders or orders[-1] != leaf.order:
                    orders.append(leaf.order)
        result.leaf_kernels[leaf.order] = files
    result.kernel_leaves = {name: reached[name] for name in sorted(reached)}
    result.unreached = sorted(name for name in kernel_traits if name not in reached)
    return result


# --------------------------------------------------------------------------- conditions


def _split_top(text: str, op: str) -> List[str]:
    parts: List[str] = []
    depth = 0
    start = 0
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(op, i):
            parts.append(text[start:i])
            i += len(op)
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _strip_parens(text: str) -> str:
    text = text.strip()
    while text.startswith("(") and _match_paren(text, 0) == len(text) - 1:
        text = text[1:-1].strip()
    return text


_TRUE_COMMENT_RE = re.compile(r"\btrue\s*/\*.*?\*/", re.S)
_COMPARE_STR_RE = re.compile(r'^([\w.]+)\.compare\(\s*("[^"]*")\s*\)\s*==\s*0$')
_COMPARE_PREFIX_RE = re.compile(r'^([\w.]+)\.compare\(\s*0\s*,\s*\d+\s*,\s*("[^"]*")\s*\)\s*==\s*0$')
_BOOL_CMP_RE = re.compile(r"^(.+?)\s*==\s*(true|false)$")


def _describe(expr: str) -> str:
    expr = _strip_parens(expr)
    ors = _split_top(expr, "||")
    if len(ors) > 1:
        parts = [_describe(p) for p in ors]
        if "always" in parts:
            return "always"
        parts = [p for p in parts if p != "never"]
        if not parts:
            return "never"
        return " or ".join(f"({p})" if " and " in p else p for p in parts)
    ands = _split_top(expr, "&&")
    if len(ands) > 1:
        parts = [_describe(p) for p in ands]
        if "never" in parts:
            return "never"
        parts = [p for p in parts if p != "always"]
        if not parts:
            return "always"
        return " and ".join(f"({p})" if " or " in p else p for p in parts)
    return _describe_atom(expr)


_SIMPLE_CMP_RE = re.compile(r"^([\w.:]+) (==|!=) ([\w.:]+)$")


def _negate(text: str) -> str:
    if text == "always":
        return "never"
    if text == "never":
        return "always"
    m = _SIMPLE_CMP_RE.match(text)
    if m:  # not (x != y) -> x == y
        return f"{m.group(1)} {'!=' if m.group(2) == '==' else '=='} {m.group(3)}"
    return f"not ({text})" if " " in text else f"not {text}"


def _describe_atom(expr: str) -> str:
    expr = _strip_parens(expr)
    if expr == "true":
        return "always"
    if expr == "false":
        return "never"
    if expr.startswith("!") and not expr.startswith("!="):
        return _negate(_describe(expr[1:]))
    m = _COMPARE_STR_RE.match(expr)
    if m:
        return f"{m.group(1)} == {m.group(2)}"
    m = _COMPARE_PREFIX_RE.match(expr)
    if m:
        return f"{m.group(1)} starts with {m.group(2)}"
    m = _BOOL_CMP_RE.match(expr)
    if m and _split_top(m.group(1), "==") == [m.group(1).strip()]:
        subject = _describe_atom(m.group(1))
        if m.group(2) == "true":
            return subject
        return _negate(subject)
    if len(_split_top(expr, "||")) > 1 or len(_split_top(expr, "&&")) > 1:
        return _describe(expr)
    return expr


@functools.lru_cache(maxsize=65536)
def _condition_terms(cond: str) -> Tuple[str, ...]:
    text = _WS_RE.sub(" ", strip_comments(_TRUE_COMMENT_RE.sub("true", cond))).strip()
    terms: List[str] = []
    for term in _split_top(_strip_parens(text), "&&"):
        described = describe_condition(term)
        if described != "always" and described not in terms:
            terms.append(described)
    return tuple(terms)


def condition_terms(cond: str) -> List[str]:
    """The readable terms of a condition's top-level conjunction (``a && (b || c)``
    -> ``["a", "b or c"]``), without the terms that always hold."""
    return list(_condition_terms(cond))


def describe_condition(cond: str) -> str:
    """A readable form of a dispatcher condition.

    ``t.``/``a.`` prefixes go; ``true /*...*/`` (a check the generator disabled)
    and ``(true)`` terms of a conjunction read as "always"; ``x == true`` ->
    ``x``, ``x == false`` -> ``not x``; ``s.compare("fp16") == 0`` ->
    ``s == "fp16"``; ``s.compare(0, 6, "gfx950") == 0`` -> ``s starts with
    "gfx950"``; ``&&``/``||``/``!`` -> and/or/not.  Other terms are kept
    verbatim (blanks squeezed); nothing is inferred.
    """
    text = _TRUE_COMMENT_RE.sub("true", cond)
    text = strip_comments(text)
    text = _WS_RE.sub(" ", text).strip()
    if not text:
        return "always"
    text = re.sub(r"(?<![\w.])[ta]\.(?=[A-Za-z_])", "", text)
    return _describe(text)
