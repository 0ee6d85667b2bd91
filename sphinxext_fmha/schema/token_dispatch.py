"""What the dispatcher tests before it calls each token's kernels."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Tuple, Union

#: A dispatcher condition as data, worded in ``render/``: True (always), False (never),
#: a term's C++ text, or ``("not", c)``, ``("and", c, ...)``, ``("or", c, ...)``,
#: ``("starts", subject, '"prefix"')`` (:func:`~sphinxext_fmha.cppapi.condition_form.
#: condition_form`).
Condition = Union[bool, str, Tuple[Any, ...]]

#: (kernel class, segment index) -> token -> number of listed kernels carrying it.
TokenCounts = Dict[Tuple[str, int], Dict[str, int]]


@dataclass
class ConditionGroup:
    """Kernels of one token the dispatcher reaches under the same condition: ``cpp``/
    ``forms``, its terms (C++ and :data:`Condition`); ``where``, the tokens of the other
    segments shaping it the group covers; ``unreached``: kernels no branch launches;
    ``varying``: some are reached by branches whose extra conditions differ, on the
    variables ``more``."""

    cpp: List[str] = field(default_factory=list)
    forms: List[Condition] = field(default_factory=list)
    where: Dict[str, List[str]] = field(default_factory=dict)
    kernels: int = 0
    unreached: bool = False
    varying: bool = False
    files: List[str] = field(default_factory=list)
    more: List[str] = field(default_factory=list)


@dataclass
class TokenDispatch:
    """``groups``: (kernel class, segment index) -> token -> groups, most kernels first;
    ``shared``: kernel class -> terms (cpp, form) every kernel of the class has;
    ``undetermined``: kernel class -> terms whose text no segment of the name decides;
    ``orders``: (kernel class, segment label) -> the order in which the dispatcher tries
    the segment's tokens among kernels equal in every other segment -> how many such
    sets of kernels follow that order (trait order, padding order, as the file has it)."""

    groups: Dict[Tuple[str, int], Dict[str, List[ConditionGroup]]] = field(default_factory=dict)
    shared: Dict[str, List[Tuple[str, Condition]]] = field(default_factory=dict)
    undetermined: Dict[str, List[str]] = field(default_factory=dict)
    orders: Dict[Tuple[str, str], Dict[Tuple[str, ...], int]] = field(default_factory=dict)
