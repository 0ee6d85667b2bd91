"""Gather what a guide shows from a :class:`~sphinxext_fmha.session.Session`.

Also: the guide's sections, option parsing/validation shared by the directives and the
CLI, and turning any failure into a :class:`Problem` (kind + message + command + stderr
tail) that the callers report.  No Sphinx, no docutils.
"""

from __future__ import annotations

import datetime
import os
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple, Union

from ..errors import FmhaError, WarningType, tail_shown
from ..options import OptionError, Options, merge_options, parse_options
from ..model import ApiModel, FilterCheck, Recommendation
from ..verify.token_facts import (
    TokenCounts,
    TokenDispatch,
    token_counts,
    token_dispatch,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..session import Session

__all__ = [
    "SECTIONS",
    "SECTION_TITLES",
    "RECOMMENDATION_SECTIONS",
    "OptionError",
    "Problem",
    "GuideData",
    "build_date",
    "collect_guide",
    "parse_options",
    "parse_sections",
    "problem_of",
    "merge_options",
    "source_rel",
    "suspicious_problems",
    "token_counts",
]

#: (name, title) of every guide section, in order; numbers are 1-based positions.
SECTIONS: Tuple[Tuple[str, str], ...] = (
    ("types", "Kernel sub-types"),
    ("filename", "File name structure"),
    ("filter", "Filter mechanism"),
    ("fields", "Field reference"),
    ("minimal", "Recommended minimal set"),
    ("losses", "What you lose"),
    ("commands", "Filter commands"),
    ("counts", "Kernel counts"),
    ("tiles", "Tiles per architecture"),
    ("rules", "Skip conditions and receipts"),
    ("dispatch", "Dispatch"),
    ("gaps", "Gaps and checks"),
)
SECTION_TITLES = dict(SECTIONS)
#: Sections that need :meth:`Session.recommend`.
RECOMMENDATION_SECTIONS = ("minimal", "losses", "commands")

_ALIASES = {
    "sub-types": "types", "subtypes": "types", "kernel-types": "types",
    "names": "filename", "file-names": "filename", "diagram": "filename",
    "mechanism": "filter", "field": "fields", "reference": "fields",
    "recommended": "minimal", "recommendation": "minimal", "loss": "losses",
    "runs": "commands", "command": "commands", "count": "counts",
    "tile": "tiles", "skips": "rules", "receipts": "rules", "skip": "rules",
    "gap": "gaps", "checks": "gaps",
}


@dataclass
class Problem:
    """One failure, ready to be reported: ``kind`` is the warning subtype."""

    kind: WarningType
    message: str
    command: str = ""
    stderr_tail: str = ""

    def __post_init__(self) -> None:
        self.kind = WarningType(self.kind)  # a bare string must name a known subtype

    def details(self) -> str:
        """The message, the failed command and the tail of its stderr."""
        lines = [self.message.rstrip()]
        if self.command and self.command not in self.message:
            lines.append("command: " + self.command)
        if self.stderr_tail and not tail_shown(self.message, self.stderr_tail):
            lines.append("stderr (last lines):")
            lines.extend("    " + line for line in self.stderr_tail.rstrip().splitlines())
        return "\n".join(lines)


def problem_of(exc: BaseException) -> Problem:
    """The :class:`Problem` of an exception raised while building a guide: our errors
    carry their kind; anything else is an analysis failure (a bug, named as such)."""
    from ..locate import CKRootNotFound

    if isinstance(exc, FmhaError):
        return Problem(exc.kind, str(exc), exc.command, exc.stderr_tail)
    if isinstance(exc, CKRootNotFound):
        return Problem(WarningType.CK_ROOT, str(exc).splitlines()[0])
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return Problem(WarningType.CK_ROOT, "%s: %s" % (type(exc).__name__, exc))
    if isinstance(exc, SyntaxError):
        return Problem(WarningType.ANALYSIS,
                       "cannot read the CK tree's Python source: %s" % exc)
    return Problem(WarningType.ANALYSIS, "%s: %s" % (type(exc).__name__, exc))


def suspicious_problems(model: ApiModel) -> List[Problem]:
    """Successes that should not be trusted: generate.py exited 0 but listed no kernel,
    or listed other kernels than the analysis observed it create."""
    problems = []
    if model.baseline.count == 0:
        problems.append(Problem(WarningType.SUSPICIOUS, (
            "%s: generate.py exited with 0 but listed no kernel (with options %s); the "
            "guide has nothing to show. Check the options (receipt, targets, optdim)"
            % (model.api, ", ".join("%s=%s" % kv for kv in sorted(model.options.items()))
               or "none"))))
    elif model.checks.get("listing_matches_observation") is False:
        problems.append(Problem(WarningType.SUSPICIOUS, (
            "%s: generate.py's listing and the kernel objects observed while it ran disagree; "
            "counts in the guide come from the listing" % model.api)))
    return problems


# --------------------------------------------------------------------------- sections


def parse_sections(spec: Union[str, Sequence[str], None]) -> List[str]:
    """Section names from ``"1,2,fields,5-8"`` (numbers, ranges, names or aliases);
    None: all."""
    if spec is None:
        return [name for name, _ in SECTIONS]
    items = spec if not isinstance(spec, str) else re.split(r"[,\s]+", spec)
    names: List[str] = []
    for raw in items:
        item = str(raw).strip().lower()
        if not item:
            continue
        if item == "all":
            names.extend(n for n, _ in SECTIONS if n not in names)
            continue
        span = re.fullmatch(r"(\d+)-(\d+)", item)
        if item.isdigit() or span:
            first, last = (int(span.group(1)), int(span.group(2))) if span else (int(item),) * 2
            for index in (first, last):
                if not 1 <= index <= len(SECTIONS):
                    raise OptionError("sections: %s is not a section number (1-%d)"
                                      % (index, len(SECTIONS)))
            if last < first:
                raise OptionError("sections: %s is an empty range" % item)
            names.extend(SECTIONS[i - 1][0] for i in range(first, last + 1)
                         if SECTIONS[i - 1][0] not in names)
            continue
        else:
            name = _ALIASES.get(item, item)
            if name not in SECTION_TITLES:
                raise OptionError("sections: unknown section %r (known: %s, or 1-%d)"
                                  % (item, ", ".join(n for n, _ in SECTIONS), len(SECTIONS)))
        if name not in names:
            names.append(name)
    if not names:
        raise OptionError("sections: no section given")
    return names


# --------------------------------------------------------------------------- data


def build_date() -> str:
    """``YYYY-MM-DD``: from ``SOURCE_DATE_EPOCH`` when set (reproducible builds)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        try:
            stamp = float(epoch)
        except ValueError:
            stamp = time.time()
    else:
        stamp = time.time()
    return datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc).strftime("%Y-%m-%d")


def source_rel(model: ApiModel) -> str:
    """The API module relative to the 01_fmha folder: ``codegen/ops/fmha_fwd.py``."""
    source = model.source.replace("\\", "/")
    if "/codegen/" in source:
        return "codegen/" + source.split("/codegen/", 1)[1]
    return source


@dataclass
class GuideData:
    """Everything a guide renders (model, measured counts, recommendation)."""

    api: str
    options: Options
    model: ApiModel
    date: str
    token_counts: TokenCounts = field(default_factory=dict)
    token_dispatch: Optional[TokenDispatch] = None
    dispatch_reading: Optional[dict] = None
    mask_modes: Optional[Any] = None
    api_file: Optional[str] = None
    listing_command: str = ""
    recommendation: Optional[Recommendation] = None
    recommendation_problem: Optional[Problem] = None


def needs_dispatch_reading(sections: Sequence[str]) -> bool:
    """Whether these sections show what the API file and the mask modes say (fields:
    per-token conditions; rules: the mask-mode note; dispatch: entry points, reach)."""
    return bool({"fields", "rules", "dispatch"} & set(sections))


def collect_guide(session: "Session", api: str, options: Options = Options(), *,
                  recommend: bool = True, conditions: bool = True) -> GuideData:
    """Model + per-token counts (+ dispatch conditions, recommendation) of one API.

    Failures of the model raise; a recommendation that cannot be made is recorded as
    ``recommendation_problem`` (kind ``recommend`` when the feature is missing);
    dispatch conditions are shown when they can be read, and left out otherwise.
    """
    model = session.model(api, options)
    listing = session.runner.list_kernels(session.tree.request(api, options))
    data = GuideData(api=api, options=options, model=model, date=build_date(),
                     token_counts=token_counts(model, listing.files),
                     api_file=listing.api_file, listing_command=listing.command)
    if conditions and hasattr(session, "dispatch_reading"):
        try:
            reading = session.dispatch_reading(api, options)
        except Exception:  # noqa: BLE001 - optional: the column is left out
            reading = {}
        if reading:
            data.dispatch_reading = reading
            data.token_dispatch = token_dispatch(model, listing.files, reading)
    if conditions and hasattr(session, "mask_modes"):
        try:
            data.mask_modes = session.mask_modes(api, options)
        except Exception:  # noqa: BLE001 - optional: the note is left out
            data.mask_modes = None
    if recommend:
        try:
            data.recommendation = session.recommend(api, options)
        except (ImportError, NotImplementedError) as exc:
            data.recommendation_problem = Problem(
                WarningType.RECOMMEND, "the recommended minimal set is not available in this version "
                "of sphinxext-fmha (%s: %s)" % (type(exc).__name__, exc))
        except Exception as exc:  # noqa: BLE001 - reported, never a traceback
            problem = problem_of(exc)
            problem.message = "cannot make the recommended minimal set: " + problem.message
            data.recommendation_problem = problem
    return data


def check_filter(session: "Session", api: str, filter: str,
                 options: Options = Options()) -> FilterCheck:
    """:meth:`Session.check` (kept here so callers need one import)."""
    return session.check(api, filter, options)
