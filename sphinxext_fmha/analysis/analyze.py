"""Build the :class:`~sphinxext_fmha.model.ApiModel` of one API of a CK tree.

Data flows one way: locate the tree, read its source (``source.py``), observe its
codegen running (``observe.py``), derive the grammar (``grammar.py``), and cross-check
the parse of every name that generate.py's own unfiltered run lists.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
import weakref
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..errors import FmhaError, WarningType
from ..locate import fmha_dir as fmha_dir_of
from ..model import (
    ApiInfo,
    ApiModel,
    Baseline,
    FieldInfo,
    FilterPart,
    FilterSpec,
    Gap,
    GenerateOption,
    KernelType,
    to_dict,
)
from ..options import GENERATE_OPTIONS, Options, check_supported
from ..process.cache import DiskCache
from ..process.runner import GenerateRequest, GenerateRunner
from .followers import followers_of
from .generate_py import discover_apis, generate_options
from .grammar import Grammar, derive_grammar, disambiguate_labels, plain_values, segment_label
from .observe import observe
from .observed_factories import apply_observed_factories
from .probe_script import MARKER
from .pyparse import parse_module
from .receipts_observed import note_unmet_terms
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

    @classmethod
    def load(cls, ck_root: Path) -> Tree:
        ck_root = Path(ck_root)
        apis, gaps = discover_apis(ck_root)
        return cls(ck_root, fmha_dir_of(ck_root), apis, generate_options(ck_root), gaps)

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
        for dest in (spec.dest for spec in GENERATE_OPTIONS):
            option = self.option(dest)
            if option is None:
                continue
            value = getattr(options, dest)
            result[dest] = str(value) if value is not None else option.default
        return result

    def receipt_values(self) -> List[Tuple[int, int]]:
        """Receipts the codegen compares with, as inclusive ranges (read once)."""
        cached = self.__dict__.get("_receipt_values")
        if cached is None:
            from .receipts import receipts_in_source

            cached = self.__dict__["_receipt_values"] = receipts_in_source(self.fmha_dir)
        return cached

    def supported_dests(self) -> set:
        return {o.dest for o in self.options}


def probe_argv(request: GenerateRequest, supported: set) -> List[str]:
    """generate.py arguments for the probe: the request's, minus listing and filter."""
    argv = request.argv(supported)
    cleaned: List[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in ("-l", "--list_blobs", "-f", "--filter", "-o", "--output_dir"):
            skip = True
            continue
        cleaned.append(arg)
    return cleaned


def analyze_api(
    ck_root: Path,
    api: str,
    options: Options = Options(),
    *,
    python: Optional[str] = None,
    cache: Optional[DiskCache] = None,
    timeout: float = 900,
    progress: Progress = None,
    tree: Optional[Tree] = None,
    runner: Optional[GenerateRunner] = None,
) -> ApiModel:
    """The model of ``api``; ``runner`` is accepted for API stability (unused: the
    probe's own unfiltered generate.py run is the baseline)."""
    python = python or sys.executable
    tree = tree or Tree.load(ck_root)
    info = tree.api(api)
    request = tree.request(api, options)
    supported = tree.supported_dests()
    observed = observe(tree.fmha_dir, probe_argv(request, supported), python=python,
                       cache=cache, timeout=timeout, progress=progress)
    facts = analyze_source(tree.fmha_dir, module_rel_of(tree, info))
    # The probe's listing is generate.py's own unfiltered `-l` output (the hooks only
    # watch), so it is the baseline; filter checks compare against separate runs.
    return build_model(tree, info, options, observed, facts, observed["listing"])


def _fmha_rel(tree: Tree) -> Path:
    return tree.fmha_dir.relative_to(tree.ck_root)


def build_model(tree: Tree, info: ApiInfo, options: Options, observed: dict,
                facts: SourceFacts, listed_files: Sequence[str]) -> ApiModel:
    gaps: List[Gap] = list(facts.gaps)
    apply_observed_factories(facts.factories, facts.factory_tables, gaps, observed.get("factories"),
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
            defined_at=_defined_at(facts, class_name, where.get("file", "")),
            description=_class_doc(facts, class_name),
        ))

    _add_constant_fields(kernel_types, observed, facts)
    for kernel_type in kernel_types:
        kernel_type.example_tokens = _example_tokens(kernel_type)
    classify = _class_of_name(kernel_types, {r["name"]: r["class"] for r in observed["records"]})
    filter_spec, positions = _filter_spec(observed, sorted(records_by_class), classify)
    for kernel_type in kernel_types:
        kernel_type.filter_position = positions.get(kernel_type.class_name)
    model = ApiModel(
        api=info.name,
        source=info.source,
        options=tree.effective_options(options),
        kernel_types=kernel_types,
        fields=_fields(kernel_types, records_by_class, observed, facts),
        tiles=facts.tiles,
        factories=facts.factories,
        filter=filter_spec,
        enumeration={
            "functions": dict(facts.enumeration.functions),
            "products": [to_dict(loop) for loop in facts.enumeration.loops],
            "dedup": [to_dict(d) for d in facts.dedup],
        },
        skip_conditions=facts.skip_conditions,
        receipts=facts.receipts,
        dispatch=facts.dispatch,
        gaps=gaps,
    )
    note_unmet_terms(model.receipts, tree.fmha_dir, observed["records"])
    observed_files = {r["filename"] for r in observed["records"]}
    kernel_files = [f for f in listed_files if f in observed_files]
    other_files = sorted(f for f in listed_files if f not in observed_files)
    model.baseline = _baseline(model, grammars_of(model), kernel_files)
    model.list_appends = bool(observed.get("listing_appends"))
    model.filter.followers = followers_of(model, observed.get("followers") or {}, kernel_files,
                                          functools.partial(_parsed_once, model))
    missing = observed_files.difference(listed_files)
    listing_matches = not missing and len(other_files) <= 1
    if not listing_matches:
        model.gaps.append(Gap(
            what="the observed kernel objects and generate.py's listing disagree",
            where=info.source,
            why="%d observed objects not listed; listed files without a kernel object: %s"
                % (len(missing), ", ".join(other_files[:5]) or "none")))
    model.checks = _checks(model, facts, tree.fmha_dir / module_rel_of(tree, info),
                           listing_matches)
    model.checks["api_files"] = other_files
    _cross_check(model, facts)
    return model


