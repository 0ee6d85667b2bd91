"""The :class:`~sphinxext_fmha.model.ApiModel` of one API of a CK tree: its source read,
its codegen observed, the grammar derived, every name of the unfiltered listing parsed,
how ``-f`` reaches each sub-type (from the fnmatch calls of the probe's marker runs), the
field reference's facts (per field: segment, comment, declaration, values, C++ symbols)."""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import product, repeat
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import FmhaError, WarningType
from ..locate import fmha_dir as fmha_dir_of
from ..model import ApiInfo, ApiModel, FieldInfo, FilterPart, FilterSpec, Gap, GenerateOption, KernelType
from ..options import GENERATE_OPTIONS, Options, check_supported
from ..process.cache import DiskCache, TreeState
from ..process.runner import GenerateRequest
from .filenames import (  # noqa: F401 - parse_filename, split_filename: for verify/parsed_listing.py
    baseline_of,
    example_tokens,
    grammars_of,
    parse_filename,
    split_filename,
)
from .followers import followers_of
from .grammar import Grammar, derive_grammar, plain_values
from .observe import observe
from .observed_factories import apply_observed_factories
from .offer import tree_offer
from .probe_script import MARKER
from .receipts_observed import note_unmet_terms, receipts_in_source
from .source import SourceFacts, analyze_source

Progress = Optional[Callable[[str], None]]

class AnalysisError(FmhaError):
    """A problem the user has to fix (unknown API, unsupported option...)."""


class UnknownApiError(AnalysisError):
    default_kind = WarningType.API

    def __init__(self, api: str, available: Sequence[str]):
        super().__init__("unknown FMHA API %r; this tree has: %s" % (api, ", ".join(available)))
        self.api = api
        self.available = list(available)


@dataclass
class Tree:
    """A located CK tree and what its generate.py offers."""

    ck_root: Path
    fmha_dir: Path
    apis: List[ApiInfo]
    options: List[GenerateOption]
    gaps: List[Gap]
    #: the GPU target families its codegen names (see :mod:`.offer`)
    arch_names: List[str]

    @classmethod
    def load(cls, ck_root: Path, python: Optional[str] = None, cache: Optional[DiskCache] = None,
             timeout: float = 900, inputs: Optional[TreeState] = None) -> Tree:
        """The tree's APIs and options, as its generate.py offers them (observed)."""
        ck_root = Path(ck_root)
        return cls(ck_root, fmha_dir_of(ck_root),
                   *tree_offer(ck_root, python or sys.executable, cache, timeout, inputs))

    def option(self, dest: str) -> Optional[GenerateOption]:
        return next((o for o in self.options if o.dest == dest), None)

    def api(self, name: str) -> ApiInfo:
        for info in self.apis:
            if info.name == name:
                return info
        raise UnknownApiError(name, [a.name for a in self.apis])

    def request(self, api: str, options: Options, filter: str = "") -> GenerateRequest:
        self.api(api)
        check_supported(options.given(), self.supported_dests())
        return GenerateRequest(api=api, filter=filter, targets=options.targets,
                               mask=options.mask, receipt=options.receipt, optdim=options.optdim)

    def effective_options(self, options: Options) -> Dict[str, Optional[str]]:
        """Every option the guide talks about, with the tree's default filled in."""
        result: Dict[str, Optional[str]] = {}
        for option in filter(None, (self.option(spec.dest) for spec in GENERATE_OPTIONS)):
            value = getattr(options, option.dest)
            result[option.dest] = str(value) if value is not None else option.default
        return result

    def receipt_values(self) -> List[Tuple[int, int]]:
        """Receipts the codegen compares with, as inclusive ranges (read once)."""
        cached = self.__dict__.get("_receipt_values")
        if cached is None:
            cached = self.__dict__["_receipt_values"] = receipts_in_source(self.fmha_dir)
        return cached

    def supported_dests(self) -> set:
        return {o.dest for o in self.options}


def probe_argv(request: GenerateRequest, supported: set) -> List[str]:
    """generate.py arguments for the probe: the request's (:meth:`Tree.request` sets no
    filter; a request has no listing or output folder)."""
    return request.argv(supported)


def analyze_api(ck_root: Path, api: str, options: Options = Options(), *, python: Optional[str] = None,
                cache: Optional[DiskCache] = None, timeout: float = 900, progress: Progress = None,
                tree: Optional[Tree] = None) -> ApiModel:
    """The model of ``api`` (the probe's own unfiltered generate.py run is its baseline)."""
    python = python or sys.executable
    tree = tree or Tree.load(ck_root, python, cache, timeout)
    info = tree.api(api)
    request = tree.request(api, options)
    supported = tree.supported_dests()
    observed = observe(tree.fmha_dir, probe_argv(request, supported), python=python,
                       cache=cache, timeout=timeout, progress=progress)
    facts = analyze_source(tree.fmha_dir, module_rel_of(tree, info))
    # The probe's listing is generate.py's own unfiltered `-l` output (the hooks only
    # watch), so it is the baseline; filter checks compare against separate runs.
    return build_model(tree, info, options, observed, facts, observed["listing"])


