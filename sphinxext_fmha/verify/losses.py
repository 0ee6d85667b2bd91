"""What the minimal set loses: per dropped token, one clause per group of its kernels
with the same :class:`~.standins.Fate` (who takes their calls, or why they never ran),
and the dispatch terms a call that loses it asks for (:func:`note_call_terms`)."""

from __future__ import annotations

import json
from collections import Counter
from typing import AbstractSet, Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ..model import Decision
from ..schema.token_dispatch import Condition
from .standins import Fate
from .synthesis import Kernel


def describe_losses(decisions: Sequence[Decision], kernels: Sequence[Kernel], kept: Set[str],
                    categories: Mapping[Tuple[str, str], str],
                    conditions: Mapping[str, Sequence[Condition]], labels: Mapping[str, List[str]],
                    fates: Mapping[str, Fate] = {},  # noqa: B006 - read only
                    never_run: Mapping[str, List[Dict[str, Any]]] = {},  # noqa: B006 - read only
                    ) -> None:
    """Fill ``decision.loss_parts`` (token -> what its sentence says) for each token
    with lost kernels (a follower's: :attr:`Decision.follows`). ``labels``: sub-type -> its
    segment labels; ``fates``: dropped file -> its :class:`~.standins.Fate` (none without
    a dispatch file); ``never_run``: kernel file -> why the full API never launches it."""
    by_type: Dict[str, List[Kernel]] = {}
    for kernel in kernels:
        by_type.setdefault(kernel.kernel_type, []).append(kernel)
    #: sub-type -> its kernels not kept, each with the segments whose token no kept kernel has
    dropped_per_type: Dict[str, List[Tuple[Kernel, Tuple[int, ...]]]] = {}
    only_with = _kept_only_with(decisions, labels)
    by_file = {k.file: k for k in kernels}
    for decision in decisions:
        own = by_type.get(decision.kernel_type, [])
        seg_labels = labels[decision.kernel_type]
        index = seg_labels.index(decision.segment)
        if decision.follows:
            for token in decision.drop:
                count = sum(1 for k in own if k.tokens[index] == token)
                decision.loss_facts[token] = {"kernels": count, "follows": decision.follows}
                decision.loss_parts[token] = dict(decision.loss_facts[token])
            for partial in decision.partial:
                token = partial["token"]
                carrying = [k for k in own if k.tokens[index] == token]
                lost = sum(1 for k in carrying if k.file not in kept)
                if lost:
                    decision.loss_facts[token] = {"kernels": lost, "of": len(carrying),
                                                  "follows": decision.follows}
                    decision.loss_parts[token] = dict(decision.loss_facts[token],
                                                      kept_with=partial["kept_with"])
            continue
        # A tile none of the kept kernels has is lost as any other value (newer CK has
        # tiles only some features use).
        tiles = {i for i, label in enumerate(seg_labels)
                 if categories.get((decision.kernel_type, label)) == "tile"}
        dropped = dropped_per_type.get(decision.kernel_type)
        if dropped is None:
            kept_own = [k.tokens for k in own if k.file in kept]
            kept_tokens = [{tokens[i] for tokens in kept_own} for i in range(len(seg_labels))]
            limits = only_with.get(decision.kernel_type, {})
            dropped = dropped_per_type[decision.kernel_type] = [
                (k, tuple(i for i, t in enumerate(k.tokens) if t not in kept_tokens[i]
                          or not within(k, limits.get((i, t)))))
                for k in own if k.file not in kept]
        # per token, the dropped kernels that carry it; one carrying it where the set keeps
        # it (a pad kept only with mode _group) is lost for its other dropped values. One
        # with several is lost for the value a call asks for (a rope kernel that pads fully
        # is lost with rope): said under its values of the highest rank, the others name
        # those values.
        ranks = [_rank(categories.get((decision.kernel_type, label))) for label in seg_labels]
        total_of: Counter = Counter()
        alone_of: Dict[str, List[Kernel]] = {}
        said_under: Dict[str, Dict[str, None]] = {}  # token -> the values said instead
        for kernel, missing in dropped:
            if missing and index not in missing:
                continue
            token = kernel.tokens[index]
            total_of[token] += 1
            first = min(ranks[i] for i in missing) if missing else ranks[index]
            if not missing or missing == (index,) or ranks[index] == first:
                alone_of.setdefault(token, []).append(kernel)
            else:
                for i in missing:
                    if ranks[i] == first:
                        said_under.setdefault(token, {})[kernel.tokens[i]] = None
        for token in list(decision.drop) + [p["token"] for p in decision.partial]:
            alone = alone_of.get(token, [])
            total = total_of[token]
            elsewhere = list(said_under.get(token, {}))
            if not alone:
                if token in decision.drop:
                    decision.loss_facts[token] = {"kernels": total, "elsewhere": elsewhere}
                    decision.loss_parts[token] = dict(decision.loss_facts[token])
                continue
            facts = decision.loss_facts.setdefault(token, {})
            decision.loss_parts[token] = _clauses(alone, total, index, tiles, by_file, fates,
                                                  conditions, never_run, elsewhere, facts)


