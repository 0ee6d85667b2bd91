"""Whether a kept kernel takes a dropped kernel's inputs, from their dispatch terms.

A kernel's inputs are those that meet every term of its dispatch conditions (readable
terms, as :func:`~sphinxext_fmha.cppapi.conditions.describe_condition` gives them). A
stand-in's term relates to the kernel's own terms on the same subject: ``implied``
(every input of the kernel meets it), ``admits`` (some do), ``excludes`` (none do) or
``unknown`` (a form not read here, counted as excluding). Equalities on one subject
(``bias_type == bias_enum::alibi``) compare their values as written; sizes compare as
numbers (``hdim_q % 128 == 0`` implies ``hdim_q % 8 == 0``, and ``seqlen_k % 128 == 0``
admits ``seqlen_k != 0``: 0 is a size). Used by the policy (which padding variants
serve every size) and by *What you lose*.
"""

from __future__ import annotations

import functools
import re
from typing import AbstractSet, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..cppapi.satisfiable import numeric_relation

__all__ = ["by_subject", "compare", "excluding", "relation", "subject_of"]

_SUBJECT = re.compile(r"^(?:not\s+)?(.*?)\s*(?:==|!=|<=|>=|<|>|$)")
#: ``x % N``: a size's remainder is a test of the size itself
_REMAINDER = re.compile(r"\s*%\s*\d+$")


@functools.lru_cache(maxsize=1 << 14)
def subject_of(term: str) -> str:
    """What a term tests: ``bias_type`` of ``bias_type == bias_enum::alibi``, ``hdim_q``
    of ``hdim_q % 128 == 0`` and of ``hdim_q <= 96``."""
    match = _SUBJECT.match(term.strip())
    return _REMAINDER.sub("", match.group(1)) if match else term


@functools.lru_cache(maxsize=1 << 12)
def by_subject(own: FrozenSet[str]) -> Mapping[str, Tuple[str, ...]]:
    """A kernel's terms by subject (what :func:`compare` takes). A term of several
    conditions joined by "and" (``has_dropout and not is_store_randval``) is on each of
    their subjects; a subject may have several, in the terms' order (the same page in
    every process). Kernels of one problem share their terms: cached, not to be changed."""
    on_subject: Dict[str, List[str]] = {}
    for term in sorted(own):
        for part in (term.split(" and ") if " or " not in term else [term]):
            on_subject.setdefault(subject_of(part), []).append(part)
    return {k: tuple(v) for k, v in on_subject.items()}


#: The relations of a stand-in's term to the kernel's own terms on its subject that
#: say it is reached for other inputs (what compare and excluding both look for).
_SHUT_OUT = frozenset({"excludes", "unknown"})


def compare(extra: Sequence[str], subjects: Mapping[str, Tuple[str, ...]]
            ) -> Tuple[List[str], List[str], List[str]]:
    """A stand-in's terms the kernel lacks (``extra``) against the kernel's own terms on
    the same subject (``subjects``: subject -> those terms): (own terms, stand-in terms)
    where they exclude each other (the stand-in is reached for other inputs there), and
    the stand-in's other terms, each a condition the kernel's inputs must also meet; a
    term the kernel's own terms imply adds nothing and is left out."""
    mine: List[str] = []
    theirs: List[str] = []
    plain: List[str] = []
    for term in extra:
        owns = subjects.get(subject_of(term))
        if owns is None:
            plain.append(term)
            continue
        own, relation = _strongest(owns, term)
        if relation in _SHUT_OUT:
            mine.append(own)
            theirs.append(term)
        elif relation != "implied":
            plain.append(term)
    return mine, theirs, plain


def excluding(terms: Iterable[str], own: AbstractSet[str],
              subjects: Mapping[str, Tuple[str, ...]]) -> List[str]:
    """The terms of ``terms`` (stand-ins' terms) that exclude the kernel's inputs, as
    :func:`compare` finds them: not the kernel's own, and on a subject of its own
    terms, which exclude it or do not say. A stand-in with one of them is reached
    for other inputs only: asked once over the terms a problem's stand-ins have
    among them, not once per stand-in."""
    found = []
    for term in terms:
        if term in own:
            continue
        owns = subjects.get(subject_of(term))
        if owns is not None and _strongest(owns, term)[1] in _SHUT_OUT:
            found.append(term)
    return found


#: What the kernel's terms on one subject together say of a stand-in's term: the
#: kernel's inputs meet every one of them, so one that implies it settles it, else one
#: that excludes it; an unread form decides only when no other term does.
_STRENGTH = {"implied": 0, "excludes": 1, "admits": 2, "unknown": 3}


# the same few (own terms, stand-in term) pairs meet again for every dropped kernel a
# stand-in is tried for (2.8.3 bwd: 1.9 million meetings)
@functools.lru_cache(maxsize=1 << 14)
def _strongest(owns: Tuple[str, ...], theirs: str) -> Tuple[str, str]:
    """(the kernel's term that decides, how it relates to ``theirs``)."""
    return min(((own, relation(own, theirs)) for own in owns),
               key=lambda found: _STRENGTH[found[1]])


#: ``S == V``, ``S != V`` and ``S == V or S == W ...`` on one subject ``S``.
_EQUALITY = re.compile(r"^\s*(.+?)\s*(==|!=)\s*(\S+)\s*$")


def _values(term: str) -> Optional[Tuple[str, bool, FrozenSet[str]]]:
    """(subject, equal, values): the term holds when its subject is (``equal``) or is
    not one of ``values``; None for any other form."""
    found = []
    for alternative in term.split(" or "):
        match = _EQUALITY.match(alternative)
        if match is None:
            return None
        found.append((match.group(1), match.group(2) == "==", match.group(3)))
    subjects = {f[0] for f in found}
    if len(subjects) != 1 or (len(found) > 1 and not all(f[1] for f in found)):
        return None
    return found[0][0], found[0][1], frozenset(f[2] for f in found)


# the same few terms meet again on every kernel of a sub-type (bwd: 112,384 meetings of
# some hundred terms)
@functools.lru_cache(maxsize=1 << 12)
def relation(mine: str, theirs: str) -> str:
    """How a stand-in's term on the kernel's subject relates to the kernel's own term:
    ``implied`` (every input of the kernel's term meets it), ``admits`` (some do),
    ``excludes`` (none do) or ``unknown`` (a form not read here: counted as excluding,
    as a different term always was). Values are compared as written: equal texts are
    the same value, different texts different ones."""
    if mine == theirs:
        return "implied"  # (the part of a term joined by "and" that a stand-in has alone)
    numeric = numeric_relation(mine, theirs)
    if numeric is not None:
        return numeric
    a, b = _values(mine), _values(theirs)
    if a is None or b is None or a[0] != b[0]:
        return "unknown"
    (_, a_equal, a_values), (_, b_equal, b_values) = a, b
    if a_equal and b_equal:
        return "implied" if a_values <= b_values else \
            "admits" if a_values & b_values else "excludes"
    if a_equal:  # theirs: S != V...
        return "implied" if not a_values & b_values else \
            "admits" if a_values - b_values else "excludes"
    if b_equal:  # mine: S != V...; theirs: S == W...
        return "admits" if b_values - a_values else "excludes"
    return "implied" if b_values <= a_values else "admits"
