"""The kernel model of one FMHA API: plain dataclasses, JSON round-trippable.

Everything here is data derived from a CK tree; nothing in this module knows about
Sphinx or about any particular CK version. ``to_json``/``from_json`` give a stable JSON
form used by the CLI (``sphinxext-fmha analyze --format json``), the caches and the tests.

:class:`ApiModel` is the public JSON schema: each dataclass becomes a JSON object whose
keys are the attribute names (one exception: :attr:`KernelType.class_name` is written
``"class"``); lists stay lists, dicts stay objects, ``None`` is ``null``. File locations
(``where``, ``defined_at``, ``source``) are ``path:line`` relative to the folder of
``generate.py`` unless said otherwise.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

__all__ = [
    "NO_TOKEN",
    "token_list",
    "Gap",
    "Segment",
    "KernelType",
    "FieldInfo",
    "TileField",
    "TileClass",
    "Factory",
    "TileUse",
    "TileRow",
    "TileSource",
    "TileTable",
    "FilterPart",
    "FilterSpec",
    "Followers",
    "SkipCondition",
    "Receipt",
    "DispatchInfo",
    "Baseline",
    "GenerateOption",
    "ApiInfo",
    "ApiModel",
    "TokenCount",
    "SegmentBreakdown",
    "FilterMiss",
    "FilterCheck",
    "PartnerWrite",
    "TargetListing",
    "FilterFacts",
    "Decision",
    "FilterRun",
    "Need",
    "Workload",
    "BuildCost",
    "Recommendation",
    "to_dict",
    "from_dict",
    "to_json",
    "from_json",
]


#: How a page names the empty token (a segment a kernel leaves out of its name).
NO_TOKEN = "(no token)"


_DIGITS = re.compile(r"(\d+)")


def natural(text: str) -> List[Tuple[int, int, str]]:
    """Sort key that orders numbers by value: ``_d32`` < ``_d64`` < ``_d128``."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in _DIGITS.split(text)]


def kept_with_text(kept_with: Mapping[str, Sequence[str]]) -> str:
    """The values a token is kept with, as a sentence names them ("dtype _fp8; mode
    _group")."""
    return "; ".join("%s %s" % (segment, ", ".join(values))
                     for segment, values in kept_with.items())


def token_list(tokens: Sequence[str]) -> str:
    """Tokens as a sentence names them (the empty one as :data:`NO_TOKEN`)."""
    return ", ".join(t if t else NO_TOKEN for t in tokens)


@dataclass
class Gap:
    """Something the analysis could not determine; never guessed silently."""

    #: What is unknown, in a few words.
    what: str
    #: The codegen location it concerns (``path:line``), if any.
    where: str = ""
    #: Why it could not be established.
    why: str = ""
    #: The guide section that needs the fact (``""``: the whole guide).
    section: str = ""
    #: The codegen object it concerns (a factory's name), if one.
    subject: str = ""
    #: What answers it nonetheless, making it a self-check rather than a missing fact:
    #: ``observed`` (generate.py's own run computed it), ``unused`` (generate.py's run
    #: does not use it), ``listing`` (the section's facts come from the listing); ``""``:
    #: nothing does.
    answered: str = ""


@dataclass
class Segment:
    """One labelled part of a kernel name.

    ``tokens`` maps the exact text the segment contributes (leading separator
    included, possibly ``""`` for absent-when-off features) to its meaning.
    ``values`` maps the same tokens to the field values that produce them, one
    dict ``{field path: value}`` per distinct combination seen.
    """

    #: A readable name: the field the segment encodes (``hdim``, ``pad``, ...),
    #: ``literal N`` for text that no field writes.
    label: str
    #: Dotted paths of the kernel-object fields that choose the token
    #: (``F_pipeline.F_bias``); empty for a literal segment.
    fields: List[str] = field(default_factory=list)
    #: ``{token: meaning}`` for every token seen in the listing.
    tokens: Dict[str, str] = field(default_factory=dict)
    #: ``{token: [{field path: value}, ...]}``: the field values that produce each token.
    values: Dict[str, List[Dict[str, str]]] = field(default_factory=dict)
    #: True when no field writes the text (``fmha_bwd``): the same in every kernel name.
    literal: bool = False

    @property
    def constant(self) -> bool:
        """A field segment with one token in this tree (a tile part that is always
        ``_r1x4x1``): labelled, but information, never a keep/drop choice. Computed
        from :attr:`literal` and :attr:`tokens`, so not a JSON key."""
        return not self.literal and len(self.tokens) == 1


