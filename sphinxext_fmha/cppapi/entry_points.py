"""Entry points of a dispatch file and the calls between its dispatch functions: newer
CK's public ``fmha_fwd()`` calls ``fmha_fwd_v3``/``fmha_fwd_v2`` under conditions (``if
(false and can_dispatch_v3)``); a function every call of which is constantly false is dead."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Set

from .call_sites import declaration
from .lexing import bool_locals, constant_value
from .masking import matches_not_after
from .parse import DispatchBlock, DispatchTree

__all__ = ["FunctionCall", "EntryPoints", "read_entry_points"]


@dataclass
class FunctionCall:
    """``caller`` calls ``callee`` when all ``conditions`` hold (``never``: one is
    constantly false) in ``statement`` (comment-free, squeezed)."""

    caller: str
    callee: str
    conditions: List[str] = field(default_factory=list)
    statement: str = ""
    never: bool = False


@dataclass
class EntryPoints:
    """``dispatchers``: functions that launch kernels (or call one that does), in file
    order; ``entries``: those no other calls; ``dead``: dispatcher -> :func:`_dead_reason`."""

    dispatchers: List[str] = field(default_factory=list)
    entries: List[str] = field(default_factory=list)
    calls: List[FunctionCall] = field(default_factory=list)
    dead: Dict[str, List[Dict[str, str]]] = field(default_factory=dict)
    #: function that launches nothing yet tests an entry point's branches and declares its
    #: traits, statement for statement -> {"of": that entry point, "call": what it calls
    #: with the traits where the entry point launches} (2026 bwd: ``fmha_bwd_launcher``'s
    #: constructor passes them to ``this->init``)
    twins: Dict[str, Dict[str, str]] = field(default_factory=dict)


def _function_blocks(block: DispatchBlock) -> List[DispatchBlock]:
    return [f for item in block.blocks
            for f in ([item] if item.kind == "function" else _function_blocks(item))]


def _statements(block: DispatchBlock) -> List[str]:
    return [*block.statements, *(s for item in block.blocks for s in _statements(item))]


def _calls_in(function: DispatchBlock, names: Set[str]) -> List[FunctionCall]:
    # the names first: a leading look-behind would make the search try every position
    pattern = re.compile(r"(%s)\s*\(" % "|".join(sorted(map(re.escape, names))))
    env = bool_locals(_statements(function))
    calls: List[FunctionCall] = []
    called_in: Dict[str, List[str]] = {}  # statement -> the names it calls (statements repeat)

    def walk(block: DispatchBlock, conds: List[str]) -> None:
        for item in block.items:
            if isinstance(item, DispatchBlock):
                if item.kind != "function":  # (only a branch has a condition)
                    walk(item, [*conds, item.condition] if item.condition else conds)
                continue
            called = called_in.get(item)
            if called is None:
                called = called_in[item] = [
                    m.group(1) for m in matches_not_after(_QUALIFIER_RE, pattern, item)
                    if m.group(1) != function.name]
            for callee in called:
                never = any(constant_value(c, env) is False for c in conds)
                calls.append(FunctionCall(function.name, callee, list(conds), item, never))

    walk(function, [])
    return calls


# a match after one of these continues a name, a qualified name, a member access or a
# template-id: not a call of the function
_QUALIFIER_RE = re.compile(r"[\w:.>]")


def read_entry_points(tree: DispatchTree) -> EntryPoints:
    """Entry points, calls and dead dispatchers of a parsed file (once per tree)."""
    return tree.once("entry_points", lambda: _read_entry_points(tree))


def _read_entry_points(tree: DispatchTree) -> EntryPoints:
    functions = _function_blocks(tree.root)
    names = {f.name for f in functions}
    launching = {leaf.function for leaf in [*tree.leaves, *tree.discarded]}
    calls = [call for f in functions for call in _calls_in(f, names)]
    dispatchers: Set[str] = set(launching)
    while True:  # callers of dispatchers are dispatchers
        callers = {call.caller for call in calls if call.callee in dispatchers} - dispatchers
        if not callers:
            break
        dispatchers |= callers
    calls = [c for c in calls if c.caller in dispatchers and c.callee in dispatchers]
    ordered = list(dict.fromkeys(f.name for f in functions if f.name in dispatchers))
    called = {c.callee for c in calls}
    entries = [name for name in ordered if name not in called]
    reached = {name for entry in entries for name in _reachable(entry, calls)}
    dead = {name: _dead_reason([c for c in calls if c.callee == name])
            for name in ordered if name not in reached}
    return EntryPoints(ordered, entries, calls, dead, _twins(functions, ordered, entries))


_CALLED_RE = re.compile(r"^(?:\w+\s*=\s*)?([\w:>.-]+?)\s*[<(]")


def _skeleton(block: DispatchBlock) -> tuple:
    """A block's branches and declarations (as the leaf reader tells them), without what
    it does with them."""
    return tuple(
        (item.kind, item.condition, _skeleton(item)) if isinstance(item, DispatchBlock)
        else item for item in block.items
        if isinstance(item, DispatchBlock) or declaration(item) is not None)


def _first_call(block: DispatchBlock) -> str:
    """The name called by the first statement of a leaf block that declares nothing."""
    if block.blocks:
        return next((found for sub in block.blocks if (found := _first_call(sub))), "")
    return next((m.group(1) for item in block.statements if declaration(item) is None
                 if (m := _CALLED_RE.match(item))), "")


def _twins(functions: List[DispatchBlock], dispatchers: List[str], entries: List[str]
           ) -> Dict[str, Dict[str, str]]:
    candidates = [f for f in functions if f.name not in dispatchers and f.blocks]
    if not candidates:
        return {}
    shapes = {f.name: _skeleton(f) for f in functions if f.name in entries}
    twins: Dict[str, Dict[str, str]] = {}
    for function in candidates:
        shape = _skeleton(function)
        of = next((e for e, s in shapes.items() if s == shape), None)
        call = _first_call(function)
        if of is not None and call:
            twins[function.name] = {"of": of, "call": call}
    return twins


def _reachable(entry: str, calls: List[FunctionCall]) -> List[str]:
    seen = [entry]
    for current in seen:  # (grows while read: breadth first)
        for call in calls:
            if call.caller == current and not call.never and call.callee not in seen:
                seen.append(call.callee)
    return seen


def _dead_reason(calls: List[FunctionCall]) -> List[Dict[str, str]]:
    """Per call of a dead dispatcher: its ``caller`` and, when a condition of the call is
    constantly false, that condition (``false_when``); no call: no entry point calls it."""
    reasons: List[Dict[str, str]] = []
    for call in calls:
        reason = {"caller": call.caller}
        if call.never and call.conditions:
            reason["false_when"] = next(
                (c for c in call.conditions if constant_value(c) is False), call.conditions[-1])
        if reason not in reasons:
            reasons.append(reason)
    return reasons
