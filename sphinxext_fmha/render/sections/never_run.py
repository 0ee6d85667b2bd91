"""Why the API never runs a kernel, in words: from the facts of
:func:`~sphinxext_fmha.cppapi.link_check.unreachable_kernels` (one per leaf that
launches it) and :attr:`EntryPoints.dead` (one per call of a dead dispatcher)."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence

from .condition_words import condition_words

__all__ = ["dead_text", "never_run_text", "never_run_texts"]

_NEVER_TRIED = {
    "same_condition": "an earlier branch of its if-else chain has the same condition",
    "taken_together": "the earlier branches of its if-else chain take every call its "
                      "condition admits between them, none alone",
    "returns_before_chain": "the statements before its chain return for every call it admits",
}


#: conditions longer than this are not named in a reason (one reason is said once for
#: all the kernels that share it)
_QUOTED = 80


def dead_text(calls: Sequence[Mapping[str, str]], function: str) -> str:
    """Why no entry point runs the dispatch function ``function``."""
    if not calls:
        return "no entry point calls %s" % function
    return "; ".join(dict.fromkeys(
        "%s calls it only when `%s`, which is always false" % (c["caller"], c["false_when"])
        if "false_when" in c else "its caller %s is not reachable" % c["caller"]
        for c in calls))


def _why_text(why: Mapping[str, Any]) -> str:
    kind = why["kind"]
    if kind == "no_entry":
        return "no entry point runs %s" % why["function"]
    if kind == "returns_before":
        return "earlier statements of its function return for every call that reaches it"
    if kind == "never_holds":
        terms = list(map(condition_words, why["terms"]))
        return "never holds: " + (
            "its conditions exclude each other" if not terms else
            "its term `%s` holds for no call" % terms[0] if len(terms) == 1 else
            "%s hold together for no call" % " and ".join(terms))
    if kind == "taken_by":
        earlier, own = (condition_words(why[k]) for k in ("earlier", "own"))
        return "is never tried: " + (
            "an earlier branch of its if-else chain, `%s`, takes every call its condition "
            "`%s` admits" % (earlier, own) if max(len(earlier), len(own)) <= _QUOTED else
            "an earlier branch of its if-else chain takes every call its condition admits")
    return "is never tried: " + _NEVER_TRIED[kind]


def _reason_text(reason: Mapping[str, Any]) -> str:
    if "dead" in reason:
        return "launched only by %s: %s" % (reason["dead"],
                                            dead_text(reason["calls"], reason["dead"]))
    if "branch" in reason:
        return "its branch in %s %s" % (reason["branch"] or "the API file",
                                        _why_text(reason["why"]))
    return "no dispatch branch names it"  # {"unreferenced": True}


def never_run_text(reasons: Sequence[Mapping[str, Any]]) -> str:
    """Why the API never runs a kernel (its reasons, one per leaf that launches it)."""
    return "; ".join(dict.fromkeys(_reason_text(r) for r in reasons))


def never_run_texts(unreachable: Mapping[str, List[Dict[str, Any]]]) -> Dict[str, str]:
    """:func:`never_run_text` of each kernel."""
    return {name: never_run_text(reasons) for name, reasons in unreachable.items()}