@dataclass
class KernelType:
    """A kernel sub-type: a codegen class whose objects become ``.cpp`` files.

    A file name of this sub-type is one token of each of :attr:`segments`, in order,
    then one of :attr:`arch_suffixes`, then ``.cpp``.
    """

    #: The codegen class (JSON key ``"class"``), e.g. ``FmhaFwdKernel``.
    class_name: str
    #: Whether the class is a frozen dataclass.
    frozen: bool
    #: Which ``@``-separated part of ``-f`` filters this sub-type (0 when the pattern is
    #: not split); ``null`` when ``-f`` does not filter it.
    filter_position: Optional[int]
    #: How many kernel files generate.py lists for this sub-type.
    count: int
    #: Suffixes between the name and ``.cpp`` (``_gfx9``); ``[""]`` when there are none.
    arch_suffixes: List[str] = field(default_factory=list)
    #: The parts of the kernel name, in order.
    segments: List[Segment] = field(default_factory=list)
    #: One real file name of this sub-type, from the listing.
    example: str = ""
    #: :attr:`example`'s kernel name cut by the grammar, one token per segment (empty
    #: when it cannot be cut): what the file-name diagram shows.
    example_tokens: List[str] = field(default_factory=list)
    #: Where the class is defined (``path:line``).
    defined_at: str = ""
    #: The class's docstring, if it has one.
    description: str = ""


@dataclass
class FieldInfo:
    """A field of a kernel object that reaches the kernel name."""

    #: Dotted path from the kernel object (``F_pipeline.F_mask``).
    path: str
    #: The sub-types (class names) that have the field.
    kernel_types: List[str] = field(default_factory=list)
    #: The :attr:`Segment.label` of the segment it writes.
    segment: str = ""
    #: Every value observed while generate.py ran, in natural order.
    values: List[str] = field(default_factory=list)
    #: The comment next to the field's declaration.
    comment: str = ""
    #: Where the field is declared (``path:line``).
    defined_at: str = ""
    #: Per sub-type (class name), where its own class declares the field and the comment
    #: there: sub-types of one API may each declare a field of the same path (a split-KV
    #: kernel and its combine kernel both have ``F_hdim``), at different lines.
    defined_at_by_type: Dict[str, str] = field(default_factory=dict)
    comment_by_type: Dict[str, str] = field(default_factory=dict)
    #: The codegen dict or function that maps its values to C++ symbols, if any.
    symbol_map: str = ""
    #: ``{value: C++ symbol}`` from that map.
    cpp_symbols: Dict[str, str] = field(default_factory=dict)
    #: Observed values missing from the map (hard-coded somewhere else).
    hard_coded: List[str] = field(default_factory=list)
    #: A coarse kind of field (``pad``, ``mask``, ``bias``, ...), when known.
    category: str = ""


@dataclass
class TileField:
    """One field of a tile class."""

    #: The field's name.
    name: str
    #: The comment next to its declaration.
    comment: str = ""


@dataclass
class TileClass:
    """A dataclass describing a tile (block sizes and the like) that names itself."""

    #: The class name.
    class_name: str
    #: Where it is defined (``path:line``).
    defined_at: str = ""
    #: The ops module it is imported from, when not defined in the API's own module.
    imported_from: str = ""
    #: Its fields, in declaration order.
    fields: List[TileField] = field(default_factory=list)
    #: The source of its ``name`` property.
    name_source: str = ""
    #: Parts of the name written only under a condition, as source text.
    optional_parts: List[str] = field(default_factory=list)


@dataclass
class Factory:
    """A class or function that hands out the tiles of each data type and head size
    (per architecture in newer trees)."""

    #: The class or function name.
    class_name: str
    #: Its base classes, as source text.
    bases: List[str] = field(default_factory=list)
    #: The GPU architecture it serves, when it serves one.
    arch: str = ""
    #: Where it is defined (``path:line``).
    defined_at: str = ""
    #: The condition under which generate.py uses it, as source text.
    selected_by: str = ""
    #: Data types it has tiles for.
    dtypes: List[str] = field(default_factory=list)
    #: Data types it explicitly has no tiles for.
    unsupported_dtypes: List[str] = field(default_factory=list)
    #: ``{dtype: {head size: [tile, ...]}}``, tiles as source text.
    tiles: Dict[str, Dict[str, List[str]]] = field(default_factory=dict)
    #: ``{tile: source text}``: constructor arguments of a tile that are not plain
    #: numbers (a condition such as ``CppConstraint('...')``), as the source writes them
    #: (else the text of the tile's field that differs from its default).
    tile_notes: Dict[str, str] = field(default_factory=dict)
    #: :attr:`tiles`, :attr:`dtypes` and :attr:`unsupported_dtypes` are what its tile
    #: method returned to generate.py's own run (else: the source's reading).
    observed: bool = False


