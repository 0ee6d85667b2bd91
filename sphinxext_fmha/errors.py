"""What can go wrong, as data: the warning subtypes and the error base class.

Every error of ours carries its :class:`WarningType` (``kind``), the failed command and
its stderr tail, so the directives and the CLI never guess the kind from the text. The
docs' table of warning types is generated from :class:`WarningType`. A leaf module.
"""

from __future__ import annotations

import enum
from typing import Optional

__all__ = ["WarningType", "FmhaError", "stderr_tail", "tail_shown", "STDERR_TAIL_LINES", "STDERR_TAIL_BYTES"]

#: How much of a child's standard error a failure message quotes.
STDERR_TAIL_LINES = 20
STDERR_TAIL_BYTES = 4096


class WarningType(str, enum.Enum):
    """The subtypes of the ``fmha`` warnings (``suppress_warnings = ["fmha.gap"]``)."""

    CONFIG = "config"
    CK_ROOT = "ck-root"
    CACHE = "cache"
    API = "api"
    OPTION = "option"
    GENERATE = "generate"
    SUSPICIOUS = "suspicious"
    FILTER = "filter"
    EXPECTATION = "expectation"
    MODEL = "model"
    RECOMMEND = "recommend"
    NEED = "need"
    GAP = "gap"
    ANALYSIS = "analysis"

    @property
    def subtype(self) -> str:
        """``fmha.<value>``, as written in ``suppress_warnings``."""
        return "fmha." + self.value

    @property
    def when(self) -> str:
        """When the warning is reported (the documentation's table says this)."""
        return _WHEN[self]


_WHEN = {
    WarningType.CONFIG: "a configuration value (`fmha_*`) has the wrong type or range; its "
                        "default is used instead (or the temporary folder, `TMPDIR`, has "
                        "no room: another is used)",
    WarningType.CK_ROOT: "no CK tree at `fmha_ck_root`, or none found upward",
    WarningType.CACHE: "`fmha_cache_dir` is not a folder that can be written, or writing to "
                       "the cache failed (a full disk): the build goes on, its results not "
                       "kept for later builds",
    WarningType.API: "the API is not one of the tree's",
    WarningType.OPTION: "a bad option value, or an option this tree's `generate.py` does not "
                        "have or does not know (a receipt neither its help nor its codegen "
                        "lists)",
    WarningType.GENERATE: "`generate.py` (or its analysis) failed or timed out, or "
                          "`fmha_python` is not a Python",
    WarningType.SUSPICIOUS: "`generate.py` succeeded but listed no kernel, or listed other "
                            "kernels than the analysis observed, or the CK tree changed while "
                            "results were computed (they are used, not kept)",
    WarningType.FILTER: "`generate.py` rejects the filter, the filter selects no kernel (or "
                        "none of a sub-type its pattern part addresses), it uses `,` / `@` "
                        "in a way this API does not split on, or its selection fails in "
                        "write mode (`-o`) or would not link",
    WarningType.EXPECTATION: "an `expect-*` option of `fmha-filter-check` is not met",
    WarningType.MODEL: "the model's prediction of a filter differs from `generate.py`",
    WarningType.RECOMMEND: "the recommended minimal set cannot be made",
    WarningType.NEED: "a `:need:` names a segment or value the API does not have (an error "
                      "that lists the valid ones), or values no kernel of the tree has "
                      "together",
    WarningType.GAP: "the analysis could not determine a fact a section shown needs (listed in "
                     "the guide; readings that generate.py's run or the listing answers are "
                     "self-checks, not warnings)",
    WarningType.ANALYSIS: "any other analysis failure",
}


def stderr_tail(text: str) -> str:
    """The end of a child's standard error: its last lines, at most a few KB."""
    text = (text or "").strip()
    if len(text) > STDERR_TAIL_BYTES:
        text = text[-STDERR_TAIL_BYTES:]
        text = text.split("\n", 1)[1] if "\n" in text else text
    return "\n".join(text.splitlines()[-STDERR_TAIL_LINES:])


def tail_shown(message: str, tail: str) -> bool:
    """True when ``message`` already quotes every line of ``tail`` (indented or not)."""
    return all(line.strip() in message for line in (tail or "").splitlines())


class FmhaError(RuntimeError):
    """An error meant for a human: what failed, the command, the end of its stderr."""

    #: The kind of this class of errors; an instance may carry another one.
    default_kind = WarningType.ANALYSIS

    def __init__(self, message: str, *, kind: Optional[WarningType] = None,
                 command: str = "", stderr_tail: str = "") -> None:
        super().__init__(message)
        self.kind = kind or self.default_kind
        self.command = command
        self.stderr_tail = stderr_tail
