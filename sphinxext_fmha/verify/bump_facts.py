"""One filter in two CK trees: the facts of a comparison, from listings and models alone.

Each tree is a :class:`Side`. An old kernel's counterparts are the new tree's kernels
of the same name (one per arch suffix); where its name is gone, those of its sub-type
whose field values (read from the tokens) equal its own on every field both trees name.
The facts are reason codes (``bump_data.CHANGE_KINDS``); the renderer says them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ..bump_data import CHANGE_KINDS, Change, TreeSelection
from ..cppapi.link_check import partners
from ..model import ApiModel, FilterCheck, FilterSpec, natural
from .coupling import coupling_of
from .filtercheck import api_patterns, matcher_as_generate
from .parsed_listing import ParsedListing

__all__ = ["Side", "Matches", "selection", "counterparts", "semantics_changes",
           "kernel_changes", "naming_changes", "forced_by_traits", "launched_with",
           "telling_segments", "verdict", "ordered"]

#: How many kernel files a change names as examples.
EXAMPLES = 3


@dataclass
class Side:

    model: ApiModel
    baseline: ParsedListing
    check: FilterCheck

    @property
    def selected(self) -> Set[str]:
        return set(self.check.files)

    def type_of(self, filename: str) -> str:
        found = self.baseline.parsed.get(filename)
        return found[0] if found else ""

    def names(self) -> Dict[str, str]:
        """file -> kernel name (an unparsed file: its name without ``.cpp``)."""
        names = dict(self.baseline.kernel_names(self.model))
        for filename in self.baseline.unparsed:
            names[filename] = filename[:-4] if filename.endswith(".cpp") else filename
        return names


@dataclass
class Matches:
    """Old kernel file -> its counterparts in the new tree (empty: none)."""

    of: Dict[str, List[str]] = field(default_factory=dict)
    #: old files matched by field values (their names are gone from the new tree)
    by_fields: Set[str] = field(default_factory=set)

    def targets(self, old_files: Iterable[str]) -> Set[str]:
        return {new for old in old_files for new in self.of.get(old, ())}


def selection(side: Side, tree: str, filter: str) -> TreeSelection:
    """What the filter selects in ``side``'s tree, with the semantics that made it."""
    model, check = side.model, side.check
    spec = model.filter
    patterns = api_patterns(model, filter)
    names = side.names()
    matched: Counter = Counter()
    for class_name, pattern in patterns.items():
        match = matcher_as_generate(model, pattern)
        matched[class_name] = sum(1 for f, (c, _) in side.baseline.parsed.items()
                                  if c == class_name and match(names[f]))
    return TreeSelection(
        tree=tree, command=check.command, count=check.count, per_type=dict(check.per_type),
        all=check.baseline_count, all_per_type=dict(check.baseline_per_type),
        patterns=dict(sorted(patterns.items())),
        matched_per_type={c: matched[c] for c in sorted(patterns)},
        cli_split=spec.cli_split, api_split=spec.api_split,
        parts=[sorted(p.applies_to) for p in sorted(spec.parts, key=lambda p: p.position)],
        drops=spec.drops, verified=check.verified, written=check.dispatch_checked,
        links=check.dispatch_checked and not check.dispatch_unmatched)


# -- counterparts ------------------------------------------------------------------

def _field_values(model: ApiModel, baseline: ParsedListing) -> Dict[str, Dict[str, str]]:
    """file -> {field path: value} from its tokens (files whose tokens are ambiguous left out)."""
    segments = {k.class_name: k.segments for k in model.kernel_types}
    out: Dict[str, Dict[str, str]] = {}
    for filename, (class_name, tokens) in baseline.parsed.items():
        values: Dict[str, str] = {}
        for segment, token in zip(segments.get(class_name, ()), tokens):
            if not segment.fields:
                continue
            combos = segment.values.get(token, [])
            if len(combos) != 1:
                break
            values.update(combos[0])
        else:
            out[filename] = values
    return out


def _fields_of(model: ApiModel) -> Dict[str, Set[str]]:
    return {k.class_name: {f for s in k.segments for f in s.fields} for k in model.kernel_types}


