"""The minimal kernel set, the commands that select it, and what it costs: a workload
narrows the kernels, the policy picks a keep set, filters are synthesised and run; every
statement is then read from the union of the runs, not from the policy's intent."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple, cast

from ..analysis.filenames import split_filename
from ..cppapi.link_check import partners
from ..cppapi.routes import View
from ..model import ApiModel, Need, Note, Recommendation
from ..options import Options
from ..process.runner import ApiFileResult
from .coupling import Coupling, coupling_of
from .filtercheck import ParsedListing, predict
from .losses import describe_losses, note_call_terms
from .needs import needed_decisions, unmet_combinations, workload_scope
from .pattern_reading import run_reading
from .policy import Plan, plan_keep_set, segment_decisions
from .set_runs import RecommendRunner, source_bytes, verified_runs
from .standins import SetDispatch, set_dispatch
from .synthesis import Kernel, Style, Synthesis, synthesize
from .tile_table import tile_tables


@dataclass
class RecommendInputs:
    model: ApiModel
    options: Options
    baseline: ParsedListing
    traits: List[List[str]] = field(default_factory=list)
    #: kernel file -> the kernel whose name ``-f`` tests in its stead (kept with it)
    followers: Dict[str, str] = field(default_factory=dict)
    #: the full listing's API dispatch file (None when it could not be written)
    full_api: Optional[ApiFileResult] = None
    #: kernel file -> readable dispatch condition terms
    conditions: Dict[str, List[str]] = field(default_factory=dict)
    #: reads ``conditions`` (as costly as the runs: called while they run)
    read_conditions: Optional[Callable[[], Dict[str, List[str]]]] = None
    #: notes from the step that gathered the inputs, as facts
    notes: List[Note] = field(default_factory=list)
    #: kernel file -> its tile's own name (:func:`~.tile_table.tile_names`)
    tile_names: Dict[str, str] = field(default_factory=dict)
    #: the workload (:func:`~.needs.resolve_needs`); empty: the default minimal set
    needs: List[Need] = field(default_factory=list)
    #: no losses and no tile tables (an example workload shows neither)
    brief: bool = False
    #: the caller's memo of the coupling (every set of the API reads the same)
    read_coupling: Optional[Callable[[Callable[[], Optional[Coupling]]], object]] = None


def kernels_of(baseline: ParsedListing) -> List[Kernel]:
    return [Kernel(file=f, kernel_type=c, name="".join(t), tokens=tuple(t))
            for f, (c, t) in sorted(baseline.parsed.items())]


def _coupling(inputs: RecommendInputs, type_of: Mapping[str, str]) -> Optional[Coupling]:
    def read() -> Optional[Coupling]:
        full = inputs.full_api
        found = coupling_of(partners(full.text, full.kernel_traits), type_of, "dispatch") \
            if full is not None else None
        return found or (coupling_of(inputs.traits, type_of, "traits") if inputs.traits else None)

    if inputs.read_coupling is not None:  # the caller keeps it: every set reads the same
        return cast(Optional[Coupling], inputs.read_coupling(read))
    return read()


@dataclass
class Prepared:
    """A recommendation up to its runs: the filters, and what :func:`finish` reads them against."""

    result: Recommendation
    kernels: List[Kernel]
    coupling: Optional[Coupling]
    #: the kernels the policy chose among (every kernel without needs)
    scope: List[Kernel]
    plan: Plan
    #: the full API's dispatch, as sets of kernels run it (None without the file)
    dispatch: Optional[SetDispatch] = None
    #: the set the filters are meant to select
    claimed: Set[str] = field(default_factory=set)
    filters: List[str] = field(default_factory=list)


def prepare(inputs: RecommendInputs) -> Prepared:
    """Everything before the runs: the keep set and the filters that select it."""
    model = inputs.model
    kernels = kernels_of(inputs.baseline)
    type_of = {k.file: k.kernel_type for k in kernels}
    result = Recommendation(api=model.api, note_facts=list(inputs.notes))
    coupling = _coupling(inputs, type_of)
    followers = set(coupling.followers) if coupling else set()
    deciding = [k.class_name for k in model.kernel_types if k.class_name not in followers]
    # a workload: the policy chooses among the kernels its values allow
    scope = kernels
    needed: Set[Tuple[str, str]] = set()
    if inputs.needs:
        result.needs = list(inputs.needs)
        allowed = workload_scope(model, kernels, inputs.needs, deciding,
                                 coupling.partners if coupling else None)
        scope = [k for k in kernels if k.file in allowed]
        result.workload_count = len(scope)
        result.needs_unmet = unmet_combinations(model, kernels, inputs.needs, deciding)
        needed = {(t, need.segment) for need in inputs.needs for t in need.kernel_types}
    if not scope:  # no kernel has the workload's values (said from needs_unmet)
        return Prepared(result, kernels, coupling, scope, Plan())
    # the dispatch decides which padding and tuning variants run every call
    _read_conditions(inputs, result, len(inputs.notes))
    dispatch = set_dispatch(inputs.full_api.text, inputs.full_api.kernel_traits) \
        if inputs.full_api is not None else None
    plan = plan_keep_set(model, scope, deciding, dispatch, needed)
    prepared = Prepared(result, kernels, coupling, scope, plan, dispatch)
    target = _with_leaders(set(plan.keep) - {k.file for k in kernels
                                             if k.kernel_type in followers}, inputs.followers)
    if coupling is not None:
        target |= coupling.follow({f for f in target if type_of.get(f) == coupling.primary})
        result.coupled = _coupled_facts(model, coupling, type_of, dispatch)
    if dispatch is not None:
        # a kernel its own set never runs (an earlier branch takes its calls) is left out
        idle = set(dispatch.runs_nothing(dispatch.view(target), target))
        if idle:
            target -= idle
            if coupling is not None:
                mains = {f for f in target if type_of.get(f) == coupling.primary}
                target = {f for f in target if type_of.get(f) not in followers} | \
                    coupling.follow(mains)
            target = _with_leaders(target, inputs.followers)
    if not target:  # the workload's values leave no kernel: nothing to select
        return prepared
    prepared.claimed, prepared.filters = _synthesised(inputs, kernels, target, coupling,
                                                      plan.categories, result)
    return prepared


def _coupled_facts(model: ApiModel, coupling: Coupling, type_of: Mapping[str, str],
                   dispatch: Optional[SetDispatch]) -> Dict[str, Any]:
    """:attr:`Recommendation.coupled` before the runs: the followers ``-f`` never filters
    (``unfiltered``) and, read from the full API dispatch file, per follower how many
    main kernels it launches are launched without one (``without``, of ``launched``)."""
    facts: Dict[str, Any] = {
        "followers": list(coupling.followers), "primary": coupling.primary,
        "source": coupling.source,
        "unfiltered": [t for t in coupling.followers if t in model.filter.unfiltered_types]}
    if dispatch is not None and coupling.source == "dispatch":
        unreached = set(dispatch.match.unreached)
        mains = [f for f, t in type_of.items() if t == coupling.primary and f not in unreached]
        kinds = {f: {type_of.get(p) for p in coupling.partners.get(f, ())} for f in mains}
        facts["launched"] = len(mains)
        facts["without"] = {t: sum(1 for f in mains if t not in kinds[f])
                            for t in coupling.followers}
    return facts


def _unused_followers(result: Recommendation, type_of: Mapping[str, str]) -> None:
    """Per follower, its kernels in the set the set's written dispatch file launches in
    no call (``coupled["unused"]``; only when the coupling was read from a dispatch file
    and the set's was written and read)."""
    if result.coupled.get("source") != "dispatch" or not result.write_verified:
        return
    unused = Counter(type_of.get(f) for f in result.links_unreferenced)
    result.coupled["unused"] = {t: unused.get(t, 0) for t in result.coupled["followers"]}


def finish(inputs: RecommendInputs, prepared: Prepared, runner: RecommendRunner
           ) -> Recommendation:
    """The runs of the prepared filters, and everything read from them."""
    model, result, kernels, scope = inputs.model, prepared.result, prepared.kernels, prepared.scope
    plan, coupling, dispatch = prepared.plan, prepared.coupling, prepared.dispatch
    if not prepared.filters:
        result.counts = _counts(inputs, set(), scope)
        return result
    union, written = verified_runs(inputs.model, inputs.options, runner, prepared.filters,
                                   prepared.claimed, result)
    _unused_followers(result, {k.file: k.kernel_type for k in kernels})
    tiles = {key for key, category in plan.categories.items() if category == "tile"}
    for run in result.runs:
        run.reading = run_reading(model, kernels, run.filter, tiles)
    # kernels the full API never launches: dropping them loses no call
    never_run: Dict[str, List[Dict[str, Any]]] = {}
    if dispatch is not None:  # (read from the full API's dispatch file, as the policy read it)
        result.full_unreferenced = list(dispatch.match.unreached)
        never_run = {name: [{"unreferenced": True}] for name in dispatch.match.unreached}
        never_run.update(dispatch.never_run())
        if result.write_verified:
            result.reached_only_in_set = sorted(
                f for f in union if f in never_run and f not in result.unreachable_facts
                and f not in result.links_unreferenced)
    labels = {k.class_name: [s.label for s in k.segments] for k in model.kernel_types}
    full_never = set(dispatch.never_run()) if dispatch is not None else set()
    result.decisions = segment_decisions(model, scope, union, plan, coupling, full_never)
    result.arch_namesakes = arch_namesakes(model, union, result.unreachable_facts)
    # the set's dispatch as generate.py wrote it (its branches' order can differ from the
    # full file's), read with the full file's terms; else the full file without the dropped
    set_file = dispatch.written(written.text, written.kernel_traits) \
        if dispatch is not None and written is not None and result.write_verified else None
    if dispatch is not None:  # what the commands do with the kernels the full API never runs
        # one view of the set's dispatch: its memos (each kernel's ways in) serve every question
        read = set_file or dispatch
        after = set_file.routes.full if set_file is not None else dispatch.view(union)
        result.emptied = _emptied(dispatch, union)
        result.emptied_lost = _emptied_lost(dispatch, after, result.emptied)
        selected = {f: True for f in union if f in full_never}
        result.never_run_left_out = sum(1 for k in scope
                                        if k.file in full_never and k.file not in union)
        result.never_run_selected = len(selected)
        # the set's own dispatch may run them: the dropped kernels that took their calls
        # in the full build are gone (the name reason is said of the others only); read
        # from the file the driver wrote, else from the full file without the dropped leaves
        reached = set(selected) & set(result.reached_only_in_set) if result.write_verified \
            else set(selected) - set(dispatch.runs_nothing(after, selected))
        idle = [f for f in selected if f not in reached]
        result.never_run_reached = len(reached)
        result.never_run_needed = sum(1 for f in reached
                                      if read.loses(f, after, read.view(union - {f})))
        result.never_run_namesakes = len(arch_namesakes(model, union, dict.fromkeys(idle)))
    chosen = [d for d in result.decisions if d.category != "needed"]
    if not inputs.brief:
        fates = dispatch.fates([k.file for k in scope if k.file not in union], union,
                               set_file, after) if dispatch is not None else {}
        describe_losses(chosen, scope, union, plan.categories, inputs.conditions,
                        labels, fates, never_run)
        note_call_terms(chosen, scope, union, inputs.conditions, labels)
        result.tile_tables = tile_tables(model, inputs.baseline, union, inputs.tile_names)
    needed_decisions(result.decisions, kernels, union, labels)
    result.counts = _counts(inputs, union, scope)
    if result.build is not None and inputs.full_api is not None \
            and inputs.full_api.kernel_bytes:
        result.build.full_kernel_files = len(inputs.full_api.kernel_traits)
        result.build.full_source_bytes = source_bytes(inputs.full_api)
    else:
        result.build = None
    return result


def select_exactly(inputs: RecommendInputs, runner: RecommendRunner,
                   wanted: Set[str]) -> Tuple[Recommendation, Set[str]]:
    """The fewest verified ``-f`` runs selecting ``wanted`` (no decisions), and their union."""
    kernels = kernels_of(inputs.baseline)
    result = Recommendation(api=inputs.model.api)
    coupling = _coupling(inputs, {k.file: k.kernel_type for k in kernels})
    claimed, filters = _synthesised(inputs, kernels, set(wanted), coupling, {}, result)
    return result, verified_runs(inputs.model, inputs.options, runner, filters, claimed, result)[0]


def arch_namesakes(model: ApiModel, union: Set[str], never_run: Mapping[str, object]
                   ) -> Dict[str, str]:
    """Never-run kernels named as a kernel the set runs but for the arch suffix -> that
    suffix (``-f`` does not see the suffix: no pattern keeps one without the other)."""
    suffixes = {s for t in model.kernel_types for s in t.arch_suffixes} | {""}
    names = {f: split_filename(f, tuple(sorted(suffixes))) for f in union}
    run_names = {names[f] for f in union if f not in never_run}
    return {f: f[len(name):-len(".cpp")] for f, name in sorted(names.items())
            if f in never_run and name is not None and name in run_names
            and len(f) > len(name) + len(".cpp")}


def _with_leaders(target: Set[str], followers: Mapping[str, str]) -> Set[str]:
    """``target`` with each follower kept exactly with its leader."""
    return {f for f in target if f not in followers} | {
        f for f, leader in followers.items() if leader in target}


def _synthesised(inputs: RecommendInputs, kernels: Sequence[Kernel], target: Set[str],
                 coupling: Optional[Coupling], categories: Mapping[Tuple[str, str], str],
                 result: Recommendation) -> Tuple[Set[str], List[str]]:
    """(the set the runs are meant to select, their filters)."""
    model = inputs.model
    primary = coupling.primary if coupling else max(
        model.kernel_types, key=lambda k: k.count).class_name
    synthesis, predicted = _synthesise(inputs, kernels, target, primary, coupling, categories)
    result.note_facts += synthesis.notes
    claimed = target | set(synthesis.extra)
    if predicted > claimed:
        # the semantics force more kernels: the closest expressible superset, with its cost
        extra = Counter(k.kernel_type for k in kernels if k.file in predicted - claimed)
        result.note_facts.append(Note("superset", {"extra": dict(sorted(extra.items()))}))
        claimed = set(predicted)
    elif predicted != claimed:
        result.note_facts.append(Note("prediction_differs", {"predicted": len(predicted),
                                                             "claimed": len(claimed)}))
    result.keep_count = len(claimed)
    return claimed, list(synthesis.filters)


def _counts(inputs: RecommendInputs, union: Set[str], scope: Sequence[Kernel]
            ) -> Dict[str, Dict[str, int]]:
    full, parsed = inputs.baseline.per_type(), inputs.baseline.parsed
    minimal = Counter(parsed[f][0] for f in union if f in parsed)
    counts = {t: {"full": n, "minimal": minimal.get(t, 0)} for t, n in full.items()}
    counts["total"] = {"full": sum(full.values()), "minimal": len(union)}
    if inputs.needs:
        workload = Counter(k.kernel_type for k in scope)
        for kernel_type, values in counts.items():
            values["workload"] = len(scope) if kernel_type == "total" \
                else workload.get(kernel_type, 0)
    return counts


def _synthesise(inputs: RecommendInputs, kernels: Sequence[Kernel], target: Set[str],
                primary: str, coupling: Optional[Coupling],
                categories: Mapping[Tuple[str, str], str]) -> Tuple[Synthesis, Set[str]]:
    """The first variant whose predicted selection is the target, and that prediction;
    whole-token patterns when they take at most one run more."""
    named = {n.segment for n in inputs.needs}
    pinned = {k.class_name: {i for i, s in enumerate(k.segments) if s.label in named}
              for k in inputs.model.kernel_types}
    loose = {k.class_name: {i for i, s in enumerate(k.segments)
                            if categories.get((k.class_name, s.label)) == "tile"}
             for k in inputs.model.kernel_types} if named else {}

    def attempt(narrow: bool, literal: bool) -> Synthesis:
        return synthesize(inputs.model, kernels, target, primary,
                          coupling.partners if coupling else None, narrow_followers=narrow,
                          style=Style(literal=literal, pinned=pinned, loose=loose))

    tried = []
    for narrow in (True, False):
        synthesis = attempt(narrow, False)
        predicted = _predicted(inputs, synthesis)
        if predicted == target | set(synthesis.extra):
            break
        tried.append((synthesis, predicted))
    else:
        return min(tried, key=lambda t: len(t[1] ^ target))
    exact = (synthesis, predicted)
    if all(_plain(text) for text in synthesis.filters):
        return exact
    for narrow in (True, False):
        literal = attempt(narrow, True)
        if len(literal.filters) > len(synthesis.filters) + 1:
            continue
        predicted = _predicted(inputs, literal)
        if predicted == target | set(literal.extra):
            return literal, predicted
    return exact


def _predicted(inputs: RecommendInputs, synthesis: Synthesis) -> Set[str]:
    return set().union(*(predict(inputs.model, inputs.baseline, text, inputs.traits,
                                 inputs.followers) for text in synthesis.filters))


def _plain(pattern: str) -> bool:
    """No ``?`` and no ``[...]`` but one-character classes (escapes)."""
    return "?" not in pattern and all(len(c) == 3 for c in re.findall(r"\[[^\]]*\]", pattern))


def _read_conditions(inputs: RecommendInputs, result: Recommendation, position: int) -> None:
    """``inputs.conditions`` read; a failure is a note after the inputs' own."""
    if inputs.read_conditions is None:
        return
    try:
        inputs.conditions = inputs.read_conditions()
    except Exception as error:  # noqa: BLE001 - reported; the set still stands
        result.note_facts.insert(position, Note("conditions_unread",
                                                {"error": str(error).splitlines()[0]}))


def _emptied_lost(dispatch: SetDispatch, after: View, emptied: Mapping[str, object]
                  ) -> Dict[str, List[int]]:
    """Each emptied function -> [how many of the kernels it ran ran calls that run no
    kernel in the set (``after``: the set's dispatch), how many it ran]."""
    routes = dispatch.routes
    found: Dict[str, List[int]] = {}
    for function in emptied:
        ran = [name for name, orders in sorted(dispatch.leaves_of.items())
               if any(routes.tree.leaves[o].function == function
                      and routes.full.leaf_way(o) is not None for o in orders)]
        found[function] = [sum(1 for name in ran if dispatch.loses(name, routes.full, after)),
                           len(ran)]
    return found


def _emptied(dispatch: SetDispatch, union: Set[str]) -> Dict[str, List[str]]:
    """Functions that run kernels in the full API and none in the set -> those that
    now take their calls (their callers' next calls)."""
    routes = dispatch.routes
    full = routes.full
    running = {routes.tree.leaves[o].function for name, orders in dispatch.leaves_of.items()
               for o in orders if full.leaf_way(o) is not None}
    kept = {routes.tree.leaves[o].function for name in union
            for o in dispatch.leaves_of.get(name, ())}
    calls = routes.entry_points.calls
    found: Dict[str, List[str]] = {}
    for function in sorted(running - kept):
        callers = {c.caller for c in calls if c.callee == function}
        found[function] = sorted({c.callee for c in calls if c.caller in callers
                                  and c.callee != function and c.callee in kept})
    return found


