"""What one ``-f`` filter selects in two CK trees, as data: ``sphinxext-fmha diff``'s JSON.

A leaf, as :mod:`sphinxext_fmha.guide_data`: the comparison service
(:mod:`sphinxext_fmha.bump`) fills it from verified generate.py runs, the renderers
(:mod:`sphinxext_fmha.render.sections.filter_diff`) say it. Every count is a count of kernel
files generate.py listed; a change is a reason code with its facts, never a sentence
(the JSON's ``text`` of a change and ``gloss`` of a run are filled by the renderer).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

__all__ = ["TreeSelection", "Change", "MigratedRun", "Migration", "FilterComparison",
           "CHANGE_KINDS"]

#: ``Change.kind``, in the order a comparison lists them (docs/json-schema.md says each).
CHANGE_KINDS = ("cli-split", "api-split", "missing-part", "empty-part", "drops", "pattern",
                "type-added", "type-removed", "lost", "gained", "new-only", "old-only", "several",
                "renamed-kernels", "segment-added", "segment-removed", "token-renamed",
                "token-added", "token-removed")


@dataclass
class TreeSelection:
    """What the filter selects in one tree (``old`` or ``new``), from its own generate.py."""

    #: The tree as it was given: a CK root path, or a corpus tree's name.
    tree: str = ""
    #: The ``generate.py -l`` command that listed the selection.
    command: str = ""
    #: Kernels generate.py lists with the filter.
    count: int = 0
    #: The same, per sub-type (codegen class name).
    per_type: Dict[str, int] = field(default_factory=dict)
    #: Kernels it lists without ``-f``, in all and per sub-type.
    all: int = 0
    all_per_type: Dict[str, int] = field(default_factory=dict)
    #: The pattern each sub-type's names meet for this filter here (``null``: not filtered).
    patterns: Dict[str, Optional[str]] = field(default_factory=dict)
    #: How many names of each sub-type that pattern matches (before whole traits drop).
    matched_per_type: Dict[str, int] = field(default_factory=dict)
    #: The separator that splits ``-f`` per API, and this API's filter into parts.
    cli_split: Optional[str] = None
    api_split: Optional[str] = None
    #: The sub-types each part filters, by position (one part when not split).
    parts: List[List[str]] = field(default_factory=list)
    #: What a failed match drops: ``kernel`` or ``trait``.
    drops: str = "kernel"
    #: The model predicted exactly this listing.
    verified: bool = False
    #: The run succeeded in write mode (``-o``; not run when nothing is selected).
    written: bool = False
    #: Its dispatch file links: it instantiates no kernel the run does not generate.
    links: bool = False


@dataclass
class Change:
    """One reason the two selections differ (``kind``: one of ``CHANGE_KINDS``)."""

    kind: str
    #: The sub-type it concerns (codegen class name), if one.
    kernel_type: str = ""
    #: The name segment (its label), for segment and token changes.
    segment: str = ""
    #: The old and the new separator, pattern, part or token (``null``: none, not filtered).
    old: Optional[str] = None
    new: Optional[str] = None
    #: For ``pattern``: where each tree takes it from (``whole``, ``part``, ``missing``,
    #: ``empty``, ``unfiltered``).
    old_how: str = ""
    new_how: str = ""
    #: The part position (0 first) each tree reads, for ``pattern`` and part changes.
    old_part: Optional[int] = None
    new_part: Optional[int] = None
    #: The field values of a token or segment; for ``several``, those that tell the
    #: counterparts apart (``arch``: the file names' arch suffixes).
    values: Dict[str, List[str]] = field(default_factory=dict)
    #: Kernels concerned (the selected ones, for kernel changes).
    count: int = 0
    #: For ``new-only`` and ``old-only``: every such kernel of the sub-type.
    total: int = 0
    #: The change in words (filled by the renderer, for the JSON).
    text: str = ""
    #: A few of the kernel files concerned.
    examples: List[str] = field(default_factory=list)


@dataclass
class MigratedRun:
    """One ``-f`` run for the new tree of the migrated set."""

    filter: str
    command: str = ""
    #: Kernels generate.py lists for it, in all and per sub-type.
    count: int = 0
    per_type: Dict[str, int] = field(default_factory=dict)
    #: The model predicted exactly this listing and write mode succeeded.
    verified: bool = False
    #: Write mode (``-o``) succeeded.
    written: bool = False
    #: The pattern each sub-type's names meet in this run (``null``: not filtered).
    patterns: Dict[str, Optional[str]] = field(default_factory=dict)
    #: ``{sub-type: {segment: [tokens]}}`` for the partly selected sub-types: the fewest
    #: segments whose kept tokens tell its kernels from the others.
    kept: Dict[str, Dict[str, List[str]]] = field(default_factory=dict)
    #: Sub-types whose selected kernels those segments do not tell exactly.
    loose: List[str] = field(default_factory=list)
    #: What the run keeps, in words (filled by the renderer).
    gloss: str = ""


@dataclass
class Migration:
    """The fewest ``-f`` runs for the new tree that select the old selection's kernels."""

    runs: List[MigratedRun] = field(default_factory=list)
    #: ``same`` (the old set exactly), ``changed`` (kernels removed, added or doubled) or
    #: ``impossible`` (it cannot be selected or written).
    verdict: str = "same"
    #: Selected old kernels (old files) with no counterpart in the new tree.
    missing: List[str] = field(default_factory=list)
    #: New kernels the runs select that are no counterpart (forced: whole traits, shared names).
    extra: List[str] = field(default_factory=list)
    #: How many of :attr:`extra` each sub-type has.
    extra_per_type: Dict[str, int] = field(default_factory=dict)
    #: The counterparts of the old selection (what the runs are meant to select).
    target: int = 0
    #: Kernels the runs select together (the union of their listings).
    count: int = 0
    #: The union is the target plus :attr:`extra`, and every run is verified.
    verified: bool = False
    #: The runs' kernels written together link (no dispatch of a kernel not generated).
    links: bool = False
    #: ``sphinxext-fmha generate`` for the union (several runs only).
    driver_command: str = ""
    #: The runs are the filter itself (it selects the target in the new tree).
    unchanged_filter: bool = False
    #: A run generate.py refused in write mode: the last line of its stderr.
    write_error: str = ""
    #: Why generate.py refused to write the counterparts alone (its last stderr line),
    #: when the runs add the kernels the dispatch launches with them.
    refused: str = ""


@dataclass
class FilterComparison:
    """``sphinxext-fmha diff``: one filter in an old and a new CK tree."""

    api: str
    filter: str
    #: The generate.py options both trees were run with, as text.
    options: Dict[str, str] = field(default_factory=dict)
    old: TreeSelection = field(default_factory=TreeSelection)
    new: TreeSelection = field(default_factory=TreeSelection)
    #: Each selected old kernel has one counterpart, and the new selection is those.
    same: bool = False
    #: Why the selections differ, in ``CHANGE_KINDS`` order.
    changes: List[Change] = field(default_factory=list)
    migrated: Migration = field(default_factory=Migration)
