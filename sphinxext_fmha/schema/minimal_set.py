"""The minimal set: decisions per segment, commands, workloads and build cost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .checks import FilterMiss, Note
from .tile_model import TileTable


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
    #: The policy as applied, in words (filled where rendered: the CLI's JSON), made from
    #: :attr:`category`, :attr:`follows` and the facts below.
    reason: str = ""
    #: Where a problem class has no preferred variant and its nearest is kept: ``""``
    #: (nowhere), ``applied``, or ``keeps_every_kernel`` (none of the segment dropped).
    nearest: str = ""
    #: Tokens the policy keeps that the verified commands do not select.
    unselected: List[str] = field(default_factory=list)
    #: Dropped tokens none of whose kernels the full API ever runs.
    never_run: List[str] = field(default_factory=list)
    #: Dropped tokens of a segment kept whole that the other segments' rules drop.
    unkept: List[str] = field(default_factory=list)
    #: ``{token: sentence}``: the kernels each token's loss takes away, the inputs that lose
    #: their kernel and the kept one serving them instead (filled where rendered).
    losses: Dict[str, str] = field(default_factory=dict)
    #: ``{token: parts}`` each sentence of :attr:`losses` says: ``kernels`` (said under this
    #: token), ``more`` and ``elsewhere`` (the others, said under those dropped values),
    #: ``clauses`` (``[{"kind": unread, no_kernel, partly, served or never, "count",
    #: "stand_ins": the kept variants taking the calls, each by its tokens, "only": under
    #: which terms, "terms": the calls no kept kernel takes, "why": why never launched}]``);
    #: a follower's:
    #: ``follows``, ``of`` and ``kept_with`` (a partial keep's values).
    loss_parts: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    #: Tokens kept only with some values of other segments (the nearest variant where a
    #: problem class has nothing preferred): ``[{"token", "kept_with": {segment: [tokens]}}]``.
    partial: List[Dict[str, Any]] = field(default_factory=list)
    #: The sub-type this one follows (kept exactly with the kernels of that sub-type the
    #: dispatcher launches it with), or ``""``.
    follows: str = ""
    #: ``{token: facts}`` its first sentence is made from: ``kernels`` (said under this
    #: token); how many of them ``no_kernel`` (their inputs find none), ``served`` (a kept
    #: variant takes them), ``partly`` (some), ``unsettled`` (may), ``unread`` (conditions
    #: not read), ``never`` (never launched); ``calls`` (the dispatch terms all of them and
    #: no kept kernel of the sub-type are reached under: what a call losing them asks
    #: for), ``served_by`` (the kept variants taking their inputs, each by its tokens),
    #: ``follows`` (a follower's main sub-type), ``elsewhere`` (the dropped values they are
    #: said under instead), ``not_needed`` (a value the workload does not name).
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
    #: What the pattern keeps and excludes, in words (filled where rendered).
    gloss: str = ""
    #: What the gloss is made from, per ``@`` part and sub-type it filters: ``{"part",
    #: "kernel_type", "pattern", "stretches": [{"text": between two ``*``, "segments": the
    #: labels of the segments whose whole token it is in every selected name, "brackets":
    #: its ``[...]`` and ``?`` pieces, "place": start, middle or end}], "whole": no ``*``,
    #: "selected", "of": its kernels selected, of all, "kept" / "excluded": {segment:
    #: [tokens some / no selected kernel carries]} where it leaves tokens out (tiles only
    #: where the pattern writes them)}``.
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
    #: Kind ``common``: how many pairs have that many kernels (the first in the
    #: segments' order is taken; more than one means the choice is a tie).
    ties: int = 1
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
    #: Kernels of the full listing the workload's values allow (and the partners their
    #: dispatch launches): what the policy chose from; 0 without needs.
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
    #: Why the runs' dispatch files do not serve their union, in words (filled where
    #: rendered, for several runs).
    merge_caution: str = ""
    #: ``sphinxext-fmha generate`` for the union (one dispatch file).
    driver_command: str = ""
    #: The driver lists exactly the union.
    driver_verified: bool = False
    #: ``{sub-type: {"full": n, "minimal": m}}`` plus ``"total"``; minimal = the union.
    counts: Dict[str, Dict[str, int]] = field(default_factory=dict)
    #: :attr:`note_facts` in words (filled where rendered).
    notes: List[str] = field(default_factory=list)
    #: What did not go as the policy meant, in order.
    note_facts: List[Note] = field(default_factory=list)
    #: The driver's write-mode run (``-o``) succeeded and its dispatch file links.
    write_verified: bool = False
    #: Specialisations the set's dispatch file instantiates that no kernel provides.
    links_missing: List[str] = field(default_factory=list)
    #: Kernels of the set no dispatch call reaches.
    links_unreferenced: List[str] = field(default_factory=list)
    #: Kernels of the set launched only by dispatch functions no entry point runs (a
    #: disabled ``fmha_fwd_v3``) -> why, as facts (one per leaf launching it, see
    #: ``unreachable_kernels`` in ``cppapi/link_check.py``).
    unreachable_facts: Dict[str, List[Dict[str, Any]]] = field(default_factory=dict)
    #: :attr:`unreachable_facts` in words, kernel -> why (filled where rendered).
    links_unreachable: Dict[str, str] = field(default_factory=dict)
    #: Kernels of :attr:`unreachable_facts` whose file names differ from a kernel the set
    #: runs only in the arch suffix (the value), which ``-f`` does not see.
    arch_namesakes: Dict[str, str] = field(default_factory=dict)
    #: Kernels of the full listing no dispatch call reaches.
    full_unreferenced: List[str] = field(default_factory=list)
    #: kernels of the set the whole set never runs that the set's own dispatch file
    #: reaches (without the dropped kernels its branches are tried in another order)
    reached_only_in_set: List[str] = field(default_factory=list)
    #: Dispatch functions that run kernels in the full build and none in the set ->
    #: the functions whose kernels now take their calls (``fmha_fwd_v3`` ->
    #: ``["fmha_fwd_v2"]``; empty: the calls find no kernel).
    emptied: Dict[str, List[str]] = field(default_factory=dict)
    #: Each function of :attr:`emptied` -> [how many of the kernels it ran ran calls that
    #: run no kernel in the set (the functions that take its calls have none for them),
    #: how many kernels it ran].
    emptied_lost: Dict[str, List[int]] = field(default_factory=dict)
    #: Of the kernels the full API never runs, how many the commands leave out ...
    never_run_left_out: int = 0
    #: ... and how many they select all the same (``-f`` cannot tell them apart) ...
    never_run_selected: int = 0
    #: ... of which how many the set's own dispatch file runs (calls the dropped kernels
    #: ran in the full build reach them) ...
    never_run_reached: int = 0
    #: ... and of those, how many ran calls that, without that one kernel, the set's
    #: dispatch would run no kernel for; of the others (the set runs them neither), the
    #: names of how many equal kept kernels' but for the arch suffix.
    never_run_needed: int = 0
    never_run_namesakes: int = 0
    #: The tiles per problem (architecture, data type, head dim), with the kernels the
    #: set keeps of each (``TileUse.kept``).
    tile_tables: List[TileTable] = field(default_factory=list)
    #: How the sub-types are coupled, in words (``""``: they are not; filled where rendered).
    coupling: str = ""
    #: The coupling it says: ``{"followers": [sub-types launched with the primary's
    #: kernels], "primary": sub-type, "source": "dispatch" (the API dispatch file) or
    #: "traits" (the observed traits), "unfiltered": the followers ``-f`` never filters}``,
    #: read from the full API dispatch file ``"launched"`` (the primary's kernels it
    #: launches) and ``"without"`` ({follower: how many of them are launched without one}),
    #: and from the set's written dispatch file ``"unused"`` ({follower: its kernels in the
    #: set no call launches}); empty when the sub-types are not coupled.
    coupled: Dict[str, Any] = field(default_factory=dict)
