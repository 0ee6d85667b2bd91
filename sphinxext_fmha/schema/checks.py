"""What a filter selects, as generate.py listed and wrote it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass
class TokenCount:
    """How many kernels carry one token of one segment, before and after a filter."""

    token: str
    meaning: str = ""
    baseline: int = 0
    selected: int = 0


@dataclass
class SegmentBreakdown:
    """One segment of one sub-type: its tokens' kernels before and after a filter, the
    tokens some selected kernel carries (``kept``) and those none does (``dropped``);
    ``side_effect``: the filter drops tokens it does not name."""

    kernel_type: str
    segment: str
    counts: List[TokenCount] = field(default_factory=list)
    kept: List[str] = field(default_factory=list)
    dropped: List[str] = field(default_factory=list)
    side_effect: bool = False


@dataclass
class FilterMiss:
    """A sub-type that a filter's pattern part addresses and selects no kernel of."""

    kernel_type: str
    #: The fnmatch pattern its kernel names meet.
    pattern: str
    #: Its kernels in the unfiltered listing.
    baseline: int = 0
    #: Literal pieces of the pattern that occur in none of its kernel names.
    absent: List[str] = field(default_factory=list)


@dataclass
class Note:
    """A note on a set or a check, as facts (the renderers say it): ``kind`` names what
    happened, ``values`` its numbers and names. A set's kinds: ``api_file_unavailable``
    (``error``), ``conditions_unread`` (``error``), ``superset`` (``extra``: {sub-type: kernels}),
    ``prediction_differs`` (``predicted``, ``claimed``), ``runs_differ`` (``union``,
    ``claimed``, ``missing``, ``extra``), ``write_fails`` (``filter``, ``error``),
    ``driver_differs`` (``driven``, ``union``), ``driver_failed`` and ``write_unread``
    (``error``, ``tail``: the last line of its stderr), ``unlinked`` (``missing``),
    ``written_differs`` (``by``: driver or run, ``written``, ``listed``), ``unfiltered``
    (``types``), ``shared_names`` (``count``). A check's kinds: ``mispredicted``
    (``predicted``, ``selected``, ``only_predicted``, ``only_selected``), ``unparsed``
    (``count``), ``absent`` (``piece``, ``in_suffix``), ``selects_none``,
    ``listing_differs`` (``written``, ``listed``), ``unreached`` (``count``),
    ``write_failed`` (``error``)."""

    kind: str
    values: Dict[str, Any] = field(default_factory=dict)


@dataclass
class FilterCheck:
    """What one ``generate.py -f`` selects, measured and predicted, and what the same
    filter does in write mode."""

    #: The API and the ``-f`` value.
    api: str
    filter: str
    #: The listing command (run in the folder of generate.py).
    command: str
    #: Kernels the filtered listing has, in all and per sub-type.
    count: int = 0
    per_type: Dict[str, int] = field(default_factory=dict)
    #: The same for the unfiltered listing.
    baseline_count: int = 0
    baseline_per_type: Dict[str, int] = field(default_factory=dict)
    #: Per sub-type and segment, each token's kernels before and after the filter.
    breakdown: List[SegmentBreakdown] = field(default_factory=list)
    #: The breakdown's side effects in words (filled where rendered: the CLI).
    side_effects: List[str] = field(default_factory=list)
    #: What the model predicts the filter selects, in all and per sub-type.
    predicted: int = 0
    predicted_per_type: Dict[str, int] = field(default_factory=dict)
    #: The prediction is exactly the listing (and every listed name parses).
    verified: bool = False
    #: :attr:`note_facts` in words (filled where rendered: the CLI).
    notes: List[str] = field(default_factory=list)
    #: What did not go as the model predicts, in order.
    note_facts: List[Note] = field(default_factory=list)
    #: The listed kernel files, sorted.
    files: List[str] = field(default_factory=list)
    #: The written dispatch file was read, and its launches of kernels not generated.
    dispatch_checked: bool = False
    dispatch_unmatched: int = 0
    #: Sub-types the filter addresses and selects nothing of.
    misses: List[FilterMiss] = field(default_factory=list)
    #: The same ``-f`` in write mode (``-o`` into a temporary folder) wrote exactly the
    #: listed kernels and a dispatch file that links. False when write mode fails, names
    #: kernels not generated, or nothing was selected.
    write_verified: bool = False
    #: The write-mode command (``python generate.py ... -o generated``).
    write_command: str = ""
    #: Why write mode failed: the last line of generate.py's error (``AssertionError: 0
    #: matching FmhaFwdSplitKVCombineKernel ...``); ``""`` when it wrote.
    write_error: str = ""
    #: The kernel specialisations (trait keys) the written dispatch file instantiates that
    #: the filter does not generate (the build would not link); when write mode fails,
    #: the partners the full dispatch file launches with the selected main kernels that
    #: the filter leaves out.
    unresolved: List[str] = field(default_factory=list)
    #: The kernel files of the full listing that define :attr:`unresolved` (the
    #: partners the filter leaves out), and how many per sub-type.
    unresolved_kernels: List[str] = field(default_factory=list)
    unresolved_per_type: Dict[str, int] = field(default_factory=dict)
    #: Kernels whose own names match the pattern but that ``-f`` never tests: kept or
    #: dropped with the kernel they are generated with (:class:`Followers`).
    untested_matches: int = 0


