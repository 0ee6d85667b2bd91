"""One line per expensive step, written when it has finished (lines of runs side by side
never interleave): ``fmha: bwd of flash_attn-2.8.3: probing generate.py (7,824
kernels)... 14.2 s``; a :class:`StepLine`, while "still running" notes are plain strings
(Sphinx shows those only with ``-v``). No Sphinx imports here.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

__all__ = ["StepLine", "options_shown", "report_ahead", "report_step", "tree_label"]

Progress = Optional[Callable[[str], None]]
_API_FLAGS = ("-a", "--api", "-d", "--direction")

#: How far above the CK root an sdist (PKG-INFO) still names the tree.
_SDIST_LEVELS = 4


class StepLine(str):
    """A finished expensive step (a str, so plain callbacks print it as it is)."""


def tree_label(fmha_dir: Path) -> str:
    """The sdist folder that ships the tree (a ``PKG-INFO``), else the CK checkout's name."""
    fmha_dir = Path(fmha_dir)
    ck_root = fmha_dir.parents[2] if len(fmha_dir.parents) > 2 else fmha_dir
    for folder in [ck_root, *list(ck_root.parents)[:_SDIST_LEVELS]]:
        if (folder / "PKG-INFO").is_file():
            return folder.name
    return ck_root.name


def options_shown(argv: Sequence[str]) -> str:
    """The options of a generate.py run besides the API, as the reader would type them, to
    follow a step's text: a space first, or nothing."""
    options = shlex.join(arg for i, arg in enumerate(argv)
                         if arg not in _API_FLAGS and (i == 0 or argv[i - 1] not in _API_FLAGS))
    return " " + options if options else ""


def api_of(argv: Sequence[str]) -> str:
    for flag in _API_FLAGS:
        if flag in argv and argv.index(flag) + 1 < len(argv):
            return argv[argv.index(flag) + 1]
    return "?"


def report_step(progress: Progress, fmha_dir: Path, argv: Sequence[str], what: str,
                seconds: float, kernels: Optional[int] = None) -> None:
    """Write ``fmha: <api> of <tree>: <what> (<n> kernels)... <s> s``."""
    if progress is None:
        return
    detail = " (%s kernels)" % format(kernels, ",") if kernels is not None else ""
    progress(StepLine("fmha: %s of %s: %s%s... %.1f s" % (
        api_of(argv), tree_label(fmha_dir), what, detail, seconds)))


def report_ahead(progress: Progress, fmha_dir: Path, apis: Sequence[str],
                 steps: Mapping[str, int], workers: int, seconds: float) -> None:
    """``fmha: 6 APIs of <tree>: started ahead of the pages, 2 at a time: 6 probes, 6
    listings... <s> s``, once all the steps started ahead have finished."""
    if progress is None:
        return
    who = apis[0] if len(apis) == 1 else "%d APIs" % len(apis) if apis else "the pages"
    what = ", ".join("%d %s%s" % (n, kind, "" if n == 1 else "es" if kind.endswith("h") else "s")
                     for kind, n in sorted(steps.items()))
    progress(StepLine("fmha: %s of %s: started ahead of the pages, %d at a time: %s... %.1f s" % (
        who, tree_label(fmha_dir), workers, what, seconds)))
