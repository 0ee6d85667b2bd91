"""What a ``generate.py -f`` filter selects, measured (a real ``-l`` run) and predicted from
the model alone; when they disagree the model is wrong and the check says so."""

from __future__ import annotations

import fnmatch
import re
from collections import Counter
from typing import Callable, Dict, List, Mapping, Optional, Set

from ..cppapi.link_check import partners
from ..cppapi.matching import DispatchMatch, match_leaves_to_kernels
from ..cppapi.parse import parse_dispatch
from ..model import ApiModel, FilterCheck, FilterMiss, Note, SegmentBreakdown, TokenCount
from ..process.runner import ApiFileResult, ListingResult
from .coupling import coupling_of
from .parsed_listing import ParsedListing
from .token_facts import token_counts

_WILDCARDS = re.compile(r"\*|\?|\[[^\]]*\]")


def api_patterns(model: ApiModel, filter: str) -> Dict[str, Optional[str]]:
    """The pattern each kernel type meets for ``-f filter`` by the tree's observed rules
    (None: not filtered; ``filter`` "": no ``-f`` at all)."""
    spec = model.filter
    patterns: Dict[str, Optional[str]] = {}
    text = filter.split(spec.cli_split)[0] if spec.cli_split else filter
    if not filter:
        patterns = {c: None for p in spec.parts for c in p.applies_to}
    elif not text and spec.when_empty:
        patterns = dict(spec.when_empty)
    else:
        parts = text.split(spec.api_split) if spec.api_split else [text]
        for part in spec.parts:
            if part.position >= len(parts):
                pattern = part.missing_becomes
            elif parts[part.position] == "" and spec.api_split:
                pattern = part.empty_becomes
            else:
                pattern = parts[part.position]
            for class_name in part.applies_to:
                patterns[class_name] = pattern
    for class_name in spec.unfiltered_types:
        patterns[class_name] = None
    return patterns


def normcase(model: ApiModel) -> Callable[[str], str]:
    """A name or pattern as generate.py's fnmatch compares it: its interpreter's
    ``os.path.normcase`` (lower case and ``\\`` on Windows, nothing on POSIX)."""
    spec = model.filter

    def fold(text: str) -> str:
        text = text.lower() if spec.fnmatch_lowercases else text
        return text.replace("/", "\\") if spec.fnmatch_backslashes else text
    return fold


def matcher_as_generate(model: ApiModel, pattern: Optional[str]) -> Callable[[str], bool]:
    """``fnmatch.fnmatch`` as generate.py does it, compiled once for many names; None:
    the kernel is not filtered."""
    if pattern is None:
        return lambda name: True
    fold = normcase(model)
    match = re.compile(fnmatch.translate(fold(pattern))).match
    if not (model.filter.fnmatch_lowercases or model.filter.fnmatch_backslashes):
        return lambda name: match(name) is not None
    return lambda name: match(fold(name)) is not None


def predict(model: ApiModel, baseline: ParsedListing, filter: str,
            traits: Optional[List[List[str]]] = None,
            followers: Optional[Mapping[str, str]] = None) -> Set[str]:
    """The files ``-f filter`` would select, from the model alone (``followers``: see
    ``Session.followers``)."""
    if not filter:
        return set(baseline.parsed)
    patterns = api_patterns(model, filter)
    matchers = {c: matcher_as_generate(model, p) for c, p in patterns.items()}
    unfiltered = matcher_as_generate(model, None)
    names = baseline.kernel_names(model)
    passes: Dict[str, bool] = {}  # file -> its name passes its type's pattern

    def _passes(filename: str) -> bool:
        found = passes.get(filename)
        if found is None:
            found = passes[filename] = matchers.get(baseline.parsed[filename][0], unfiltered)(
                names[filename])
        return found

    selected: Set[str] = set()
    grouped: Set[str] = set()
    if model.filter.drops == "trait" and traits:
        for trait in traits:
            grouped.update(trait)
            if all(_passes(f) for f in trait):
                selected.update(trait)
    followers = followers or {}
    for filename in baseline.parsed:
        if filename not in grouped and filename not in followers and _passes(filename):
            selected.add(filename)
    selected.update(f for f, leader in followers.items() if leader in selected)
    return selected


