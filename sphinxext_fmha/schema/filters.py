"""How ``-f`` is matched: filter parts, followers, and names a pattern can trap."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional


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
