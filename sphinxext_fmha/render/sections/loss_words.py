"""What a dropped variant loses, in full: the folded sentence of What you lose, made
from :attr:`~sphinxext_fmha.model.Decision.loss_parts` (one clause per group of kernels
with the same fate: the kept variant that serves their calls, the calls no kept kernel
takes, or why the API never launched them)."""

from __future__ import annotations

from typing import Any, Dict, Mapping

from ...model import Decision, Recommendation, token_list
from .gloss import gloss_text
from .never_run import never_run_text, never_run_texts
from .reasons import MERGE_CAUTION, coupling_sentence, decision_reason, kept_with_text
from .set_notes import set_notes

__all__ = ["fill_words", "loss_sentence", "loss_sentences"]


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
    for clause in parts["clauses"]:
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
        return "ran calls (%s) that no kept kernel takes" % ("; ".join(clause["terms"])
                                                            or "as named")
    if kind == "never":
        return "{are} never launched by the API (%s): no call loses them" % never_run_text(
            clause["why"])
    kept = token_list(clause["stand_in"])
    if kind == "partly" and clause["only"]:
        return ("{are} served by the kept %s variant only when %s; their other calls find no "
                "kernel" % (kept, " and ".join(clause["only"])))
    if kind == "partly":
        return ("{are} served by the kept %s variant for some of their calls; the others "
                "find no kernel" % kept)
    return "{are} served by the kept %s variant" % kept


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
        decision.reason = decision_reason(decision)
        decision.losses = loss_sentences(decision)
