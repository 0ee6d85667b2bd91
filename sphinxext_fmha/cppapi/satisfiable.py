"""Can a dispatch branch's conditions hold together at all?

Each generated kernel is launched under the ``&&`` of the conditions of the branches
around it.  Some of those conjunctions hold for no call: a literal ``false`` term (a
path the generator switched off at runtime, not with ``if constexpr``), or bounds and
divisibility on one size that exclude each other (2.8.3's ``fmha_fwd`` tries unpadded
d96 kernels under ``hdim_q <= 96`` with ``hdim_q % 128 == 0``: no positive head size
is both but 0).  Such a kernel is compiled and linked, and no real call runs it.

Only what the terms say is used: comparisons of one name with an integer literal
(``x <= 96``, ``x % 128 == 0``, ``x != 0``) and the literal ``false``; every name is a
size (an integer from 0).  Everything else (calls, pointers, ``||``) is left alone, so
a conjunction is called impossible only when these terms alone exclude every value
but 0, and the reason says which of the two it is.
Pure: text in, answer out.
"""

from __future__ import annotations

import functools
import math
import operator
import re
from typing import Callable, Dict, List, Optional, Sequence, Tuple

__all__ = ["IfElseChain", "is_size_test", "never_holds", "numeric_relation"]

_BOUND = re.compile(r"^\(?\s*([A-Za-z_]\w*)\s*(<=|<|>=|>|==|!=)\s*(\d+)\s*\)?$")
_MODULO = re.compile(r"^\(?\s*([A-Za-z_]\w*)\s*%\s*(\d+)\s*(==|!=)\s*(\d+)\s*\)?$")
#: the widest range searched for a value that meets every term of one name
_SEARCH_LIMIT = 1 << 16

_Test = Tuple[str, int, int]  # (operator, number, modulus or 0)


_OPERATORS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt,
              "==": operator.eq, "!=": operator.ne}


def _holds(value: int, test: _Test) -> bool:
    comparison, number, modulus = test
    return _OPERATORS[comparison](value % modulus if modulus else value, number)


def _reason(name: str, tests: Sequence[_Test], zero: bool) -> str:
    said = ["%s%s %s %d" % (name, " %% %d" % m if m else "", op, n) for op, n, m in tests]
    return "%s %s" % (" and ".join(said), "hold for no value" if not zero else
                      "hold only for %s = 0" % name)


#: the parse of a literal ``false`` term: no name, a test no value meets
_FALSE: Tuple[str, _Test] = ("", ("<", 0, 0))


# a few hundred distinct terms recur in every branch of a large API file
@functools.lru_cache(maxsize=1 << 14)
def _parse(term: str) -> Optional[Tuple[str, _Test]]:
    """(name, test) of a term this module reads; :data:`_FALSE` for a literal false."""
    text = term.strip()
    if text in ("false", "(false)", "0", "never"):  # "never": how a readable term says false
        return _FALSE
    bound = _BOUND.match(text)
    if bound:
        return bound.group(1), (bound.group(2), int(bound.group(3)), 0)
    modulo = _MODULO.match(text)
    if modulo and int(modulo.group(2)) > 0:
        return modulo.group(1), (modulo.group(3), int(modulo.group(4)), int(modulo.group(2)))
    return None


@functools.lru_cache(maxsize=1 << 14)
def _never(terms: Tuple[str, ...]) -> Optional[str]:
    tests: Dict[str, List[_Test]] = {}
    for term in terms:
        parsed = _parse(term)
        if parsed is None:
            continue
        if parsed is _FALSE:
            return "its condition has the literal term `false`"
        tests.setdefault(parsed[0], []).append(parsed[1])
    for name, own in tests.items():
        if len(own) >= 2:
            why = _excluded(name, tuple(dict.fromkeys(own)))  # one test per distinct term
            if why:
                return why
    return None


# one size's tests recur in thousands of branches (every bwd kernel of a head size)
@functools.lru_cache(maxsize=1 << 12)
def _excluded(name: str, own: Tuple[_Test, ...]) -> Optional[str]:
    """Why no value but 0 (or none) meets every test of ``name``, or ``None``."""
    meeting = _values_meeting(own)
    if meeting is None or meeting not in ((), (0,)):
        return None
    return _reason(name, own, zero=meeting == (0,))


@functools.lru_cache(maxsize=1 << 12)
def _values_meeting(own: Tuple[_Test, ...]) -> Optional[Tuple[int, ...]]:
    """The first two values (from 0) that meet every test, fewer when there are none;
    ``None`` when the range to search is too wide."""
    uppers = [n if op == "<=" else n - 1 for op, n, m in own if not m and op in ("<=", "<")]
    uppers += [n for op, n, m in own if not m and op == "=="]
    lowers = [n if op == ">=" else n + 1 for op, n, m in own if not m and op in (">=", ">")]
    period = math.lcm(*[m for _, _, m in own if m] or [1])
    low = max([0, *lowers])
    # past every bound the terms repeat with the moduli's period: one period is enough
    high = min(uppers) if uppers else low + period + max([n for _, n, m in own if not m] or [0])
    if high - low > _SEARCH_LIMIT:
        return None
    meets = (v for v in range(low, high + 1) if all(_holds(v, test) for test in own))
    return tuple(v for _, v in zip(range(2), meets))


