"""Verification: a filter's runs checked against the unfiltered listing and the model
(:mod:`~sphinxext_fmha.verify.filtercheck`), and the write-mode facts of a filter that
keeps a kernel without its partners (:mod:`~sphinxext_fmha.verify.filter_facts`)."""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..analysis.analyze import Options, Tree
from ..model import ApiModel, FilterCheck, FilterFacts, Note, TargetListing
from ..process.batch import missing, stored
from ..process.batch import prefetch as run_batches
from ..process.runner import ApiFileResult, DriverRun, GenerateError, GenerateRunner, ListingResult
from ..verify import filter_facts as plan
from ..verify.filtercheck import check_filter
from ..verify.parsed_listing import ParsedListing


@dataclasses.dataclass
class Baseline:
    """What every check and set of one (API, options) starts from: the model, the
    unfiltered listing, that listing parsed, the observed traits and followers."""

    tree: Tree
    api: str
    options: Options
    model: ApiModel
    listing: ListingResult
    parsed: ParsedListing
    traits: List[List[str]]
    followers: Dict[str, str]

    def request(self, filter: str = "", **changes):
        return self.tree.request(self.api, dataclasses.replace(self.options, **changes),
                                 filter=filter)


def full_api(runner: GenerateRunner, base: Baseline) -> Optional[ApiFileResult]:
    """The unfiltered run's dispatch file and kernels (None when it cannot be written)."""
    try:
        return runner.generate_api_file(base.request())
    except GenerateError:
        return None


def _written(runner: GenerateRunner, request) -> Tuple[Optional[ApiFileResult], str]:
    """(the write-mode run of ``request``, or None when it failed of itself, and then
    the last line it said): a filter's own failure is a result; any other raises."""
    try:
        return runner.generate_api_file(request), ""
    except GenerateError as error:
        if not error.own_failure():
            raise
        return None, error.own_failure()


def check(runner: GenerateRunner, base: Baseline, filter: str) -> FilterCheck:
    """What ``generate.py -f filter`` selects: the filtered listing and write-mode run,
    checked against the unfiltered listing and the model's prediction."""
    request = base.request(filter)
    listing = runner.list_kernels(request)
    write_command = runner.api_file_command(request) if listing.count else ""
    api_file, write_error = _written(runner, request) if listing.count else (None, "")
    result = check_filter(base.model, filter, base.listing, listing, base.parsed, base.traits,
                          api_file, followers=base.followers, write_error=write_error,
                          full_api=lambda: full_api(runner, base))
    result.write_command = write_command
    if base.model.list_appends:
        result.command = runner.listing_command(request, appends=True)
    return result


def listed_only(runner: GenerateRunner, base: Baseline, filter: str,
                error: GenerateError) -> FilterCheck:
    """The check of the listing alone, when write mode failed (newer CK refuses some
    sets in write_blobs): not marked as written, its last note the reason."""
    listing = runner.list_kernels(base.request(filter))
    result = check_filter(base.model, filter, base.listing, listing, base.parsed, base.traits)
    result.write_error = (error.stderr_tail or str(error)).strip().splitlines()[-1]
    result.note_facts.append(Note("write_failed", {"error": result.write_error}))
    return result


def filter_facts(runner: GenerateRunner, base: Baseline,
                 groups: Sequence[Sequence[Tuple[Optional[str], str]]] = ()) -> FilterFacts:
    """What a filter that keeps a kernel without its dispatch partners does in write
    mode, and what ``--targets`` gives, each from generate.py runs of its own; where
    whole traits drop, the parts ``groups`` (the observed traits) match without writing."""
    model = base.model
    facts = FilterFacts(unwritten=plan.unwritten_members(
        model, groups, {f: c for f, (c, _) in base.parsed.parsed.items()}))
    independent = model.filter.drops == "kernel" and len(
        {c for p in model.filter.parts for c in p.applies_to}) > 1
    partner = plan.partner_plan(model, base.parsed, full_api(runner, base)) \
        if independent else None
    if partner is not None:
        request = base.request(partner.filter)
        listed = runner.list_kernels(request)
        written, error = _written(runner, request)
        facts.partner_write = plan.partner_write(
            partner, runner.api_file_command(request), listed.count, written, error)
        for subset in partner.subsets:
            request = base.request(subset.filter)
            plan.subset_write(subset, runner.api_file_command(request),
                              *_written(runner, request))
    if base.tree.option("targets") is None or not model.checks.get("blob_function_takes_targets"):
        return facts
    families = base.tree.arch_names
    facts.targets.append(plan.target_listing(
        model, families, model.options.get("targets") or "", base.listing.command,
        base.listing.files, default=True))
    # (the families the tree names: an API may refuse some, as newest bwd does gfx11)
    for family in plan.targets_to_measure(model, families, base.listing.files):
        facts.targets.append(_target_listing(runner, base, families, family))
    # a family that lists nothing alone, added to the guide's targets (a multi-arch build)
    default = facts.targets[0].targets
    for empty in [t.targets for t in facts.targets[1:] if not t.count and not t.refused] \
            if default else []:
        facts.targets.append(_target_listing(runner, base, families, "%s,%s" % (default, empty),
                                             mixed=True))
    return facts


def _target_listing(runner: GenerateRunner, base: Baseline, families: Sequence[str],
                    targets: str, mixed: bool = False) -> TargetListing:
    """The listing of ``--targets targets``, or the last line of generate.py's refusal."""
    request = base.request(targets=targets)
    try:
        measured = runner.list_kernels(request)
    except GenerateError as error:
        if not error.own_failure():
            raise
        return TargetListing(targets=targets, command=runner.listing_command(request),
                             mixed=mixed, refused=error.own_failure())
    return plan.target_listing(base.model, families, targets, measured.command, measured.files,
                               mixed=mixed)


def prefetch(runner: GenerateRunner, requests: Sequence, observe: Callable[[], dict],
             parallel: int, drivers: Sequence[DriverRun]) -> None:
    """Run ``requests`` and ``drivers`` not cached yet in a batch interpreter, with the
    trait keys the probe observed (``observe``: not called when all are cached)."""
    if not missing(runner, list(requests)) and all(stored(runner, run) for run in drivers):
        return
    observed = observe()
    dispatch = observed.get("dispatch") or {}
    traits = dispatch.get("kernel_traits", {})
    known = {sha: traits[name] for name, sha in dispatch.get("kernel_sha", {}).items()
             if name in traits}
    run_batches(runner, list(requests), dispatch=True, known_keys=known, parallel=parallel,
                drivers=drivers)
