"""The guide service: what a guide shows, from the :class:`~sphinxext_fmha.session.Session`,
as data (:mod:`sphinxext_fmha.guide_data`); the CLI and the directives call it alike.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .errors import WarningType
from .guide_data import (
    ExampleSet,
    GuideData,
    PlaygroundInputs,
    Problem,
    SectionNeed,
    build_date,
    needs_of,
    parse_sections,
    problem_of,
    stored_kinds,
)
from .locate import fmha_dir
from .model import ApiModel, Need
from .options import Options
from .process.launch import GenerateError
from .process.runner import check_generate_py, interpreter_id
from .session import AheadStep, Session
from .verify.tile_table import tile_names, tile_tables

__all__ = ["DirectiveUse", "collect_examples", "collect_guide",
           "collect_playground", "open_session", "steps_ahead", "suspicious_problems"]


def open_session(root: Path, python_origin: str, **settings: Any) -> Session:
    """The Session of the CK tree at ``root``; an interpreter that is not a Python is a
    configuration error naming where it was given (``--python``, ``fmha_python``)."""
    fmha = fmha_dir(root)
    check_generate_py(fmha)
    try:
        interpreter_id(settings.get("python") or sys.executable, fmha, settings.get("timeout", 900))
    except GenerateError as error:
        raise GenerateError("%s: %s" % (python_origin, error), command=error.command,
                            stderr_tail=error.stderr_tail, kind=WarningType.CONFIG) from None
    return Session(root, **settings)


def collect_guide(session: Session, api: str, options: Options = Options(),
                  sections: Optional[Sequence[str]] = None,
                  needs: Sequence[Need] = ()) -> GuideData:
    """What the guide of ``api`` shows in ``sections`` (None: all) for ``needs``; the
    model's failures raise, the optional facts' are kept as ``*_problem``."""
    names = parse_sections(list(sections) if sections is not None else None)
    shown = needs_of(names)
    conditions = SectionNeed.DISPATCH in shown
    model = session.model(api, options)
    listing = session.runner.list_kernels(session.tree.request(api, options))
    data = GuideData(api=api, options=options, model=model, date=build_date(),
                     token_counts=session.token_counts(api, options),
                     api_file=listing.api_file, listing_command=session.runner.listing_command(
                         session.tree.request(api, options), appends=model.list_appends))
    if shown & {SectionNeed.SET, SectionNeed.SET_IF_MADE}:
        # First: it reads the dispatch file while its filtered runs run.
        try:
            data.recommendation = session.recommend(api, options, needs)
        except (ImportError, NotImplementedError) as exc:
            data.recommendation_problem = Problem(
                WarningType.RECOMMEND, "the recommended minimal set is not available in this version "
                "of sphinxext-fmha (%s: %s)" % (type(exc).__name__, exc))
        except Exception as exc:  # noqa: BLE001 - reported, never a traceback
            data.recommendation_problem = problem_of(exc).about("cannot make the recommended minimal set")
    if conditions:
        # Optional facts: when they cannot be read, the guide leaves them out and the
        # caller reports why (never silently).
        try:
            reading = session.dispatch_reading(api, options)
            if reading:
                data.dispatch_reading = reading
                data.token_dispatch = session.token_dispatch(api, options)
                data.head_dims = session.head_dims(api, options)
            # Last: on a heavy tree the probe's other --mask listing outlasts the probe's
            # own work, and everything above can be made while it runs.
            data.mask_modes = session.mask_modes(api, options)
        except Exception as exc:  # noqa: BLE001 - reported by the caller, never a traceback
            data.dispatch_problem = problem_of(exc).about("cannot read the API dispatch file or the "
                                                          "mask modes (dispatch conditions are left out)")
    if SectionNeed.EXAMPLES in shown:
        data.examples = collect_examples(session, api, options)
    if SectionNeed.PATTERN_TRAPS in shown:
        data.pattern_traps = session.pattern_traps(api, options)
    if SectionNeed.FILTER_FACTS in shown:
        try:
            data.filter_facts = session.filter_facts(api, options)
        except Exception as exc:  # noqa: BLE001 - reported by the caller, never a traceback
            data.filter_problem = problem_of(exc).about("cannot measure what write mode and --targets "
                                                        "do (the filter mechanism leaves them out)")
    if SectionNeed.TILE_TABLES in shown:
        # the set's tile counts when the recommendation has them, else the listing's
        if data.recommendation is not None and data.recommendation.tile_tables:
            data.tile_tables = data.recommendation.tile_tables
        else:
            data.tile_tables = tile_tables(
                model, session.parsed_listing(api, options, listing.files),
                names=tile_names(model, session.observation(api, options)["records"]))
    return data


def collect_examples(session: Session, api: str, options: Options = Options()
                     ) -> List[ExampleSet]:
    """The example workloads of ``api`` with their sets (or why not)."""
    workloads = session.examples(api, options)
    try:
        # their runs in one batch; the sets without losses (the section shows none)
        return [ExampleSet(w, s) for w, s in zip(workloads, session.recommend_all(
            api, options, [w.needs for w in workloads]))]
    except Exception:  # noqa: BLE001 - one by one below, each failure said in the page
        pass
    examples = []
    for workload in workloads:
        example = ExampleSet(workload)
        try:
            example.recommendation = session.recommend(api, options, workload.needs, True)
        except Exception as exc:  # noqa: BLE001 - reported in the page, never a traceback
            example.problem = problem_of(exc).message
        examples.append(example)
    return examples


def suspicious_problems(model: ApiModel) -> List[Problem]:
    """Successes not to trust: an empty listing, or one the observation disagrees with."""
    problems = []
    if model.baseline.count == 0:
        problems.append(Problem(WarningType.SUSPICIOUS, (
            "%s: generate.py exited with 0 but listed no kernel (with options %s); the "
            "guide has nothing to show. Check the options (receipt, targets, optdim)"
            % (model.api, ", ".join("%s=%s" % kv for kv in sorted(model.options.items()))
               or "none"))))
    elif model.checks.get("listing_matches_observation") is False:
        problems.append(Problem(WarningType.SUSPICIOUS, (
            "%s: generate.py's listing and the kernel objects observed while it ran disagree; "
            "counts in the guide come from the listing" % model.api)))
    return problems


#: stands for the reader's pattern in the playground's command template
_PATTERN = "FMHA_PLAYGROUND_PATTERN"


def collect_playground(session: Session, api: str, options: Options = Options()) -> PlaygroundInputs:
    """What the filter playground of ``api`` embeds."""
    model = session.model(api, options)
    listing = session.runner.list_kernels(session.tree.request(api, options))
    parsed = session.parsed_listing(api, options, listing.files)
    traits = session.trait_groups(api, options) if model.filter.drops == "trait" else []
    template = session.runner.listing_command(session.tree.request(api, options, filter=_PATTERN),
                                              appends=model.list_appends)
    head, _, tail = template.partition(" -f %s " % _PATTERN)
    return PlaygroundInputs(model=model, parsed=dict(parsed.parsed), traits=traits,
                            command=(head, tail), unparsed=len(parsed.unparsed),
                            followers=session.followers(api, options))


@dataclass(frozen=True)
class DirectiveUse:
    """A directive found in a page before it is read, with its options' raw values."""

    directive: str
    api: str = ""
    options: Options = Options()
    sections: Optional[str] = None
    filter: str = ""
    needs: str = ""


