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
from typing import Dict, List, Optional, Sequence, Tuple

__all__ = ["never_holds"]

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
    first = next(meets, None)
    if first is None or (first == 0 and next(meets, None) is None):
        return _reason(name, own, zero=first == 0)
    return None


def never_holds(terms: Sequence[str]) -> Optional[str]:
    """Why the conjunction of ``terms`` (readable terms, as
    :func:`~.conditions.describe_condition` gives them) holds for no call, or ``None``
    when these terms do not rule every call out."""
    return _never(tuple(terms))