@dataclass
class TileUse:
    """One tile of a :class:`TileRow`: how many listed kernels use it."""

    #: The tile's part of the kernel name (``b128x64x32_r4x1x1``).
    tile: str
    #: Listed kernels of the row's problem that use it.
    kernels: int = 0
    #: Of those, the kernels of the recommended minimal set (``null``: not computed).
    kept: Optional[int] = None
    #: Whether the factory table read from the source lists it for this row (``null``:
    #: no table read from the source matches this architecture).
    in_source: Optional[bool] = None
    #: The source's condition on the tile (:attr:`Factory.tile_notes`), if any.
    note: str = ""
    #: ``{field: [values]}``: other problem fields (``mode``) whose values, of those the
    #: row's kernels have, the tile is used with only some of.
    only: Dict[str, List[str]] = field(default_factory=dict)


@dataclass
class TileRow:
    """The tiles of one problem (architecture, data type, head dim, ...)."""

    #: ``{column: value}`` for the columns of :attr:`TileTable.columns`.
    keys: Dict[str, str] = field(default_factory=dict)
    tiles: List[TileUse] = field(default_factory=list)


@dataclass
class TileSource:
    """A factory table read from the source, compared with what generate.py produced."""

    factory: str
    #: The architecture whose kernels it was compared with (``""``: no arch suffix).
    arch: str = ""
    defined_at: str = ""
    selected_by: str = ""
    #: (data type, head dim, tile) entries of the table that some listed kernel has.
    matched: int = 0
    #: All (data type, head dim, tile) entries of the table.
    listed: int = 0
    #: Table entries no listed kernel has: ``{"dtype", "hdim", "tile"}``.
    not_generated: List[Dict[str, str]] = field(default_factory=list)
    #: The table is what generate.py's run got from the factory (:attr:`Factory.observed`).
    observed: bool = False


@dataclass
class PatternTrap:
    """A token whose natural pattern ``*TOKEN*`` selects other kernels too: its text
    also occurs elsewhere in their names (``_pagedkv`` in the pipeline ``_qr_pagedkv``,
    ``_ps`` in ``_pssk``). Counted over the sub-type's listed names with generate.py's
    own matching."""

    kernel_type: str
    segment: str
    token: str
    #: kernels of the sub-type that carry the token
    carriers: int
    #: ``*TOKEN*`` and how many of the sub-type's kernels it matches
    loose: str
    loose_count: int
    #: a pattern that matches exactly the carriers (``*TOKEN`` or ``*TOKEN_*``), if any
    exact: str = ""


@dataclass
class TileTable:
    """The tiles one sub-type really has, per problem, from the parsed listing."""

    kernel_type: str
    #: Key columns, in order: ``arch`` (when file names carry one), ``dtype``,
    #: ``hdim``, then other fields that key the tiles.
    columns: List[str] = field(default_factory=list)
    rows: List[TileRow] = field(default_factory=list)
    #: Labels of the name segments that make up a tile.
    tile_segments: List[str] = field(default_factory=list)
    #: The factory table each architecture was compared with.
    sources: List[TileSource] = field(default_factory=list)
    #: Kernels of the sub-type counted.
    kernels: int = 0


@dataclass
class FilterPart:
    """One part of a split ``-f`` pattern."""

    #: 0 for the first part (or the whole pattern when it is not split).
    position: int
    #: The sub-types (class names) whose names this part is matched against.
    applies_to: List[str] = field(default_factory=list)
    #: The pattern fnmatch receives when the user's ``-f`` has no such part (``"*"``,
    #: say); ``null``: the part is then not applied (and always for the first part).
    missing_becomes: Optional[str] = None
    #: The pattern fnmatch receives when the part is given but empty (``""`` matches
    #: no name); ``null``: an empty part is not applied.
    empty_becomes: Optional[str] = None


@dataclass
class Followers:
    """Kernels the codegen generates right after another kernel passed its filter,
    without testing their own names (newer batch_prefill's ``_64bit`` twin of a kernel
    with a small page size): ``-f`` keeps or drops them with that kernel, whatever their
    own names say. Observed: each is made after that kernel's fnmatch call and is not
    generated when every call fails."""

    #: Their sub-type.
    kernel_type: str
    #: The sub-type of the kernels they follow.
    leader_type: str
    #: How many listed kernels follow another one this way.
    count: int = 0
    #: ``{segment label: tokens}`` only these kernels carry: ``-f`` never tests a name
    #: with one of them, so a pattern that requires one selects none of them.
    tokens: Dict[str, List[str]] = field(default_factory=dict)
    #: One of them and the kernel it follows: ``[kernel file, follower file]``.
    example: List[str] = field(default_factory=list)