def breakdown(model: ApiModel, baseline: ParsedListing, selected: ParsedListing,
              filter: str) -> List[SegmentBreakdown]:
    rows: List[SegmentBreakdown] = []
    base_counts = token_counts(model, baseline.files, baseline)
    chosen_counts = token_counts(model, selected.files, selected)
    for kernel_type in model.kernel_types:
        for index, segment in enumerate(kernel_type.segments):
            if segment.literal or segment.constant:  # one token: nothing a filter selects
                continue
            base = base_counts.get((kernel_type.class_name, index), {})
            chosen = chosen_counts.get((kernel_type.class_name, index), {})
            counts = [TokenCount(token=tok, meaning=segment.tokens.get(tok, ""),
                                 baseline=base.get(tok, 0), selected=chosen.get(tok, 0))
                      for tok in sorted(segment.tokens, key=lambda t: (-base.get(t, 0), t))]
            kept = [c.token for c in counts if c.selected]
            dropped = [c.token for c in counts if c.baseline and not c.selected]
            named = any(tok.strip("_") and tok.strip("_") in filter for tok in segment.tokens)
            numeric = all(_numeric(v) for combos in segment.values.values()
                          for combo in combos for v in combo.values())
            rows.append(SegmentBreakdown(
                kernel_type=kernel_type.class_name, segment=segment.label, counts=counts,
                kept=kept, dropped=dropped,
                side_effect=bool(dropped) and not named and not numeric and bool(chosen)
                and len(kept) < len([c for c in counts if c.baseline])))
    return rows


def _numeric(value: str) -> bool:
    try:
        int(value)
    except ValueError:
        return False
    return True


def _absent(pattern: str, names: List[str]) -> List[str]:
    """The literal pieces of ``pattern`` that occur in none of ``names``, in order."""
    text = "\n".join(names)  # a piece without a line break is in it when it is in a name
    return [piece for piece in dict.fromkeys(_WILDCARDS.split(pattern)) if piece and (
        piece not in text if "\n" not in piece else not any(piece in n for n in names))]


def misses(model: ApiModel, baseline: ParsedListing, filter: str,
           selected: Dict[str, int]) -> List[FilterMiss]:
    """Sub-types whose pattern (not ``*`` alone) selects none of their kernels, with its
    literal pieces no name of theirs holds."""
    patterns = api_patterns(model, filter) if filter else {}
    every = baseline.kernel_names(model)
    names = {c: [every[f] for f, _ in rows] for c, rows in baseline.by_type().items()}
    out = []
    for kernel_type in model.kernel_types:
        pattern = patterns.get(kernel_type.class_name)
        own = names.get(kernel_type.class_name)
        if not pattern or not pattern.strip("*") or not own or selected.get(kernel_type.class_name):
            continue
        out.append(FilterMiss(kernel_type=kernel_type.class_name, pattern=pattern,
                              baseline=len(own), absent=_absent(pattern, own)))
    return out


