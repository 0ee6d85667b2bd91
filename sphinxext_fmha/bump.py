"""One ``-f`` filter in an old and a new CK tree (``sphinxext-fmha diff``, ``:against:``):
what each lists, why they differ (reason codes, ``bump_data.CHANGE_KINDS``), and the fewest
runs that select the old selection's counterparts in the new tree (same name; else same
sub-type and equal values on every field both trees name).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from .bump_data import CHANGE_KINDS, Change, FilterComparison, MigratedRun, Migration, TreeSelection
from .cppapi.link_check import partners
from .model import ApiModel, FilterCheck, FilterSpec, natural
from .options import Options, check_filter_text
from .session import Session
from .verify.coupling import coupling_of
from .verify.filtercheck import api_patterns, matcher_as_generate
from .verify.parsed_listing import ParsedListing

__all__ = ["compare_filter", "Side", "forced_by_traits", "launched_with"]

#: How many kernel files a change names as examples.
EXAMPLES = 3


@dataclass
class Side:
    """One tree: its model, its listing without ``-f`` (parsed), the filter's check."""

    model: ApiModel
    baseline: ParsedListing
    check: FilterCheck

    @property
    def selected(self) -> Set[str]:
        return set(self.check.files)

    def type_of(self, filename: str) -> str:
        return self.baseline.parsed.get(filename, ("",))[0]

    def names(self) -> Dict[str, str]:
        """file -> kernel name (an unparsed file: its name without ``.cpp``)."""
        names = dict(self.baseline.kernel_names(self.model))
        names.update((f, f.removesuffix(".cpp")) for f in self.baseline.unparsed)
        return names

    def per_type(self, files: Iterable[str]) -> Dict[str, List[str]]:
        grouped: Dict[str, List[str]] = defaultdict(list)
        for filename in sorted(files):
            grouped[self.type_of(filename)].append(filename)
        return dict(sorted(grouped.items()))

    def field_values(self) -> Dict[str, Dict[str, str]]:
        """file -> {field path: value} from its tokens (files with an ambiguous token left out)."""
        segments = {k.class_name: k.segments for k in self.model.kernel_types}
        out: Dict[str, Dict[str, str]] = {}
        for filename, (class_name, tokens) in self.baseline.parsed.items():
            combos = [segment.values.get(token, []) for segment, token
                      in zip(segments.get(class_name, ()), tokens) if segment.fields]
            if all(len(c) == 1 for c in combos):
                out[filename] = {k: v for c in combos for k, v in c[0].items()}
        return out


def compare_filter(old: Session, new: Session, api: str, filter: str,
                   old_options: Options = Options(), new_options: Options = Options(),
                   old_label: str = "", new_label: str = "") -> FilterComparison:
    """What ``filter`` selects in each tree, why they differ, and the runs that select
    the old selection in the new tree; raises what a run raises, and an ``OptionError``
    for a filter the old tree's semantics cut up or an API or option the new tree lacks."""
    spec = old.model(api, old_options).filter  # the filter is written for the old tree
    check_filter_text(api, filter, spec.cli_split, spec.api_split)
    new.tree.request(api, new_options)  # before any run
    a, b = _side(old, api, filter, old_options), _side(new, api, filter, new_options)
    of, by_fields = _counterparts(a, b)
    chosen = a.selected
    target = {n for f in chosen for n in of.get(f, ())}
    missing = sorted(f for f in chosen if not of.get(f))
    several = any(len(of.get(f, ())) > 1 for f in chosen)
    changes = (_semantics_changes(a.model, b.model, filter)
               + _kernel_changes(a, b, of, by_fields) + _naming_changes(a, b))
    m, union = _migrate(new, b, api, new_options, target)
    m.missing, m.count, m.extra = missing, len(union), sorted(union - target)
    m.extra_per_type = dict(sorted(Counter(map(b.type_of, m.extra)).items()))
    m.verdict = ("impossible" if (a.check.count and not target) or m.write_error else
                 "same" if union == target and not missing and not several else "changed")
    rank = {kind: i for i, kind in enumerate(CHANGE_KINDS)}
    return FilterComparison(
        api=api, filter=filter, options={k: str(v) for k, v in new_options.given().items()},
        old=_selection(a, old_label or str(old.ck_root), filter),
        new=_selection(b, new_label or str(new.ck_root), filter),
        same=b.selected == target and not missing and not several,
        changes=sorted(changes, key=lambda c: rank[c.kind]), migrated=m)


def _side(session: Session, api: str, filter: str, options: Options) -> Side:
    base = session.baseline(api, options)
    return Side(base.model, base.parsed, session.check_listed(api, filter, options))


