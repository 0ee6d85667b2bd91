"""What a statement of a dispatch block launches: the template arguments of each call
classified (trait, extra argument, not launched) under the ``using`` aliases in scope."""

from __future__ import annotations

import functools
import re
from typing import Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from .lexing import (
    _IDENT_RE,
    _clean,
    _identifiers,
    _normalize_memo,
    _reachable_aliases,
    _template_calls,
    conditional_branches,
    constant_of,
    normalize_cpp,
)

__all__ = ["CallFacts", "Scope", "classify_args", "statement_block_calls"]

_USING_RE = re.compile(r"^using\s+([A-Za-z_]\w*)\s*=\s*(.*)$", re.S)
# `static constexpr bool name = expr` (the types a dispatch file gives its constants)
_CONSTEXPR_RE = re.compile(r"^(?:static\s+)?(?:inline\s+)?constexpr\s+(?:const\s+)?"
                           r"(?:bool|int|auto|(?:\w+::)?index_t)\s+([A-Za-z_]\w*)\s*=\s*(.*)$",
                           re.S)


def classify_args(args: Sequence[str], aliases: Mapping[str, str]
                  ) -> Tuple[List[str], List[str], List[str]]:
    """(traits, extras, undecided traits) of a call's template arguments: a trait names a
    ``using`` alias of a template-id, ``void`` (from ``std::conditional_t<false, X, void>``)
    is not launched, the rest (arch tag) extra; each branch of an undecided
    ``std::conditional_t`` is a trait, and undecided."""
    traits: List[str] = []
    extras: List[str] = []
    undecided: List[str] = []
    plain = aliases if type(aliases) is dict else None
    for arg in args:
        kind, folded = (_plain_arg_class(arg, plain) if plain is not None
                        else _decided(arg, aliases, normalize_cpp(arg, aliases)))
        if kind == "trait":
            branches = conditional_branches(folded)
            traits += [folded] if branches is None else branches
            undecided += branches or []
        elif kind == "extra":
            extras.append(folded)
    return traits, extras, undecided


_ArgClass = Tuple[str, str]  # ("trait" | "dropped" | "extra", folded text)


def _decided(arg: str, aliases: Mapping[str, str], folded: str) -> _ArgClass:
    if folded == "void":
        return "dropped", folded
    names = [n for n in _IDENT_RE.findall(arg) if n in aliases]
    if arg in aliases or folded in {aliases[n] for n in names}:
        return ("trait" if "<" in folded else "extra"), folded
    # (an alias in an undecided branch)
    return ("trait" if names and conditional_branches(folded) else "extra"), folded


def _plain_arg_class(arg: str, aliases: Dict[str, str]) -> _ArgClass:
    """:func:`_decided` under a plain dict, kept per (argument, the aliases its names
    reach): every leaf of a dispatch file passes the same names under repeating values."""
    if not aliases:
        return _arg_class_of(arg, (), ())
    value = aliases.get(arg)
    if value is not None and _identifiers(arg) == (arg,) and \
            aliases.keys().isdisjoint(_identifiers(value)):
        # an alias whose value names no alias: the general way below, at once
        alone: Tuple[Tuple[str, str], ...] = ((arg, value),)
        return _arg_class_of(arg, alone, alone)
    clean = _clean(arg)
    reach = _reachable_aliases(clean, aliases)
    return _arg_class_of(arg, reach if clean == arg else _reachable_aliases(arg, aliases), reach)


@functools.lru_cache(maxsize=1 << 16)
def _arg_class_of(arg: str, reach_raw: Tuple[Tuple[str, str], ...],
                  reach: Tuple[Tuple[str, str], ...]) -> _ArgClass:
    return _decided(arg, dict(reach_raw), _normalize_memo(_clean(arg), reach))


class CallFacts(NamedTuple):
    """What a launching call site says by itself (its place in the tree aside)."""

    trait_args: Tuple[str, ...]
    extra_args: Tuple[str, ...]
    undecided: Tuple[str, ...]


class Scope:
    """The ``using`` aliases visible at a statement of one block: the enclosing blocks'
    (shared, never changed) until the block declares its own, then a copy."""

    def __init__(self, outer: Dict[str, str]) -> None:
        self.visible = outer
        self._own = False

    def statement(self, item: str) -> List[CallFacts]:
        """Take in one statement; the launching calls it makes."""
        declared = declaration(item)
        if declared is not None:
            alias, name, clean, names = declared
            visible = self.visible
            # normalize_cpp(value, visible), its memo reached directly
            alias_value = _normalize_memo(clean, () if visible.keys().isdisjoint(names)
                                          else _reachable_aliases(clean, visible))
            if not self._own:
                self.visible = dict(visible)
                self._own = True
            if alias:
                self.visible[name] = alias_value
            else:  # a constant: its value when the text decides it, else its name alone
                value = _constant_memo(alias_value)
                if value is None:
                    self.visible.pop(name, None)
                else:
                    self.visible[name] = value
            return []
        if "<" not in item or not self.visible:
            return []
        found: List[CallFacts] = []
        for _, args, _, _ in _template_calls(item):
            traits, extras, undecided = classify_args(args, self.visible)
            if traits:
                found.append(CallFacts(tuple(traits), tuple(extras), tuple(undecided)))
        return found


@functools.lru_cache(maxsize=1 << 16)
def declaration(item: str) -> Optional[Tuple[bool, str, str, Tuple[str, ...]]]:
    """(a ``using`` alias?, its name, its value cleaned, the identifiers of that) of a
    ``using`` statement or a constant's declaration."""
    alias = _USING_RE.match(item)
    m = alias or (_CONSTEXPR_RE.match(item) if item.startswith(("static", "constexpr", "inline"))
                  else None)
    if m is None:
        return None
    clean = _clean(m.group(2))
    return alias is not None, m.group(1), clean, _identifiers(clean)


_constant_memo = functools.lru_cache(maxsize=1 << 16)(constant_of)


# A filtered run's dispatch file repeats the full file's innermost branches verbatim.
@functools.lru_cache(maxsize=1 << 16)
def statement_block_calls(items: Tuple[str, ...], outer: Tuple[Tuple[str, str], ...]
                           ) -> Tuple[CallFacts, ...]:
    scope = Scope(dict(outer))
    return tuple(facts for item in items for facts in scope.statement(item))