@dataclass
class PartnerWrite:
    """What generate.py does with a filter keeping one main kernel and none of the
    partners one dispatch call launches with it (each ``@`` part filtering on its own),
    listed and written (newer CK asserts in ``write_blobs``, older CK writes a dispatch
    file naming the missing kernels)."""

    #: The ``-f`` value, and the write-mode command.
    filter: str
    command: str = ""
    #: The sub-type of the kept kernel, and the sub-types of its partners.
    main_type: str = ""
    partner_types: List[str] = field(default_factory=list)
    #: Kernels the listing (``-l``) selects.
    listed: int = 0
    #: Why write mode failed (its last line), ``""`` when it wrote.
    error: str = ""
    #: Kernel specialisations the written dispatch file instantiates that were not
    #: generated (the build would not link).
    unresolved: int = 0
    #: The same main kernel kept with one of its partners only, written once per partner
    #: (where its partners are of other parts than it: one exact name per part).
    subsets: List[PartnerSubset] = field(default_factory=list)


@dataclass
class PartnerSubset:
    """:class:`PartnerWrite`'s main kernel with one partner kept (``kept``: its kernel
    name) and its other partners left out, written."""

    kept: str
    filter: str
    command: str = ""
    #: Why write mode failed (its last line), ``""`` when it wrote.
    error: str = ""
    #: Kernel specialisations the written dispatch file instantiates, not generated.
    unresolved: int = 0


@dataclass
class TargetListing:
    """The kernels ``generate.py -l`` lists for one ``--targets`` value, by the arch
    suffix of their file names (measured)."""

    #: The ``--targets`` value.
    targets: str
    #: The listing command.
    command: str = ""
    count: int = 0
    #: ``{arch suffix: kernels}`` (``""``: names without one).
    by_suffix: Dict[str, int] = field(default_factory=dict)
    #: The guide's own listing (generate.py's default targets, or the configured ones).
    default: bool = False
    #: The guide's targets with one family added (one whose own listing is empty).
    mixed: bool = False
    #: generate.py refused the value for this API: the last line it said (newest bwd:
    #: ``Exception: Unsupported device target gfx11``); ``""`` when it listed.
    refused: str = ""


@dataclass
class UnwrittenMember:
    """Traits that match a name against one ``@`` part but write no kernel of that name
    (a disabled kernel: newer CK bwd's convert_dq of the ``_maxq`` traits), as the probe
    saw generate.py's fnmatch calls: that part keeps or drops those traits all the same."""

    #: The ``@`` part the name is matched against, and the sub-type of its listed kernels.
    part: int
    sub_type: str
    #: How many traits; one name matched and not written; a kernel file such a trait writes.
    traits: int
    name: str
    written: str


@dataclass
class FilterFacts:
    """What the filter mechanism section states beyond the probe, each measured with
    generate.py runs of its own."""

    #: What a filter keeping a kernel without its partners does (``null``: not applicable).
    partner_write: Optional[PartnerWrite] = None
    #: What ``--targets`` gives for the guide's targets and for each architecture family
    #: the codegen names that they do not generate (where this API takes ``--targets``).
    targets: List[TargetListing] = field(default_factory=list)
    #: Per ``@`` part, the traits that match a name against it and do not write it.
    unwritten: List[UnwrittenMember] = field(default_factory=list)