def _selection(side: Side, tree: str, filter: str) -> TreeSelection:
    """What the filter selects in ``side``'s tree, with the semantics that made it."""
    model, check, spec = side.model, side.check, side.model.filter
    patterns = dict(sorted(api_patterns(model, filter).items()))
    names = side.names()
    matched = {}
    for class_name, pattern in patterns.items():
        match = matcher_as_generate(model, pattern)
        matched[class_name] = sum(1 for f, (c, _) in side.baseline.parsed.items()
                                  if c == class_name and match(names[f]))
    return TreeSelection(
        tree=tree, command=check.command, count=check.count, per_type=dict(check.per_type),
        all=check.baseline_count, all_per_type=dict(check.baseline_per_type),
        patterns=patterns, matched_per_type=matched, cli_split=spec.cli_split,
        api_split=spec.api_split, drops=spec.drops, verified=check.verified,
        parts=[sorted(p.applies_to) for p in sorted(spec.parts, key=lambda p: p.position)],
        written=check.dispatch_checked,
        links=check.dispatch_checked and not check.dispatch_unmatched)


def _counterparts(old: Side, new: Side) -> Tuple[Dict[str, List[str]], Set[str]]:
    """Each old file's counterparts (by name, else by equal field values), and the old
    files matched by field values."""
    by_name: Dict[str, List[str]] = defaultdict(list)
    for filename, name in sorted(new.names().items()):
        by_name[name].append(filename)
    fields = [{k.class_name: {f for s in k.segments for f in s.fields}
               for k in side.model.kernel_types} for side in (old, new)]

    common = {t: fields[0].get(t, set()) & named for t, named in fields[1].items()}

    def key(class_name: str, values: Mapping[str, str]) -> Tuple[object, ...]:
        return (class_name, *sorted((f, values[f]) for f in common[class_name] if f in values))

    old_values = old.field_values()
    index: Optional[Dict[Tuple[object, ...], List[str]]] = None  # new files by field values
    of: Dict[str, List[str]] = {}
    by_fields: Set[str] = set()
    for filename, name in sorted(old.names().items()):
        found = by_name.get(name)
        values = old_values.get(filename)
        # (a sub-type with no field both trees name has nothing to tell its kernels by)
        if not found and values is not None and common.get(old.type_of(filename)):
            if index is None:
                index = defaultdict(list)
                for other, other_values in sorted(new.field_values().items()):
                    index[key(new.type_of(other), other_values)].append(other)
            found = index.get(key(old.type_of(filename), values))
            if found:
                by_fields.add(filename)
        of[filename] = list(found or ())
    return of, by_fields


# -- the facts (reason codes) ----------------------------------------------------------

def _pattern_source(spec: FilterSpec, filter: str, class_name: str) -> Tuple[str, Optional[int]]:
    """(``whole``, ``part``, ``missing``, ``empty`` or ``unfiltered``; part position)."""
    position = next((p.position for p in spec.parts if class_name in p.applies_to), None)
    if class_name in spec.unfiltered_types or position is None:
        return "unfiltered", None
    if not spec.api_split:
        return "whole", None
    pieces = (filter.split(spec.cli_split)[0] if spec.cli_split else filter).split(spec.api_split)
    if position >= len(pieces):
        return "missing", position
    return ("empty" if pieces[position] == "" else "part"), position


def _passes_all(pattern: Optional[str]) -> bool:
    return pattern is None or pattern == "*"


def _semantics_changes(old: ApiModel, new: ApiModel, filter: str) -> List[Change]:
    """How ``-f`` reaches fnmatch differently, and the patterns this filter meets."""
    a, b = old.filter, new.filter
    changes = [Change(kind, old=getattr(a, name), new=getattr(b, name)) for kind, name in
               (("cli-split", "cli_split"), ("api-split", "api_split"), ("drops", "drops"))
               if getattr(a, name) != getattr(b, name)]
    if a.api_split and b.api_split:
        old_parts = {p.position: p for p in a.parts}
        for part in b.parts:
            before = old_parts.get(part.position)
            if before is None or part.position == 0:
                continue
            for kind, what in (("missing-part", "missing_becomes"), ("empty-part", "empty_becomes")):
                was, now = getattr(before, what), getattr(part, what)
                # a missing or empty part that is not applied passes every name, as "*" does
                if _passes_all(was) != _passes_all(now) or (
                        kind == "empty-part" and was != now and not _passes_all(now)):
                    changes.append(Change(kind, old=was, new=now, old_part=part.position,
                                          new_part=part.position))
    old_patterns, new_patterns = api_patterns(old, filter), api_patterns(new, filter)
    for class_name in [k.class_name for k in new.kernel_types]:
        if class_name not in old_patterns or class_name not in new_patterns:
            continue
        was, now = old_patterns[class_name], new_patterns[class_name]
        if was == now or (_passes_all(was) and _passes_all(now)):
            continue
        (old_how, old_part), (new_how, new_part) = (_pattern_source(s, filter, class_name)
                                                    for s in (a, b))
        changes.append(Change("pattern", kernel_type=class_name, old=was, new=now,
                              old_how=old_how, new_how=new_how, old_part=old_part,
                              new_part=new_part))
    return changes


