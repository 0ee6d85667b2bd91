"""The comparison service: one ``-f`` filter in an old and a new CK tree.

``sphinxext-fmha diff`` and ``:against:`` as data (:mod:`sphinxext_fmha.bump_data`):
each tree's generate.py lists what the filter selects, :mod:`.verify.bump_facts` says
why they differ, and the fewest runs the synthesis finds select the old selection's
counterparts in the new tree (:meth:`Session.select <sphinxext_fmha.session.Session.select>`).
"""

from __future__ import annotations

from collections import Counter
from typing import Set, Tuple

from .bump_data import FilterComparison, MigratedRun, Migration
from .model import FilterCheck
from .options import Options
from .session import Session
from .verify import bump_facts as facts
from .verify.filtercheck import api_patterns

__all__ = ["compare_filter"]


def compare_filter(old: Session, new: Session, api: str, filter: str,
                   old_options: Options = Options(), new_options: Options = Options(),
                   old_label: str = "", new_label: str = "") -> FilterComparison:
    """What ``filter`` selects in each tree, why they differ, and the runs that select
    the old selection in the new tree; raises what a run raises."""
    old_side, new_side = _side(old, api, filter, old_options), _side(new, api, filter, new_options)
    matches = facts.counterparts(old_side, new_side)
    changes = (facts.semantics_changes(old_side.model, new_side.model, filter)
               + facts.kernel_changes(old_side, new_side, matches)
               + facts.naming_changes(old_side, new_side))
    chosen = old_side.selected
    target = matches.targets(chosen)
    missing = sorted(f for f in chosen if not matches.of.get(f))
    several = any(len(matches.of.get(f, ())) > 1 for f in chosen)
    comparison = FilterComparison(
        api=api, filter=filter, options={k: str(v) for k, v in new_options.given().items()},
        old=facts.selection(old_side, old_label or str(old.ck_root), filter),
        new=facts.selection(new_side, new_label or str(new.ck_root), filter),
        same=new_side.selected == target and not missing and not several,
        changes=facts.ordered(changes))
    migration, union = _migrate(new, new_side, api, new_options, target)
    comparison.migrated = migration
    migration.missing = missing
    migration.count = len(union)
    migration.extra = sorted(union - target)
    migration.extra_per_type = dict(sorted(Counter(new_side.type_of(f)
                                                   for f in migration.extra).items()))
    migration.verdict = facts.verdict(old_side.check.count, target, union, missing, several,
                                      migration.write_error)
    return comparison


def _side(session: Session, api: str, filter: str, options: Options) -> facts.Side:
    model = session.model(api, options)
    listing = session.runner.list_kernels(session.tree.request(api, options))
    return facts.Side(model=model, baseline=session.parsed_listing(api, options, listing.files),
                      check=session.check_listed(api, filter, options))


def _migrate(session: Session, side: facts.Side, api: str, options: Options,
             target: Set[str]) -> Tuple[Migration, Set[str]]:
    """The runs for ``target`` (with what whole-trait dropping forces along), and the
    union of their listings. When generate.py refuses to write them (newer CK asserts
    that each split-KV kernel has its combine kernel), the runs for the target with the
    kernels the dispatch launches with it, if generate.py writes those."""
    wanted = set(target)
    if side.model.filter.drops == "trait":
        wanted |= facts.forced_by_traits(target, session.traits(api, options))
    migration, union = _attempt(session, side, api, options, target, wanted)
    if migration.write_error:
        full = session.runner.generate_api_file(session.tree.request(api, options))
        launched = facts.launched_with(full.text, full.kernel_traits, side, wanted,
                                       session.traits(api, options))
        if launched - wanted:
            retry, retry_union = _attempt(session, side, api, options, target, wanted | launched)
            if not retry.write_error:
                retry.refused = migration.write_error
                return retry, retry_union
    return migration, union


def _attempt(session: Session, side: facts.Side, api: str, options: Options,
             target: Set[str], wanted: Set[str]) -> Tuple[Migration, Set[str]]:
    """The filter itself when it selects exactly ``wanted``, else the synthesised runs."""
    migration = Migration(target=len(target))
    if not wanted:
        migration.verified = True
        return migration, set()
    if side.selected == wanted:
        checks = [side.check]
        migration.unchanged_filter = True
        migration.verified = side.check.verified
        migration.links = side.check.dispatch_checked and not side.check.dispatch_unmatched
        commands = [side.check.command]
    else:
        made, _ = session.select(api, wanted, options)
        checks = [session.check_listed(api, r.filter, options) for r in made.runs]
        migration.verified = made.verified
        migration.links = made.write_verified
        migration.driver_command = made.driver_command
        commands = [r.command for r in made.runs]
    migration.runs = [_run(side, check, command) for check, command in zip(checks, commands)]
    refused = [c.write_error for c in checks if c.write_error]
    if refused:
        migration.write_error = refused[0]
    return migration, {f for check in checks for f in check.files}


def _run(side: facts.Side, check: FilterCheck, command: str) -> MigratedRun:
    written = check.dispatch_checked or check.count == 0
    kept, loose = facts.telling_segments(side.model, side.baseline, set(check.files))
    return MigratedRun(filter=check.filter, command=command, count=check.count,
                       per_type=dict(check.per_type), verified=check.verified and written,
                       written=written, kept=kept, loose=loose,
                       patterns=dict(sorted(api_patterns(side.model, check.filter).items())))
