"""Kernels generated with another kernel whose name ``-f`` tests in their stead (observed
by the probe), summed up per sub-type with the tokens only they carry (``-f`` never sees them)."""

from __future__ import annotations

import functools
from collections import defaultdict
from typing import Dict, List, Mapping, Set, Tuple

from ..model import ApiModel, Followers
from .filenames import parsed_once

__all__ = ["followers_of"]


def followers_of(model: ApiModel, followers: Mapping[str, str], listed: List[str]) -> List[Followers]:
    """``followers``: the probe's {follower file: the file it follows}; ``listed``: the
    unfiltered listing's kernel files (each read as the model's grammars parse it once)."""
    if not followers:
        return []
    parsed = functools.partial(parsed_once, model)
    groups: Dict[Tuple[str, str], List[str]] = defaultdict(list)
    for follower, leader in sorted(followers.items()):
        mine, theirs = parsed(follower), parsed(leader)
        if mine is not None and theirs is not None:
            groups[(mine[0], theirs[0])].append(follower)
    # per sub-type and segment, the tokens of the kernels -f tests
    tested: Dict[Tuple[str, int], Set[str]] = defaultdict(set)
    for found in filter(None, (parsed(f) for f in listed if f not in followers)):
        for index, token in enumerate(found[1]):
            tested[(found[0], index)].add(token)
    result = []
    for (kind, leader_kind), files in sorted(groups.items()):
        labels = [s.label for s in model.kernel_type(kind).segments]
        only: Dict[str, Set[str]] = defaultdict(set)
        for filename in files:
            for index, token in enumerate(parsed(filename)[1]):  # type: ignore[index]
                if token and token not in tested[(kind, index)] and index < len(labels):
                    only[labels[index]].add(token)
        result.append(Followers(kernel_type=kind, leader_type=leader_kind, count=len(files),
                                tokens={k: sorted(v) for k, v in sorted(only.items())},
                                example=[followers[files[0]], files[0]]))
    return result