def _kernel_changes(old: Side, new: Side, of: Mapping[str, List[str]],
                    by_fields: Set[str]) -> List[Change]:
    chosen, now = old.selected, new.selected
    claimed = {n for found in of.values() for n in found}
    wanted = {n for f in chosen for n in of.get(f, ())}
    several = [f for f in chosen if len(of.get(f, ())) > 1]
    new_values = new.field_values() if several else {}
    changes: List[Change] = []
    for kind, side, files, selected in (
            ("lost", old, [f for f in chosen if of.get(f) and not set(of[f]) & now], None),
            ("gained", new, [f for f in now if f in claimed and f not in wanted], None),
            ("new-only", new, set(new.baseline.files) - claimed, now),
            ("old-only", old, {f for f, found in of.items() if not found}, chosen),
            ("several", old, several, None),
            ("renamed-kernels", old, [f for f in chosen if f in by_fields], None)):
        for class_name, group in side.per_type(files).items():
            picked = group if selected is None else [f for f in group if f in selected]
            change = Change(kind, kernel_type=class_name, count=len(picked), total=len(group)
                            if selected is not None else 0, examples=(picked or group)[:EXAMPLES])
            if kind == "several":
                change.values = _differing(new, [of[f] for f in group], new_values)
            elif kind == "renamed-kernels":
                change.examples = ["%s -> %s" % (f, of[f][0]) for f in group[:EXAMPLES]]
            changes.append(change)
    return changes


def _differing(new: Side, groups: Sequence[Sequence[str]],
               values: Mapping[str, Mapping[str, str]]) -> Dict[str, List[str]]:
    """The fields (and ``arch``) whose values tell one old kernel's counterparts apart."""
    names = new.names()
    seen: List[Tuple[str, str]] = []
    for group in groups:
        arch = [("arch", f[len(names.get(f, "")):].removesuffix(".cpp")) for f in group]
        per_field = _domain([pair for f in group for pair in values.get(f, {}).items()] + arch)
        seen += [(path, value) for path, found in per_field.items() if len(found) > 1
                 for value in found]
    return _domain(seen)


def _naming_changes(old: Side, new: Side) -> List[Change]:
    """Sub-types, segments and tokens one tree alone has (a renamed token: same values)."""
    old_types = {k.class_name: k for k in old.model.kernel_types}
    new_types = {k.class_name: k for k in new.model.kernel_types}
    changes = [Change(kind, kernel_type=c, count=mine[c].count) for kind, mine, other in
               (("type-added", new_types, old_types), ("type-removed", old_types, new_types))
               for c in mine if c not in other]
    for class_name, after in new_types.items():
        before = old_types.get(class_name)
        if before is None:
            continue
        old_segments = {s.label: s for s in before.segments if not s.literal}
        new_segments = {s.label: s for s in after.segments if not s.literal}
        for kind, mine, other in (("segment-added", new_segments, old_segments),
                                  ("segment-removed", old_segments, new_segments)):
            changes += [Change(kind, kernel_type=class_name, segment=label,
                               values=_domain(pair for combos in segment.values.values()
                                              for combo in combos for pair in combo.items()))
                        for label, segment in mine.items() if label not in other]
        counts = _token_counts(old, class_name), _token_counts(new, class_name)
        for label, segment in new_segments.items():
            if label in old_segments:
                changes += _token_changes(class_name, label, old_segments[label].values,
                                          segment.values, counts)
    return changes


def _domain(pairs: Iterable[Tuple[str, str]]) -> Dict[str, List[str]]:
    """path -> its values in natural order, from (path, value) pairs."""
    domain: Dict[str, Set[str]] = defaultdict(set)
    for path, value in pairs:
        domain[path].add(value)
    return {path: sorted(found, key=natural) for path, found in sorted(domain.items())}


def _token_counts(side: Side, class_name: str) -> Counter:
    """(segment label, token) -> kernels of the sub-type carrying it."""
    labels = [s.label for s in side.model.kernel_type(class_name).segments]
    return Counter(pair for c, tokens in side.baseline.parsed.values() if c == class_name
                   for pair in zip(labels, tokens))