def _cross_check(model: ApiModel, facts: SourceFacts) -> None:
    """The source as read and the codegen as observed must tell the same story."""
    observed = {k.class_name for k in model.kernel_types}
    declared = set(facts.kernel_classes)
    classes_agree = observed <= declared
    if not classes_agree:
        model.gaps.append(Gap(
            what="kernel classes observed but not found in the source: %s"
                 % ", ".join(sorted(observed - declared)),
            where=model.source, why="the static reading missed a class with a filename property"))
    positions_agree = True
    for match in facts.filter_source.matches:
        if match.kernel_class not in observed:
            continue
        read = match.index if match.index is not None else 0
        seen = model.kernel_type(match.kernel_class).filter_position
        if seen is not None and read != seen:
            positions_agree = False
            model.gaps.append(Gap(
                what="%s: the source reads filter part %s, the running code used part %s"
                     % (match.kernel_class, read, seen),
                where=match.where, why="static and observed filter handling disagree"))
    model.checks["source_and_observation_agree"] = {
        "kernel_classes": classes_agree,
        "filter_positions": positions_agree,
        "declared_but_not_generated": sorted(declared - observed),
    }


def module_rel_of(tree: Tree, info: ApiInfo) -> str:
    return Path(info.source).relative_to(_fmha_rel(tree)).as_posix()


def _name_piece_groups(name_source: str) -> List[List[str]]:
    """Attributes that a ``name`` property writes into one token: the same ``_``-piece
    of an f-string (``b{self.F_bm0}x{self.F_bn0}`` -> [[F_bm0, F_bn0]]), or one nested
    helper function."""
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(name_source))
    except SyntaxError:
        return []
    groups: List[List[str]] = []
    outer = tree.body[0] if tree.body else None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node is not outer:
            # A helper such as pad_name() builds one token from the fields it reads.
            groups.append(sorted({n.attr for n in ast.walk(node)
                                  if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                                  and n.value.id == "self"}))
            continue
        if not isinstance(node, ast.JoinedStr):
            continue
        current: List[str] = []
        for value in node.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                if "_" in value.value:
                    groups.append(current)
                    current = []
            elif isinstance(value, ast.FormattedValue):
                target = value.value
                while isinstance(target, ast.Subscript):
                    target = target.value
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == "self":
                    current.append(target.attr)
        groups.append(current)
    return [g for g in groups if len(g) > 1]