#: what a call asks for (a feature, a mask, the problem): a kernel that lacks one of
#: these is lost for it first; then its sizes (padding); tuning, tiles and the rest last
_ASKED = ("subject", "problem", "optional feature", "mask", "deterministic")


def _rank(category: Optional[str]) -> int:
    return 0 if category in _ASKED else 1 if category == "padding" else 2


def _kept_only_with(decisions: Sequence[Decision], labels: Mapping[str, List[str]]
                    ) -> Dict[str, Dict[Tuple[int, str], Dict[int, Set[str]]]]:
    """sub-type -> (segment index, token) -> the values of other segments (by index) the
    set keeps that token with only (a pad kept only with mode _group): outside them the
    token is a dropped value too."""
    found: Dict[str, Dict[Tuple[int, str], Dict[int, Set[str]]]] = {}
    for decision in decisions:
        seg_labels = labels.get(decision.kernel_type, [])
        if decision.segment not in seg_labels:
            continue
        index = seg_labels.index(decision.segment)
        for partial in decision.partial:
            where = {seg_labels.index(label): set(values)
                     for label, values in (partial.get("kept_with") or {}).items()
                     if label in seg_labels}
            if where:
                found.setdefault(decision.kernel_type, {})[(index, partial["token"])] = where
    return found


def within(kernel: Kernel, where: Optional[Mapping[int, Set[str]]]) -> bool:
    """Whether the kernel has one of the values ``where`` names at each of its segments
    (segment index -> values); no such values: yes."""
    return not where or all(kernel.tokens[i] in values for i, values in where.items())


#: The stand-in of kernels whose fate is not read (no dispatch file).
_UNREAD = ("?",)
_LOST = ("lost",)