def _token_changes(class_name: str, label: str, before: Mapping[str, List[Dict[str, str]]],
                   after: Mapping[str, List[Dict[str, str]]], counts: Tuple[Counter, Counter]
                   ) -> List[Change]:
    old_tokens, new_tokens = ({frozenset(combo.items()): token for token, combos in side.items()
                               for combo in combos} for side in (before, after))

    def change(kind: str, combo: FrozenSet[Tuple[str, str]], old: Optional[str],
               new: Optional[str]) -> Change:
        return Change(kind, kernel_type=class_name, segment=label, old=old, new=new,
                      values={path: [value] for path, value in sorted(combo)},
                      count=counts[kind != "token-removed"][
                          (label, old if kind == "token-removed" else new)])

    changes = []
    for combo, token in sorted(new_tokens.items(), key=lambda kv: natural(kv[1])):
        if combo not in old_tokens:
            changes.append(change("token-added", combo, None, token))
        elif old_tokens[combo] != token:
            changes.append(change("token-renamed", combo, old_tokens[combo], token))
    changes += [change("token-removed", combo, token, None) for combo, token
                in sorted(old_tokens.items(), key=lambda kv: natural(kv[1]))
                if combo not in new_tokens]
    return changes


# -- the migrated set ------------------------------------------------------------------

def _migrate(session: Session, side: Side, api: str, options: Options,
             target: Set[str]) -> Tuple[Migration, Set[str]]:
    """The runs for ``target`` (with what whole-trait dropping forces along) and the union
    of their listings; when write mode refuses them (newer CK's split-KV assertion), the
    runs with the kernels the dispatch launches with them, if those are written."""
    wanted = set(target)
    if side.model.filter.drops == "trait":
        wanted |= forced_by_traits(target, session.traits(api, options))
    migration, union = _attempt(session, side, api, options, target, wanted)
    if migration.write_error:
        full = session.runner.generate_api_file(session.tree.request(api, options))
        launched = launched_with(full.text, full.kernel_traits, side, wanted,
                                 session.traits(api, options))
        if launched - wanted:
            retry, retry_union = _attempt(session, side, api, options, target, wanted | launched)
            if not retry.write_error:
                retry.refused = migration.write_error
                return retry, retry_union
    return migration, union


def _attempt(session: Session, side: Side, api: str, options: Options,
             target: Set[str], wanted: Set[str]) -> Tuple[Migration, Set[str]]:
    """The filter itself when it selects exactly ``wanted``, else the synthesised runs."""
    migration = Migration(target=len(target), verified=not wanted)
    if not wanted:
        return migration, set()
    if side.selected == wanted:
        checks, commands = [side.check], [side.check.command]
        migration.unchanged_filter, migration.verified = True, side.check.verified
        migration.links = side.check.dispatch_checked and not side.check.dispatch_unmatched
    else:
        made, _ = session.select(api, wanted, options)
        checks = [session.check_listed(api, r.filter, options) for r in made.runs]
        commands = [r.command for r in made.runs]
        migration.verified, migration.links = made.verified, made.write_verified
        migration.driver_command = made.driver_command
    for check, command in zip(checks, commands):
        written = check.dispatch_checked or check.count == 0
        kept, loose = _telling_segments(side, set(check.files))
        migration.runs.append(MigratedRun(
            filter=check.filter, command=command, count=check.count,
            per_type=dict(check.per_type), verified=check.verified and written,
            written=written, kept=kept, loose=loose,
            patterns=dict(sorted(api_patterns(side.model, check.filter).items()))))
    migration.write_error = next((c.write_error for c in checks if c.write_error), "")
    return migration, {f for check in checks for f in check.files}


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
        forced.update(*(t for t in mine if sum(f in wanted for f in t) == most))
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


def _telling_segments(side: Side, selected: Set[str]
                      ) -> Tuple[Dict[str, Dict[str, List[str]]], List[str]]:
    """Per partly selected sub-type, the fewest segments (greedily) whose kept tokens
    tell the selected kernels from the others; and the sub-types none tell exactly."""
    rows: Dict[str, List[Tuple[bool, Sequence[str]]]] = defaultdict(list)
    for filename, (class_name, tokens) in sorted(side.baseline.parsed.items()):
        rows[class_name].append((filename in selected, tokens))
    told: Dict[str, Dict[str, List[str]]] = {}
    loose: List[str] = []
    for kernel_type in side.model.kernel_types:
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
            picked[kernel_type.segments[best].label] = sorted(kept[best], key=natural)
            left = [t for t in left if t[best] in kept[best]]
        told[kernel_type.class_name] = picked
    return told, loose
