"""Text-level C++ helpers for the generated dispatch and kernel files: squeezing blanks,
folding constant expressions as a compiler would (``64/2``, ``(1 > 0)``), splitting
template argument lists. Pure functions over text."""

from __future__ import annotations

import functools
import operator
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .masking import strip_comments

__all__ = ["normalize_cpp", "constant_of", "conditional_branches", "split_template_args",
           "find_template_calls", "trait_template", "trait_key", "match_paren", "squeeze",
           "constant_value", "bool_locals", "evaluate", "COMPARE"]

_MEMO_SIZE = 1 << 16  # distinct texts kept by each memo of this module
_CMP_RE = re.compile(r"\((-?\d+)(==|!=|<=|>=|<|>)(-?\d+)\)")
_IDENT_RE = re.compile(r"(?<![\w.:])(?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*")


def squeeze(text: str) -> str:
    r"""Collapse blanks; keep one space only between two word characters (``\w``)."""
    words = text.split()
    if len(words) < 2:
        return words[0] if words else ""
    parts = [words[0]]
    append = parts.append
    word_end = words[0][-1].isalnum() or words[0][-1] == "_"
    for word in words[1:]:
        if word_end:
            first = word[0]
            if first.isalnum() or first == "_":
                append(" ")
        append(word)
        last = word[-1]
        word_end = last.isalnum() or last == "_"
    return "".join(parts)


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _fold_constants(text: str) -> str:
    """Fold ``(8>0)`` -> ``true``, constant template arguments (``64/2`` -> ``32``) and
    ``std::conditional_t<true,A,B>`` -> ``A``."""
    for _ in range(100):
        new = _CMP_RE.sub(lambda m: "true" if COMPARE[m.group(2)](int(m.group(1)), int(m.group(3)))
                          else "false", text)
        if "<" in new and _OPERATOR_RE.search(new):
            new = _fold_args(new)
        new = _fold_conditional(new)
        if new == text:
            return new
        text = new
    return text


def _fold_args(text: str) -> str:
    pos = 0
    while True:
        m = _TEMPLATE_NAME_RE.search(text, pos)
        if not m:
            return text
        open_at = m.end() - 1
        close = _match_angle(text, open_at)
        if close is not None:
            args = split_template_args(text[open_at + 1 : close])
            folded = [_folded_arg(arg) for arg in args]
            if folded != args:
                text = text[: open_at + 1] + ",".join(folded) + text[close:]
        pos = open_at + 1


_NOT_CONSTANT_RE = re.compile(r"^[\w:. ]*$")
# an operator (but `<` `>`, which template-ids have too: a comparison in a template
# argument is in parentheses, folded before)
_OPERATOR_RE = re.compile(r"[-+*/%!&|^~=]")


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _folded_arg(arg: str) -> str:
    if _NOT_CONSTANT_RE.match(arg):
        return arg  # (a literal stays as written: `0x10`, `1u`)
    value = constant_of(arg)
    return arg if value is None else value


_IS_SAME = "std::is_same_v"


