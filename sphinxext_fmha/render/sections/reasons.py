"""The Why of the minimal set: per segment, the policy's rule in words and what the
verified set does that the rule does not say (made from the facts :class:`~sphinxext_fmha.
model.Decision` carries: its category, ``nearest``, ``unselected``, ``never_run``,
``unkept``); the coupling of its sub-types; why several runs need the driver."""

from __future__ import annotations

from typing import Mapping, Sequence

from ...model import Decision, Recommendation, token_list

#: The rule of the padding and tuning variants: the same words on every tree.
_RUNS_EVERY_CALL = ("keep the variants that between them run every call: a variant is dropped "
                    "only where the other kept kernels run every call it ran (read from the "
                    "dispatch conditions)")

#: The policy's rule per segment category (``Decision.category``).
POLICY = {
    "padding": _RUNS_EVERY_CALL,
    "optional feature": "keep the disabled variant; the feature's kernels are dropped",
    "mask": "keep no-mask plus the most common mask variant",
    "deterministic": "keep the non-deterministic variant",
    "tuning": _RUNS_EVERY_CALL,
    "problem": "keep every value (a property of the problem)",
    "subject": "keep every value: the API is named after it",
    "tile": "tiles are not chosen by the filter: the set keeps the tiles of its kernels",
    "other": "keep every value",
}

#: What a partial keep does, said after the rule's own words.
_NEAREST = "where a problem (its head dims, data type, mode and arch) has no such variant, " \
           "its nearest variant is kept for that problem only"


def kept_with_text(kept_with: Mapping[str, Sequence[str]]) -> str:
    """The values a token is kept with, as a sentence names them ("dtype _fp8; mode
    _group")."""
    return "; ".join("%s %s" % (segment, ", ".join(values))
                     for segment, values in kept_with.items())


def decision_reason(decision: Decision) -> str:
    """The policy, as applied to the decision's segment."""
    if decision.follows:
        return "follows the %s kernels it is launched with" % decision.follows
    reason = POLICY.get(decision.category, "")
    if decision.nearest == "applied":
        reason += "; " + _NEAREST
    elif decision.nearest == "keeps_every_kernel":
        # (2.8.3 fwd's _squant exists with fp8 alone, where no _nsquant does: the rule's
        # "the feature's kernels are dropped" is not so)
        reason = "%s; %s: here that keeps every kernel of the segment, none is dropped" % (
            POLICY[decision.category].split("; ")[0], _NEAREST)
    parts = []
    if decision.unselected:
        parts.append("the verified commands do not select %s, which this rule keeps (see What "
                     "you lose)" % token_list(decision.unselected))
    if decision.never_run:
        parts.append("the full API never runs a kernel of %s" % token_list(decision.never_run))
    others = decision.unkept
    if others:
        parts.append("%s %s not in the set: the rules of the other segments keep none of "
                     "%s kernels (see What you lose)"
                     % (token_list(others), "is" if len(others) == 1 else "are",
                        "its" if len(others) == 1 else "their"))
    return reason + "".join("; " + part for part in parts)




#: Several runs: why their dispatch files do not serve the union.
MERGE_CAUTION = ("Each generate.py run rewrites the API dispatch file, so after several runs "
                 "only the last run's kernels are reachable from it. Use the driver command "
                 "to write one dispatch file for the union.")


def coupling_sentence(rec: Recommendation) -> str:
    """How the sub-types are coupled (:attr:`~sphinxext_fmha.model.Recommendation.
    coupled`); ``""`` when they are not."""
    coupled = rec.coupled
    if not coupled:
        return ""
    return ("%s kernels are launched together with %s kernels by the same dispatch call "
            "(read from the %s); they are kept exactly with the %s kernels that use them"
            % (", ".join(coupled["followers"]), coupled["primary"],
               "API dispatch file" if coupled["source"] == "dispatch" else "observed traits",
               coupled["primary"]))