@dataclass
class FilterSpec:
    """How ``generate.py -f`` reaches fnmatch for this API, as observed."""

    #: The separator that splits ``-f`` into one filter per API (``","``); ``null``
    #: when every API gets the whole pattern.
    cli_split: Optional[str] = None
    #: The separator that splits this API's filter into parts (``"@"``), or ``null``.
    api_split: Optional[str] = None
    #: The parts, by position.
    parts: List[FilterPart] = field(default_factory=list)
    #: What an empty ``-f`` does, when that is known.
    empty_filter: str = ""
    #: What a failed match drops: ``"kernel"`` (that kernel only) or ``"trait"`` (every
    #: kernel generated together with it).
    drops: str = "kernel"
    #: Sub-types that ``-f`` does not filter at all.
    unfiltered_types: List[str] = field(default_factory=list)
    #: Where the filter handling was read (``path:line``).
    source: List[str] = field(default_factory=list)
    #: Sub-type -> the pattern fnmatch receives when this API's filter text is empty
    #: (``-f ''``, or nothing before the first ``cli_split``); ``null``: not applied.
    when_empty: Dict[str, Optional[str]] = field(default_factory=dict)
    #: What ``os.path.normcase`` does to names and patterns in the interpreter that runs
    #: generate.py (fnmatch.fnmatch applies it): lower-case them (Windows), turn ``/``
    #: into ``\\`` (Windows). Both false on POSIX: matching is case-sensitive.
    fnmatch_lowercases: bool = False
    fnmatch_backslashes: bool = False
    #: Kernels generated with another one whose name ``-f`` tests in their stead.
    followers: List[Followers] = field(default_factory=list)


@dataclass
class SkipCondition:
    """A condition under which the codegen leaves out a combination or a kernel."""

    #: The condition, as source text.
    source: str
    #: The condition in words.
    reading: str = ""
    #: Where it is (``path:line``).
    where: str = ""
    #: How it skips: ``continue`` (a loop skips the combination), ``assert``,
    #: ``dispatch`` (generated but never dispatched), ``option``, ``unsupported``.
    kind: str = "continue"


@dataclass
class Receipt:
    """What one ``-r`` receipt value keeps."""

    #: The receipt value (``"2"``), or ``"other"`` for the default branch.
    value: str
    #: Its label (the comment or help text that names it).
    label: str = ""
    #: The conditions it adds, as source text.
    conditions: List[str] = field(default_factory=list)
    #: What it keeps, in words.
    reading: str = ""
    #: Where it is read (``path:line``).
    where: str = ""
    #: Its conditions that no kernel generate.py lists without ``-r`` meets, each as
    #: [condition, the field it tests, the values the listed kernels have there]
    #: (read by ``sphinxext_fmha.analysis.receipts_observed``).
    unmet: List[List[str]] = field(default_factory=list)
    #: When every condition is a term that each kernel generate.py lists without ``-r``
    #: meets, so the rule drops none of them: each term as [condition, the field it
    #: tests, the values the listed kernels have there]; else empty (read there too).
    met: List[List[str]] = field(default_factory=list)
    #: When every condition is a plain term on a kernel field (``dtype in ['fp16',
    #: 'bf16']``): each as [condition, the field it tests, the values it keeps...]; else
    #: empty (read there too).
    terms: List[List[str]] = field(default_factory=list)


@dataclass
class DispatchInfo:
    """How the generated API dispatch file chooses a kernel, read from the codegen."""

    #: What renders the dispatcher (``property FmhaFwdApiPool.api``).
    mechanism: str = ""
    #: Where (``path:line``).
    where: str = ""
    #: The nesting of the dispatch levels, outermost first (``dtype``, ``hdim``, ``trait``).
    order: List[str] = field(default_factory=list)
    #: Sorts that decide the try order, as source text with a reading.
    sorts: List[str] = field(default_factory=list)
    #: What the codegen says about the order of padded and unpadded kernels.
    padding_order: str = ""
    #: Kernels an earlier branch always catches: ``{"what", "why", "where"}`` each.
    unreachable: List[Dict[str, str]] = field(default_factory=list)


@dataclass
class Baseline:
    """The default listing, parsed with the model's file-name segments."""

    #: Kernel files generate.py lists (the API dispatch file left out).
    count: int = 0
    #: How many of them parse as exactly one sub-type.
    parsed: int = 0
    #: Names no sub-type parses.
    unparsed: List[str] = field(default_factory=list)
    #: Names with more than one parse.
    ambiguous: List[str] = field(default_factory=list)


@dataclass
class GenerateOption:
    """One argparse option of generate.py."""

    #: Its flags (``["-f", "--filter"]``).
    flags: List[str]
    #: The argparse destination (``filter``).
    dest: str
    #: The default, as text; ``null`` when there is none.
    default: Optional[str] = None
    #: The help text.
    help: str = ""


