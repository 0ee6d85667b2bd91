"""Sub-kernels a dispatch call launches together (split-KV and its combine kernel), which
do not link apart: read from the full API dispatch file, else from the observed traits."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Set

from ..cppapi.matching import main_rank


@dataclass
class Coupling:
    primary: str
    followers: List[str] = field(default_factory=list)
    #: main kernel file -> files launched with it
    partners: Dict[str, Set[str]] = field(default_factory=dict)
    source: str = "dispatch"

    def follow(self, kept_primary: Set[str]) -> Set[str]:
        """The follower kernels the kept main kernels need."""
        return {p for f in kept_primary for p in self.partners.get(f, ())}


def coupling_of(groups: Sequence[Sequence[str]], type_of: Mapping[str, str],
                source: str = "dispatch") -> Optional[Coupling]:
    """``groups``: files launched (or generated) together; ``type_of``: file -> sub-type;
    the primary sub-type is the main kind :func:`.main_rank` ranks first."""
    groups = [[f for f in g if f in type_of] for g in groups]
    groups = [g for g in groups if len({type_of[f] for f in g}) > 1]
    if not groups:
        return None
    coupled = sorted({type_of[f] for g in groups for f in g})
    primary = max(coupled, key=main_rank(groups, type_of.__getitem__, Counter(type_of.values())))
    coupling = Coupling(primary=primary, followers=[t for t in coupled if t != primary],
                        source=source)
    for group in groups:
        mains = [f for f in group if type_of[f] == primary]
        others = {f for f in group if type_of[f] != primary}
        for main in mains:
            coupling.partners.setdefault(main, set()).update(others)
    return coupling