def counterparts(old: Side, new: Side) -> Matches:
    """Each old kernel's counterparts: by name, else by equal field values."""
    new_names = new.names()
    by_name: Dict[str, List[str]] = defaultdict(list)
    for filename, name in sorted(new_names.items()):
        by_name[name].append(filename)
    old_fields, new_fields = _field_values(old.model, old.baseline), None
    old_types, new_types = _fields_of(old.model), _fields_of(new.model)
    index: Dict[Tuple[str, Tuple[Tuple[str, str], ...]], List[str]] = {}
    matches = Matches()
    for filename, name in sorted(old.names().items()):
        found = by_name.get(name)
        if found:
            matches.of[filename] = list(found)
            continue
        matches.of[filename] = []
        class_name = old.type_of(filename)
        values = old_fields.get(filename)
        if values is None or class_name not in new_types:
            continue
        common = old_types[class_name] & new_types[class_name]
        if not common:
            continue  # no field both trees name: nothing to tell the kernels by
        if new_fields is None:
            new_fields = _field_values(new.model, new.baseline)
            for other, other_values in sorted(new_fields.items()):
                other_type = new.type_of(other)
                shared = old_types.get(other_type, set()) & new_types[other_type]
                index.setdefault((other_type, _key(other_values, shared)), []).append(other)
        found = index.get((class_name, _key(values, common)))
        if found:
            matches.of[filename] = list(found)
            matches.by_fields.add(filename)
    return matches


def _key(values: Mapping[str, str], fields: Set[str]) -> Tuple[Tuple[str, str], ...]:
    return tuple(sorted((f, values[f]) for f in fields if f in values))


# -- semantics -----------------------------------------------------------------------

def _pattern_source(spec: FilterSpec, filter: str, class_name: str) -> Tuple[str, Optional[int]]:
    """(``whole``, ``part``, ``missing``, ``empty`` or ``unfiltered``; part position)."""
    if class_name in spec.unfiltered_types:
        return "unfiltered", None
    position = next((p.position for p in spec.parts if class_name in p.applies_to), None)
    if position is None:
        return "unfiltered", None
    if not spec.api_split:
        return "whole", None
    text = filter.split(spec.cli_split)[0] if spec.cli_split else filter
    pieces = text.split(spec.api_split)
    if position >= len(pieces):
        return "missing", position
    return ("empty" if pieces[position] == "" else "part"), position


def _passes_all(pattern: Optional[str]) -> bool:
    return pattern is None or pattern == "*"


def semantics_changes(old: ApiModel, new: ApiModel, filter: str) -> List[Change]:
    """How ``-f`` reaches fnmatch differently, and the patterns this filter meets."""
    a, b = old.filter, new.filter
    changes: List[Change] = []
    if a.cli_split != b.cli_split:
        changes.append(Change("cli-split", old=a.cli_split, new=b.cli_split))
    if a.api_split != b.api_split:
        changes.append(Change("api-split", old=a.api_split, new=b.api_split))
    if a.api_split and b.api_split:
        old_parts = {p.position: p for p in a.parts}
        for part in b.parts:
            before = old_parts.get(part.position)
            if before is None or part.position == 0:
                continue
            # a missing or empty part that is not applied passes every name, as "*" does
            if _passes_all(before.missing_becomes) != _passes_all(part.missing_becomes):
                changes.append(Change("missing-part", old=before.missing_becomes,
                                      new=part.missing_becomes, old_part=part.position,
                                      new_part=part.position))
            if _passes_all(before.empty_becomes) != _passes_all(part.empty_becomes) or (
                    before.empty_becomes != part.empty_becomes
                    and not _passes_all(part.empty_becomes)):
                changes.append(Change("empty-part", old=before.empty_becomes,
                                      new=part.empty_becomes, old_part=part.position,
                                      new_part=part.position))
    if a.drops != b.drops:
        changes.append(Change("drops", old=a.drops, new=b.drops))
    old_patterns, new_patterns = api_patterns(old, filter), api_patterns(new, filter)
    for class_name in [k.class_name for k in new.kernel_types]:
        if class_name not in old_patterns or class_name not in new_patterns:
            continue
        was, now = old_patterns[class_name], new_patterns[class_name]
        if was == now or (_passes_all(was) and _passes_all(now)):
            continue
        old_how, old_part = _pattern_source(a, filter, class_name)
        new_how, new_part = _pattern_source(b, filter, class_name)
        changes.append(Change("pattern", kernel_type=class_name, old=was, new=now,
                              old_how=old_how, new_how=new_how, old_part=old_part,
                              new_part=new_part))
    return changes


# -- kernels -------------------------------------------------------------------------

def _per_type(side: Side, files: Iterable[str]) -> Dict[str, List[str]]:
    grouped: Dict[str, List[str]] = defaultdict(list)
    for filename in sorted(files):
        grouped[side.type_of(filename)].append(filename)
    return grouped


def _kernel_change(kind: str, class_name: str, files: Sequence[str], total: int = 0) -> Change:
    return Change(kind, kernel_type=class_name, count=len(files), total=total,
                  examples=list(files[:EXAMPLES]))