@dataclass
class ApiInfo:
    """An API found in ``codegen/ops`` and/or in generate.py's handler table."""

    #: The name ``-a`` takes (``fwd``).
    name: str
    #: The ops module (``fmha_fwd``).
    module: str
    #: Its file, relative to the CK root.
    source: str
    #: Whether generate.py offers it (a module in ``codegen/ops`` may not be wired up).
    in_generate: bool = True


@dataclass
class ApiModel:
    """Everything the analysis established about one API of one CK tree, for one set of
    generate.py options: the JSON that ``sphinxext-fmha analyze --format json`` prints.

    The kernel names come from a real ``generate.py -l`` run and the codegen observed
    while it ran; the rest is read from the codegen's source. What could not be
    established is in :attr:`gaps`.
    """

    #: The API (``fwd``, ``bwd``, ...), as ``generate.py -a`` takes it.
    api: str
    #: Its ops module, relative to the CK root.
    source: str
    #: The generate.py options the model was built with (``mask``, ``receipt``, ...),
    #: as text.
    options: Dict[str, Any] = field(default_factory=dict)
    #: The kernel sub-types and their file-name segments.
    kernel_types: List[KernelType] = field(default_factory=list)
    #: The kernel-object fields that reach a kernel name, by path.
    fields: List[FieldInfo] = field(default_factory=list)
    #: The tile classes.
    tiles: List[TileClass] = field(default_factory=list)
    #: The tile factories.
    factories: List[Factory] = field(default_factory=list)
    #: How ``-f`` filters this API.
    filter: FilterSpec = field(default_factory=FilterSpec)
    #: How the codegen enumerates kernels: ``functions``, ``products`` (the loops),
    #: ``dedup`` (how duplicates are handled).
    enumeration: Dict[str, Any] = field(default_factory=dict)
    #: Conditions that leave combinations out.
    skip_conditions: List[SkipCondition] = field(default_factory=list)
    #: What each ``-r`` value keeps.
    receipts: List[Receipt] = field(default_factory=list)
    #: How the API dispatch file chooses a kernel.
    dispatch: DispatchInfo = field(default_factory=DispatchInfo)
    #: Cross-checks between the source reading, the observation and the listing
    #: (``all_names_parse``, ``listing_matches_observation``, ...).
    checks: Dict[str, Any] = field(default_factory=dict)
    #: What could not be determined.
    gaps: List[Gap] = field(default_factory=list)
    #: The default listing and how much of it the segments parse.
    baseline: Baseline = field(default_factory=Baseline)
    #: ``generate.py -l FILE`` appends to FILE instead of writing it afresh (older
    #: trees): run twice, a listing command lists every kernel twice. Observed by the
    #: probe (a line it put into the file first is still there after the run).
    list_appends: bool = False

    @property
    def fmha_dir(self) -> str:
        """The folder of generate.py relative to the CK root (``example/ck_tile/01_fmha``),
        read from :attr:`source`; computed, so not a JSON key."""
        source = self.source.replace("\\", "/")
        return source.split("/codegen/", 1)[0] if "/codegen/" in source else ""

    def kernel_type(self, class_name: str) -> KernelType:
        """The sub-type of codegen class ``class_name`` (KeyError when there is none)."""
        for kernel_type in self.kernel_types:
            if kernel_type.class_name == class_name:
                return kernel_type
        raise KeyError(class_name)


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
    #: Segments whose tokens the filter drops without naming them.
    side_effects: List[str] = field(default_factory=list)
    #: What the model predicts the filter selects, in all and per sub-type.
    predicted: int = 0
    predicted_per_type: Dict[str, int] = field(default_factory=dict)
    #: The prediction is exactly the listing (and every listed name parses).
    verified: bool = False
    notes: List[str] = field(default_factory=list)
    #: The listed kernel files, sorted.
    files: List[str] = field(default_factory=list)
    #: The written dispatch file was read: how many of its launches name a kernel that
    #: was not generated, the generated kernels no launch reaches, and the kernels in
    #: the order its branches try them.
    dispatch_checked: bool = False
    dispatch_unmatched: int = 0
    dispatch_unreached: List[str] = field(default_factory=list)
    dispatch_order: List[str] = field(default_factory=list)
    #: Sub-types the filter addresses and selects nothing of.
    misses: List[FilterMiss] = field(default_factory=list)
    #: The same ``-f`` wrote its kernels in write mode (``-o`` into a temporary folder):
    #: exactly the listed ones, and its dispatch file links (every kernel specialisation
    #: it instantiates is among them). False when write mode fails, when it names
    #: kernels that were not generated, or when nothing was selected.
    write_verified: bool = False
    #: The write-mode command (``python generate.py ... -o generated``).
    write_command: str = ""
    #: Why write mode failed: the last line of generate.py's error (``AssertionError: 0
    #: matching FmhaFwdSplitKVCombineKernel ...``); ``""`` when it wrote.
    write_error: str = ""
    #: The kernel specialisations (trait keys) the dispatch file instantiates that the
    #: filter does not generate: the build would fail to link. Read from the written
    #: dispatch file; when write mode fails, the partners that the full listing's
    #: dispatch file launches with the selected kernels (of the sub-type with the most
    #: kernels) and that the filter leaves out.
    unresolved: List[str] = field(default_factory=list)
    #: The kernel files of the full listing that define :attr:`unresolved` (the
    #: partners the filter leaves out), and how many per sub-type.
    unresolved_kernels: List[str] = field(default_factory=list)
    unresolved_per_type: Dict[str, int] = field(default_factory=dict)
    #: Kernels whose own names match the pattern but that ``-f`` never tests: they are
    #: generated with another kernel and kept or dropped with it (see
    #: :class:`Followers`).
    untested_matches: int = 0


