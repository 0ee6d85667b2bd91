"""A minimal kernel set, the fnmatch filters that select it, and what it costs.

Fields are classified from what the code says about them (names, values, tokens);
the keep/drop policy is the guide's documented one. Every proposed filter is run
through the tree's own generate.py, and the union of the runs is compared with the
keep set: the recommendation says ``verified`` only when they are equal.
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
import shlex
from collections import Counter
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Set, Tuple

from ..analysis.analyze import Options
from ..options import cli_flag
from ..analysis.grammar import short_name
from ..model import ApiModel, Decision, FilterRun, KernelType, Recommendation, Segment
from .filtercheck import ParsedListing

if TYPE_CHECKING:  # pragma: no cover
    from ..session import Session

MAX_RUNS = 16
PARALLEL_RUNS = 2
OFF_VALUES = {"f", "no", "0", "false", "none", "s_no"}

POLICY = {
    "padding": "keep the no-pad and moderately aligned variants, drop the fully padded one",
    "optional feature": "keep the disabled variant; the feature's kernels are dropped",
    "mask": "keep no-mask plus the most common mask variant",
    "deterministic": "keep the non-deterministic variant",
    "tuning": "keep the general variant of the tuning specialisation",
    "other": "keep every value (a property of the problem, not an option)",
}


def classify(segment: Segment) -> str:
    names = " ".join(short_name(f).lower() for f in segment.fields)
    values = {v for combos in segment.values.values() for c in combos for v in c.values()}
    if "pad" in names:
        return "padding"
    if "mask" in names:
        return "mask"
    if "determin" in names:
        return "deterministic"
    if any(k in names for k in ("trload", "max_seq", "maxq", "skip")):
        return "tuning"
    if values and values & OFF_VALUES and len(segment.fields) == 1 and not _all_numeric(values):
        return "optional feature"
    return "other"


def _all_numeric(values: Set[str]) -> bool:
    return all(v.lstrip("-").isdigit() for v in values)


def _off(combo: Dict[str, str]) -> bool:
    return all(v.lower() in OFF_VALUES or v == "-1" for v in combo.values())


def _padded_fields(combo: Dict[str, str]) -> int:
    return sum(1 for v in combo.values() if v.lower() not in OFF_VALUES)


def decide(kernel_type: KernelType, segment: Segment, present: Counter) -> Decision:
    category = classify(segment)
    tokens = [t for t in segment.tokens if present.get(t)]
    keep: List[str] = list(tokens)
    if category == "padding" and len(tokens) > 1:
        most = max(max(_padded_fields(c) for c in segment.values[t]) for t in tokens)
        keep = [t for t in tokens if min(_padded_fields(c) for c in segment.values[t]) < most]
    elif category in ("optional feature", "deterministic", "tuning"):
        off = [t for t in tokens if any(_off(c) for c in segment.values.get(t, []))]
        keep = off or tokens
    elif category == "mask":
        off = [t for t in tokens if any(_off(c) for c in segment.values.get(t, []))]
        masked = sorted((t for t in tokens if t not in off), key=lambda t: (-present[t], t))
        keep = off + masked[:1]
    keep = keep or tokens
    drop = [t for t in tokens if t not in keep]
    return Decision(kernel_type=kernel_type.class_name, segment=segment.label,
                    fields=list(segment.fields), category=category,
                    keep=sorted(keep), drop=sorted(drop), reason=POLICY[category])


def _alternatives(tokens: Sequence[str]) -> List[str]:
    """fnmatch pieces that together match exactly ``tokens`` (character classes
    where tokens differ in one position)."""
    pending = sorted(set(tokens))
    merged: List[str] = []
    while pending:
        first = pending.pop(0)
        group = [first]
        for other in list(pending):
            if len(other) == len(first) and sum(a != b for a, b in zip(first, other)) == 1 and \
                    all(sum(a != b for a, b in zip(g, other)) == 1 for g in group) and \
                    _diff_at(first, other) == _diff_at(first, group[-1] if len(group) > 1 else other):
                group.append(other)
                pending.remove(other)
        if len(group) == 1:
            merged.append(_escape(first))
        else:
            at = _diff_at(group[0], group[1])
            chars = "".join(sorted({g[at] for g in group}))
            merged.append(_escape(first[:at]) + "[" + chars + "]" + _escape(first[at + 1:]))
    return merged


def _diff_at(a: str, b: str) -> int:
    return next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)


def _escape(text: str) -> str:
    return "".join("[%s]" % c if c in "*?[" else c for c in text)


def type_patterns(kernel_type: KernelType, decisions: List[Decision],
                  continued: Sequence[bool] = ()) -> Optional[List[str]]:
    """fnmatch patterns (one per run) for a kernel type's keep set, or None when
    a kept token is the empty (absent) token next to dropped ones: fnmatch cannot
    say 'not followed by'."""
    by_segment = {d.segment: d for d in decisions if d.kernel_type == kernel_type.class_name}
    choices: List[List[str]] = []
    for index, segment in enumerate(kernel_type.segments):
        decision = by_segment.get(segment.label)
        if decision is None or not decision.drop:
            choices.append([""])
            continue
        if "" in decision.keep:
            return None
        pieces = _alternatives(decision.keep)
        if index < len(continued) and continued[index]:
            # A later token always follows: pin the end so '_pskd' cannot match '_pskddv'.
            pieces = [p + "_" for p in pieces]
        choices.append(pieces)
    patterns = []
    for combo in itertools.product(*choices):
        pieces: List[str] = []
        for piece in (p for p in combo if p):
            if pieces and pieces[-1].endswith("_") and piece.startswith("_"):
                piece = piece[1:]  # the pinned '_' before already is this separator
            pieces.append(piece)
        patterns.append("*" + "*".join(pieces) + "*" if pieces else "*")
    return patterns


def recommend(session: "Session", api: str, options: Options = Options()) -> Recommendation:
    model = session.model(api, options)
    request = session.tree.request(api, options)
    baseline_listing = session.runner.list_kernels(request)
    baseline = session.parsed_listing(api, options, baseline_listing.files)
    result = Recommendation(api=api)

    keep_files: Set[str] = set()
    per_type_patterns: Dict[str, List[str]] = {}
    for kernel_type in model.kernel_types:
        tokens_of = [t for f, (c, t) in baseline.parsed.items() if c == kernel_type.class_name]
        decisions = []
        for index, segment in enumerate(kernel_type.segments):
            if segment.literal:
                continue
            present = Counter(tokens[index] for tokens in tokens_of)
            decisions.append(decide(kernel_type, segment, present))
        result.decisions.extend(decisions)
        kept_sets = {d.segment: set(d.keep) for d in decisions}
        labels = [s.label for s in kernel_type.segments]
        for filename, (class_name, tokens) in baseline.parsed.items():
            if class_name != kernel_type.class_name:
                continue
            if all(tokens[labels.index(label)] in kept for label, kept in kept_sets.items()):
                keep_files.add(filename)
        continued = [bool(tokens_of) and all(any(t[j] for j in range(i + 1, len(t))) for t in tokens_of)
                     for i in range(len(kernel_type.segments))]
        patterns = type_patterns(kernel_type, decisions, continued)
        if patterns is None:
            result.notes.append(
                "%s: a kept value has no token of its own (names omit it), and fnmatch has no "
                "negation, so no filter can select exactly the keep set" % kernel_type.class_name)
            patterns = ["*"]
        per_type_patterns[kernel_type.class_name] = patterns

    traits = session.traits(api, options) if model.filter.drops == "trait" else []
    if traits:
        # Kernels generated per trait follow the trait's main kernel: select the main
        # kernels and take what their traits bring along.
        primary = max(model.kernel_types, key=lambda k: k.count).class_name
        primary_keep = {f for f in keep_files if baseline.parsed.get(f, ("",))[0] == primary}
        keep_files = {f for trait in traits if any(m in primary_keep for m in trait)
                      for f in trait} | {f for f in keep_files if not any(
                          f in trait for trait in traits[:1])} & primary_keep
        for class_name in per_type_patterns:
            if class_name != primary:
                per_type_patterns[class_name] = ["*"]
        result.notes.append(
            "%s drops whole traits: only %s kernels are selected by the filter; the other "
            "sub-types come with the traits they belong to" % (model.api, primary))
    result.keep_count = len(keep_files)
    filters = _filters(model, per_type_patterns)
    if len(filters) > MAX_RUNS:
        result.notes.append("the keep set needs %d filter runs; showing the first %d"
                            % (len(filters), MAX_RUNS))
        filters = filters[:MAX_RUNS]

    union: Set[str] = set()
    session.prefetch_checks(api, filters, options)  # their generate.py runs, batched
    # The runs are independent generate.py processes: verify them side by side.
    with ThreadPoolExecutor(max_workers=PARALLEL_RUNS) as pool:
        checks = list(pool.map(lambda text: session.check(api, text, options), filters))
    for text, check in zip(filters, checks):
        union.update(check.files)
        if check.count == 0 and len(filters) > 1:
            continue  # a combination that no kernel has: the run would add nothing
        result.runs.append(FilterRun(filter=text, command=check.command, count=check.count,
                                     verified=check.verified))
    result.union_count = len(union)
    result.verified = union == keep_files and all(r.verified for r in result.runs)
    if union != keep_files:
        result.notes.append(
            "the filter runs select %d kernels, the keep set has %d (%d missing, %d extra)"
            % (len(union), len(keep_files), len(keep_files - union), len(union - keep_files)))
    if len(result.runs) > 1:
        # Several runs: each lists into its own file, merged below.
        for number, run in enumerate(result.runs, 1):
            run.command = session.runner.listing_command(
                session.tree.request(api, options, filter=run.filter), "kernels_%d.txt" % number)
        listings = " ".join("kernels_%d.txt" % i for i in range(1, len(result.runs) + 1))
        result.merge_command = "sort -u %s > kernels.txt" % listings
        result.merge_caution = (
            "each generate.py run rewrites the API dispatch file, so after several runs only "
            "the last run's kernels are reachable from it; use the driver command below to "
            "write one dispatch file for the union")
    result.driver_command = driver_command(api, options, [r.filter for r in result.runs])
    if result.runs:
        from ..cli import driver_listing

        try:
            driven = set(driver_listing(session, api, options, [r.filter for r in result.runs]))
            result.driver_verified = driven == union
            if not result.driver_verified:
                result.notes.append("the driver run selects %d kernels, the union of the runs %d"
                                    % (len(driven), len(union)))
        except Exception as error:  # noqa: BLE001 - reported, the runs still stand
            result.notes.append("the driver run failed: %s" % error)
    full = baseline.per_type()
    minimal = Counter(baseline.parsed[f][0] for f in union if f in baseline.parsed)
    result.counts = {t: {"full": n, "minimal": minimal.get(t, 0)} for t, n in full.items()}
    result.counts["total"] = {"full": sum(full.values()), "minimal": len(union)}
    _losses(session, model, api, options, result, baseline, keep_files)
    return result


def _top(counter: Counter, count: int) -> List[str]:
    """The most common keys, ties broken by the key: the same text in every process."""
    return [key for key, _ in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:count]]


def _filters(model: ApiModel, per_type: Dict[str, List[str]]) -> List[str]:
    spec = model.filter
    if spec.api_split and spec.parts:
        positions = {p.position: p.applies_to for p in spec.parts}
        width = max(positions) + 1
        choices = []
        for position in range(width):
            classes = positions.get(position, [])
            options = sorted({p for c in classes for p in per_type.get(c, ["*"])})
            choices.append(options or ["*"])
        return [spec.api_split.join(combo) for combo in itertools.product(*choices)]
    patterns: Set[str] = set()
    for kernel_type in model.kernel_types:
        if kernel_type.filter_position is not None:
            patterns.update(per_type.get(kernel_type.class_name, ["*"]))
    return sorted(patterns) or ["*"]


def driver_command(api: str, options: Options, filters: Sequence[str]) -> str:
    parts = ["sphinxext-fmha", "generate", "--ck-root", ".", "--api", api]
    for dest, value in options.given().items():
        parts += [cli_flag(dest), str(value)]
    for text in filters:
        parts += ["-f", text]
    parts += ["-o", "generated"]
    return " ".join(shlex.quote(p) for p in parts)


def _context(filename: str, tokens: Sequence[str], index: int) -> Tuple[str, ...]:
    """Everything about a kernel file but one segment: the other tokens and the
    arch suffix (a gfx950 kernel does not stand in for a gfx9 one)."""
    suffix = filename[len("".join(tokens)):]
    return (suffix,) + tuple(tokens[:index]) + tuple(tokens[index + 1:])


def _losses(session: "Session", model: ApiModel, api: str, options: Options,
            result: Recommendation, baseline: ParsedListing, kept: Set[str]) -> None:
    """What each dropped token costs, from the API dispatch file's conditions."""
    try:
        conditions = session.dispatch_conditions(api, options)
    except Exception as error:  # noqa: BLE001 - reported, the rest still stands
        result.notes.append("dispatch conditions unavailable: %s" % error)
        conditions = {}
    allowed = {(d.kernel_type, d.segment): set(d.keep) for d in result.decisions}
    kept_by_context: Dict[Tuple[str, int, Tuple[str, ...]], List[str]] = {}
    for filename in kept:
        if filename not in baseline.parsed:
            continue
        class_name, tokens = baseline.parsed[filename]
        for index in range(len(tokens)):
            context = _context(filename, tokens, index)
            kept_by_context.setdefault((class_name, index, context), []).append(filename)
    for decision in result.decisions:
        kernel_type = model.kernel_type(decision.kernel_type)
        index = [s.label for s in kernel_type.segments].index(decision.segment)
        others = [(i, allowed[(decision.kernel_type, label)])
                  for i, label in enumerate(s.label for s in kernel_type.segments)
                  if i != index and (decision.kernel_type, label) in allowed]
        for token in decision.drop:
            # The kernels this token alone removes: every other segment is kept.
            dropped = [f for f, (c, t) in baseline.parsed.items()
                       if c == decision.kernel_type and t[index] == token
                       and all(t[i] in keep for i, keep in others)]
            unserved = 0
            lost_terms: Counter = Counter()
            fallbacks: Counter = Counter()
            for filename in dropped:
                tokens = baseline.parsed[filename][1]
                context = _context(filename, tokens, index)
                siblings = [f for f in kept_by_context.get((decision.kernel_type, index, context), [])
                            if baseline.parsed[f][1][index] != token]
                if not siblings:
                    unserved += 1
                    continue
                own = set(conditions.get(filename, []))
                for sibling in siblings:
                    fallbacks[baseline.parsed[sibling][1][index] or "(no token)"] += 1
                    # What the fallback requires that the dropped kernel did not.
                    lost_terms.update(t for t in conditions.get(sibling, []) if t not in own)
            meaning = kernel_type.segments[index].tokens.get(token, "")
            if not dropped:
                total = sum(1 for c, t in baseline.parsed.values()
                            if c == decision.kernel_type and t[index] == token)
                decision.losses[token] = (
                    "%s only occurs together with other dropped values (%d kernels in the "
                    "full listing), so dropping it costs nothing beyond them." % (meaning, total))
                continue
            text = "%d kernels that the other choices keep are not generated (%s)." % (
                len(dropped), meaning)
            if fallbacks:
                text += " %d fall back to %s" % (len(dropped) - unserved,
                                                  ", ".join(_top(fallbacks, 3)))
                if lost_terms:
                    text += ", which the dispatcher only picks when " + "; ".join(
                        _top(lost_terms, 3))
                    text += " (other inputs are no longer served)"
                text += "."
            if unserved:
                text += " %d have no kept kernel with otherwise equal parameters: those " \
                        "inputs are no longer served at all." % unserved
            decision.losses[token] = text
