"""What a dropped variant loses: the first sentence of What you lose, at most
:data:`MOST_WORDS` words from :attr:`~sphinxext_fmha.model.Decision.loss_facts`, and the
folded one in full from :attr:`~sphinxext_fmha.model.Decision.loss_parts` (one clause per
group of kernels with the same fate)."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from ...model import Decision, Recommendation, token_list
from ..ir import Code, Inlines, join, text_of
from .condition_words import condition_words
from .dispatch import never_run_text, never_run_texts
from .gloss import gloss_text
from .reasons import MERGE_CAUTION, coupling_sentence, decision_reason, kept_with_text, set_notes

#: The first sentence's length, at most.
MOST_WORDS = 30
#: Tokens a sentence names at most (the rest are counted).
_MOST_TOKENS = 4


def _tokens(tokens: Sequence[str]) -> Inlines:
    out = join([[Code(token) if token else token_list([token])] for token in tokens[:_MOST_TOKENS]])
    return out + ([" and %d more" % (len(tokens) - _MOST_TOKENS)] if len(tokens) > _MOST_TOKENS else [])


def _variants(variants: Sequence[Sequence[str]]) -> Inlines:
    """Kept variants, each by its tokens: one as ``the kept `a`, `b` variant``, several
    as ``the kept variants `a`, `b`; `c``` (a semicolon between two)."""
    if len(variants) == 1:
        return ["the kept "] + _tokens(variants[0]) + [" variant"]
    out = ["the kept variants "] + join([_tokens(v) for v in variants[:_MOST_VARIANTS]], "; ")
    more = len(variants) - _MOST_VARIANTS
    return out + (["; and %d more" % more] if more > 0 else [])


#: Kept variants a first sentence names at most (the rest are counted).
_MOST_VARIANTS = 3


def _kernels(count: int) -> str:
    return "%d kernel%s not generated" % (count, "" if count == 1 else "s")


def loss_lead(facts: Dict[str, Any]) -> Inlines:
    """The sentence, shortened to :data:`MOST_WORDS` words (the calls' condition is
    left to the folded text when it would not fit)."""
    for calls in (list(facts.get("calls") or []), []):
        sentence = _sentence(facts, calls)
        if len(text_of(sentence).split()) <= MOST_WORDS:
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
        return who + [" run "] + _variants(facts.get("served_by") or [[]]) + \
            [" instead" + tail]
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


def loss_sentences(decision: Decision) -> Dict[str, str]:
    """``{token: sentence}`` for each token with lost kernels."""
    return {token: loss_sentence(parts) for token, parts in decision.loss_parts.items()}


def loss_sentence(parts: Mapping[str, Any]) -> str:
    if parts.get("follows"):
        if "of" in parts:
            return ("%d of its %d kernels (it is kept only with %s); none of them is launched "
                    "with a kept %s kernel, so nothing calls them"
                    % (parts["kernels"], parts["of"], kept_with_text(parts["kept_with"]),
                       parts["follows"]))
        return ("%d kernels; none is launched with a kept %s kernel, so nothing calls them"
                % (parts["kernels"], parts["follows"]))
    if "clauses" not in parts:
        return ("%d kernels, each said under a dropped value a call asks for: %s"
                % (parts["kernels"], token_list(parts["elsewhere"])))
    said: Dict[str, int] = {}  # clause -> kernels (the same words said once)
    for clause in _merged(parts["clauses"]):
        text = _clause(clause)
        said[text] = said.get(text, 0) + clause["count"]
    head = "%d kernels not generated" % parts["kernels"]
    if parts["more"]:
        head += " (and %d more, said under %s)" % (parts["more"], token_list(parts["elsewhere"]))
    return head + ": " + "; ".join("%d %s" % (count, text.format(are="is" if count == 1
                                                                  else "are"))
                                   for text, count in said.items()) + "."


def _clause(clause: Mapping[str, Any]) -> str:
    kind = clause["kind"]
    if kind == "unread":
        return ("whether a kept kernel takes their calls is not established (the API "
                "dispatch file was not read)")
    if kind == "no_kernel":
        return "ran calls (%s) that no kept kernel takes" % (
            "; ".join(map(condition_words, clause["terms"])) or "as named")
    if kind == "never":
        return "{are} never launched by the API (%s): no call loses them" % never_run_text(
            clause["why"])
    # several stand-ins: each takes some of the calls (the dispatch decides which)
    kept = " variant and the kept ".join(map(token_list, clause["stand_ins"])) + " variant" + (
        " (each for some of their calls)" if len(clause["stand_ins"]) > 1 else "")
    if kind == "partly" and clause["only"]:
        return ("{are} served by the kept %s only when %s; their other calls find no "
                "kernel" % (kept, " and ".join(clause["only"])))
    if kind == "partly":
        return ("{are} served by the kept %s for some of their calls; the others "
                "find no kernel" % kept)
    return "{are} served by the kept %s" % kept


_NUMBER = re.compile(r"\d+")
_VARIANT_SEP = "\x1f"  # between a stand-in's tokens in a clause's key
#: a clause's kind -> (its stand-in, whether some calls find no kernel) in the key
_KEYS: Dict[str, Tuple[Any, Tuple[str, ...]]] = {
    "unread": (("?",), ()), "no_kernel": ((), ("lost",)), "partly": (None, ("lost",)),
    "served": (None, ())}


def _merged(clauses: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The clauses in words, most kernels first (the never launched ones last): those
    that differ only in numbers (``hdim_q % 64`` / ``% 128``) said once, with the
    numbers listed (``hdim_q % 64/128 == 0``)."""
    merged: Dict[Tuple, List[Tuple[Tuple, Dict[str, Any]]]] = {}
    for clause in clauses:
        if clause["kind"] == "never":
            continue
        stand_in, lost = _KEYS[clause["kind"]]
        # (a stand-in as one text: its numbers merge as a term's do)
        key: Tuple[Tuple[str, ...], ...] = (
            tuple(map(_VARIANT_SEP.join, clause["stand_ins"])) if stand_in is None else stand_in,
            tuple(map(condition_words, clause["only"] if lost and stand_in is None else ())), lost)
        shape = tuple(tuple(_NUMBER.sub("#", t) for t in part) for part in key)
        merged.setdefault(shape, []).append((key, clause))
    out = []
    for shape, members in merged.items():
        key = members[0][0]
        if len(members) > 1:
            key = tuple(tuple(_numbers_listed(template, [k[index][position] for k, _ in members])
                              for position, template in enumerate(part))
                        for index, part in enumerate(shape))
        out.append((key, dict(members[0][1], count=sum(c["count"] for _, c in members),
                               stand_ins=[v.split(_VARIANT_SEP) for v in key[0]],
                               only=list(key[1]))))
    return [clause for _, clause in sorted(out, key=lambda kv: (-kv[1]["count"], kv[0]))] + \
        [clause for clause in clauses if clause["kind"] == "never"]


