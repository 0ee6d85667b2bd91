"""fnmatch ``-f`` values that select exactly a wanted kernel set: a greedy cover of the
maximal safe boxes (:mod:`.boxes`) grown from each wanted kernel and of name endings,
checked with fnmatch's meaning, joined into ``-f`` values by the tree's
:class:`~sphinxext_fmha.model.FilterSpec` (``@`` parts, whole traits, coupled parts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import AbstractSet, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ..model import ApiModel, Note
from .boxes import (
    NameSet,
    TypeBoxes,
    escape,
    greedy_cover,
    matcher,
    merge_classes,
    tail_globs,
    write_box,
)


@dataclass(frozen=True)
class Kernel:
    """One kernel of the full listing: its file, sub-type, fnmatch name and tokens."""

    file: str
    kernel_type: str
    name: str
    tokens: Tuple[str, ...]


@dataclass
class Style:
    """``literal``: whole tokens and ``*`` only (a reader can check them token by
    token); ``pinned``: per sub-type, the segments a workload names (tried last and
    first); ``loose``: per sub-type, the segments to free first (tiles)."""

    literal: bool = False
    pinned: Mapping[str, AbstractSet[int]] = field(default_factory=dict)
    loose: Mapping[str, AbstractSet[int]] = field(default_factory=dict)


PLAIN = Style()


@dataclass
class Synthesis:
    """The ``-f`` values (one per run) and what they cannot express."""

    filters: List[str] = field(default_factory=list)
    #: unwanted kernels the filters select anyway (unfiltered sub-types, shared names)
    extra: List[str] = field(default_factory=list)
    notes: List[Note] = field(default_factory=list)


def _generalise(kernel: Kernel, order: Sequence[int], unwanted: NameSet) -> str:
    """The seed freed segment by segment (for boxes whose ``*`` reaches an unwanted name)."""
    tokens = kernel.tokens
    pinned = set(range(len(tokens)))
    best = write_box([escape(t) for t in tokens], tokens, False)
    for index in order:
        trial = pinned - {index}
        for boundary in (False, True):
            candidate = write_box([escape(t) if i in trial else None
                                   for i, t in enumerate(tokens)], tokens, boundary)
            # A boundary character can swallow the separator of the next pinned token:
            # a candidate must still match its own kernel.
            if matcher(candidate)(kernel.name) and not unwanted.any_match(candidate):
                pinned, best = trial, candidate
                break
    return best


def cover(kernels: Sequence[Kernel], wanted: Set[str],
          allowed: AbstractSet[str] = frozenset(), style: Style = PLAIN) -> List[str]:
    """Patterns whose fnmatch union over ``kernels`` is exactly the ``wanted`` files,
    give or take ``allowed`` ones: a greedy cover of the maximal safe boxes grown from
    every wanted kernel in two segment orders."""
    wanted_names = sorted({k.name for k in kernels if k.file in wanted})
    if not wanted_names:
        return []
    unwanted_names = sorted({k.name for k in kernels if k.file not in wanted
                             and k.file not in allowed} - set(wanted_names))
    forbidden = NameSet(unwanted_names)
    bits = {name: 1 << index for index, name in enumerate(wanted_names)}
    candidates: Dict[str, int] = {}

    def coverage(pattern: str) -> int:
        found = candidates.get(pattern)
        if found is None:
            match = matcher(pattern)
            found = candidates[pattern] = sum(bits[n] for n in wanted_names if match(n))
        return found

    for group in _by_type(kernels):
        names = {k.name for k in group}
        own = names & set(wanted_names)
        if not own:
            continue
        boxes = TypeBoxes(group, own, names & set(unwanted_names))
        first = _generalise_order(group, {k.file for k in group if k.name in own})
        pinned = [i for i in first if any(boxes.umask[i].values())]
        orders = [first, [i for i in first if i not in pinned] + pinned[::-1]]
        # the segments a workload names: freed last (they stay written when they can), and
        # first (a run per value may be worse than freeing it and pinning another segment)
        named = style.pinned.get(group[0].kernel_type, frozenset())
        if named:
            orders = [[i for i in o if (i in named) == first_named]
                      + [i for i in o if (i in named) != first_named]
                      for first_named in (False, True) for o in orders]
        # tiles first: a reader keys a set by its values, not by the tile only they have
        early = style.loose.get(group[0].kernel_type, frozenset())
        orders = [[i for i in o if i in early] + [i for i in o if i not in early]
                  for o in orders]
        by_name = {k.name: k for k in group}
        for segment_order in orders:
            covered = 0
            for name in boxes.wanted:
                if covered & bits[name]:
                    continue
                seed = by_name[name]
                for strict in (False, True):
                    globs = boxes.grow(seed.tokens, segment_order, strict, style.literal)
                    pattern = write_box(globs, seed.tokens)
                    if matcher(pattern)(name) and not forbidden.any_match(pattern):
                        # Without the separator after a pinned run it may cover more.
                        loose = write_box(globs, ())
                        if loose != pattern and matcher(loose)(name) and not forbidden.any_match(loose):
                            coverage(loose)
                        break
                else:
                    pattern = _generalise(seed, segment_order, forbidden)
                covered |= coverage(pattern)
        if not style.literal:
            for pattern in _tail_candidates([by_name[n] for n in boxes.wanted], forbidden):
                coverage(pattern)
            if named:
                unwanted = [by_name[n] for n in boxes.unwanted]
                for pattern in _named_tails([by_name[n] for n in boxes.wanted], unwanted,
                                            forbidden, sorted(named)):
                    coverage(pattern)
    chosen = greedy_cover(candidates, sum(bits.values()))
    return sorted(chosen if style.literal else merge_classes(chosen, forbidden))


def _named_tails(wanted: Sequence[Kernel], unwanted: Sequence[Kernel], forbidden: NameSet,
                 named: Sequence[int]) -> List[str]:
    """``*_d32_bf16*[dkps][dksv]``: per combination of the named segments' values, an
    ending that tells its names from the unwanted ones with the same values."""
    found: List[str] = []
    groups: Dict[Tuple[str, ...], List[Kernel]] = {}
    for kernel in wanted:
        groups.setdefault(tuple(kernel.tokens[i] for i in named), []).append(kernel)
    for combination, members in groups.items():
        seed = members[0].tokens
        head = write_box([escape(t) if i in named else None for i, t in enumerate(seed)], seed)
        alike = NameSet([k.name for k in unwanted
                         if tuple(k.tokens[i] for i in named) == combination])
        for tail in _tail_candidates(members, alike):
            pattern = head.rstrip("*") + "*" + tail.lstrip("*")
            if not forbidden.any_match(pattern):
                found.append(pattern)
    return found


def _tail_candidates(wanted: Sequence[Kernel], forbidden: NameSet) -> List[str]:
    """Endings across segments: of the names whose last token is in the first segments
    (up to each depth), and of the names ending with one token value."""
    def last(kernel: Kernel) -> int:
        return max((i for i, t in enumerate(kernel.tokens) if t), default=0)

    groups: List[Tuple[List[str], str]] = []
    for depth in sorted({last(k) for k in wanted}):
        groups.append(([k.name for k in wanted if last(k) <= depth], ""))
    for value in sorted({k.tokens[last(k)] for k in wanted}):
        stems = [k.name[:-len(value)] for k in wanted if k.tokens[last(k)] == value]
        groups.append((stems, value))
    found = []
    for stems, suffix in groups:
        if not all(stems):
            continue
        found += [g for g in tail_globs(stems, suffix) if not forbidden.any_match(g)][:1]
    return found


def _generalise_order(kernels: Sequence[Kernel], wanted: Set[str]) -> List[int]:
    """Segments whose tokens all occur among wanted kernels first (free to drop), then
    the others from the first on (the policy segments at the end stay pinned)."""
    every = [set(column) for column in zip(*(k.tokens for k in kernels))]  # (one width)
    own = [set(column) for column in zip(*(k.tokens for k in kernels if k.file in wanted))]
    return sorted(range(len(every)), key=lambda i: (own[i] != every[i], i))


def _part_patterns(kernels: Sequence[Kernel], wanted: Set[str], style: Style = PLAIN
                   ) -> List[str]:
    if not any(k.file in wanted for k in kernels):
        names = {k.name for k in kernels}
        nothing = "_"
        while nothing in names:
            nothing += "_"
        return [nothing]  # matches no kernel name
    if all(k.file in wanted for k in kernels):
        return ["*"]
    # Sub-types sharing the part: a pattern must miss every unwanted name of the part,
    # its own sub-type's and the others' (one pattern may cover wanted kernels of several).
    return cover(kernels, wanted, style=style)


def _by_type(kernels: Sequence[Kernel]) -> List[List[Kernel]]:
    """The kernels per sub-type and number of segments (boxes are drawn in one)."""
    groups: Dict[Tuple[str, int], List[Kernel]] = {}
    for kernel in kernels:
        groups.setdefault((kernel.kernel_type, len(kernel.tokens)), []).append(kernel)
    return list(groups.values())


def synthesize(model: ApiModel, kernels: Sequence[Kernel], wanted: Set[str],
               primary: Optional[str] = None,
               partners: Optional[Mapping[str, Set[str]]] = None,
               narrow_followers: bool = True, style: Style = PLAIN) -> Synthesis:
    """``-f`` values selecting ``wanted`` under ``model.filter``'s semantics. ``primary``:
    the sub-type whose patterns decide where whole traits drop, and for coupled parts;
    ``partners``: main kernel file -> files launched with it; ``narrow_followers``: with
    trait dropping, the other parts get a pattern rather than ``*``."""
    spec = model.filter
    result = Synthesis()
    unfiltered = set(spec.unfiltered_types)
    result.extra = sorted(k.file for k in kernels
                          if k.kernel_type in unfiltered and k.file not in wanted)
    if result.extra:
        result.notes.append(Note("unfiltered", {"types": sorted(
            {k.kernel_type for k in kernels if k.file in result.extra})}))
    wanted_names = {k.name for k in kernels if k.file in wanted}
    shared = {k.file for k in kernels if k.file not in wanted and k.name in wanted_names}
    if shared:
        result.extra += sorted(shared)
        result.notes.append(Note("shared_names", {"count": len(shared)}))
    target = set(wanted) | shared
    parts = [(part.position, [k for k in kernels if k.kernel_type in part.applies_to
                              and k.kernel_type not in unfiltered])
             for part in sorted(spec.parts, key=lambda p: p.position)]
    if not parts:
        result.filters = ["*"]
        return result
    if spec.api_split and spec.drops == "trait" and primary:
        position = next((p for p, m in parts if any(k.kernel_type == primary for k in m)), None)
        if position is not None:
            own = [k for k in kernels if k.kernel_type == primary]
            width = max(p for p, _ in parts) + 1
            # The other parts: one pattern keeping every wanted kernel of theirs (no wanted
            # trait dropped), leaving out those no wanted trait needs.
            others = ["*"] * width
            if narrow_followers:
                for p, members in parts:
                    if p != position:
                        found = _part_patterns(members, target, style)
                        others[p] = found[0] if len(found) == 1 else "*"
            for pattern in _part_patterns(own, target, style):
                fields = list(others)
                fields[position] = pattern
                result.filters.append(spec.api_split.join(fields))
            return result
    if not spec.api_split or len(parts) == 1:
        members = [k for _, m in parts for k in m]
        result.filters = _part_patterns(members, target, style)
        return result
    if partners and primary:
        coupled = _coupled_runs(spec.api_split, parts, target, primary, partners, style)
        if coupled is not None:
            result.filters = coupled
            return result
    lists = {position: _part_patterns(members, target, style) for position, members in parts}
    width = max(lists) + 1
    runs = max(len(v) for v in lists.values())
    for run in range(runs):
        # Independent parts: run i takes each part's i-th pattern (else its last), never
        # an empty part (that means "no filter").
        fields = [lists[p][min(run, len(lists[p]) - 1)] if p in lists else "*"
                  for p in range(width)]
        result.filters.append(spec.api_split.join(fields))
    return result


def _coupled_runs(separator: str, parts: Sequence[Tuple[int, List[Kernel]]], target: Set[str],
                  primary: str, partners: Mapping[str, Set[str]],
                  style: Style = PLAIN) -> Optional[List[str]]:
    """One run per main pattern whose other parts select (at least) its main kernels'
    partners and nothing outside the target: one shared follower pattern per part when
    one will do, else each main pattern's own (split where no single one does)."""
    main_position = next((p for p, m in parts if any(k.kernel_type == primary for k in m)), None)
    if main_position is None:
        return None
    main = [k for p, m in parts if p == main_position for k in m]
    followers = [(p, m) for p, m in parts if p != main_position]
    width = max(p for p, _ in parts) + 1

    def join(columns: Mapping[int, str]) -> str:
        return separator.join([columns.get(p, "*") for p in range(width)])

    main_patterns = _part_patterns(main, target, style)
    shared = {p: _follower_patterns(m, {k.file for k in m if k.file in target}, target, style)
              for p, m in followers}
    if all(len(c) == 1 for c in shared.values()):
        return [join({**{p: c[0] for p, c in shared.items()}, main_position: pattern})
                for pattern in main_patterns]
    filters: List[str] = []
    for pattern in main_patterns:
        match = matcher(pattern)
        selected = {k.file for k in main if match(k.name)}
        needed = {f for s in selected for f in partners.get(s, ())}
        columns = {p: _follower_patterns(m, needed, target, style) for p, m in followers}
        if all(len(c) == 1 for c in columns.values()):
            filters.append(join({**{p: c[0] for p, c in columns.items()},
                                 main_position: pattern}))
            continue
        for chosen, mine, fitting in _split_by_partners(main, selected, followers, target,
                                                        partners, columns):
            for refined in cover(main, mine, allowed=fitting - mine, style=style):
                filters.append(join({**chosen, main_position: refined}))
    selections = {text: _selects(separator, parts, text) for text in filters}
    # Followers in the target but launched by no selected main kernel still need a run.
    if {k.file for _, m in parts for k in m if k.file in target} - set().union(*selections.values()):
        return None
    # A run whose selection the others make anyway is left out (each stays coupled).
    kept = list(selections)
    for text in sorted(kept, key=lambda t: (len(selections[t]), t)):
        rest = set().union(*(selections[t] for t in kept if t != text))
        if len(kept) > 1 and selections[text] <= rest:
            kept.remove(text)
    return kept