def constant_of(text: str) -> Optional[str]:
    """``true``, ``false`` or the integer a normalised constant expression folds to, else
    None: ``std::is_same_v<T,U>`` is true for the same type texts (else undecided: two
    texts may name one type); any other template-id is a value the text does not give."""
    pos = 0
    parts: List[str] = []
    for m in _TEMPLATE_NAME_RE.finditer(text):
        if m.start() < pos:
            continue
        close = _match_angle(text, m.end() - 1)
        if close is None:
            continue
        args = split_template_args(text[m.end() : close])
        same = m.group(1) == _IS_SAME and len(args) == 2 and args[0] == args[1]
        end = close + 1
        while text.startswith("::", end):  # (`X<..>::value`: the name goes on)
            nxt = _IDENT_RE.match(text, end)
            end = nxt.end() if nxt else end + 2
        parts += [text[pos : m.start()], " true " if same else " _ "]
        pos = end
    value = evaluate("".join(parts) + text[pos:])
    if value is None:
        return None
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def conditional_branches(text: str) -> Optional[List[str]]:
    """The branches of a ``std::conditional_t<C,A,B>`` whose condition is not decided
    (either may be the type: nested ones opened too, ``void`` left out), or None
    when ``text`` is no such type."""
    if not text.startswith("std::conditional_t<") or _match_angle(text, 18) != len(text) - 1:
        return None
    args = split_template_args(text[19:-1])
    if len(args) != 3:
        return None
    found: List[str] = []
    for arg in args[1:]:
        inner = conditional_branches(arg)
        found += inner if inner is not None else [] if arg == "void" else [arg]
    return found


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
    """Canonical text of a C++ type/expression for comparisons: comments dropped, blanks
    squeezed, identifiers of ``aliases`` (normalised values) replaced (repeatedly), and
    constants and ``std::conditional_t`` with a literal condition folded."""
    if aliases is None or type(aliases) is dict:
        # a dispatch file repeats its statements thousands of times under a few aliases
        clean = _clean(text)
        return _normalize_memo(clean, _reachable_aliases(clean, aliases) if aliases else ())
    # a lazy mapping (a kernel file's aliases) resolves in the order asked: keep it
    return _substitute_and_fold(_clean(text), aliases)


def _reachable_aliases(text: str, aliases: Mapping[str, str]) -> Tuple[Tuple[str, str], ...]:
    """The (name, value) pairs of ``aliases`` the substitution can use on ``text`` (names
    of the text, of their values, and so on), in a fixed order: the normalised text
    depends on ``aliases`` only through them (a replaced identifier never joins its
    neighbours into a new name), so they key its memo."""
    names = aliases.keys()
    found: Dict[str, str] = {}
    pending = [text]
    while pending:
        identifiers = _identifiers(pending.pop())
        if names.isdisjoint(identifiers):
            continue  # (one set operation in C: no name to look at one by one)
        for name in identifiers:
            if name not in found and name in aliases:
                value = aliases[name]
                found[name] = value
                pending.append(value)
    return tuple(found.items())


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _identifiers(text: str) -> Tuple[str, ...]:
    """The distinct identifiers of ``text``, in order."""
    return tuple(dict.fromkeys(_IDENT_RE.findall(text)))


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _clean(text: str) -> str:
    return squeeze(strip_comments(text))


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _normalize_memo(clean: str, aliases: Tuple[Tuple[str, str], ...]) -> str:
    return _substitute_and_fold(clean, dict(aliases))


def _substitute_and_fold(text: str, aliases: Optional[Mapping[str, str]]) -> str:
    if aliases:
        names = aliases
        # (a text that names an alias changes: no other test of a change is needed)
        for _ in range(20):
            if names.keys().isdisjoint(_identifiers(text)):
                break
            text = _IDENT_RE.sub(lambda m: names[m[0]] if m[0] in names else m[0], text)
    return _fold_constants(text)


# The scanners below visit only the characters that can change their state.
_ANGLE_SCAN_RE = re.compile(r"[()\[\]{}<>;]")
_ARGS_SCAN_RE = re.compile(r"[()\[\]{}<>,]")


def _match_angle(text: str, open_at: int) -> Optional[int]:
    """Index of the ``>`` closing the ``<`` at ``open_at`` (parentheses and
    brackets are opaque: ``<(0 > 0)>`` works)."""
    depth = 0
    paren = 0
    for m in _ANGLE_SCAN_RE.finditer(text, open_at):
        c = m.group()
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
                    return m.start()
            else:  # ";"
                return None
    return None


