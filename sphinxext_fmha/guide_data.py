"""What a kernel selection guide shows, as data: the sections, the collected facts of
one API (:class:`GuideData`) and reportable failures (:class:`Problem`).

A leaf: the guide service (:mod:`sphinxext_fmha.guide`) fills it, the renderers
(:mod:`sphinxext_fmha.render`) and the Sphinx glue read it.  No Sphinx, no processes.
"""

from __future__ import annotations

import datetime
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .errors import FmhaError, WarningType, tail_shown
from .locate import CKRootNotFound
from .model import (
    ApiModel,
    FilterFacts,
    PatternTrap,
    Recommendation,
    TileTable,
    TokenCounts,
    TokenDispatch,
    Workload,
)
from .options import OptionError, Options

__all__ = [
    "DISPATCH_SECTIONS",
    "RECOMMENDATION_SECTIONS",
    "DEFAULT_ORDER",
    "ExampleSet",
    "SECTIONS",
    "SECTION_TITLES",
    "GuideData",
    "PlaygroundInputs",
    "Problem",
    "build_date",
    "parse_sections",
    "problem_of",
    "source_rel",
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
    ("examples", "Example workloads"),
)
SECTION_TITLES = dict(SECTIONS)
#: The order of every section when none is chosen (``:sections:`` all): the example
#: workloads after the counts (their number, 13, keeps the others' numbers).
DEFAULT_ORDER = ("types", "filename", "filter", "fields", "minimal", "losses", "commands",
                 "counts", "examples", "tiles", "rules", "dispatch", "gaps")
#: Sections that show the recommendation (``counts`` shows it when there is one).
RECOMMENDATION_SECTIONS = ("minimal", "losses", "commands")
#: Sections that show what the API dispatch file and the mask modes say (fields:
#: per-token conditions; rules: the mask-mode note; dispatch: entry points, reach).
DISPATCH_SECTIONS = ("fields", "rules", "dispatch")

_ALIASES = {
    "sub-types": "types", "subtypes": "types", "kernel-types": "types",
    "names": "filename", "file-names": "filename", "diagram": "filename",
    "mechanism": "filter", "field": "fields", "reference": "fields",
    "recommended": "minimal", "recommendation": "minimal", "loss": "losses",
    "runs": "commands", "command": "commands", "count": "counts",
    "tile": "tiles", "skips": "rules", "receipts": "rules", "skip": "rules",
    "gap": "gaps", "checks": "gaps",
    "example": "examples", "workloads": "examples",
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


# --------------------------------------------------------------------------- sections


def parse_sections(spec: Union[str, Sequence[str], None]) -> List[str]:
    """Section names from ``"1,2,fields,5-8"`` (numbers, ranges, names or aliases);
    None: all."""
    if spec is None:
        return list(DEFAULT_ORDER)
    items = spec if not isinstance(spec, str) else re.split(r"[,\s]+", spec)
    names: List[str] = []
    for raw in items:
        item = str(raw).strip().lower()
        if not item:
            continue
        if item == "all":
            names.extend(n for n in DEFAULT_ORDER if n not in names)
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
class ExampleSet:
    """An example workload and its set (or why it could not be made)."""

    workload: Workload
    recommendation: Optional[Recommendation] = None
    problem: str = ""


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
    #: why the API dispatch file (or the mask modes) could not be read, if so
    dispatch_problem: Optional[Problem] = None
    #: the tiles per problem of each sub-type, from the listing (with the minimal set's
    #: counts when the recommendation was made)
    tile_tables: List[TileTable] = field(default_factory=list)
    #: tokens whose ``*TOKEN*`` selects other kernels too (field reference)
    pattern_traps: List[PatternTrap] = field(default_factory=list)
    #: (kernel class, segment index) -> head-dim token -> the (hdim_q, hdim_v) bounds of
    #: the dispatch buckets its kernels serve
    head_dims: Dict[Tuple[str, int], Dict[str, List[Tuple[int, Optional[int]]]]] = \
        field(default_factory=dict)
    #: what the filter mechanism states from runs of its own (write mode without
    #: partners, ``--targets``), and why it could not be measured, if so
    filter_facts: Optional[FilterFacts] = None
    filter_problem: Optional[Problem] = None
    #: the example workloads (section ``examples``), each with its set
    examples: List[ExampleSet] = field(default_factory=list)


@dataclass
class PlaygroundInputs:
    """What a filter playground embeds: the listing of one API parsed into tokens."""

    model: ApiModel
    #: listed file name -> (kernel class, tokens), for the names the grammar parses
    parsed: Dict[str, Tuple[str, List[str]]]
    #: the observed traits, where the tree drops whole traits (else empty): per member,
    #: its listed file (None for a member the trait tests but does not write) and name
    traits: List[List[Tuple[Optional[str], str]]]
    #: the generate.py listing command before and after ``-f PATTERN``
    command: Tuple[str, str]
    #: how many listed names the grammar does not parse (left out of the playground)
    unparsed: int = 0
    #: kernel file -> the kernel whose name ``-f`` tests in its stead (kept with it)
    followers: Dict[str, str] = field(default_factory=dict)
