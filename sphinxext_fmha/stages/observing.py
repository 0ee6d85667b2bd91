"""Observation: the probe's run of generate.py (its listing, kernel objects, field
perturbations and dispatch file), kept as the runs it stands for, and the traits it saw."""

from __future__ import annotations

import dataclasses
from typing import Callable, List, Optional, Tuple

from ..analysis.analyze import Options, Tree, build_model, module_rel_of, probe_argv
from ..analysis.observe import observe, observe_also
from ..analysis.source import analyze_source
from ..model import ApiModel
from ..process.cache import DiskCache, TreeState
from ..process.runner import GenerateRequest, GenerateRunner

#: (request, the probe's arguments, the other ``--mask`` request, its listing's arguments)
ProbeRuns = Tuple[GenerateRequest, List[str], Optional[GenerateRequest], Optional[List[str]]]
#: per member of a trait: (its listed file, or None, its name)
TraitGroup = List[Tuple[Optional[str], str]]


def model(tree: Tree, api: str, options: Options, observed: dict) -> ApiModel:
    """The API's model from its observation and the codegen's static facts."""
    info = tree.api(api)
    facts = analyze_source(tree.fmha_dir, module_rel_of(tree, info))
    return build_model(tree, info, options, observed, facts, observed["listing"])


def other_mask(tree: Tree, options: Options) -> Optional[Tuple[str, str]]:
    """(this mask mode, the other one), or None when generate.py has no mask option."""
    option = tree.option("mask")
    if option is None:
        return None
    this = options.mask or option.default or "simplified"
    return this, "simplified" if this == "generic" else "generic"


def probe_runs(tree: Tree, api: str, options: Options) -> ProbeRuns:
    """The probe's runs, with the other ``--mask`` mode's listing (made in its interpreter)."""
    request, supported, modes = tree.request(api, options), tree.supported_dests(), other_mask(tree, options)
    if modes is None:
        return request, probe_argv(request, supported), None, None
    other = tree.request(api, dataclasses.replace(options, mask=modes[1]))
    return request, probe_argv(request, supported), other, probe_argv(other, supported)


def observe_runs(runner: GenerateRunner, runs: ProbeRuns, *, cache: DiskCache, timeout: float,
                 progress: Optional[Callable[[str], None]]
                 ) -> Tuple[dict, Optional[Callable[[], None]]]:
    """(the observation, what keeps the other ``--mask`` listing it made, if any); its
    listing and dispatch file are kept as the results of ``-l`` and ``-o``."""
    request, argv, other, also_argv = runs
    inputs = runner.state()
    observed = observe(runner.fmha_dir, argv, python=runner.python, cache=cache,
                       timeout=timeout, progress=progress, also_list=also_argv, inputs=inputs)
    seconds = float(observed.get("seconds", {}).get("observe", 0.0))
    runner.store_listing(request, observed["listing"], seconds, inputs=inputs)
    dispatch = observed.get("dispatch") or {}
    if dispatch and not dispatch.get("error"):
        runner.store_api_file(request, dispatch, float(dispatch.get("seconds", 0.0)),
                              inputs=inputs)
    if other is None or also_argv is None:
        return observed, None
    return observed, lambda: _keep_other_listing(runner, cache, other, argv, also_argv, inputs)


def _keep_other_listing(runner: GenerateRunner, cache: DiskCache, request: GenerateRequest,
                        argv: List[str], also_argv: List[str], inputs: TreeState) -> None:
    """Keep the other listing the probe made (waiting for it) as that run's result, when
    it ran cleanly (else that listing runs as a process and says what is wrong)."""
    also = observe_also(runner.fmha_dir, argv, also_argv, python=runner.python,
                        cache=cache, inputs=inputs) or {}
    if "listing" in also and not also.get("error"):
        runner.store_listing(request, also["listing"], float(also.get("seconds", 0.0)),
                             inputs=inputs)


def trait_groups(observed: dict) -> List[TraitGroup]:
    """Every observed trait with a listed member: per member (its file, or None when
    no listed kernel has that name -- a member the trait does not write, such as a
    disabled kernel -- and its name, which the filter part is still matched against)."""
    records = observed["records"]
    marker_groups = observed.get("fnmatch_calls", {}).get("groups", [])
    size = len(marker_groups[0]) if marker_groups else 1
    summary = observed.get("unfiltered_calls", {})
    unlisted = summary.get("unlisted", [])
    calls = [index for group in summary.get("groups", []) for _, index in group]
    if size < 2 or len(calls) % size:
        return []
    # With every part matching, each trait makes one call per part, in the order the
    # marker run showed; a trait none of whose names is listed was dropped by a later rule.
    groups = []
    for start in range(0, len(calls), size):
        indices = calls[start:start + size]
        if not any(i >= 0 for i in indices):
            continue
        groups.append([(records[i]["filename"], records[i]["name"]) if i >= 0
                       else (None, unlisted[-2 - i] if 0 <= -2 - i < len(unlisted) else "")
                       for i in indices])
    return groups


def traits(groups: List[TraitGroup]) -> List[List[str]]:
    """Kernel files generated together (one fnmatch decision each), as observed; only
    the traits whose every member is a listed kernel."""
    return [[str(filename) for filename, _ in group] for group in groups
            if all(filename is not None for filename, _ in group)]