def check_filter(model: ApiModel, filter: str, baseline_listing: ListingResult,
                 listing: ListingResult, baseline: ParsedListing, traits: List[List[str]],
                 api_file: Optional[ApiFileResult] = None, *,
                 followers: Optional[Mapping[str, str]] = None, write_error: str = "",
                 full_api: Callable[[], Optional[ApiFileResult]] = lambda: None) -> FilterCheck:
    """What ``-f filter`` selected (``listing``) against the unfiltered listing and the
    prediction; ``api_file``: its write-mode dispatch file (must reach exactly the
    generated kernels), else ``write_error``; ``full_api``: reads the unfiltered one
    (only when something is unresolved or write mode failed)."""
    selected = ParsedListing.of(model, listing.files, known=baseline)
    predicted = predict(model, baseline, filter, traits, followers)
    check = FilterCheck(
        api=model.api, filter=filter, command=listing.command, count=listing.count,
        per_type=selected.per_type(), baseline_count=baseline_listing.count,
        baseline_per_type=baseline.per_type(),
        breakdown=breakdown(model, baseline, selected, filter),
        predicted=len(predicted),
        predicted_per_type=dict(sorted(Counter(baseline.parsed[f][0] for f in predicted).items())),
        files=sorted(listing.files),
    )
    check.misses = misses(model, baseline, filter, check.per_type)
    actual = set(listing.files)
    check.verified = predicted == actual and not selected.unparsed
    if predicted != actual:
        check.note_facts.append(Note("mispredicted", {
            "predicted": len(predicted), "selected": len(actual),
            "only_predicted": len(predicted - actual), "only_selected": len(actual - predicted)}))
    if selected.unparsed:
        check.note_facts.append(Note("unparsed", {"count": len(selected.unparsed)}))
    suffixes = {s for t in model.kernel_types for s in t.arch_suffixes if s}
    every_name = list(baseline.kernel_names(model).values())
    for piece in sorted(_absent(filter.replace("@", "*").replace(",", "*"), every_name)):
        # newer CK's file names end in an arch suffix that fnmatch never sees
        check.note_facts.append(Note("absent", {
            "piece": piece, "in_suffix": any(piece in suffix for suffix in suffixes)}))
    match = None if api_file is None else match_leaves_to_kernels(
        parse_dispatch(api_file.text), api_file.kernel_traits)
    if listing.count == 0:
        check.note_facts.append(Note("selects_none"))
    elif api_file is not None and match is not None:  # (the same: for the type checker)
        _check_dispatch(check, api_file, match)
    _check_written(check, baseline, api_file, match, write_error, full_api)
    if followers and filter:
        names = baseline.kernel_names(model)
        matchers = {c: matcher_as_generate(model, p)
                    for c, p in api_patterns(model, filter).items() if p is not None}
        check.untested_matches = sum(
            1 for f in followers if f in names and baseline.parsed[f][0] in matchers
            and matchers[baseline.parsed[f][0]](names[f]))
    return check


def _check_written(check: FilterCheck, baseline: ParsedListing, api_file: Optional[ApiFileResult],
                   match: Optional[DispatchMatch], write_error: str,
                   read_full_api: Callable[[], Optional[ApiFileResult]]) -> None:
    """:attr:`FilterCheck.write_verified`, and the instantiated specialisations not
    generated (or, write mode failed, the partners the filter leaves out)."""
    check.write_error = write_error
    full_api = read_full_api() if write_error else None
    if api_file is not None and match is not None:
        missing = list(dict.fromkeys(key for _, key in match.unmatched))
        check.write_verified = not missing and sorted(api_file.kernel_files) == check.files
        full_api = read_full_api() if missing else None
    elif full_api is not None:
        missing = _partners_left_out(set(check.files), full_api, baseline)
    else:
        missing = []
    check.unresolved = missing
    if full_api is None:
        return
    defined = {key: filename for filename, keys in reversed(full_api.kernel_traits.items())
               for key in keys.split("\n")}  # (the first file to define each key)
    files = sorted({defined[key] for key in missing if key in defined})
    check.unresolved_kernels = files
    check.unresolved_per_type = dict(sorted(Counter(
        baseline.parsed[f][0] for f in files if f in baseline.parsed).items()))


def _partners_left_out(selected: Set[str], full_api: ApiFileResult,
                       baseline: ParsedListing) -> List[str]:
    """Trait keys the full dispatch launches with a selected main kernel, not selected."""
    type_of = {f: c for f, (c, _) in baseline.parsed.items()}
    coupling = coupling_of(partners(full_api.text, full_api.kernel_traits), type_of)
    if coupling is None:
        return []
    return list(dict.fromkeys(
        key for main in sorted(selected) for partner in sorted(coupling.partners.get(main, ()))
        if partner not in selected for key in full_api.kernel_traits.get(partner, "").split("\n")
        if key))


def _check_dispatch(check: FilterCheck, api_file: ApiFileResult, match: DispatchMatch) -> None:
    """Whether the filtered run's dispatch file reaches exactly its kernels."""
    check.dispatch_checked = True
    check.dispatch_unmatched = len(match.unmatched)
    if sorted(api_file.kernel_files) != check.files:
        check.note_facts.append(Note("listing_differs", {
            "written": len(api_file.kernel_files), "listed": check.count}))
    if match.unreached:
        check.note_facts.append(Note("unreached", {"count": len(match.unreached)}))
