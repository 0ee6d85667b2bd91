"""The first sentence of a dropped variant's loss: one plain sentence of at most
:data:`MOST_WORDS` words, made from :attr:`~sphinxext_fmha.model.Decision.loss_facts`
("Calls with `bias_type == bias_enum::alibi` find no kernel (1158 kernels not
generated)."). The problem classes, the never-launched kernels and the kept fallback
follow it, folded (the loss's own sentence).
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

from ...model import token_list
from ..ir import Code, Inlines, text_of
from .condition_words import condition_words

__all__ = ["MOST_WORDS", "loss_lead", "word_count"]

#: The first sentence's length, at most.
MOST_WORDS = 30
#: Tokens a sentence names at most (the rest are counted).
_MOST_TOKENS = 4


def word_count(parts: Sequence[Any]) -> int:
    return len(text_of(parts).split())


def _tokens(tokens: Sequence[str]) -> Inlines:
    shown = list(tokens[:_MOST_TOKENS])
    out: Inlines = []
    for number, token in enumerate(shown):
        if number:
            out.append(", ")
        out.append(Code(token) if token else token_list([token]))
    if len(tokens) > len(shown):
        out.append(" and %d more" % (len(tokens) - len(shown)))
    return out


def _kernels(count: int) -> str:
    return "%d kernel%s not generated" % (count, "" if count == 1 else "s")


def loss_lead(facts: Dict[str, Any]) -> Inlines:
    """The sentence, shortened to :data:`MOST_WORDS` words (the calls' condition is
    left to the folded text when it would not fit)."""
    for calls in (list(facts.get("calls") or []), []):
        sentence = _sentence(facts, calls)
        if word_count(sentence) <= MOST_WORDS:
            return sentence
    return _sentence(dict(facts, served_by=[], elsewhere=[]), [])


def _sentence(facts: Dict[str, Any], calls: List[Any]) -> Inlines:
    count = int(facts.get("kernels") or 0)
    tail = " (%s)." % _kernels(count)
    if facts.get("not_needed"):
        return ["The workload does not call it" + tail]
    if facts.get("follows"):
        if "of" in facts:
            return ["Nothing calls the %d of its %d kernels not generated: no kept "
                    % (count, facts["of"]), Code(facts["follows"]), " kernel launches them."]
        return ["Nothing calls them: no kept ", Code(facts["follows"]),
                " kernel launches them" + tail]
    if facts.get("elsewhere") and not any(facts.get(k) for k in _OUTCOMES):
        return ["Its %d kernels are counted under the dropped " % count]  \
            + _tokens(facts["elsewhere"]) + ["."]
    who: Inlines = ["Calls with "]
    for number, term in enumerate(calls):
        who += [" and " if number else "", Code(condition_words(term))]
    if not calls:
        who = ["Calls these kernels served"]
    lost, served, partly, unsettled = (int(facts.get(k) or 0) for k in
                                       ("no_kernel", "served", "partly", "unsettled"))
    if lost and not (served or partly or unsettled):
        return who + [" find no kernel" + tail]
    if lost or partly:
        return ["Some " + text_of(who[:1]).lower()] + who[1:] + [" find no kernel" + tail]
    if served:
        return who + [" run the kept "] + _tokens(facts.get("served_by") or []) + \
            [" variant instead" + tail]
    if unsettled:
        return ["Whether " + text_of(who[:1]).lower()] + who[1:] + \
            [" still find a kernel is not established" + tail]
    if facts.get("unread"):
        return ["Their dispatch conditions were not read" + tail]
    if facts.get("never"):
        return ["No call loses them: the API never launches these %d kernels." % count]
    return [_kernels(count)[0].upper() + _kernels(count)[1:] + "."]


#: The outcomes of a variant's own kernels (its facts' counts).
_OUTCOMES = ("no_kernel", "served", "partly", "unsettled", "unread", "never")