def steps_ahead(session: Session, uses: Sequence[DirectiveUse],
                workers: bool = True) -> List[AheadStep]:
    """The expensive steps these directives (in reading order) will need, in the order
    pages need them: the probes; from the last guide back (never the first), its other
    ``--mask`` listing and its worker; the filter checks' batches; the API lists'
    listings. A use that cannot be planned is left to its page."""
    filters: Dict[Tuple[str, Options], List[str]] = {}
    for use in uses:
        if use.directive == "fmha-filter-check" and use.filter:
            filters.setdefault((use.api, use.options), []).append(use.filter)
    steps: List[AheadStep] = []
    planned = set()

    def plan(kind: str, make: Callable[..., Optional[AheadStep]], *args: object) -> None:
        if (kind,) + args in planned:
            return
        planned.add((kind,) + args)
        try:
            step = make(*args)
        except Exception:  # noqa: BLE001 - the page reports it when it is read
            return
        if step is not None:
            steps.append(step)

    # Every page needs its probe first (the model), so the probes go first, in reading
    # order; a page that needs its other --mask listing before a worker has started
    # it runs it itself.
    for use in uses:
        if use.directive != "fmha-api-list":
            plan("probe", session.probe_ahead, use.api, use.options)
    guides = _guides(uses)
    if workers:
        for (api, options), names in reversed(list(guides.items())[1:]):
            if SectionNeed.DISPATCH in needs_of(names):
                plan("mask", session.mask_listing_ahead, api, options)
            plan("worker", session.analysis_ahead, api, options, ",".join(names),
                 tuple(stored_kinds(names)))
    for use in uses:
        if use.directive == "fmha-kernel-guide" and SectionNeed.DISPATCH in needs_of(
                _sections(use.sections)):
            plan("mask", session.mask_listing_ahead, use.api, use.options)
    # The batches wait for their probe (they reuse its kernels' trait keys): after the
    # probes, so that they seldom hold a worker while a probe runs in the other.
    for (api, options), texts in filters.items():
        plan("checks", session.checks_ahead, api, tuple(texts), options)
    for use in uses:
        if use.directive == "fmha-api-list":
            for info in session.apis():
                if info.in_generate:
                    plan("listing", lambda api, options: session.listing_ahead(
                        session.tree.request(api, options)), info.name, use.options)
    return steps


def _guides(uses: Sequence[DirectiveUse]) -> Dict[Tuple[str, Options], List[str]]:
    guides: Dict[Tuple[str, Options], List[str]] = {}
    for use in uses:
        # (a guide for a workload: its page computes it; a worker prepares the default)
        names = [] if use.directive != "fmha-kernel-guide" or use.needs else _sections(use.sections)
        if names:
            shown = guides.setdefault((use.api, use.options), [])
            shown.extend(name for name in names if name not in shown)
    return guides


def _sections(sections: Optional[str]) -> List[str]:
    try:
        return parse_sections(sections)
    except Exception:  # noqa: BLE001 - a bad :sections: value: the page reports it
        return []