def kernel_changes(old: Side, new: Side, matches: Matches) -> List[Change]:
    chosen, now = old.selected, new.selected
    claimed = matches.targets(matches.of)
    wanted = matches.targets(chosen)
    changes: List[Change] = []
    lost = [f for f in chosen if matches.of.get(f) and not set(matches.of[f]) & now]
    gained = [f for f in now if f in claimed and f not in wanted]
    for kind, side, files in (("lost", old, lost), ("gained", new, gained)):
        for class_name, group in sorted(_per_type(side, files).items()):
            changes.append(_kernel_change(kind, class_name, group))
    for kind, side, alone, selected in (
            ("new-only", new, set(new.baseline.files) - claimed, now),
            ("old-only", old, {f for f, found in matches.of.items() if not found}, chosen)):
        for class_name, group in sorted(_per_type(side, alone).items()):
            picked = [f for f in group if f in selected]
            change = _kernel_change(kind, class_name, picked or group, len(group))
            change.count = len(picked)
            changes.append(change)
    several = [f for f in chosen if len(matches.of.get(f, ())) > 1]
    new_values = _field_values(new.model, new.baseline) if several else {}
    for class_name, group in sorted(_per_type(old, several).items()):
        change = _kernel_change("several", class_name, group)
        change.values = _differing(new, [matches.of[f] for f in group], new_values)
        changes.append(change)
    renamed = [f for f in chosen if f in matches.by_fields]
    for class_name, group in sorted(_per_type(old, renamed).items()):
        change = _kernel_change("renamed-kernels", class_name, group)
        change.examples = ["%s -> %s" % (f, matches.of[f][0]) for f in group[:EXAMPLES]]
        changes.append(change)
    return changes


def _differing(new: Side, groups: Sequence[Sequence[str]],
               values: Mapping[str, Mapping[str, str]]) -> Dict[str, List[str]]:
    """The fields (and ``arch``) whose values tell one old kernel's counterparts apart."""
    names = new.names()
    seen: Dict[str, Set[str]] = defaultdict(set)
    for group in groups:
        per_field: Dict[str, Set[str]] = defaultdict(set)
        for filename in group:
            for path, value in values.get(filename, {}).items():
                per_field[path].add(value)
            suffix = filename[len(names.get(filename, "")):]
            per_field["arch"].add(suffix[:-4] if suffix.endswith(".cpp") else suffix)
        for path, found in per_field.items():
            if len(found) > 1:
                seen[path] |= found
    return {path: sorted(found, key=natural) for path, found in sorted(seen.items())}


# -- names ---------------------------------------------------------------------------

def naming_changes(old: Side, new: Side) -> List[Change]:
    """Sub-types, segments and tokens one tree alone has (a renamed token: same values)."""
    changes: List[Change] = []
    old_types = {k.class_name: k for k in old.model.kernel_types}
    new_types = {k.class_name: k for k in new.model.kernel_types}
    for class_name in new_types:
        if class_name not in old_types:
            changes.append(Change("type-added", kernel_type=class_name,
                                  count=new_types[class_name].count))
    for class_name in old_types:
        if class_name not in new_types:
            changes.append(Change("type-removed", kernel_type=class_name,
                                  count=old_types[class_name].count))
    for class_name, after in new_types.items():
        before = old_types.get(class_name)
        if before is None:
            continue
        old_segments = {s.label: s for s in before.segments if not s.literal}
        new_segments = {s.label: s for s in after.segments if not s.literal}
        for label, segment in new_segments.items():
            if label not in old_segments:
                changes.append(Change("segment-added", kernel_type=class_name, segment=label,
                                      values=_field_domain(segment.values)))
        for label, segment in old_segments.items():
            if label not in new_segments:
                changes.append(Change("segment-removed", kernel_type=class_name, segment=label,
                                      values=_field_domain(segment.values)))
        counts = (_token_counts(old, class_name), _token_counts(new, class_name))
        for label, segment in new_segments.items():
            if label in old_segments:
                changes += _token_changes(class_name, label, old_segments[label].values,
                                          segment.values, counts)
    return changes


def _field_domain(values: Mapping[str, List[Dict[str, str]]]) -> Dict[str, List[str]]:
    domain: Dict[str, Set[str]] = defaultdict(set)
    for combos in values.values():
        for combo in combos:
            for path, value in combo.items():
                domain[path].add(value)
    return {path: sorted(found, key=natural) for path, found in sorted(domain.items())}


def _token_counts(side: Side, class_name: str) -> Dict[Tuple[str, str], int]:
    """(segment label, token) -> kernels of the sub-type carrying it."""
    kernel_type = side.model.kernel_type(class_name)
    labels = [s.label for s in kernel_type.segments]
    counts: Counter = Counter()
    for c, tokens in side.baseline.parsed.values():
        if c == class_name:
            counts.update(zip(labels, tokens))
    return dict(counts)


Combo = FrozenSet[Tuple[str, str]]


def _by_values(values: Mapping[str, List[Dict[str, str]]]) -> Dict[Combo, str]:
    return {frozenset(combo.items()): token for token, combos in values.items()
            for combo in combos}