def _add_constant_fields(kernel_types: List[KernelType], observed: dict, facts: SourceFacts) -> None:
    """A field with one value everywhere cannot be perturbed, yet it may be written
    into a segment (``F_bm0`` in ``_b128x...``); the name property's own f-string
    places it beside the fields that were observed there."""
    sources = {c.name: c.name_source for c in facts.classes if c.name_source}
    for kernel_type in kernel_types:
        owners = observed.get("owners", {}).get(kernel_type.class_name, {})
        placed = {f: seg for seg in kernel_type.segments for f in seg.fields}
        for owner, source in sources.items():
            paths = {p.split(".")[-1]: p for p, o in owners.items() if o == owner}
            for group in _name_piece_groups(source):
                known = [paths[a] for a in group if a in paths and paths[a] in placed]
                if not known:
                    continue
                segment = placed[known[0]]
                for attribute in group:
                    path = paths.get(attribute)
                    if path and path not in placed:
                        segment.fields.append(path)
                        placed[path] = segment
        for segment in kernel_type.segments:
            segment.fields.sort()
            if not segment.literal:
                segment.label = segment_label(segment.fields)
        disambiguate_labels(kernel_type.segments)


def _first_listed(observed: dict, class_name: str) -> int:
    for index, record in enumerate(observed["records"]):
        if record["class"] == class_name:
            listing = observed["listing"]
            return listing.index(record["filename"]) if record["filename"] in listing else index
    return 0


def _defined_at(facts: SourceFacts, class_name: str, observed_file: str) -> str:
    """``file:line`` of the class statement, read from the source; the probe knows the
    class's file (and only the line of its ``filename`` property): the file alone when
    the source reading has no such class in it."""
    try:
        place = facts.class_info(class_name).defined_at
    except KeyError:
        return observed_file
    return place if place.split(":", 1)[0] == observed_file else observed_file


def _class_doc(facts: SourceFacts, class_name: str) -> str:
    try:
        return facts.class_info(class_name).docstring
    except KeyError:
        return ""


def _example(records: List[dict], grammar: Grammar) -> str:
    """A real file name that shows as many non-empty segments as possible; the
    alphabetically first of those, so the choice is deterministic."""
    def filled(record: dict) -> int:
        return sum(1 for token in grammar.parse(record["name"]) or [] if token)

    scores = {r["filename"]: filled(r) for r in records}
    top = max(scores.values(), default=0)
    return min((f for f, score in scores.items() if score == top), default="")


def _example_tokens(kernel_type: KernelType) -> List[str]:
    """The example's kernel name cut into one token per (final) segment, or []."""
    name = split_filename(kernel_type.example, kernel_type.arch_suffixes)
    if not name:
        return []
    tokens = Grammar(segments=kernel_type.segments).parse(name)
    return list(tokens) if tokens is not None and len(tokens) == len(kernel_type.segments) else []


def _class_of_name(kernel_types: Sequence[KernelType], name_to_class: Dict[str, str]):
    """Which sub-type a name tested by fnmatch belongs to: a listed kernel's own
    class, else the sub-type whose leading literal segment is the longest prefix
    (names of kernels that a later rule drops are tested too)."""
    prefixes = []
    for kernel_type in kernel_types:
        if kernel_type.segments and kernel_type.segments[0].literal:
            for token in kernel_type.segments[0].tokens:
                prefixes.append((len(token), token, kernel_type.class_name))
    prefixes.sort(reverse=True)

    def classify(name: str) -> str:
        if name in name_to_class:
            return name_to_class[name]
        for _, token, class_name in prefixes:
            if token and name.startswith(token):
                return class_name
        return ""

    return classify