def split_template_args(text: str) -> List[str]:
    """Split a template argument list on top-level commas (items squeezed)."""
    args: List[str] = []
    paren = 0  # (), [], {}: opaque, `<`/`>` inside them are operators
    angle = 0
    start = 0
    for m in _ARGS_SCAN_RE.finditer(text):
        c = m.group()
        if c in "([{":
            paren += 1
        elif c in ")]}":
            paren -= 1
        elif paren == 0 and c == "<":
            angle += 1
        elif paren == 0 and c == ">":
            angle -= 1
        elif c == "," and paren == 0 and angle == 0:
            i = m.start()
            args.append(squeeze(text[start:i]))
            start = i + 1
    tail = squeeze(text[start:])
    if tail or args:
        args.append(tail)
    return args


_TEMPLATE_NAME_RE = re.compile(r"(?<![\w.:>])((?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)\s*<")
_PAREN_AFTER_RE = re.compile(r"[ \t\r\n]*\(")


def find_template_calls(code: str) -> List[Tuple[str, List[str], int, int]]:
    """Every ``name<args>(`` in comment-free ``code``: (name, args, start, index of ``(``)."""
    return [(name, list(args), start, end) for name, args, start, end in _template_calls(code)]


# A dispatch file repeats the same call statement in every leaf.
@functools.lru_cache(maxsize=_MEMO_SIZE)
def _template_calls(code: str) -> Tuple[Tuple[str, Tuple[str, ...], int, int], ...]:
    out: List[Tuple[str, Tuple[str, ...], int, int]] = []
    pos = 0
    while True:
        m = _TEMPLATE_NAME_RE.search(code, pos)
        if not m:
            return tuple(out)
        open_at = m.end() - 1
        close = _match_angle(code, open_at)
        if close is None:
            pos = m.end()
            continue
        paren = _PAREN_AFTER_RE.match(code, close + 1)
        if paren:
            j = paren.end() - 1
            out.append((m.group(1), tuple(split_template_args(code[open_at + 1 : close])), m.start(), j))
            pos = j
        else:
            pos = m.end()


def trait_template(trait: str) -> str:
    """``fmha_fwd_traits_<...>`` -> ``fmha_fwd_traits_`` (the trait's kind)."""
    return trait.partition("<")[0]


def trait_key(trait: str, extra_args: Sequence[str] = ()) -> str:
    """The text a leaf and a kernel file share: the trait, then the call's other
    template arguments (the arch tag)."""
    return ",".join([trait, *extra_args])


def match_paren(text: str, open_at: int) -> Optional[int]:
    """Index of the ``)`` closing the ``(`` at ``open_at``, or None (steps from ``)`` to
    ``)`` counting the ``(`` between: ``str`` methods, no character loop)."""
    find = text.find
    count = text.count
    opened = closed = 0
    counted_to = open_at
    close = find(")", open_at)
    while close >= 0:
        opened += count("(", counted_to, close)
        closed += 1
        if opened == closed:
            return close
        counted_to = close + 1
        close = find(")", counted_to)
    return None


# Deciding whether a dispatcher condition is constant (``false and can_dispatch_v3``):
# word operators read as symbols, local ``const bool`` names replaced by their values.
_BOOL_LOCAL_RE = re.compile(r"^(?:const\s+|constexpr\s+)*(?:bool|auto)\s+([A-Za-z_]\w*)\s*=\s*(.+)$", re.S)
_WORD_OP_RE = re.compile(r"\b(and|or|not)\b")
_SYMBOLS = {"and": "&&", "or": "||", "not": "!"}


def _symbols(text: str) -> str:
    return normalize_cpp(_WORD_OP_RE.sub(lambda m: _SYMBOLS[m.group(1)], text))


def constant_value(expr: str, env: Optional[Mapping[str, str]] = None) -> Optional[bool]:
    """True/False when condition ``expr`` is constant (under ``env``'s locals), else None."""
    aliases = {name: _symbols(value) for name, value in (env or {}).items()}
    return {"true": True, "false": False}.get(constant_of(normalize_cpp(_symbols(expr), aliases))
                                              or "")


