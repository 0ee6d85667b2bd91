"""The model of one API (:class:`ApiModel`), the model stage's artifact: its kernel
sub-types, their name segments and fields, how ``-f`` is matched, and the gaps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .tile_model import Factory, TileClass


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


@dataclass
class Segment:
    """One labelled part of a kernel name: its tokens are the exact text it contributes
    (leading separator included; ``""`` for a feature absent when off)."""

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
        """A field segment with one token in this tree (a tile part always ``_r1x4x1``):
        information, never a keep/drop choice (no JSON key)."""
        return not self.literal and len(self.tokens) == 1


@dataclass
class KernelType:
    """A kernel sub-type: a codegen class whose objects become ``.cpp`` files, named by
    one token of each of :attr:`segments`, one of :attr:`arch_suffixes`, then ``.cpp``."""

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
    #: there (a split-KV kernel and its combine kernel both declare ``F_hdim``).
    defined_at_by_type: Dict[str, str] = field(default_factory=dict)
    comment_by_type: Dict[str, str] = field(default_factory=dict)
    #: The codegen dict or function that maps its values to C++ symbols, if any.
    symbol_map: str = ""
    #: ``{value: C++ symbol}`` from that map.
    cpp_symbols: Dict[str, str] = field(default_factory=dict)
    #: Observed values missing from the map (hard-coded somewhere else).
    hard_coded: List[str] = field(default_factory=list)
    #: The same per sub-type (class name), of that sub-type's own values: sub-types that
    #: share a field name need not share its values (``F_dvpad`` is ``0``/``1``/``8`` in
    #: one bwd sub-type, ``t``/``f`` in another).
    hard_coded_by_type: Dict[str, List[str]] = field(default_factory=dict)
    #: A coarse kind of field (``pad``, ``mask``, ``bias``, ...), when known.
    category: str = ""


@dataclass
class PatternTrap:
    """A token whose natural pattern ``*TOKEN*`` selects other kernels too (``_ps`` in
    ``_pssk``), counted over the sub-type's listed names with generate.py's matching."""

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
class FilterPart:
    """One part of a split ``-f`` pattern."""

    #: 0 for the first part (or the whole pattern when it is not split).
    position: int
    #: The sub-types (class names) whose names this part is matched against.
    applies_to: List[str] = field(default_factory=list)
    #: The pattern fnmatch receives when ``-f`` has no such part (``"*"``, say); ``null``:
    #: the part is then not applied (always for the first part).
    missing_becomes: Optional[str] = None
    #: The pattern fnmatch receives when the part is empty (``""`` matches no name);
    #: ``null``: an empty part is not applied.
    empty_becomes: Optional[str] = None


@dataclass
class Followers:
    """Kernels the codegen generates right after another kernel passed its filter without
    testing their own names (newer batch_prefill's ``_64bit`` twins): ``-f`` keeps or
    drops them with that kernel. Observed: none is generated when every call fails."""

    #: Their sub-type.
    kernel_type: str
    #: The sub-type of the kernels they follow.
    leader_type: str
    #: How many listed kernels follow another one this way.
    count: int = 0
    #: ``{segment label: tokens}`` only these kernels carry (``-f`` never tests a name with
    #: one: a pattern requiring one selects none of them).
    tokens: Dict[str, List[str]] = field(default_factory=dict)
    #: One of them and the kernel it follows: ``[kernel file, follower file]``.
    example: List[str] = field(default_factory=list)


@dataclass
class FilterSpec:
    """How ``generate.py -f`` reaches fnmatch for this API, as observed."""

    #: The separator that splits ``-f`` into one filter per API (``","``), or ``null``.
    cli_split: Optional[str] = None
    #: The separator that splits this API's filter into parts (``"@"``), or ``null``.
    api_split: Optional[str] = None
    #: The parts, by position.
    parts: List[FilterPart] = field(default_factory=list)
    #: What a failed match drops: ``"kernel"`` (that one) or ``"trait"`` (every kernel
    #: generated with it).
    drops: str = "kernel"
    #: Sub-types that ``-f`` does not filter at all.
    unfiltered_types: List[str] = field(default_factory=list)
    #: Where the filter handling was read (``path:line``).
    source: List[str] = field(default_factory=list)
    #: Sub-type -> the pattern fnmatch receives when this API's filter text is empty
    #: (``-f ''``, or nothing before the first ``cli_split``); ``null``: not applied.
    when_empty: Dict[str, Optional[str]] = field(default_factory=dict)
    #: What the ``os.path.normcase`` fnmatch applies in generate.py's interpreter does:
    #: lower-case, and turn ``/`` into ``\\`` (Windows); both false on POSIX.
    fnmatch_lowercases: bool = False
    fnmatch_backslashes: bool = False
    #: Kernels generated with another one whose name ``-f`` tests in their stead.
    followers: List[Followers] = field(default_factory=list)


@dataclass
class SkipCondition:
    """A condition under which the codegen leaves out a combination or a kernel."""

    #: The condition, as source text.
    source: str
    #: Where it is (``path:line``).
    where: str = ""
    #: How it skips: ``continue`` (a loop skips the combination), ``assert``,
    #: ``dispatch`` (generated but never dispatched), ``option``, ``unsupported``.
    kind: str = "continue"
    #: An assertion's message or the comment of a rule function, as written (it says why).
    message: str = ""
    #: A ``rule`` (a function a rule list hands out, or a method of a rule class): its
    #: name (``Class.get_rules.check_x``), each ``return`` as ``[conditions leading to
    #: it, value]`` (source; the first that holds decides), and the class whose rules
    #: the list extends.
    name: str = ""
    returns: List[List[str]] = field(default_factory=list)
    extends: str = ""


@dataclass
class Receipt:
    """What one ``-r`` receipt value keeps."""

    #: The receipt value (``"2"``), or ``"other"`` for the default branch.
    value: str
    #: Its label (the comment or help text that names it).
    label: str = ""
    #: The conditions it adds, as source text (``X (when G)``: X where G holds).
    conditions: List[str] = field(default_factory=list)
    #: Where it is read (``path:line``).
    where: str = ""
    #: How the codegen reads it: ``branch`` (a branch of a loop over the kernels),
    #: ``other`` (that chain's ``else``), ``rule``/``rule-other`` (a rule object a
    #: function returns), ``unreferenced`` (the help names it, no branch tests it).
    kind: str = "branch"
    #: The function that reads it.
    function: str = ""
    #: The name the rule object gives itself (or the comment above its branch).
    rule_name: str = ""
    #: What the branch keeps and what it drops, each ``[condition, guard]`` as source
    #: text (``""``: no guard).
    keeps: List[List[str]] = field(default_factory=list)
    drops: List[List[str]] = field(default_factory=list)
    #: The other statements the branch runs, as source text.
    effects: List[str] = field(default_factory=list)
    #: The other conjuncts of the branch's test (``receipt == 2 and mode == "batch"``).
    when: List[str] = field(default_factory=list)
    #: The branch is only ``continue``: it drops the kernels ``when`` holds for.
    skips: bool = False
    #: For ``other``: the values the chain tests before it.
    before: List[str] = field(default_factory=list)
    #: Its conditions no kernel generate.py lists without ``-r`` meets, each as
    #: [condition, the field it tests, the values the listed kernels have there].
    unmet: List[List[str]] = field(default_factory=list)
    #: When every kernel listed without ``-r`` meets every condition (the rule drops none):
    #: each term as [condition, the field it tests, the values the listed kernels have].
    met: List[List[str]] = field(default_factory=list)
    #: When every condition is a plain term on a kernel field (``dtype in ['fp16',
    #: 'bf16']``): each as [condition, the field it tests, the values it keeps...].
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
    generate.py options (``sphinxext-fmha analyze --format json``): kernel names from a
    real ``generate.py -l`` run and the codegen observed while it ran, the rest read from
    the source; what could not be established is in :attr:`gaps`."""

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
    #: ``generate.py -l FILE`` appends to FILE instead of writing it afresh (older trees:
    #: run twice, a listing command lists every kernel twice), as the probe observed.
    list_appends: bool = False

    @property
    def fmha_dir(self) -> str:
        """generate.py's folder relative to the CK root, from :attr:`source` (no JSON key)."""
        source = self.source.replace("\\", "/")
        return source.split("/codegen/", 1)[0] if "/codegen/" in source else ""

    def kernel_type(self, class_name: str) -> KernelType:
        """The sub-type of codegen class ``class_name`` (KeyError when there is none)."""
        for kernel_type in self.kernel_types:
            if kernel_type.class_name == class_name:
                return kernel_type
        raise KeyError(class_name)