@dataclass
class PartnerWrite:
    """What generate.py does with a filter that keeps one kernel of the main sub-type
    and none of the kernels one dispatch call launches with it (its partners), where
    each ``@`` part filters its own sub-types on its own: a real filter, listed and
    written (newer CK asserts in ``write_blobs``; older CK writes a dispatch file that
    names the missing kernels)."""

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


@dataclass
class FilterFacts:
    """What the filter mechanism section states beyond the probe, each measured with
    generate.py runs of its own."""

    #: What a filter that keeps a kernel without its partners does (``null``: not
    #: applicable: the parts are not independent, or nothing is launched together).
    partner_write: Optional[PartnerWrite] = None
    #: What ``--targets`` gives, for the guide's targets and for each architecture
    #: family the codegen names that they do not generate (when generate.py has
    #: ``--targets`` and this API's codegen takes them).
    targets: List[TargetListing] = field(default_factory=list)


@dataclass
class Decision:
    """What the minimal set keeps of one segment of one kernel sub-type, read from the
    kernels its commands select (``recommend --format json``: ``decisions[]``)."""

    #: The sub-type (codegen class name).
    kernel_type: str
    #: The segment label (see :class:`Segment`).
    segment: str
    #: The fields that choose the segment's token.
    fields: List[str] = field(default_factory=list)
    #: How the policy treats the segment: ``problem``, ``tile``, ``padding``,
    #: ``optional feature``, ``mask``, ``deterministic``, ``tuning`` or ``other``.
    category: str = "other"
    #: Tokens some kernel of the set carries.
    keep: List[str] = field(default_factory=list)
    #: Tokens of the full listing no kernel of the set carries.
    drop: List[str] = field(default_factory=list)
    #: The policy, as applied.
    reason: str = ""
    #: ``{token: sentence}``: the kernels each token's loss takes away, the inputs that
    #: lose their kernel and the kept kernel that serves them instead, if any.
    losses: Dict[str, str] = field(default_factory=dict)
    #: Tokens kept only together with some values of other segments (the nearest
    #: variant where a problem class has nothing preferred):
    #: ``[{"token": ..., "kept_with": {segment: [tokens]}}]``.
    partial: List[Dict[str, Any]] = field(default_factory=list)
    #: The sub-type this one follows (kept exactly with the kernels of that sub-type the
    #: dispatcher launches it with), or ``""``.
    follows: str = ""
    #: ``{token: facts}`` beside :attr:`losses`, what its first sentence is made from:
    #: ``kernels`` (not generated, said under this token), ``no_kernel``, ``served``,
    #: ``partly``, ``unsettled``, ``unread``, ``never`` (how many of them: their inputs
    #: find no kernel; a kept variant takes them; takes some of them; may take them;
    #: their conditions were not read; the API never launches them), ``calls`` (the
    #: dispatch terms every one of them is reached under and no kept kernel of the
    #: sub-type is: what a call that loses them asks for), ``served_by`` (the kept
    #: tokens that take their inputs), ``follows`` (a follower's main sub-type),
    #: ``elsewhere`` (the dropped values they are said under instead), ``not_needed``
    #: (a value the workload does not name).
    loss_facts: Dict[str, Dict[str, Any]] = field(default_factory=dict)