def _selects(separator: str, parts: Sequence[Tuple[int, List[Kernel]]], text: str) -> Set[str]:
    fields = text.split(separator)
    return {k.file for position, members in parts if position < len(fields)
            for k in members if matcher(fields[position])(k.name)}


def _follower_patterns(members: Sequence[Kernel], needed: Set[str],
                       target: Set[str], style: Style = PLAIN) -> List[str]:
    own_needed = {k.file for k in members if k.file in needed}
    if not own_needed:
        return _part_patterns(members, set())
    allowed = {k.file for k in members if k.file in target} - own_needed
    return cover(members, own_needed, allowed, style)


def _split_by_partners(main: Sequence[Kernel], selected: Set[str],
                       followers: Sequence[Tuple[int, List[Kernel]]], target: Set[str],
                       partners: Mapping[str, Set[str]], columns: Mapping[int, List[str]]
                       ) -> List[Tuple[Dict[int, str], Set[str], Set[str]]]:
    """({part: follower pattern}, main kernels it serves, main kernels it could serve);
    ``columns``: per follower part, the patterns of the selected kernels' partners."""
    main_files = {k.file for k in main}
    out = []
    left = set(selected)
    for index in range(max((len(c) for c in columns.values()), default=1)):
        chosen = {p: c[min(index, len(c) - 1)] for p, c in columns.items()}
        covered = {k.file for p, members in followers for k in members
                   if matcher(chosen[p])(k.name)}
        fitting = {f for f in target & main_files if partners.get(f, set()) <= covered}
        mine = left & fitting
        if mine:
            left -= mine
            out.append((chosen, mine, fitting))
    if left:  # no follower pattern covers these partners alone: keep them together
        out.append(({p: c[0] for p, c in columns.items()}, left, left))
    return out

