"""What a guide shows, as data: the sections, one API's facts (:class:`GuideData`) and
reportable failures (:class:`Problem`); filled by :mod:`sphinxext_fmha.guide`, read by
the renderers and the glue.
"""

from __future__ import annotations

import enum
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, Union

from .errors import FmhaError, WarningType, tail_shown
from .locate import CKRootNotFound
from .model import (
    ApiInfo,
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

__all__ = ["RECOMMENDATION_SECTIONS", "DEFAULT_ORDER", "ExampleSet", "SectionNeed", "SECTIONS",
           "SECTION_BY_NAME", "SECTION_TITLES", "SectionSpec", "GuideData", "PlaygroundInputs",
           "Problem", "build_date", "parse_sections", "problem_of", "sections_needing",
           "source_rel", "stored_kinds"]


class SectionNeed(enum.Enum):
    """What a section needs beyond the model and the token counts."""

    #: the recommended minimal set; the section is left out when it cannot be made
    SET = "set"
    #: the set when it can be made (the section shows the listing without it)
    SET_IF_MADE = "set-if-made"
    #: the API dispatch file and what ``--mask`` changes
    DISPATCH = "dispatch"
    #: the runs of the filter mechanism (write mode without partners, ``--targets``)
    FILTER_FACTS = "filter-facts"
    #: the tokens whose ``*TOKEN*`` selects other kernels too
    PATTERN_TRAPS = "pattern-traps"
    #: the tiles per problem of each sub-type
    TILE_TABLES = "tile-tables"
    #: the example workloads, each with its set
    EXAMPLES = "examples"


#: The session's stored kinds a need keeps on disk (besides the model and token counts).
_STORED_KINDS = {SectionNeed.DISPATCH: ("dispatch-reading", "mask-modes"),
                 SectionNeed.SET: ("recommend",), SectionNeed.SET_IF_MADE: ("recommend",),
                 SectionNeed.FILTER_FACTS: ("filter-facts",)}


@dataclass(frozen=True)
class SectionSpec:
    """One guide section, declared once: everything else about sections is derived."""

    name: str
    #: its documented number, an alias (the example workloads are 13, shown after 8)
    number: int
    title: str
    #: ``module:function`` in :mod:`sphinxext_fmha.render.sections` that builds it
    builder: str
    aliases: Tuple[str, ...] = ()
    needs: Tuple[SectionNeed, ...] = ()


#: Every guide section, in the order shown when none is chosen (``:sections:`` all).
SECTIONS: Tuple[SectionSpec, ...] = (
    SectionSpec("types", 1, "Kernel sub-types", "overview:types_section",
                ("sub-types", "subtypes", "kernel-types")),
    SectionSpec("filename", 2, "File name structure", "filename:filename_section",
                ("names", "file-names", "diagram")),
    SectionSpec("filter", 3, "Filter mechanism", "filter:filter_section", ("mechanism",),
                (SectionNeed.FILTER_FACTS,)),
    SectionSpec("fields", 4, "Field reference", "fields:fields_section", ("field", "reference"),
                (SectionNeed.DISPATCH, SectionNeed.PATTERN_TRAPS)),
    SectionSpec("minimal", 5, "Recommended minimal set", "recommendation:minimal_section",
                ("recommended", "recommendation"), (SectionNeed.SET,)),
    SectionSpec("losses", 6, "What you lose", "recommendation:losses_section", ("loss",),
                (SectionNeed.SET,)),
    SectionSpec("commands", 7, "Filter commands", "recommendation:commands_section",
                ("runs", "command"), (SectionNeed.SET,)),
    SectionSpec("counts", 8, "Kernel counts", "recommendation:counts_section", ("count",),
                (SectionNeed.SET_IF_MADE,)),
    SectionSpec("examples", 13, "Example workloads", "workload:examples_section",
                ("example", "workloads"), (SectionNeed.EXAMPLES,)),
    SectionSpec("tiles", 9, "Tiles per architecture", "tiles:tiles_section", ("tile",),
                (SectionNeed.TILE_TABLES,)),
    SectionSpec("rules", 10, "Skip conditions and receipts", "rules:rules_section",
                ("skips", "receipts", "skip"), (SectionNeed.DISPATCH,)),
    SectionSpec("dispatch", 11, "Dispatch", "dispatch:dispatch_section", (),
                (SectionNeed.DISPATCH,)),
    SectionSpec("gaps", 12, "Gaps and checks", "gaps:gaps_section", ("gap", "checks")),
)
SECTION_BY_NAME = {spec.name: spec for spec in SECTIONS}
SECTION_TITLES = {spec.name: spec.title for spec in SECTIONS}
DEFAULT_ORDER = tuple(spec.name for spec in SECTIONS)
_BY_NUMBER = {spec.number: spec.name for spec in SECTIONS}
_ALIASES = {alias: spec.name for spec in SECTIONS for alias in spec.aliases}


def sections_needing(*needs: SectionNeed) -> Tuple[str, ...]:
    """The sections that need any of ``needs``, in the default order."""
    return tuple(spec.name for spec in SECTIONS if set(spec.needs) & set(needs))


#: Sections that show the recommendation and are left out without it.
RECOMMENDATION_SECTIONS = sections_needing(SectionNeed.SET)


def needs_of(names: Sequence[str]) -> Set[SectionNeed]:
    """What these sections need beyond the model and the token counts."""
    return {need for name in names for need in SECTION_BY_NAME[name].needs}


def stored_kinds(names: Sequence[str]) -> List[str]:
    """The stored kinds a guide of these sections keeps (all there: it is computed)."""
    needs = needs_of(names)
    return list(dict.fromkeys(["model", "token-counts", *(
        kind for need, stored in _STORED_KINDS.items() if need in needs for kind in stored)]))


@dataclass
class Problem:
    """One failure, ready to be reported: ``kind`` is the warning subtype."""

    kind: WarningType
    message: str
    command: str = ""
    stderr_tail: str = ""

    def __post_init__(self) -> None:
        self.kind = WarningType(self.kind)  # a bare string must name a known subtype

    def about(self, what: str) -> Problem:
        """This problem, its message now after ``what: ``."""
        self.message = "%s: %s" % (what, self.message)
        return self

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
    """Our errors carry their kind; anything else is an analysis failure (a bug)."""
    if isinstance(exc, CKRootNotFound):  # (the folders searched: the CLI lists them)
        return Problem(exc.kind, str(exc).splitlines()[0])
    if isinstance(exc, FmhaError):
        return Problem(exc.kind, str(exc), exc.command, exc.stderr_tail)
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return Problem(WarningType.CK_ROOT, "%s: %s" % (type(exc).__name__, exc))
    if isinstance(exc, SyntaxError):
        return Problem(WarningType.ANALYSIS,
                       "cannot read the CK tree's Python source: %s" % exc)
    return Problem(WarningType.ANALYSIS, "%s: %s" % (type(exc).__name__, exc))


# --------------------------------------------------------------------------- sections


def parse_sections(spec: Union[str, Sequence[str], None]) -> List[str]:
    """Section names from ``"1,2,fields,5-8"`` (numbers, ranges, names, aliases; None: all)."""
    if spec is None:
        return list(DEFAULT_ORDER)
    items = spec if not isinstance(spec, str) else re.split(r"[,\s]+", spec)
    names: List[str] = []
    for raw in items:
        item = str(raw).strip().lower()
        if not item:
            continue
        span = re.fullmatch(r"(\d+)(?:-(\d+))?", item)
        if item == "all":
            found = list(DEFAULT_ORDER)
        elif span:
            first, last = int(span.group(1)), int(span.group(2) or span.group(1))
            for index in (first, last):
                if index not in _BY_NUMBER:
                    raise OptionError("sections: %s is not a section number (1-%d)"
                                      % (index, len(SECTIONS)))
            if last < first:
                raise OptionError("sections: %s is an empty range" % item)
            found = [_BY_NUMBER[i] for i in range(first, last + 1)]
        else:
            found = [_ALIASES.get(item, item)]
            if found[0] not in SECTION_TITLES:
                raise OptionError("sections: unknown section %r (known: %s, or 1-%d)"
                                  % (item, ", ".join(_BY_NUMBER[i] for i in sorted(_BY_NUMBER)),
                                     len(SECTIONS)))
        names.extend(name for name in found if name not in names)
    if not names:
        raise OptionError("sections: no section given")
    return names


# --------------------------------------------------------------------------- data


def build_date() -> str:
    """``YYYY-MM-DD``: from ``SOURCE_DATE_EPOCH`` when set (reproducible builds)."""
    try:
        stamp = float(os.environ.get("SOURCE_DATE_EPOCH") or time.time())
    except ValueError:
        stamp = time.time()
    return time.strftime("%Y-%m-%d", time.gmtime(stamp))


def source_rel(model: Union[ApiModel, ApiInfo]) -> str:
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
    #: the tiles per problem of each sub-type (with the minimal set's counts when made)
    tile_tables: List[TileTable] = field(default_factory=list)
    #: tokens whose ``*TOKEN*`` selects other kernels too (field reference)
    pattern_traps: List[PatternTrap] = field(default_factory=list)
    #: (kernel class, segment index) -> head-dim token -> its dispatch buckets' bounds
    head_dims: Dict[Tuple[str, int], Dict[str, List[Tuple[int, Optional[int]]]]] = \
        field(default_factory=dict)
    #: the filter mechanism's own runs (write mode without partners, ``--targets``), or why not
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
    #: where the tree drops whole traits, each member's listed file (None: not written) and name
    traits: List[List[Tuple[Optional[str], str]]]
    #: the generate.py listing command before and after ``-f PATTERN``
    command: Tuple[str, str]
    #: how many listed names the grammar does not parse (left out of the playground)
    unparsed: int = 0
    #: kernel file -> the kernel whose name ``-f`` tests in its stead (kept with it)
    followers: Dict[str, str] = field(default_factory=dict)
