"""The notes under the minimal set: what did not go as the policy meant, said from
:attr:`~sphinxext_fmha.model.Recommendation.note_facts`."""

from __future__ import annotations

from typing import Any, Callable, Dict, List

from ...model import Note, Recommendation

__all__ = ["note_text", "set_notes"]


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


def note_text(note: Note) -> str:
    return _SAY[note.kind](note.values)


def set_notes(rec: Recommendation) -> List[str]:
    return [note_text(note) for note in rec.note_facts]
