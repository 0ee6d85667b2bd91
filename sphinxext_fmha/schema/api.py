"""The model of one API (:class:`ApiModel`) and the parts not said elsewhere."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .filters import FilterSpec
from .kernels import FieldInfo, Gap, KernelType
from .tile_model import Factory, TileClass


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
    #: An assertion's message, as written (it says why).
    message: str = ""


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