def _token_changes(class_name: str, label: str, before: Mapping[str, List[Dict[str, str]]],
                   after: Mapping[str, List[Dict[str, str]]],
                   counts: Tuple[Mapping[Tuple[str, str], int], Mapping[Tuple[str, str], int]]
                   ) -> List[Change]:
    old_tokens, new_tokens = _by_values(before), _by_values(after)

    def values(combo: Combo) -> Dict[str, List[str]]:
        return {path: [value] for path, value in sorted(combo)}

    changes = []
    for combo, token in sorted(new_tokens.items(), key=lambda kv: natural(kv[1])):
        if combo not in old_tokens:
            changes.append(Change("token-added", kernel_type=class_name, segment=label,
                                  new=token, values=values(combo),
                                  count=counts[1].get((label, token), 0)))
        elif old_tokens[combo] != token:
            changes.append(Change("token-renamed", kernel_type=class_name, segment=label,
                                  old=old_tokens[combo], new=token, values=values(combo),
                                  count=counts[1].get((label, token), 0)))
    for combo, token in sorted(old_tokens.items(), key=lambda kv: natural(kv[1])):
        if combo not in new_tokens:
            changes.append(Change("token-removed", kernel_type=class_name, segment=label,
                                  old=token, values=values(combo),
                                  count=counts[0].get((label, token), 0)))
    return changes


def ordered(changes: Iterable[Change]) -> List[Change]:
    rank = {kind: i for i, kind in enumerate(CHANGE_KINDS)}
    return sorted(changes, key=lambda c: rank.get(c.kind, len(rank)))


# -- the migrated set ----------------------------------------------------------------

def forced_by_traits(wanted: Set[str], traits: Sequence[Sequence[str]]) -> Set[str]:
    """What a tree dropping whole traits generates along with ``wanted``: for a wanted
    kernel in no all-wanted trait, the members of its traits with most wanted members."""
    having: Dict[str, List[Sequence[str]]] = defaultdict(list)
    for trait in traits:
        for filename in trait:
            having[filename].append(trait)
    forced: Set[str] = set()
    for filename in wanted:
        mine = having.get(filename)
        if not mine or any(all(f in wanted for f in trait) for trait in mine):
            continue
        most = max(sum(f in wanted for f in trait) for trait in mine)
        for trait in mine:
            if sum(f in wanted for f in trait) == most:
                forced.update(trait)
    return forced - set(wanted)


def launched_with(api_text: str, kernel_traits: Mapping[str, str], side: Side,
                  wanted: Set[str], traits: Sequence[Sequence[str]] = ()) -> Set[str]:
    """What the full dispatch launches with the wanted main kernels (else what the
    traits generate with them): what a set needs to link, and newer CK asserts."""
    type_of = {f: c for f, (c, _) in side.baseline.parsed.items()}
    coupling = (coupling_of(partners(api_text, kernel_traits), type_of, "dispatch")
                or coupling_of(traits, type_of, "traits"))
    if coupling is None:
        return set()
    return coupling.follow({f for f in wanted if type_of.get(f) == coupling.primary})


def telling_segments(model: ApiModel, baseline: ParsedListing, selected: Set[str]
                     ) -> Tuple[Dict[str, Dict[str, List[str]]], List[str]]:
    """Per partly selected sub-type, the fewest segments (greedily) whose kept tokens
    tell the selected kernels from the others; and the sub-types none tell exactly."""
    rows: Dict[str, List[Tuple[bool, Sequence[str]]]] = defaultdict(list)
    for filename, (class_name, tokens) in sorted(baseline.parsed.items()):
        rows[class_name].append((filename in selected, tokens))
    told: Dict[str, Dict[str, List[str]]] = {}
    loose: List[str] = []
    for kernel_type in model.kernel_types:
        own = rows.get(kernel_type.class_name, [])
        if all(chosen for chosen, _ in own) or not any(chosen for chosen, _ in own):
            continue
        kept = [{tokens[i] for chosen, tokens in own if chosen}
                for i in range(len(kernel_type.segments))]
        left = [tokens for chosen, tokens in own if not chosen]
        picked: Dict[str, List[str]] = {}
        while left:
            best = max(range(len(kept)), key=lambda i: (sum(t[i] not in kept[i] for t in left), -i))
            if not any(t[best] not in kept[best] for t in left):
                loose.append(kernel_type.class_name)
                break
            segment = kernel_type.segments[best]
            picked[segment.label] = sorted(kept[best], key=natural)
            left = [t for t in left if t[best] in kept[best]]
        told[kernel_type.class_name] = picked
    return told, loose


def verdict(old_count: int, target: Set[str], union: Set[str], missing: Sequence[str],
            several: bool, write_error: str) -> str:
    if (old_count and not target) or write_error:
        return "impossible"
    if union == target and not missing and not several:
        return "same"
    return "changed"