@dataclass
class FilterRun:
    """One shown ``generate.py -f`` command."""

    #: The ``-f`` value.
    filter: str
    #: The command as the guide shows it.
    command: str
    #: Kernels generate.py lists for it.
    count: int = 0
    #: The model predicted exactly that selection.
    verified: bool = False
    #: The command also succeeded in write mode (``-o`` into a temporary folder).
    written: bool = False
    #: Sub-types the filter addresses and selects nothing of.
    misses: List[FilterMiss] = field(default_factory=list)
    #: What the pattern keeps and excludes, in words (filled where the guide is rendered:
    #: the CLI's JSON and the pages; empty in the cache).
    gloss: str = ""
    #: What the gloss is made from: per ``@`` part and sub-type it filters, ``{"part":
    #: its position, "kernel_type", "pattern": the part's pattern, "stretches": [{"text":
    #: the text between two ``*``, "segments": the labels of the segments whose whole
    #: token it is in every selected name, "brackets": its ``[...]`` and ``?`` pieces,
    #: "place": start, middle or end}], "whole": no ``*`` at all, "selected", "of": its
    #: kernels the part selects, of all, "kept" / "excluded": {segment: [tokens some /
    #: no selected kernel carries]} for the segments it leaves tokens out of (tiles only
    #: where the pattern writes them)}``, read by matching the pattern against the
    #: listed names and cutting them with the model's segments.
    reading: List[Dict[str, Any]] = field(default_factory=list)


@dataclass
class Need:
    """One segment of a workload (``:need: dtype=fp16,bf16``), as understood: the
    workload's calls use exactly these values of it."""

    #: The segment, as the field reference labels it (``dtype``).
    segment: str
    #: The tokens the values name, in the segment's order (``_bf16``, ``_fp16``).
    tokens: List[str] = field(default_factory=list)
    #: The values as given (``fp16``, ``bf16``).
    given: List[str] = field(default_factory=list)
    #: The sub-types that have the segment (class names).
    kernel_types: List[str] = field(default_factory=list)


@dataclass
class Workload:
    """An example workload a guide works out, derived from the tree (never written per
    CK version; ``sphinxext_fmha/verify/examples.py`` says how)."""

    #: How it was chosen: ``common`` (the most common pair of values of the two problem
    #: segments with the most values), ``pairs`` (their two most common values each),
    #: ``receipt`` (the values a ``-r`` receipt's rule keeps, where each of its
    #: conditions tests one field a segment writes).
    kind: str
    needs: List[Need] = field(default_factory=list)
    #: The sub-type whose kernels the values were counted in.
    kernel_type: str = ""
    #: Of its listed kernels, how many carry the values (kind ``common``/``pairs``).
    kernels: int = 0
    #: Kind ``receipt``: the receipt value and its label.
    receipt: str = ""
    label: str = ""


@dataclass
class BuildCost:
    """What compiling a set costs, in the numbers integrators compare, measured from
    what write mode (``generate.py -o``) wrote."""

    #: Kernel ``.cpp`` files the set's write-mode run wrote (one translation unit each;
    #: the API dispatch file is one more).
    kernel_files: int = 0
    #: Bytes of every ``.cpp`` file it wrote (the kernel files and the dispatch file).
    source_bytes: int = 0
    #: The same for the full API (no ``-f``).
    full_kernel_files: int = 0
    full_source_bytes: int = 0


@dataclass
class Recommendation:
    """The minimal kernel set of one API: decisions, commands, counts, link check."""

    api: str
    #: The workload the set is for (``recommend --need``, ``:need:``); empty: the
    #: default minimal set, every value of the problem kept.
    needs: List[Need] = field(default_factory=list)
    #: Combinations of needed values (``{segment: token}``) no kernel of a sub-type that
    #: decides for itself has: the workload's calls with them find no kernel in any set.
    needs_unmet: List[Dict[str, str]] = field(default_factory=list)
    #: Kernels of the full listing the workload's values allow (the kernels whose named
    #: segments carry a needed value, and the partners their dispatch launches): the
    #: universe the policy chose from; 0 without needs.
    workload_count: int = 0
    #: Kernel files and generated source bytes of the set and of the full API, from
    #: their write-mode output; null when either was not written.
    build: Optional[BuildCost] = None
    decisions: List[Decision] = field(default_factory=list)
    #: Every command the guide shows (never truncated).
    runs: List[FilterRun] = field(default_factory=list)
    #: The set the commands are meant to select (the keep set, or the closest
    #: expressible superset when the notes say so).
    keep_count: int = 0
    #: Size of the union of the runs' listings.
    union_count: int = 0
    #: The union equals the keep set and every run was predicted.
    verified: bool = False
    merge_command: str = ""
    merge_caution: str = ""
    #: ``sphinxext-fmha generate`` for the union (one dispatch file).
    driver_command: str = ""
    #: The driver lists exactly the union.
    driver_verified: bool = False
    #: ``{sub-type: {"full": n, "minimal": m}}`` plus ``"total"``; minimal = the union.
    counts: Dict[str, Dict[str, int]] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    #: The driver's write-mode run (``-o``) succeeded and its dispatch file links.
    write_verified: bool = False
    #: Specialisations the set's dispatch file instantiates that no kernel provides.
    links_missing: List[str] = field(default_factory=list)
    #: Kernels of the set no dispatch call reaches.
    links_unreferenced: List[str] = field(default_factory=list)
    #: Kernels of the set launched only by dispatch functions no entry point runs (a
    #: disabled ``fmha_fwd_v3``) -> why: generated, and never run.
    links_unreachable: Dict[str, str] = field(default_factory=dict)
    #: Kernels of the full listing no dispatch call reaches.
    full_unreferenced: List[str] = field(default_factory=list)
    #: kernels of the set the whole set never runs that the set's own dispatch file
    #: reaches (without the dropped kernels its branches are tried in another order)
    reached_only_in_set: List[str] = field(default_factory=list)
    #: Dispatch functions that run kernels in the full build and none in the set ->
    #: the functions whose kernels now take their calls (``fmha_fwd_v3`` ->
    #: ``["fmha_fwd_v2"]``; empty: the calls find no kernel).
    emptied: Dict[str, List[str]] = field(default_factory=dict)
    #: How many kernels the full API never runs: no minimal set has them.
    never_run_left_out: int = 0
    #: ``{sub-type: {tile segment: [tokens]}}``: the tiles the set keeps.
    tiles: Dict[str, Dict[str, List[str]]] = field(default_factory=dict)
    #: The tiles per problem (architecture, data type, head dim), with the kernels the
    #: set keeps of each (``TileUse.kept``).
    tile_tables: List[TileTable] = field(default_factory=list)
    #: How the sub-types are coupled (``""`` when they are not).
    coupling: str = ""