def build_model(tree: Tree, info: ApiInfo, options: Options, observed: dict,
                facts: SourceFacts, listed_files: Sequence[str]) -> ApiModel:
    gaps: List[Gap] = list(facts.gaps)
    apply_observed_factories(facts.factories, observed["factories"],
                             {t.class_name for t in facts.tiles}, facts.tile_hdim_field)
    records_by_class: Dict[str, List[dict]] = defaultdict(list)
    for record in observed["records"]:
        records_by_class[record["class"]].append(record)

    kernel_types: List[KernelType] = []
    class_files = {v["class"]: v for v in observed["kernel_classes"].values()
                   if v["file"] == "codegen/" + info.source.split("/codegen/", 1)[-1]}
    for class_name in sorted(records_by_class, key=lambda c: _first_listed(observed, c)):
        records = records_by_class[class_name]
        grammar = derive_grammar(records, class_name)
        gaps.extend(grammar.gaps)
        suffixes = sorted({r["filename"][len(r["name"]):-len(".cpp")]
                           for r in records if r["filename"].startswith(r["name"])})
        where = class_files.get(class_name, {})
        kernel_types.append(KernelType(
            class_name=class_name,
            frozen=bool(records[0].get("frozen")),
            filter_position=None,
            count=len(records),
            arch_suffixes=suffixes,
            segments=grammar.segments,
            example=_example(records, grammar),
            defined_at="%s:%d" % (where["file"], where["line"]) if where.get("line")
            else where.get("file", ""),
            description=where.get("doc", ""),  # its docstring, as the probe read it
        ))

    for kernel_type in kernel_types:
        kernel_type.example_tokens = example_tokens(kernel_type)
    classify = class_of_name(kernel_types, {r["name"]: r["class"] for r in observed["records"]})
    filter_spec, positions = read_filter_spec(observed, sorted(records_by_class), classify)
    for kernel_type in kernel_types:
        kernel_type.filter_position = positions.get(kernel_type.class_name)
    model = ApiModel(
        api=info.name,
        source=info.source,
        options=tree.effective_options(options),
        kernel_types=kernel_types,
        fields=fields_of(kernel_types, records_by_class, observed, facts),
        tiles=facts.tiles,
        factories=facts.factories,
        filter=filter_spec,
        skip_conditions=facts.skip_conditions,
        receipts=facts.receipts,
        dispatch=facts.dispatch,
        gaps=gaps,
    )
    note_unmet_terms(model.receipts, tree.fmha_dir, observed["records"])
    observed_files = {r["filename"] for r in observed["records"]}
    kernel_files = [f for f in listed_files if f in observed_files]
    other_files = sorted(f for f in listed_files if f not in observed_files)
    model.baseline = baseline_of(model, grammars_of(model), kernel_files)
    model.list_appends = bool(observed.get("listing_appends"))
    model.filter.followers = followers_of(model, observed.get("followers") or {}, kernel_files)
    missing = observed_files.difference(listed_files)
    listing_matches = not missing and len(other_files) <= 1
    if not listing_matches:
        model.gaps.append(Gap(
            what="the observed kernel objects and generate.py's listing disagree",
            where=info.source,
            why="%d observed objects not listed; listed files without a kernel object: %s"
                % (len(missing), ", ".join(other_files[:5]) or "none")))
    model.checks = _checks(model, facts, listing_matches)
    model.checks["api_files"] = other_files
    return model


def module_rel_of(tree: Tree, info: ApiInfo) -> str:
    if not info.source:  # generate.py's API runs functions of no codegen/ops module
        raise FmhaError("API %r: generate.py runs it, but not from a codegen/ops/*.py module; "
                        "it cannot be analysed (see `sphinxext-fmha apis`)" % info.name)
    return Path(info.source).relative_to(tree.fmha_dir.relative_to(tree.ck_root)).as_posix()


def _first_listed(observed: dict, class_name: str) -> int:
    """Where the listing shows the class's first record. (A record the listing lacks is a
    gap build_model reports, ``listing_matches_observation``: ordered, not a crash.)"""
    for index, record in enumerate(observed["records"]):
        if record["class"] == class_name:
            listing = observed["listing"]
            return listing.index(record["filename"]) if record["filename"] in listing else index
    return 0