def _per_class(summary: dict, classify) -> Dict[str, Dict[str, int]]:
    if "raw" not in summary:
        return summary["per_class"]
    per_class: Dict[str, Dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for pattern, name in summary["raw"]:
        per_class[classify(name)][pattern] += 1
    return per_class


def _filter_spec(observed: dict, classes: List[str], classify) -> Tuple[FilterSpec, Dict[str, int]]:
    calls = _per_class(observed["fnmatch_calls"], classify)
    marker_filter = observed["marker_filter"]
    api_part = marker_filter.split(",")[0]
    parts = api_part.split("@")
    spec = FilterSpec()
    positions: Dict[str, int] = {}
    seen_patterns = {p for per in calls.values() for p in per}
    spec.cli_split = None if any(MARKER.format("next-api") in p for p in seen_patterns) else ","
    whole = api_part if spec.cli_split else marker_filter
    applies: Dict[int, List[str]] = defaultdict(list)
    for class_name in classes:
        patterns = calls.get(class_name, {})
        for pattern in patterns:
            if pattern in (whole, marker_filter, api_part):
                positions[class_name] = 0
            elif pattern in parts:
                spec.api_split = "@"
                positions[class_name] = parts.index(pattern)
        if class_name in positions:
            applies[positions[class_name]].append(class_name)
        else:
            spec.unfiltered_types.append(class_name)
    single = _per_class(observed.get("single_part_calls", {"per_class": {}}), classify)
    empty_parts = _per_class(observed.get("empty_parts_calls", {"per_class": {}}), classify)
    empty_filter = _per_class(observed.get("empty_filter_calls", {"per_class": {}}), classify)

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
    if "empty_filter_calls" in observed:
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


def _fields(kernel_types: List[KernelType], records_by_class: Dict[str, List[dict]],
            observed: dict, facts: SourceFacts) -> List[FieldInfo]:
    fields: Dict[str, FieldInfo] = {}
    comments = {(c.name, f.name): f for c in facts.classes for f in c.fields}
    class_where = {c.name: c.defined_at for c in facts.classes}
    uses = defaultdict(list)
    for use in facts.map_uses:
        uses[use.field].append(use)
    # Constant segments last: a path that varies in one sub-type and is constant in
    # another (F_tile.F_bn1 of split-KV kernels and of their combine kernels) is
    # described where it varies; the constant sub-type only adds itself.
    passes = [(False, k) for k in kernel_types] + [(True, k) for k in kernel_types]
    for constant, kernel_type in passes:
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
                    info = FieldInfo(path=path, segment=segment.label, comment=comment,
                                     defined_at=defined_at)
                    info.symbol_map = owner  # resolved into the map below
                    fields[path] = info
                if defined_at:
                    info.defined_at_by_type.setdefault(kernel_type.class_name, defined_at)
                if declared is not None:  # (its own comment, even none)
                    info.comment_by_type.setdefault(kernel_type.class_name, comment)
                if kernel_type.class_name not in info.kernel_types:
                    info.kernel_types.append(kernel_type.class_name)
                if described and constant:
                    continue  # described where it varies
                values = _column_texts(leaves, path)
                info.values = sorted(set(info.values) | values, key=_natural)
    for info in fields.values():
        _link_map(info, info.path.split(".")[-1], info.symbol_map, uses, facts)
        if info.cpp_symbols:
            extra = [v for v in info.values if v not in info.cpp_symbols]
            for value in extra:
                info.hard_coded.append(value)
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
    symbol_map = facts.symbol_maps.get(use.map)
    if symbol_map is None:
        return
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


def split_filename(filename: str, suffixes: Sequence[str]) -> Optional[str]:
    """The kernel name in ``filename`` for one of the arch ``suffixes``."""
    if not filename.endswith(".cpp"):
        return None
    stem = filename[: -len(".cpp")]
    longest_first, bare = _suffix_order(tuple(suffixes))
    for suffix in longest_first:
        if stem.endswith(suffix):
            return stem[: -len(suffix)]
    return stem if bare else None


@functools.lru_cache(maxsize=256)
def _suffix_order(suffixes: Tuple[str, ...]) -> Tuple[Tuple[str, ...], bool]:
    """The non-empty suffixes longest first, and whether a bare name is allowed."""
    return tuple(s for s in sorted(suffixes, key=len, reverse=True) if s), "" in suffixes or not suffixes


def parse_filename(model: ApiModel, grammars: Dict[str, Grammar], filename: str):
    """[(kernel type, tokens)] for every sub-type whose grammar parses ``filename``."""
    memo = grammars.parsed if isinstance(grammars, Grammars) and grammars.model_id == id(model) else None
    if memo is not None and filename in memo:
        return [(kernel_type, list(tokens)) for kernel_type, tokens in memo[filename]]
    found = []
    for kernel_type in model.kernel_types:
        name = split_filename(filename, kernel_type.arch_suffixes)
        if name is None:
            continue
        parses = grammars[kernel_type.class_name].parses(name)
        for tokens in parses:
            found.append((kernel_type, tokens))
    if memo is not None:
        memo[filename] = [(kernel_type, tuple(tokens)) for kernel_type, tokens in found]
    return found


class Grammars(Dict[str, Grammar]):
    """The grammar of each kernel type of one model, and the parse of every file name
    asked for so far: the baseline, the token counts, the token dispatch and the parsed
    listings all parse the same names."""

    def __init__(self, model: ApiModel) -> None:
        super().__init__((k.class_name, Grammar(segments=k.segments)) for k in model.kernel_types)
        self.model_id = id(model)
        self.shape = _grammar_shape(model)
        self.parsed: Dict[str, List[Tuple[KernelType, Tuple[str, ...]]]] = {}


def _grammar_shape(model: ApiModel) -> tuple:
    """What the grammars were built from (a model is not changed once built; this
    only guards the cache against one that is)."""
    return tuple((k.class_name, id(k), tuple(k.arch_suffixes), id(k.segments),
                  tuple((id(s), len(s.tokens)) for s in k.segments)) for k in model.kernel_types)


#: id(model) -> its grammars; an entry leaves with its model (weakref.finalize).
_GRAMMARS: Dict[int, Grammars] = {}


def grammars_of(model: ApiModel) -> Dict[str, Grammar]:
    """The model's grammars, the same object (with its parses) for as long as the model lives."""
    cached = _GRAMMARS.get(id(model))
    if cached is not None and cached.shape == _grammar_shape(model):
        return cached
    grammars = Grammars(model)
    if cached is None:
        weakref.finalize(model, _GRAMMARS.pop, id(model), None).atexit = False
    _GRAMMARS[id(model)] = grammars
    return grammars


def _baseline(model: ApiModel, grammars: Dict[str, Grammar], listed_files: Sequence[str]) -> Baseline:
    baseline = Baseline(count=len(listed_files))
    for filename in listed_files:
        found = parse_filename(model, grammars, filename)
        if len(found) == 1 and "".join(found[0][1]) + _suffix_of(filename, found[0][0]) == filename:
            baseline.parsed += 1
        elif not found:
            baseline.unparsed.append(filename)
        else:
            baseline.ambiguous.append(filename)
    return baseline


def _parsed_once(model: ApiModel, filename: str) -> Optional[Tuple[str, List[str]]]:
    """(sub-type, tokens) of a file the model's grammars parse exactly once."""
    found = parse_filename(model, grammars_of(model), filename)
    return (found[0][0].class_name, found[0][1]) if len(found) == 1 else None


def _suffix_of(filename: str, kernel_type: KernelType) -> str:
    name = split_filename(filename, kernel_type.arch_suffixes) or ""
    return filename[len(name):]


def _blob_functions_take_targets(module_path: Path, functions: Sequence[str]) -> bool:
    # The module as the source reading parsed it (parses are kept by content).
    tree = parse_module(module_path).tree
    return tree is not None and any(
        node.name in functions and any(arg.arg == "targets" for arg in node.args.args)
        for node in _function_defs(tree))


#: The nodes that hold statements (``match_case``: Python 3.10 on; the analysis runs on 3.9).
_STATEMENT_HOLDERS = (ast.stmt, ast.excepthandler) + (
    (ast.match_case,) if hasattr(ast, "match_case") else ())


def _function_defs(tree: ast.AST) -> Iterator[ast.FunctionDef]:
    """Every ``def`` in ``tree``, at any depth: statements hold them, expressions
    never do (a lambda holds no statement), so only statements are walked into."""
    todo = [tree]
    while todo:
        for child in ast.iter_child_nodes(todo.pop()):
            if isinstance(child, ast.FunctionDef):
                yield child
            if isinstance(child, _STATEMENT_HOLDERS):
                todo.append(child)


def _checks(model: ApiModel, facts: SourceFacts, module_path: Path,
            listing_matches: bool) -> Dict[str, object]:
    """The cross-check summary: facts that tell CK versions apart at a glance."""
    return {
        "kernel_classes": len(model.kernel_types),
        "frozen": {k.class_name: k.frozen for k in model.kernel_types},
        "blob_function_takes_targets": _blob_functions_take_targets(
            module_path, list(facts.enumeration.functions)),
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
