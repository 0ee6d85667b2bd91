"""The Why of the minimal set (per segment, the policy's rule and what the verified set
does that the rule does not say), the coupling of its sub-types, why several runs need
the driver, and the notes under the set (what did not go as the policy meant)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Sequence

from ...model import Decision, Recommendation, token_list
from ..ir import Code, Inlines

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


def decision_reason(decision: Decision, unfiltered: Sequence[str] = ()) -> str:
    """The policy, as applied to the decision's segment (``unfiltered``: the sub-types
    ``-f`` never filters, whose kernels are generated whatever the filter)."""
    if decision.kernel_type in unfiltered:
        return "not filtered by -f in this tree: every %s kernel is generated whatever the " \
               "filter" % decision.kernel_type
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
    primary = coupled["primary"]
    first = "%s kernels are launched together with %s kernels by the same dispatch call " \
            "(read from the %s)" % (
                ", ".join(coupled["followers"]), primary,
                "API dispatch file" if coupled["source"] == "dispatch" else "observed traits")
    # (a pairing that holds per trait: some main kernels launch no kernel of a follower)
    without = ["%d of the %d %s kernels it launches are launched without a %s kernel"
               % (count, coupled["launched"], primary, follower)
               for follower, count in coupled.get("without", {}).items() if count]
    unfiltered = coupled.get("unfiltered", [])
    unused = coupled.get("unused", {})
    exact = [t for t in coupled["followers"] if t not in unfiltered and not unused.get(t)]
    if exact == coupled["followers"] and not without:
        return first + "; they are kept exactly with the %s kernels that use them" % primary
    sentences = ["; ".join([first, *without])]
    if exact:
        sentences.append("%s kernels are kept exactly with the %s kernels that use them"
                         % (", ".join(exact), primary))
    if unfiltered:
        sentences.append("%s %s not filtered by -f in this tree: every one of them is generated "
                         "whatever the filter, whether a kept kernel uses it or not" % (
                             ", ".join(unfiltered), "is" if len(unfiltered) == 1 else "are"))
    return ". ".join(sentences)


def follower_usage(rec: Recommendation, class_name: str) -> Inlines:
    """What the set does with the kernels of follower ``class_name``: how many it keeps,
    and how many of them no call of the set's written dispatch file launches."""
    coupled = rec.coupled
    primary = coupled["primary"]
    counts = rec.counts.get(class_name, {})
    kept = counts.get("minimal", 0)
    unfiltered = class_name in coupled.get("unfiltered", [])
    text: Inlines = (["Not filtered by ", Code("-f"), " in this tree: all %d are generated "
                      "whatever the filter." % kept] if unfiltered else
                     ["Follows the kept ", Code(primary), " kernels: %d of %d kept."
                      % (kept, counts.get("full", 0))])
    unused = coupled.get("unused")
    if unused is None:
        if unfiltered and coupled["source"] == "dispatch":
            text.append(" Which of them a kept kernel uses is not read: the set's dispatch "
                        "file was not verified in write mode (see the notes).")
    elif unused.get(class_name):
        text += [" %d of them are launched by no call of the set's written dispatch file: "
                 "no kept " % unused[class_name], Code(primary), " kernel uses them."]
    elif unfiltered:
        text.append(" Each of them is launched by a call of the set's written dispatch file.")
    return text


def _tail(values: Dict[str, Any]) -> str:
    return " (%s)" % values["tail"] if values.get("tail") else ""


_SAY: Dict[str, Callable[[Dict[str, Any]], str]] = {
    "api_file_unavailable": lambda v: "the full API dispatch file is not available (%s): "
                                      "coupling and dispatch conditions are not used"
                                      % v["error"],
    "conditions_unread": lambda v: "dispatch conditions unavailable (%s): what you lose is "
                                   "told without them" % v["error"],
    "superset": lambda v: "no filter of this tree's semantics selects exactly the keep set: "
                          "the commands also select %s that no kept kernel needs"
                          % ", ".join("%d %s kernels" % (n, t) for t, n in v["extra"].items()),
    "prediction_differs": lambda v: "by the model's reading of the filter semantics the "
                                    "commands select %d kernels, the keep set has %d"
                                    % (v["predicted"], v["claimed"]),
    "runs_differ": lambda v: "the filter runs select %d kernels, the keep set has %d (%d "
                             "missing, %d extra)" % (v["union"], v["claimed"], v["missing"],
                                                     v["extra"]),
    "write_fails": lambda v: "%r fails in write mode: %s" % (v["filter"], v["error"]),
    "driver_differs": lambda v: "the driver run selects %d kernels, the union of the runs %d"
                                % (v["driven"], v["union"]),
    "driver_failed": lambda v: "the driver run failed: %s" % v["error"] + _tail(v),
    "write_unread": lambda v: "its write-mode output could not be read: %s" % v["error"]
                              + _tail(v),
    "unlinked": lambda v: "the set does not link: its dispatch file instantiates %d kernel "
                          "specialisations that are not generated" % v["missing"],
    "written_differs": lambda v: ("the driver wrote %d kernels, the runs list %d"
                                  if v["by"] == "driver" else
                                  "write mode wrote %d kernels, the run lists %d")
                                 % (v["written"], v["listed"]),
    "unfiltered": lambda v: "%s are not filtered by -f in this tree: every one of them is "
                            "generated" % ", ".join(v["types"]),
    "shared_names": lambda v: "%d kernels share their name with a wanted kernel (they differ "
                              "only outside the name fnmatch sees), so the filters select "
                              "them too" % v["count"],
}


def set_notes(rec: Recommendation) -> List[str]:
    # (unfiltered followers are said with the coupling)
    said = set(rec.coupled.get("unfiltered", []))
    return [_SAY[note.kind](note.values) for note in rec.note_facts
            if not (note.kind == "unfiltered" and set(note.values["types"]) <= said)]