def _clauses(alone: Sequence[Kernel], total: int, index: int, tiles: AbstractSet[int],
             by_file: Mapping[str, Kernel], fates: Mapping[str, Fate],
             conditions: Mapping[str, Sequence[Condition]],
             never_run: Mapping[str, List[Dict[str, Any]]], elsewhere: Sequence[str],
             facts: Dict[str, object]) -> Dict[str, object]:
    """What the sentence says (``Decision.loss_parts``): one clause per group of kernels
    with the same fate; ``facts`` gets how many kernels each kind of clause says."""
    said: Counter = Counter()
    groups: Counter = Counter()
    # why the API never launches them (facts, keyed by their JSON) -> how many
    idle: Dict[str, Tuple[Any, int]] = {}
    orphans: List[Kernel] = []  # no kept kernel takes any of their calls
    for kernel in alone:
        fate = fates.get(kernel.file)
        why = list(fate.never) if fate is not None and fate.never else never_run.get(kernel.file)
        if why:
            key = json.dumps(why, sort_keys=True)
            idle[key] = (why, idle[key][1] + 1 if key in idle else 1)
            continue
        if fate is None:
            groups[(_UNREAD, (), ())] += 1
            continue
        if not fate.stand_ins:
            groups[((), (), _LOST)] += 1
            orphans.append(kernel)
            continue
        # (a leaf launches partners too: the stand-ins are the kernels of this sub-type)
        others = [by_file[s] for s in fate.stand_ins if s in by_file
                  and by_file[s].kernel_type == kernel.kernel_type]
        # each stand-in is named by its token here, then every other it differs in but
        # tiles; every one is said (each runs some of the calls)
        named = tuple(dict.fromkeys(
            (other.tokens[index], *(c for i, (c, t) in enumerate(zip(other.tokens, kernel.tokens))
                                    if c != t and i != index and i not in tiles))
            for other in others)) or ((fate.stand_ins[0],),)
        groups[(named, fate.only_when if fate.lost else (), _LOST if fate.lost else ())] += 1
    clauses: List[Dict[str, object]] = []
    for (stand_in, only, lost), count in groups.items():
        kind = ("unread" if stand_in == _UNREAD else "no_kernel" if not stand_in
                else "partly" if lost else "served")
        said[kind] += count
        clause: Dict[str, object] = {"kind": kind, "count": count}
        if kind in ("served", "partly"):
            clause.update(stand_ins=[list(variant) for variant in stand_in], only=list(only))
        elif kind == "no_kernel":
            clause["terms"] = _own_terms(orphans, index, conditions)
        clauses.append(clause)
    for why, count in idle.values():
        clauses.append({"kind": "never", "count": count, "why": why})
        said["never"] += count
    counts = {"kernels": len(alone), "more": total - len(alone), "elsewhere": list(elsewhere)}
    facts.update(counts, **said)
    return dict(counts, clauses=clauses)


def _own_terms(alone: Sequence[Kernel], index: int,
               conditions: Mapping[str, Sequence[Condition]]) -> List[Condition]:
    """The conditions every one of these kernels has (what identifies their inputs)."""
    first = conditions.get(alone[0].file, ()) if alone else ()
    common = set(first).intersection(*(conditions.get(k.file, ()) for k in alone[1:]))
    return [t for t in first if t in common]


def note_call_terms(decisions: Sequence[Decision], kernels: Sequence[Kernel], kept: Set[str],
                    conditions: Mapping[str, Sequence[Condition]],
                    labels: Mapping[str, List[str]]) -> None:
    """Add ``calls`` to the loss facts of each dropped token that has them."""
    if not conditions:
        return
    kept_terms: Dict[str, Set[Condition]] = {}
    lost: Dict[str, List[Kernel]] = {}
    for kernel in kernels:
        if kernel.file in kept:
            kept_terms.setdefault(kernel.kernel_type, set()).update(
                conditions.get(kernel.file, ()))
        else:
            lost.setdefault(kernel.kernel_type, []).append(kernel)
    for decision in decisions:
        if decision.kernel_type not in labels or decision.follows:
            continue
        index = labels[decision.kernel_type].index(decision.segment)
        theirs = kept_terms.get(decision.kernel_type, set())
        # per token, the terms every lost kernel with it has (None: one has none)
        common: Dict[str, Optional[List[Condition]]] = {}
        for kernel in lost.get(decision.kernel_type, ()):
            token = kernel.tokens[index]
            facts = decision.loss_facts.get(token)
            if facts is None or facts.get("not_needed") or facts.get("follows"):
                continue
            terms = conditions.get(kernel.file, ())
            if token not in common:
                common[token] = list(terms) if terms else None
            elif common[token] is not None:
                mine = set(terms)
                common[token] = [t for t in common[token] or () if t in mine] if mine else None
        for token, shared in common.items():
            if shared is not None:
                decision.loss_facts[token]["calls"] = [t for t in shared if t not in theirs]