def _example(records: List[dict], grammar: Grammar) -> str:
    """A real file name that shows as many non-empty segments as possible; the
    alphabetically first of those, so the choice is deterministic."""
    def filled(record: dict) -> int:
        return sum(1 for token in grammar.parse(record["name"]) or [] if token)

    scores = {r["filename"]: filled(r) for r in records}
    top = max(scores.values(), default=0)
    return min((f for f, score in scores.items() if score == top), default="")


def _checks(model: ApiModel, facts: SourceFacts, listing_matches: bool) -> Dict[str, object]:
    """The cross-check summary: facts that tell CK versions apart at a glance."""
    return {
        "kernel_classes": len(model.kernel_types),
        "frozen": {k.class_name: k.frozen for k in model.kernel_types},
        "blob_function_takes_targets": facts.enumeration.takes_targets,
        "has_arch_factories": facts.has_arch_factories,
        "dispatch_mechanism": model.dispatch.mechanism,
        "filter_split": model.filter.api_split,
        "filter_drops": model.filter.drops,
        # distinct conditions, as the skip table has them (one occurs in several places)
        "skip_conditions": len({(s.kind, s.source) for s in model.skip_conditions
                                if s.kind != "rule"}),
        "rule_objects": sum(1 for s in model.skip_conditions if s.kind == "rule"),
        "listing_matches_observation": listing_matches,
        "all_names_parse": model.baseline.parsed == model.baseline.count,
    }


def class_of_name(kernel_types: Sequence[KernelType], name_to_class: Dict[str, str]):
    """Which sub-type a name tested by fnmatch belongs to: a listed kernel's own
    class, else the sub-type whose leading literal segment is the longest prefix
    (names of kernels that a later rule drops are tested too)."""
    prefixes = sorted(((len(token), token, kernel_type.class_name) for kernel_type in kernel_types
                       if kernel_type.segments and kernel_type.segments[0].literal
                       for token in kernel_type.segments[0].tokens), reverse=True)

    def classify(name: str) -> str:
        return name_to_class.get(name) or next(
            (class_name for _, token, class_name in prefixes if token and name.startswith(token)), "")

    return classify


