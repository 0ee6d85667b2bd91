"""Dispatch conditions as formulas over a call's variables, decided exactly. A term tests
one variable (a size against a number or modulus, a flag, a value, a text prefix; any
other text is a flag of its own; ``t.``/``a.`` name one call); each variable's values
fall into finitely many classes, so :meth:`Theory.satisfiable` decides by splitting."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from math import lcm
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from .condition_form import clean_condition, split_top, strip_parens
from .lexing import COMPARE

__all__ = ["Node", "Theory", "Way", "conjoin", "disjoin", "narrow", "parse_condition"]

#: a literal: ("v", variable number, classes as bits); ("&", children); ("|", children)
Node = Union[bool, Tuple]

_NAME = r"[A-Za-z_][\w]*(?:\s*(?:\.|->|::)\s*[A-Za-z_]\w*)*"
_COMPARE_EQ = re.compile(r'^(%s)\s*\.\s*compare\(\s*"([^"]*)"\s*\)\s*(==|!=)\s*0$' % _NAME)
_COMPARE_PREFIX = re.compile(
    r'^(%s)\s*\.\s*compare\(\s*0\s*,\s*(\d+)\s*,\s*"([^"]*)"\s*\)\s*(==|!=)\s*0$' % _NAME)
_FLAG_CMP = re.compile(r"^(%s)\s*(==|!=)\s*(true|false)$" % _NAME)
_BOUND = re.compile(r"^(%s)\s*(<=|<|>=|>|==|!=)\s*(\d+)$" % _NAME)
_BOUND_FLIPPED = re.compile(r"^(\d+)\s*(<=|<|>=|>|==|!=)\s*(%s)$" % _NAME)
_MODULO = re.compile(r"^(%s)\s*%%\s*(\d+)\s*(<=|<|>=|>|==|!=)\s*(\d+)$" % _NAME)
#: an enumerator (``bias_enum::alibi``) or ``nullptr``: a value, not another variable
_VALUE = re.compile(r"^(%s)\s*(==|!=)\s*(nullptr|[A-Za-z_][\w:]*::\w+)$" % _NAME)
_FLAG = re.compile(r"^(%s)$" % _NAME)
#: a bracketed condition compared with a literal bool
_BOOL_COMPARED = re.compile(r"^(\(.*\))\s*(==|!=)\s*(true|false)$")
_CALL_PREFIXES = re.compile(r"^(?:t|a|traits|args)\s*\.\s*")
_FLIP = {"<=": ">=", "<": ">", ">=": "<=", ">": "<", "==": "==", "!=": "!="}

# An atom: ("size", name, op, number, modulus) | ("flag", name) | ("eq", name, value) |
# ("prefix", name, text) | ("opaque", text)
Atom = Tuple


def _name(text: str) -> str:
    return _CALL_PREFIXES.sub("", re.sub(r"\s+", "", text))


def _atom(text: str) -> Tuple[Atom, bool]:
    """(atom, polarity) of one comparison (the text holds no ``&&``/``||``)."""
    if (m := _COMPARE_PREFIX.match(text)) and int(m.group(2)) == len(m.group(3)) and m.group(3):
        return ("prefix", _name(m.group(1)), m.group(3)), m.group(4) == "=="
    if (m := _COMPARE_EQ.match(text)):
        return ("eq", _name(m.group(1)), '"%s"' % m.group(2)), m.group(3) == "=="
    if (m := _FLAG_CMP.match(text)):
        return ("flag", _name(m.group(1))), (m.group(2) == "==") == (m.group(3) == "true")
    if (m := _MODULO.match(text)) and int(m.group(2)) > 0:
        return ("size", _name(m.group(1)), m.group(3), int(m.group(4)), int(m.group(2))), True
    if (m := _BOUND.match(text)):
        return ("size", _name(m.group(1)), m.group(2), int(m.group(3)), 0), True
    if (m := _BOUND_FLIPPED.match(text)):
        return ("size", _name(m.group(3)), _FLIP[m.group(2)], int(m.group(1)), 0), True
    if (m := _VALUE.match(text)):
        return ("eq", _name(m.group(1)), re.sub(r"\s+", "", m.group(3))), m.group(2) == "=="
    if _FLAG.match(text):
        return ("flag", _name(text)), True
    return ("opaque", re.sub(r"\s+", " ", text)), True


@functools.lru_cache(maxsize=1 << 16)
def parse_condition(text: str) -> Tuple:
    """The formula of a C++ condition: ``("&", parts)``, ``("|", parts)``, ``("!", part)``,
    ``("atom", atom)``, or a bool (``true /*...*/``: a check the generator switched off)."""
    return _parse(clean_condition(text))


@functools.lru_cache(maxsize=1 << 16)
def _parse(text: str) -> Any:
    text = strip_parens(text)
    if not text:
        return True
    words = " or " in text or " and " in text
    for symbol, word, tag in (("||", "or", "|"), ("&&", "and", "&")):
        parts = split_top(text, symbol) if symbol in text else [text]
        if words:
            parts = [p for part in parts for p in split_top(part, word, True)]
        if len(parts) > 1:
            return (tag, tuple(_parse(p) for p in parts))
    if text in ("true", "false"):
        return text == "true"
    if text.startswith("!") and not text.startswith("!="):
        return ("!", _parse(text[1:]))
    if text.startswith("not "):
        return ("!", _parse(text[4:]))
    compared = _BOOL_COMPARED.match(text)
    if compared and not _FLAG_CMP.match(text):  # ``(x != nullptr) == true``: x != nullptr
        inner = _parse(compared.group(1))
        same = (compared.group(2) == "==") == (compared.group(3) == "true")
        return inner if same else ("!", inner)
    atom, positive = _atom(text)
    return ("atom", atom) if positive else ("!", ("atom", atom))


def _atoms_of(formula: Tuple) -> Iterator[Atom]:
    if isinstance(formula, bool):
        return
    if formula[0] == "atom":
        yield formula[1]
        return
    for part in (formula[1],) if formula[0] == "!" else formula[1]:
        yield from _atoms_of(part)


#: the widest range of sizes searched for the classes of one variable; past it, its
#: terms are taken as flags of their own (what is then decided still holds)
_SIZE_LIMIT = 1 << 17


def _holds(atom: Atom, value: object) -> bool:
    kind = atom[0]
    if kind == "size":
        _, _, op, number, modulus = atom
        return COMPARE[op](value % modulus if modulus else value, number)
    if kind == "eq":
        return value == atom[2]
    if kind == "prefix":
        return isinstance(value, str) and value.startswith(atom[2])
    return bool(value)  # a flag, or a term of its own


def _representatives(kind: str, atoms: Sequence[Atom]) -> Optional[Iterable[object]]:
    """Values of one variable among which every class of its terms has one."""
    if kind == "size":
        top = max(atom[3] for atom in atoms) + lcm(*[atom[4] for atom in atoms if atom[4]]) + 1
        # a size is at least 1 (a head dim, a length), unless a term of the file names
        # 0 itself (``a.seqlen_k != 0``: the codegen expects empty sequences)
        low = 0 if any(not atom[4] and atom[3] == 0 for atom in atoms) else 1
        return range(low, top + 1) if top <= _SIZE_LIMIT else None
    if kind == "text":
        literals = [atom[2] for atom in atoms]
        # each literal, each one extended (a longer text), and a text none starts with
        return [*literals, *[lit + "\0" for lit in literals], "\1"]
    return (False, True)


class Theory:
    """The variables of a set of conditions, each cut into the classes of values that
    meet the same terms; conditions compile to formulas over those classes (a term it
    was not built with is a flag of its own)."""

    def __init__(self, conditions: Iterable[str] = ()) -> None:
        by_variable: Dict[Tuple[str, str], List[Atom]] = {}
        for atom in dict.fromkeys(a for c in conditions for a in _atoms_of(parse_condition(c))):
            # a value and a prefix test one text; the others their own kind
            kind = "text" if atom[0] in ("eq", "prefix") else atom[0]
            by_variable.setdefault((kind, atom[1]), []).append(atom)
        #: atom -> (variable number, classes where it holds, as bits)
        self._literal: Dict[Atom, Tuple[int, int]] = {}
        #: per variable number: every class, as bits
        self.full: List[int] = []
        #: per variable number: (its name, a value of each class)
        self.variables: List[Tuple[str, List[object]]] = []
        for (kind, name), atoms in by_variable.items():
            values = _representatives(kind, atoms)
            if values is not None:
                self._add(name, atoms, values)
            else:  # too many sizes to search: each term a flag of its own
                for atom in atoms:
                    self._add(atom[1], [atom], (False, True))
        self._compiled: Dict[str, Node] = {}

    def _add(self, name: str, atoms: Sequence[Atom], values: Iterable[object]) -> None:
        number = len(self.full)
        classes: Dict[Tuple[bool, ...], int] = {}
        kept: List[object] = []
        masks = [0] * len(atoms)
        for value in values:
            signature = tuple(_holds(atom, value) for atom in atoms)
            if signature in classes:
                continue
            bit = 1 << len(classes)
            classes[signature] = len(classes)
            kept.append(value)
            for i, holds in enumerate(signature):
                if holds:
                    masks[i] |= bit
        for atom, mask in zip(atoms, masks):
            self._literal[atom] = (number, mask)
        self.full.append((1 << len(classes)) - 1)
        self.variables.append((name, kept))

    def formula(self, condition: str) -> Node:
        """The compiled formula of a C++ condition."""
        found = self._compiled.get(condition)
        if found is None:
            found = self._compiled[condition] = self._compile(parse_condition(condition), True)
        return found

    def _compile(self, formula: Tuple, positive: bool) -> Node:
        if isinstance(formula, bool):
            return formula == positive
        tag = formula[0]
        if tag == "atom":
            literal = self._literal.get(formula[1])
            if literal is None:  # a term the theory was not built with: a flag of its own
                self._add("?%d" % len(self.full), [formula[1]], (False, True))
                literal = self._literal[formula[1]]
            number, mask = literal
            return ("v", number, mask if positive else self.full[number] & ~mask)
        if tag == "!":
            return self._compile(formula[1], not positive)
        parts = [self._compile(part, positive) for part in formula[1]]
        return (conjoin if (tag == "&") == positive else disjoin)(parts)

    def literal(self, number: int, mask: int) -> Node:
        """The literal "variable ``number`` lies in the classes ``mask``"."""
        mask &= self.full[number]
        return True if mask == self.full[number] else False if not mask else ("v", number, mask)

    def negate(self, node: Node) -> Node:
        return _negate(node, self.full)

    def satisfiable(self, nodes: Sequence[Node], domain: Optional[Mapping[int, int]] = None
                    ) -> bool:
        """Whether some call meets all ``nodes`` (within ``domain``: variable -> classes)."""
        return self.witness(nodes, domain) is not None

    def witness(self, nodes: Sequence[Node], domain: Optional[Mapping[int, int]] = None
                ) -> Optional[Dict[int, int]]:
        """Classes (variable -> bits) within which every call meets ``nodes``, or None."""
        return _solve(list(nodes), dict(domain or {}), self.full)

    def example(self, found: Mapping[int, int]) -> Dict[str, object]:
        """A value of each variable of a :meth:`witness` (its lowest class)."""
        out = {}
        for number, mask in found.items():
            name, values = self.variables[number]
            out[name] = values[(mask & -mask).bit_length() - 1]
        return out

    def units(self, node: Node) -> Dict[int, int]:
        """The classes each variable may take under ``node``'s top-level literals."""
        found: Dict[int, int] = {}
        for part in node[1] if isinstance(node, tuple) and node[0] == "&" else (node,):
            if isinstance(part, tuple) and part[0] == "v":
                found[part[1]] = found.get(part[1], self.full[part[1]]) & part[2]
        return found