# JSON: the public key for KernelType.class_name is "class".
_RENAMES = {"class_name": "class"}
_RENAMES_BACK = {v: k for k, v in _RENAMES.items()}


def to_dict(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            _RENAMES.get(f.name, f.name): to_dict(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
        }
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    return obj


def _hints(cls: type) -> Dict[str, Any]:
    return typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))


def _build(tp: Any, data: Any) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if data is None:
        return None
    if origin is Union:
        non_none = [a for a in args if a is not type(None)]
        return _build(non_none[0], data) if len(non_none) == 1 else data
    if origin in (list, List):
        return [_build(args[0], v) for v in data] if args else list(data)
    if origin in (dict, Dict):
        return {k: _build(args[1], v) for k, v in data.items()} if args else dict(data)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return from_dict(tp, data)
    return data


def from_dict(cls: type, data: Dict[str, Any]) -> Any:
    hints = _hints(cls)
    kwargs = {}
    for key, value in data.items():
        name = _RENAMES_BACK.get(key, key)
        if name in hints:
            kwargs[name] = _build(hints[name], value)
    return cls(**kwargs)


def to_json(obj: Any, indent: Optional[int] = 2) -> str:
    return json.dumps(to_dict(obj), indent=indent, sort_keys=False, ensure_ascii=False)


def from_json(cls: type, text: str) -> Any:
    return from_dict(cls, json.loads(text))


#: (kernel class, segment index) -> token -> number of listed kernels carrying it.
TokenCounts = Dict[Tuple[str, int], Dict[str, int]]


@dataclass
class ConditionGroup:
    """Kernels of one token that the dispatcher reaches under the same condition.

    ``cpp``/``words``: the condition's terms (empty: no condition of this segment);
    ``where``: for the other segments that shape the condition, the tokens the group
    covers; ``kernels``: how many kernels; ``unreached``: the group is the token's
    kernels that no dispatch branch launches; ``varying``: some of its kernels are
    reached by several branches whose extra conditions differ (those are left out).
    """

    cpp: List[str] = field(default_factory=list)
    words: List[str] = field(default_factory=list)
    where: Dict[str, List[str]] = field(default_factory=dict)
    kernels: int = 0
    unreached: bool = False
    varying: bool = False
    files: List[str] = field(default_factory=list)


@dataclass
class TokenDispatch:
    """``groups``: (kernel class, segment index) -> token -> groups, most kernels first;
    ``shared``: kernel class -> terms (cpp, words) every kernel of the class has;
    ``undetermined``: kernel class -> terms whose text no segment of the name decides;
    ``orders``: (kernel class, segment label) -> the order in which the dispatcher tries
    the segment's tokens among kernels equal in every other segment -> how many such
    sets of kernels follow that order (trait order, padding order, as the file has it)."""

    groups: Dict[Tuple[str, int], Dict[str, List[ConditionGroup]]] = field(default_factory=dict)
    shared: Dict[str, List[Tuple[str, str]]] = field(default_factory=dict)
    undetermined: Dict[str, List[str]] = field(default_factory=dict)
    orders: Dict[Tuple[str, str], Dict[Tuple[str, ...], int]] = field(default_factory=dict)