def never_holds(terms: Sequence[str]) -> Optional[str]:
    """Why the conjunction of ``terms`` (readable terms, as
    :func:`~.conditions.describe_condition` gives them) holds for no call, or ``None``
    when these terms do not rule every call out."""
    return _never(tuple(terms))


_NEGATED = {"<=": ">", "<": ">=", ">=": "<", ">": "<=", "==": "!=", "!=": "=="}


@functools.lru_cache(maxsize=1 << 14)
def numeric_relation(mine: str, theirs: str) -> Optional[str]:
    """How a term on a size relates to another on the same size: ``implied`` (every
    value meeting ``mine`` meets ``theirs``), ``excludes`` (none does), ``admits``
    (some do); ``None`` when the two are not both tests of one size this module reads,
    or the values to search are too many. 0 counts as a value (a sequence may be empty)."""
    a, b = _parse(mine), _parse(theirs)
    if a is None or b is None or a is _FALSE or b is _FALSE or a[0] != b[0]:
        return None
    comparison, number, modulus = b[1]
    unmet = _values_meeting((a[1], (_NEGATED[comparison], number, modulus)))
    if unmet == ():
        return "implied"
    both = _values_meeting((a[1], b[1]))
    if unmet is None or both is None:
        return None
    return "excludes" if both == () else "admits"


def is_size_test(term: str) -> bool:
    """Whether a readable term is a test of one size this module reads (``x % 8 == 0``)."""
    parsed = _parse(term)
    return parsed is not None and parsed is not _FALSE


class IfElseChain:
    """The branches of one ``if`` / ``else if`` chain, in order: a branch whose every
    call an earlier branch of the chain takes (its terms imply the earlier branch's)
    is never tried. Read from the terms alone (textual equality, and the numbers of
    size tests): an earlier branch whose other terms are all among this one's."""

    def __init__(self) -> None:
        # the earlier branches by their terms other than size tests, then by their size
        # tests (one condition each: the first, the one that takes the calls)
        self._earlier: Dict[frozenset, Dict[Tuple[str, ...], Tuple[str, Tuple[str, ...]]]] = {}

    def add(self, condition: str, terms: Sequence[str],
            readable: Callable[[str], str] = str) -> Optional[str]:
        """Record a branch (``terms``: its readable terms; ``readable`` says a condition
        as a reader sees it, asked only for a reason); return why it is never tried,
        or ``None``."""
        terms = tuple(terms)
        plain, sized = _split_terms(terms)
        found = None
        # an earlier branch whose other terms are among this one's (the same, fewer, or
        # none): C-speed set tests over the chain's distinct term sets
        for key in [k for k in self._earlier if k <= plain]:
            for needs, (earlier, earlier_terms) in self._earlier[key].items():
                if _implied(sized, needs):
                    found = _shadowed_by((earlier, earlier_terms), (condition, terms), readable)
                    break
            if found:
                break
        self._earlier.setdefault(plain, {}).setdefault(sized, (condition, terms))
        return found


@functools.lru_cache(maxsize=1 << 14)
def _split_terms(terms: Tuple[str, ...]) -> Tuple[frozenset, Tuple[str, ...]]:
    """(the terms other than size tests, the size tests)."""
    return (frozenset(t for t in terms if not is_size_test(t)),
            tuple(t for t in terms if is_size_test(t)))


# the same few sets of size tests meet in every chain of an API file
@functools.lru_cache(maxsize=1 << 14)
def _implied(sized: Tuple[str, ...], needs: Tuple[str, ...]) -> bool:
    """Whether every test of ``needs`` follows from one of ``sized``."""
    return all(any(mine == need or numeric_relation(mine, need) == "implied"
                   for mine in sized) for need in needs)


#: conditions longer than this are not quoted in a reason (a reason is said once for
#: all the kernels that share it: quoting every feature term makes each one its own)
_QUOTED = 80


def _shadowed_by(earlier: Tuple[str, Tuple[str, ...]], later: Tuple[str, Tuple[str, ...]],
                 readable: Callable[[str], str]) -> str:
    """The reason a ``later`` branch is never tried, ``earlier`` being the branch that
    takes its calls (each a condition with its readable terms)."""
    # A condition reads at least as long as its terms joined by " and " (reading it only
    # adds brackets and repeated terms): the conditions of a large API file, most too
    # long to quote, are not put in words at all (2.8.3 bwd: 0.5 s of its parse).
    if _least_length(earlier[1]) <= _QUOTED and _least_length(later[1]) <= _QUOTED:
        earlier_text, later_text = readable(earlier[0]), readable(later[0])
        if len(earlier_text) <= _QUOTED and len(later_text) <= _QUOTED:
            return ("an earlier branch of its if-else chain, `%s`, takes every call its "
                    "condition `%s` admits" % (earlier_text, later_text))
    if set(earlier[1]) == set(later[1]):
        return "an earlier branch of its if-else chain has the same condition"
    return ("an earlier branch of its if-else chain takes every call its condition admits "
            "(the earlier one tests fewer of the same terms, or weaker sizes)")


def _least_length(terms: Sequence[str]) -> int:
    return sum(len(term) for term in terms) + len(" and ") * (len(terms) - 1)