def conjoin(parts: Iterable[Node]) -> Node:
    """``a && b && ...``, flattened, literals of one variable merged, constants folded."""
    return _join(parts, "&")


def disjoin(parts: Iterable[Node]) -> Node:
    return _join(parts, "|")


def _join(parts: Iterable[Node], tag: str) -> Node:
    absorbing = tag == "|"  # True absorbs a disjunction, False a conjunction
    literals: Dict[int, int] = {}
    others: List[Node] = []
    for part in parts:
        if isinstance(part, bool):
            if part == absorbing:
                return absorbing
            continue
        for piece in (part[1] if part[0] == tag else (part,)):
            if piece[0] == "v":
                before = literals.get(piece[1])
                literals[piece[1]] = piece[2] if before is None else (
                    before | piece[2] if absorbing else before & piece[2])
            elif piece not in others:
                others.append(piece)
    joined = [("v", number, mask) for number, mask in literals.items()]
    if not absorbing and any(mask == 0 for _, _, mask in joined):
        return False
    items = tuple(joined + others)
    if not items:
        return not absorbing
    return items[0] if len(items) == 1 else (tag, items)


def _negate(node: Node, full: Sequence[int]) -> Node:
    """``!node``: a literal's other classes; a compound node is negated lazily (what a
    domain decides first folds it away)."""
    if isinstance(node, bool):
        return not node
    if node[0] == "v":
        mask = full[node[1]] & ~node[2]
        return True if mask == full[node[1]] else ("v", node[1], mask) if mask else False
    return node[1] if node[0] == "!" else ("!", node)