def _per_class(summary: dict, classify) -> Dict[str, Dict[str, int]]:
    per_class: Dict[str, Dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for pattern, name in summary["raw"]:
        per_class[classify(name)][pattern] += 1
    return per_class


def read_filter_spec(observed: dict, classes: List[str], classify) -> Tuple[FilterSpec, Dict[str, int]]:
    calls = _per_class(observed["fnmatch_calls"], classify)
    marker_filter = observed["marker_filter"]
    api_part = marker_filter.split(",")[0]
    parts = api_part.split("@")
    spec = FilterSpec()
    positions: Dict[str, int] = {}
    spec.cli_split = None if any(MARKER.format("next-api") in p
                                 for per in calls.values() for p in per) else ","
    applies: Dict[int, List[str]] = defaultdict(list)
    for class_name in classes:
        patterns = calls.get(class_name, {})
        for pattern in patterns:
            if pattern in (marker_filter, api_part):
                positions[class_name] = 0
            elif pattern in parts:
                spec.api_split = "@"
                positions[class_name] = parts.index(pattern)
        if class_name in positions:
            applies[positions[class_name]].append(class_name)
        else:
            spec.unfiltered_types.append(class_name)
    single, empty_parts, empty_filter = (_per_class(observed[key], classify) for key in (
        "single_part_calls", "empty_parts_calls", "empty_filter_calls"))

    def reaching(per_class: Dict[str, Dict[str, int]], class_names: List[str]) -> Optional[str]:
        # The pattern fnmatch receives; no call at all: the part is not applied.
        seen = {p for c in class_names for p in per_class.get(c, {})}
        return sorted(seen)[0] if seen else None

    for position in sorted(applies):
        classes_here = sorted(applies[position])
        spec.parts.append(FilterPart(
            position=position, applies_to=classes_here,
            missing_becomes=reaching(single, classes_here) if position > 0 else None,
            empty_becomes=reaching(empty_parts, classes_here) if spec.api_split else None))
    spec.when_empty = {c: reaching(empty_filter, [c]) for c in sorted(positions)}
    normcase = observed.get("normcase", "Aa/")
    spec.fnmatch_lowercases = normcase[:2] == "aa"
    spec.fnmatch_backslashes = normcase[2:] == "\\"
    # Trait-wise filtering repeats the same multi-part call pattern trait after trait;
    # one multi-part group at the boundary of two per-class loops proves nothing.
    groups = observed["fnmatch_calls"]["groups"]
    shapes = Counter(tuple(p for p, _ in g) for g in groups if len(g) > 1)
    spec.drops = "trait" if shapes and shapes.most_common(1)[0][1] >= 2 else "kernel"
    return spec, positions


def fields_of(kernel_types: List[KernelType], records_by_class: Dict[str, List[dict]],
            observed: dict, facts: SourceFacts) -> List[FieldInfo]:
    fields: Dict[str, FieldInfo] = {}
    # each sub-type's own values of a path (a name two sub-types share may differ in them)
    own_values: Dict[str, Dict[str, set]] = defaultdict(dict)
    comments = {(c.name, f.name): f for c in facts.classes for f in c.fields}
    class_where = {c.name: c.defined_at for c in facts.classes}
    uses = defaultdict(list)
    for use in facts.map_uses:
        uses[use.field].append(use)
    # Constant segments last: a path that varies in one sub-type and is constant in
    # another (F_tile.F_bn1 of split-KV kernels and of their combine kernels) is
    # described where it varies; the constant sub-type only adds itself.
    for constant, kernel_type in product((False, True), kernel_types):
        owners = observed.get("owners", {}).get(kernel_type.class_name, {})
        leaves = [r["leaves"] for r in records_by_class[kernel_type.class_name]]
        for segment in kernel_type.segments:
            if segment.constant != constant:
                continue
            for path in segment.fields:
                info = fields.get(path)
                # where this sub-type's own class declares the field
                owner = owners.get(path, kernel_type.class_name)
                declared = comments.get((owner, path.split(".")[-1]))
                defined_at = _line_of(class_where.get(owner, ""), declared)
                comment = declared.comment if declared else ""
                described = info is not None
                if info is None:
                    info = fields[path] = FieldInfo(  # (the owner's map is resolved below)
                        path=path, segment=segment.label, comment=comment, defined_at=defined_at,
                        symbol_map=owner)
                if defined_at:
                    info.defined_at_by_type.setdefault(kernel_type.class_name, defined_at)
                if declared is not None:  # (its own comment, even none)
                    info.comment_by_type.setdefault(kernel_type.class_name, comment)
                if kernel_type.class_name not in info.kernel_types:
                    info.kernel_types.append(kernel_type.class_name)
                texts = own_values[path][kernel_type.class_name] = _column_texts(leaves, path)
                if described and constant:
                    continue  # described where it varies
                info.values = sorted(set(info.values) | texts, key=_natural)
    for info in fields.values():
        _link_map(info, info.path.split(".")[-1], info.symbol_map, uses, facts)
        if info.cpp_symbols:
            info.hard_coded.extend(v for v in info.values if v not in info.cpp_symbols)
            for class_name, texts in own_values[info.path].items():
                info.hard_coded_by_type[class_name] = sorted(
                    (v for v in texts if v not in info.cpp_symbols), key=_natural)
    return [fields[p] for p in sorted(fields)]


def _column_texts(leaves: List[dict], path: str) -> set:
    """The distinct texts of one field over the kernels that have it."""
    if all(map(dict.__contains__, leaves, repeat(path))):  # the usual case, at C speed
        values = list(map(dict.__getitem__, leaves, repeat(path)))
        # equal values of these types have equal texts: the texts of the distinct ones
        return set(map(str, set(values) if plain_values(values) else values))
    return {str(values[path]) for values in leaves if path in values}


def _line_of(class_where: str, declared) -> str:
    if not class_where or declared is None or not declared.line:
        return class_where
    return "%s:%d" % (class_where.rsplit(":", 1)[0], declared.line)


def _link_map(info: FieldInfo, leaf: str, owner: str, uses, facts: SourceFacts) -> None:
    info.symbol_map = ""
    candidates = [u for u in uses.get(leaf, []) if u.owner == owner] or uses.get(leaf, [])
    if not candidates:
        return
    use = sorted(candidates, key=lambda u: (u.map != candidates[0].map, u.where))[0]
    info.symbol_map = use.map
    symbol_map = facts.symbol_maps[use.map]  # (a use is of a map the module defines)
    if symbol_map.entries:
        info.cpp_symbols = dict(symbol_map.entries)
    elif symbol_map.branches:
        # A map chosen by an argument (get_mask_map(mask_impl)): the branch whose keys
        # hold the observed values; values of another branch are hard-coded ones.
        values = set(info.values)
        branch = max(sorted(symbol_map.branches),
                     key=lambda b: len(values & set(symbol_map.branches[b])))
        info.symbol_map = "%s(%s)" % (use.map, branch)
        info.cpp_symbols = dict(symbol_map.branches[branch])


_NUM = re.compile(r"(\d+)")


def _natural(text: str):
    return [int(p) if p.isdigit() else p for p in _NUM.split(text)]