def _numbers_listed(template: str, texts: List[str]) -> str:
    numbers = [_NUMBER.findall(text) for text in texts]
    pieces = template.split("#")
    return pieces[0] + "".join("/".join(sorted({n[slot] for n in numbers}, key=int)) + piece
                               for slot, piece in enumerate(pieces[1:]))


def served_by(parts: Mapping[str, Any]) -> List[List[str]]:
    """The kept variants (each by its tokens) that take the inputs of a loss's kernels
    (its first sentence)."""
    found = dict.fromkeys(tuple(variant) for clause in _merged(parts.get("clauses", []))
                          if clause["kind"] in ("served", "partly")
                          for variant in clause["stand_ins"])
    return [list(variant) for variant in found]


def fill_words(recommendation: Recommendation) -> None:
    """``runs[].gloss``, ``decisions[].reason`` and ``.losses``, ``coupling``,
    ``merge_caution``, ``notes`` and ``links_unreachable`` in words, for the CLI's JSON
    (the cache keeps the facts they are made from)."""
    for run in recommendation.runs:
        run.gloss = gloss_text(run.reading)
    recommendation.coupling = coupling_sentence(recommendation)
    recommendation.notes = set_notes(recommendation)
    recommendation.links_unreachable = never_run_texts(recommendation.unreachable_facts)
    if len(recommendation.runs) > 1:
        recommendation.merge_caution = MERGE_CAUTION
    for decision in recommendation.decisions:
        decision.reason = decision_reason(decision, recommendation.coupled.get("unfiltered", []))
        decision.losses = loss_sentences(decision)
        for token, parts in decision.loss_parts.items():
            if "clauses" in parts:
                decision.loss_facts[token]["served_by"] = served_by(parts)