def _value(node: Node, domain: Mapping[int, int], full: Sequence[int]) -> Node:
    """``node`` with what ``domain`` decides folded in."""
    if isinstance(node, bool):
        return node
    tag = node[0]
    if tag == "v":
        allowed = domain.get(node[1], full[node[1]])
        inside = allowed & node[2]
        return False if not inside else True if inside == allowed else node
    if tag == "!":
        return _negate(_value(node[1], domain, full), full)
    absorbing = tag == "|"
    kept: List[Node] = []
    for part in node[1]:
        value = _value(part, domain, full)
        if isinstance(value, bool):
            if value == absorbing:
                return absorbing
            continue
        kept.append(value)
    if not kept:
        return not absorbing
    return kept[0] if len(kept) == 1 else (tag, tuple(kept))


def _fold(nodes: List[Node], domain: Dict[int, int], full: Sequence[int]
          ) -> Optional[List[Node]]:
    """Fold ``nodes`` into ``domain`` (changed in place): their literals narrow it, what
    it decides is dropped; the disjunctions left, or None when they exclude each other."""
    while True:
        pending: List[Node] = []
        narrowed = False
        stack = nodes
        while stack:
            value = _value(stack.pop(), domain, full)
            if value is True:
                continue
            if value is False:
                return None
            if value[0] == "v":
                _, number, mask = value
                domain[number] = domain.get(number, full[number]) & mask
                narrowed = True
            elif value[0] == "&":
                stack = [*stack, *value[1]]
            elif value[0] == "!":  # one level down: !(a || b) holds a conjunction
                inner = value[1]
                negated = tuple(("!", part) for part in inner[1])
                if inner[0] == "|":
                    stack = [*stack, *negated]
                else:
                    pending.append(("|", negated))
            else:
                pending.append(value)
        if not narrowed or not pending:
            return pending
        nodes = pending


def _solve(nodes: List[Node], domain: Dict[int, int], full: Sequence[int]
           ) -> Optional[Dict[int, int]]:
    pending = _fold(nodes, domain, full)
    if pending is None:
        return None
    if not pending:
        return domain
    # split on the first disjunction: some part of it holds
    first, rest = pending[0], pending[1:]
    for part in first[1]:  # type: ignore[index]
        found = _solve([*rest, part], dict(domain), full)
        if found is not None:
            return found
    return None


@dataclass
class Way:
    """The calls that reach one scope or leaf: all ``nodes`` hold, each variable in its
    classes of ``domain`` (variable number -> bits)."""

    domain: Dict[int, int]
    nodes: Tuple[Node, ...]


def narrow(theory: Theory, way: Way, nodes: Iterable[Node]) -> Optional[Way]:
    """``way`` narrowed by ``nodes`` (None: their literals exclude each other)."""
    found = dict(way.domain)
    pending = _fold([*way.nodes, *nodes], found, theory.full)
    return None if pending is None else Way(found, tuple(pending))