def bool_locals(statements: List[str]) -> Dict[str, str]:
    """``const bool name = expr;`` statements of a function body: name -> expr."""
    env: Dict[str, str] = {}
    for statement in statements:
        if "bool" not in statement and "auto" not in statement:
            continue  # (the pattern needs one of them: a dispatch file has 100,000 statements)
        m = _BOOL_LOCAL_RE.match(statement.strip())
        if m:
            env[m.group(1)] = m.group(2)
    return env


# The value of a C++ constant expression, or None: any other name or call is undecided,
# unless ``&&``/``||`` decide without it. Template-ids are the caller's to hide first
# (:func:`constant_of`): ``<``/``>`` compare here.
Value = Union[bool, int]

_TOKEN_RE = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|\d+)[uUlL]*|([A-Za-z_][\w:.]*|\"[^\"]*\")|"
                       r"(<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>&|^!~()]))")
# binary operators, loosest first (C++'s precedence)
_LEVELS = (("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="),
           ("<<", ">>"), ("+", "-"), ("*", "/", "%"))
_UNDECIDED = object()  # a name whose value the text does not give


class _Unreadable(Exception):
    pass


def evaluate(text: str) -> Optional[Value]:
    tokens: List[object] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None or m.end() == pos:
            return None
        number, name, op = m.groups()
        if number is not None:
            tokens.append(int(number, 0) if not number.startswith("0") or len(number) == 1
                          or number[1] in "xX" else int(number, 8))
        elif name is not None:
            tokens.append({"true": True, "false": False}.get(name, _UNDECIDED))
            if text.startswith("(", m.end()) and name[0] != '"':  # a call: its value
                close = match_paren(text, m.end())
                if close is None:
                    return None
                pos = close + 1
                continue
        else:
            tokens.append(op)
        pos = m.end()
    try:
        value, end = _binary(tokens, 0, 0)
    except (_Unreadable, IndexError):
        return None
    if end != len(tokens) or value is _UNDECIDED:
        return None
    return value


def _binary(tokens: List[object], at: int, level: int):
    if level == len(_LEVELS):
        return _unary(tokens, at)
    left, at = _binary(tokens, at, level + 1)
    ops = _LEVELS[level]
    while at < len(tokens) and isinstance(tokens[at], str) and tokens[at] in ops:
        op = tokens[at]
        right, at = _binary(tokens, at + 1, level + 1)
        left = _apply(op, left, right)  # type: ignore[arg-type]
    return left, at


def _unary(tokens: List[object], at: int):
    token = tokens[at]
    if token in ("!", "~", "-", "+"):
        value, at = _unary(tokens, at + 1)
        if value is _UNDECIDED:
            return value, at
        if token == "!":
            return not value, at
        number = int(value)
        return (~number if token == "~" else -number if token == "-" else number), at
    if token == "(":
        value, at = _binary(tokens, at + 1, 0)
        if tokens[at] != ")":
            raise _Unreadable
        return value, at + 1
    if isinstance(token, str):
        raise _Unreadable
    return token, at + 1


def _apply(op: str, left: object, right: object) -> object:
    if op in ("&&", "||"):
        # decided by one side alone when that side is false (&&) or true (||)
        stop = op == "||"
        if any(v is not _UNDECIDED and bool(v) is stop for v in (left, right)):
            return stop
        return _UNDECIDED if _UNDECIDED in (left, right) else not stop
    if left is _UNDECIDED or right is _UNDECIDED:
        return _UNDECIDED
    a, b = int(left), int(right)  # type: ignore[call-overload]
    if op in ("/", "%"):
        if b == 0:
            raise _Unreadable
        quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # C++ truncates
        return quotient if op == "/" else a - b * quotient
    if op in ("<<", ">>") and not 0 <= b < 64:
        raise _Unreadable
    return _BINARY[op](a, b)


#: a C++ comparison operator's test
COMPARE: Dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<=": operator.le, ">=": operator.ge,
    "<": operator.lt, ">": operator.gt}
_BINARY = {**COMPARE, "+": operator.add, "-": operator.sub, "*": operator.mul, "&": operator.and_,
           "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift}
