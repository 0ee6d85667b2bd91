"""Everything the guide says about one generated API dispatch file, as a JSON-able dict
(cached by the session): entry points and calls (:mod:`.entry_points`), each kernel's
conditions (:mod:`.reach`), sub-kernel choices, dispatch levels and order, the link check."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Tuple

from ..schema.token_dispatch import Condition
from .allocation import collector_paused
from .condition_form import condition_form
from .entry_points import read_entry_points
from .lexing import constant_value, trait_template
from .link_check import compiled_together, unreachable_kernels
from .matching import match_leaves_to_kernels
from .parse import DispatchTree, parse_dispatch
from .reach import kernel_reach

__all__ = ["read_dispatch", "dispatch_levels"]


def dispatch_levels(tree: DispatchTree) -> List[Dict[str, Any]]:
    """Per function and depth: an example condition (the first) and the distinct count."""
    seen: Dict[Tuple[str, int], Dict[str, None]] = {}  # ordered sets
    for leaf in tree.leaves:
        for depth, condition in enumerate(leaf.conditions):
            seen.setdefault((leaf.function, depth), {})[condition] = None
    return [{"function": function, "depth": depth, "example": next(iter(conditions)),
             "distinct": len(conditions)}
            for (function, depth), conditions in seen.items()]


def read_dispatch(api_text: str, kernel_traits: Mapping[str, str]) -> Dict[str, Any]:
    """The reading of one API dispatch file (see the module docstring)."""
    with collector_paused():
        tree = parse_dispatch(api_text)
        match = match_leaves_to_kernels(tree, kernel_traits)
        entry_points = read_entry_points(tree)
        reach, choices = kernel_reach(tree, match)
        calls = []
        for call in entry_points.calls:  # (a constant condition's form is its value)
            conditions = call.conditions
            cpp = " && ".join("(%s)" % c if len(conditions) > 1 else c for c in conditions)
            value = constant_value(cpp) if cpp else True
            calls.append({"caller": call.caller, "callee": call.callee, "when": cpp,
                          "form": condition_form(cpp) if value is None else value,
                          "never": call.never, "statement": call.statement})
        order = dict.fromkeys(f for leaf in tree.leaves for f in match.files_of(leaf.order))
        # one row per distinct term, shared by every kernel it reaches (2.8.3's bwd has
        # 168,384 term rows of 86 terms: made once each, and pickled once each)
        rows: Dict[int, List[Any]] = {}
        missing = list(dict.fromkeys((tree.leaves[o].function, trait_template(k), k)
                                     for o, k in match.unmatched))
        return {
            "entries": entry_points.entries,
            "dispatchers": entry_points.dispatchers,
            "calls": calls,
            "dead": entry_points.dead,
            "twins": entry_points.twins,
            "kernels": {name: {"terms": [rows.get(id(t)) or rows.setdefault(id(t), [t.slot, t.cpp, t.form])
                                         for t in r.terms], "varying": r.varying, "more": r.more}
                        for name, r in sorted(reach.items())},
            "choices": [{"condition": c.condition, "form": c.form, "other": c.other,
                         "other_form": c.other_form, "kept_kinds": c.kept_kinds,
                         "chosen_kinds": c.chosen_kinds, "count": c.count} for c in choices],
            "levels": dispatch_levels(tree),
            "order": list(order),
            "discarded": len(tree.discarded),
            "unreferenced": list(match.unreached),
            "unreachable": unreachable_kernels(tree, match),
            "together": compiled_together(tree, match),
            "missing": [list(m) for m in missing],
            "kinds": dict(sorted(match.kinds.items())),
        }


def readable_terms(reading: Mapping[str, Any]) -> Dict[str, List[Condition]]:
    """kernel file -> the forms of its conditions (the always true ones left out)."""
    return {name: [form for _, _, form in info["terms"] if form is not True]
            for name, info in reading.get("kernels", {}).items()}
