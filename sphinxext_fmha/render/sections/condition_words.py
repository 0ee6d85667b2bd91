"""Dispatcher conditions in plain words: a :data:`~sphinxext_fmha.schema.token_dispatch.
Condition` (``("not", "has_lse")``) -> ``not has_lse``."""

from __future__ import annotations

from ...schema.token_dispatch import Condition


def condition_words(form: Condition) -> str:
    """True -> always, False -> never; a junction's part that holds the other junction
    is bracketed (``a and (b or c)``)."""
    if isinstance(form, bool):
        return "always" if form else "never"
    if isinstance(form, str):
        return form
    tag, *parts = form
    if tag == "not":
        text = condition_words(parts[0])
        return f"not ({text})" if " " in text else f"not {text}"
    if tag == "starts":
        return f"{parts[0]} starts with {parts[1]}"
    other = " and " if tag == "or" else " or "
    return f" {tag} ".join(f"({t})" if other in t else t for t in map(condition_words, parts))
