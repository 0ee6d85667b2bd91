"""The kernel model of every API of every real CK tree of the corpus.

Done-criteria of "Analyse any CK FMHA codegen tree into a kernel model", on the real
trees: with the default options and with ``-m generic``, the model's grammar parses
and re-renders every name an independent ``generate.py -l`` lists, exactly once; the
listed counts are the corpus facts; pad/mask/bias own their segments; the JSON has
the required shape and round-trips; the filter facts of each version are observed;
the analysed tree is left byte-identical.  Beyond the criteria: a few other options
(receipt, optdim, targets) and whether ``filter.drops`` is what generate.py does;
these caught two library bugs, now fixed (literal runs around absent tokens; 2.8.1's
per-class filter loops read as trait-wise dropping).

The models are computed once per session (``corpus_models`` in plugins_analysis.py)
and the items of one model share an ``xdist_group``: run with
``-n 2 --dist loadgroup``.  ``FMHA_ANALYSIS_TEST_CACHE=<dir>`` keeps the analysis
cache between sessions.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from sphinxext_fmha.analysis.analyze import Options, analyze_api
from sphinxext_fmha.corpus import load_corpus
from sphinxext_fmha.locate import fmha_dir
from sphinxext_fmha.model import ApiModel, KernelType, from_json, to_dict, to_json
from sphinxext_fmha.process.cache import DiskCache
from sphinxext_fmha.render.sections.rules import receipt_reading

from helpers.analysis_fixtures import (
    BASELINE_KEYS,
    KERNEL_TYPE_KEYS,
    MODEL_KEYS,
    SEGMENT_KEYS,
    PopenSpy,
    category_segments,
    check_parses,
    pycache_dirs,
    run_listing,
    segment_isolation_problems,
    shared_listing,
    snapshot,
    snapshot_diff,
)

pytest_plugins = ["helpers.plugins_analysis"]
pytestmark = pytest.mark.corpus

CORPUS = load_corpus()
TREES = {tree.name: tree for tree in CORPUS}
MASKS = (None, "generic")

OLDEST = "flash-attn-2.7.4.post1"
V281 = "flash-attn-2.8.1"
V283 = "flash-attn-2.8.3"
AITER = "amd-aiter-0.1.7.post2.dev18"


#: aiter's bwd under ``-m generic`` is the costliest model of the suite (a CI worker's
#: first three to four minutes, for this model alone); ``-m generic`` of bwd is checked on
#: the three flash-attn trees, and aiter's bwd with the default mask.
LEFT_OUT = {(AITER, "bwd", "generic")}


def _group(tree: str, api: str, mask: Optional[str]):
    # One group per model (tree, api, mask): the masks of one API share nothing, and
    # splitting them balances the two slowest models (aiter bwd) over two workers.
    return pytest.mark.xdist_group("analysis-%s-%s-%s" % (tree, api, mask or "default"))


def _cost(tree, api: str, mask: Optional[str]) -> int:
    """Rough cost of a model: kernels listed, bwd (3 kernel classes, quadratic checks
    in aiter) and -m generic (more kernels) weigh more."""
    return tree.apis[api] * (3 if api == "bwd" else 1) * (2 if mask else 1)


def _cases(masks=MASKS, trees=None, apis=None) -> List:
    """(tree, api, mask) params, heaviest first: xdist hands out the groups in the
    order their first item is collected, so the slow models start early."""
    triples = [(tree, api, mask) for tree in CORPUS for api in tree.apis for mask in masks
               if (trees is None or tree.name in trees) and (apis is None or api in apis)
               and (tree.name, api, mask) not in LEFT_OUT]
    triples.sort(key=lambda t: (-_cost(*t), t[0].name, t[1], t[2] or ""))
    return [pytest.param(tree.name, api, mask, marks=_group(tree.name, api, mask),
                         id="%s-%s-%s" % (tree.name, api, mask or "default"))
            for tree, api, mask in triples]


ALL = _cases()


def generic_counts(notes: str) -> Dict[str, int]:
    """'... (fwd 5016 -> 7524)' in a tree's notes: {api: count with -m generic}."""
    return {api: int(after) for api, _before, after in re.findall(r"\((\w+) (\d+) -> (\d+)\)", notes)}


#: The main kernel sub-type of each API must have a segment for each of these
#: categories (facts about CK's kernel names, checked against the real trees).
REQUIRED_CATEGORIES = {
    "fwd": {"pad", "mask", "bias"},
    "fwd_splitkv": {"pad", "mask", "bias"},
    "batch_prefill": {"pad", "mask", "bias"},
    "pagedkv_prefill": {"pad", "mask", "bias"},
    "bwd": {"pad", "mask", "bias", "dbias"},
    "fwd_appendkv": {"pad"},
}


def main_type(model: ApiModel) -> KernelType:
    """The sub-type with the most kernels (fmha_fwd, fmha_bwd's dq_dk_dv, ...)."""
    return max(model.kernel_types, key=lambda k: (k.count, k.class_name))


def bwd_role(kernel_type: KernelType) -> str:
    """dot_do_o / convert_dq / dq_dk_dv, from the sub-type's own file names."""
    if kernel_type.example.startswith("fmha_bwd_dot_do_o"):
        return "dot_do_o"
    if kernel_type.example.startswith("fmha_bwd_convert_dq"):
        return "convert_dq"
    assert kernel_type.example.startswith("fmha_bwd_"), kernel_type.example
    return "dq_dk_dv"


# --------------------------------------------------------------------------- 1. names


@pytest.mark.parametrize("tree, api, mask", ALL)
def test_grammar_parses_every_listed_name_once(corpus_models, tree, api, mask):
    case = corpus_models.get(tree, api, mask)
    model, listing = case.model, case.listing
    assert listing.kernels, "generate.py listed no kernels"
    assert len(listing.api_files) == 1, listing.api_files
    assert len(set(listing.kernels)) == len(listing.kernels), "duplicate names in the listing"

    # Parse with the published (JSON) model only: what a reader of the JSON gets.
    published = from_json(ApiModel, to_json(model))
    per_class, problems = check_parses(published, listing.kernels)
    # the model's own flags say what this test finds by itself (never taken as proof)
    assert model.checks.get("all_names_parse") is (not problems)
    covered = per_class == {k.class_name: k.count for k in model.kernel_types} \
        and sum(per_class.values()) == len(listing.kernels)
    assert model.checks.get("listing_matches_observation") is covered, model.gaps
    assert not problems, "%d of %d names do not parse uniquely, e.g.:\n%s" % (
        len(problems), len(listing.kernels), "\n".join(problems[:15]))
    assert sum(per_class.values()) == len(listing.kernels)
    assert per_class == {k.class_name: k.count for k in model.kernel_types}

    assert model.baseline.count == len(listing.kernels)
    assert model.baseline.parsed == model.baseline.count
    assert model.baseline.unparsed == [] and model.baseline.ambiguous == []
    if "api_files" in model.checks:
        assert model.checks["api_files"] == listing.api_files


@pytest.mark.parametrize("tree, api, mask", ALL)
def test_listed_counts_are_the_corpus_facts(corpus_models, tree, api, mask):
    case = corpus_models.get(tree, api, mask)
    count = len(case.listing.kernels)
    facts = TREES[tree]
    if mask is None:
        assert count == facts.apis[api]
    else:
        default = facts.apis[api]
        expected = generic_counts(facts.notes).get(api)
        if expected is not None:
            assert count == expected
        else:  # every 'mask' kernel becomes an 'mc' and an 'mg' kernel, or nothing changes
            assert count >= default


def test_generic_count_fact_is_read_from_the_notes():
    assert generic_counts(TREES[V283].notes) == {"fwd": 7524}


@pytest.mark.parametrize("tree, api, mask", ALL)
def test_pad_mask_and_bias_own_their_segments(corpus_models, tree, api, mask):
    model = corpus_models.get(tree, api, mask).model
    problems = [p for k in model.kernel_types for p in segment_isolation_problems(k)]
    assert not problems, "\n".join(problems)
    main = main_type(model)
    present = set(category_segments(main))
    assert REQUIRED_CATEGORIES[api] <= present, (main.class_name, present,
                                                 [(s.label, s.fields) for s in main.segments])
    # The field table agrees with the segments.
    for info in model.fields:
        owners = [s for k in model.kernel_types for s in k.segments if info.path in s.fields]
        assert owners and info.segment in {s.label for s in owners}, info


@pytest.mark.parametrize("tree, api, mask", _cases(apis={"fwd", "fwd_splitkv", "bwd",
                                                          "batch_prefill", "pagedkv_prefill"}))
def test_mask_tokens_follow_the_mask_option(corpus_models, tree, api, mask):
    main = main_type(corpus_models.get(tree, api, mask).model)
    (segment,) = category_segments(main)["mask"]
    tokens = set(segment.tokens)
    if mask == "generic":
        assert {"_mc", "_mg"} <= tokens, tokens
        assert "_mask" not in tokens
    else:
        assert "_mask" in tokens and not {"_mc", "_mg"} & tokens, tokens


#: A piece of a name property's f-string: letters, then ``x``-separated attributes,
#: each maybe indexed (``_r{self.F_rm0}x{self.F_rn0}x{self.F_rk0}``, ``_v{self.F_vlayout[0]}``).
ATTRIBUTE = re.compile(r"\{self\.(\w+)(?:\[(\d+)\])?\}")
FORMAT_PIECE = re.compile(r"([A-Za-z]+)(\{self\.\w+(?:\[\d+\])?\}(?:x\{self\.\w+(?:\[\d+\])?\})*)")


def _codegen_text(root: Path) -> str:
    codegen = root / "example" / "ck_tile" / "01_fmha" / "codegen"
    return "\n".join(p.read_text() for p in sorted(codegen.rglob("*.py")))


def _format_pieces(source: str) -> List[tuple]:
    """(letters, [(attribute, index or None)]) of every such f-string piece."""
    return [(m.group(1), [(a, int(i) if i else None) for a, i in ATTRIBUTE.findall(m.group(2))])
            for m in FORMAT_PIECE.finditer(source)]


def _spelled(pieces: List[tuple], by_leaf: Dict[str, str]) -> List[str]:
    """What the pieces written by exactly these attributes make of their values."""
    return [letters + "x".join(by_leaf[a][i] if i is not None else by_leaf[a] for a, i in attributes)
            for letters, attributes in pieces
            if sorted(a for a, _ in attributes) == sorted(by_leaf)
            and all(i is None or i < len(by_leaf[a]) for a, i in attributes)]


def _written_beside(source_lines: List[str], token: str, attribute: str) -> bool:
    """``token`` stands quoted in the source on a line that, or one of the three lines
    before it, reads ``attribute`` (``if self.F_lse == 't': ... else: n += '_nlse'``)."""
    quoted = re.compile(r"[\"']%s[\"']" % re.escape(token))
    return any(quoted.search(line) and any(attribute in near for near in source_lines[max(0, i - 3):i + 1])
               for i, line in enumerate(source_lines))


@pytest.mark.parametrize("tree, api, mask", ALL)
def test_constant_text_is_labelled_by_the_fields_that_write_it(corpus_models, tree, api, mask):
    """Issue 9 item 6, checked against the codegen's own source text. Literal text is
    only the leading name (``fmha_bwd``), a string the source writes as it stands. A
    segment with one token is written by its fields: numeric ones by one f-string piece
    whose attributes are exactly the segment's fields, spelling their values in the
    piece's order (``_r{self.F_rm0}x{self.F_rn0}x{self.F_rk0}`` -> ``_r1x4x1``); others
    by such a piece (``_v{self.F_vlayout[0]}`` -> ``_vr``), or they carry their field's
    value (``_qr_async``), or are a quoted string next to their field in the source
    (``n += '_nlse'`` beside ``self.F_lse``)."""
    case = corpus_models.get(tree, api, mask)
    source = _codegen_text(case.root)
    lines = source.splitlines()
    pieces = _format_pieces(source)
    problems = []
    constant = 0
    for kernel_type in case.model.kernel_types:
        for index, segment in enumerate(kernel_type.segments):
            tokens = list(segment.tokens)
            if segment.literal:
                if index or not re.search(r"[\"']%s" % re.escape(tokens[0]), source):
                    problems.append("%s: literal segment %d %r is not the name's leading "
                                    "string" % (kernel_type.class_name, index + 1, tokens[0]))
                continue
            if len(tokens) != 1:
                continue
            constant += 1
            for combo in segment.values[tokens[0]]:
                by_leaf = {path.split(".")[-1]: value for path, value in combo.items()}
                spelled = _spelled(pieces, by_leaf)
                written = tokens[0].lstrip("_") in spelled
                if not (by_leaf and all(re.fullmatch(r"-?\d+", v) for v in by_leaf.values())):
                    written = written or any(len(v) > 1 and v in tokens[0] for v in by_leaf.values()) \
                        or any(_written_beside(lines, tokens[0], leaf) for leaf in by_leaf)
                if not written:
                    problems.append("%s: constant %s %r with %s: the source spells %s" % (
                        kernel_type.class_name, segment.label, tokens[0], combo, spelled))
    assert not problems, "\n".join(problems)
    if api == "bwd":  # its tile fields never all vary: some text is constant in every tree
        assert constant, [(s.label, list(s.tokens)) for k in case.model.kernel_types
                          for s in k.segments]


# --------------------------------------------------------------------------- 2. JSON


@pytest.mark.parametrize("tree, api, mask", ALL)
def test_model_json_has_the_required_keys_and_round_trips(corpus_models, tree, api, mask):
    case = corpus_models.get(tree, api, mask)
    model = case.model
    data = to_dict(model)
    assert set(MODEL_KEYS) <= set(data), set(MODEL_KEYS) - set(data)
    assert data["api"] == api
    source = data["source"]
    assert source.startswith("example/ck_tile/01_fmha/codegen/ops/") and source.endswith(".py")
    assert not Path(source).is_absolute() and (case.root / source).is_file()
    assert data["options"]["mask"] == (mask or "simplified")
    assert data["options"].get("receipt") == "0"
    assert data["kernel_types"]
    for kernel_type in data["kernel_types"]:
        assert set(KERNEL_TYPE_KEYS) <= set(kernel_type), set(KERNEL_TYPE_KEYS) - set(kernel_type)
        assert isinstance(kernel_type["frozen"], bool)
        assert kernel_type["count"] > 0
        assert kernel_type["segments"]
        for segment in kernel_type["segments"]:
            assert set(SEGMENT_KEYS) <= set(segment)
            assert segment["tokens"], segment
    assert set(BASELINE_KEYS) <= set(data["baseline"])
    assert sum(k["count"] for k in data["kernel_types"]) == data["baseline"]["count"]
    assert data["fields"] and all("path" in f and "segment" in f for f in data["fields"])
    text = to_json(model)
    back = from_json(ApiModel, text)
    assert back == model
    assert to_json(back) == text


@pytest.mark.parametrize("tree, api, mask", ALL)
def test_source_reading_and_observation_agree(corpus_models, tree, api, mask):
    """The classes the running code made are classes of the codegen's source (read
    here), and no gap is left on any corpus tree."""
    case = corpus_models.get(tree, api, mask)
    model = case.model
    # the classes the running code made are classes of the codegen's source (read here)
    source = "\n".join(p.read_text(encoding="utf-8")
                       for p in sorted((fmha_dir(case.root) / "codegen").rglob("*.py")))
    missing = [k.class_name for k in model.kernel_types
               if not re.search(r"^class\s+%s\b" % re.escape(k.class_name), source, re.M)]
    assert not missing, missing
    assert model.gaps == []


@pytest.mark.parametrize("tree, api, mask", _cases(masks=(None,)))
def test_each_sub_type_is_placed_at_its_class_statement(corpus_models, corpus_root, tree, api,
                                                         mask):
    """"Defined at" names the line of the ``class`` statement (read here from the file)."""
    for kernel_type in corpus_models.get(tree, api, mask).model.kernel_types:
        path, line = kernel_type.defined_at.rsplit(":", 1)
        lines = (fmha_dir(corpus_root(tree)) / path).read_text(encoding="utf-8").splitlines()
        assert re.match(r"class\s+%s\b" % kernel_type.class_name, lines[int(line) - 1]), \
            (kernel_type.defined_at, lines[int(line) - 1])


def _class_body(lines: List[str], name: str) -> range:
    """The lines (0-based) of ``class name``'s body: from its statement to the next
    line that is not indented (nor blank)."""
    start = next(i for i, text in enumerate(lines) if re.match(r"class\s+%s\b" % name, text))
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].strip() and not lines[i][0].isspace()), len(lines))
    return range(start, end)


def _declaring_class(lines: List[str], class_name: str, path: str) -> str:
    """The class whose body declares the last attribute of ``path`` on an object of
    ``class_name``: each ``F_part.`` step follows the annotation of ``F_part`` there."""
    for part in path.split(".")[:-1]:
        declaration = next(re.match(r"\s+%s\s*:\s*(\w+)" % part, lines[i])
                           for i in _class_body(lines, class_name)
                           if re.match(r"\s+%s\s*:" % part, lines[i]))
        class_name = declaration.group(1)
    return class_name


@pytest.mark.parametrize("tree, api, mask", _cases(masks=(None,)))
def test_each_field_is_placed_in_its_own_sub_types_class(corpus_models, corpus_root, tree, api,
                                                         mask):
    """A field's place, as each sub-type's field reference cites it, is a line that declares
    that attribute in the body of the class this sub-type holds it in (read here from the
    file): fwd_splitkv's kernel and combine kernel both declare ``F_hdim``, each its own."""
    model = corpus_models.get(tree, api, mask).model
    infos = {info.path: info for info in model.fields}
    checked = 0
    for kernel_type in model.kernel_types:
        source = kernel_type.defined_at.rsplit(":", 1)[0]
        lines = (fmha_dir(corpus_root(tree)) / source).read_text(encoding="utf-8").splitlines()
        for segment in kernel_type.segments:
            for path in segment.fields:
                info = infos.get(path)
                cited = info and info.defined_at_by_type.get(kernel_type.class_name)
                if not cited or not cited.startswith(source + ":"):
                    continue  # (a part declared in another file: not read here)
                line = int(cited.rsplit(":", 1)[1]) - 1
                owner = _declaring_class(lines, kernel_type.class_name, path)
                leaf = path.split(".")[-1]
                assert line in _class_body(lines, owner), (kernel_type.class_name, path, cited)
                assert re.match(r"\s+%s\s*:" % leaf, lines[line]), (path, cited, lines[line])
                checked += 1
    assert checked


@pytest.mark.parametrize("tree, api, mask", _cases(masks=(None,), trees={V283},
                                                 apis={"fwd_splitkv"}))
def test_a_receipt_rule_no_listed_kernel_meets_keeps_none(corpus_models, corpus_root, tree,
                                                          api, mask):
    """2.8.3 fwd_splitkv's PyTorch receipt tests ``dtype in ['fp16, bf16']``: the page says
    no listed kernel meets it, and ``-r 4`` lists no split-KV kernel (its combine kernels
    come from another function); ``-r 2``, which says nothing of the kind, lists some."""
    receipts = {r.value: r for r in corpus_models.get(tree, api, mask).model.receipts}
    assert [value for value, r in receipts.items() if r.unmet] == ["4"]
    assert receipts["4"].unmet[0][:2] == ["dtype in ['fp16, bf16']", "F_dtype"]

    def split_kv(receipt: str) -> set:
        listed = shared_listing(corpus_root(tree), api, "-r", receipt)
        return {n for n in listed if not n.startswith("fmha_fwd_splitkv_combine")}

    assert split_kv("4") == set()
    assert split_kv("2")


@pytest.mark.parametrize("tree, api, mask", _cases(masks=(None,), trees={V281},
                                                 apis={"bwd"}))
def test_a_receipt_rule_every_listed_kernel_meets_drops_none(corpus_models, corpus_root,
                                                             tree, api, mask):
    """2.8.1 bwd's aiter receipt 600 has three rules: dq_dk_dv kernels need fp16/bf16 and
    ``dpad == dvpad``; the dot_do_o and the convert_dq kernels need fp16/bf16 alone, which
    every listed kernel is. The page says those two drop none of them; ``-r 600`` lists
    the same dot_do_o and convert_dq kernels as no ``-r``, and fewer dq_dk_dv ones, whose
    rule is not said to drop none."""
    rows = [r for r in corpus_models.get(tree, api, mask).model.receipts if r.value == "600"]
    root = corpus_root(tree)
    lines = (fmha_dir(root) / "codegen/ops/fmha_bwd.py").read_text(
        encoding="utf-8").splitlines()

    def function_of(where: str) -> str:  # the def above the rule's line, read here
        line = int(where.rsplit(":", 1)[1])
        return next(re.match(r"def (\w+)", text).group(1)
                    for text in reversed(lines[:line]) if text.startswith("def "))

    said = {function_of(r.where): bool(r.met) for r in rows}
    assert said == {"get_bwd_dq_dk_dv_blobs": False, "get_bwd_dot_do_o_blobs": True,
                    "get_bwd_convert_dq_blobs": True}, said
    for row in rows:
        for condition, path, values in row.met:
            assert (condition, path, values) == ("dtype in ['fp16', 'bf16']", "F_dtype",
                                                 "bf16, fp16")

    def kinds(names: set) -> dict:
        prefixes = ("fmha_bwd_dot_do_o_", "fmha_bwd_convert_dq_")
        return {"dot_do_o": {n for n in names if n.startswith(prefixes[0])},
                "convert_dq": {n for n in names if n.startswith(prefixes[1])},
                "dq_dk_dv": {n for n in names if not n.startswith(prefixes)}}

    plain = kinds(shared_listing(root, api))
    receipt = kinds(shared_listing(root, api, "-r", "600"))
    assert plain["dot_do_o"] and receipt["dot_do_o"] == plain["dot_do_o"]
    assert plain["convert_dq"] and receipt["convert_dq"] == plain["convert_dq"]
    assert receipt["dq_dk_dv"] < plain["dq_dk_dv"]


@pytest.mark.parametrize("tree, api, mask", _cases(masks=(None,), trees={V283},
                                                 apis={"batch_prefill"}))
def test_receipts_a_module_tests_only_some_of_are_said_untested(corpus_models, corpus_root,
                                                                tree, api, mask):
    """generate.py's help names 100-199 for Aiter; batch_prefill tests ``receipt == 100``
    only, so 101-199 is listed among the receipts the module does not reference, and
    ``-r 101`` lists what no ``-r`` lists. Each tested receipt carries the module's own
    words for it (the comment above its branch, read here from the file)."""
    model = corpus_models.get(tree, api, mask).model
    receipts = {r.value: r for r in model.receipts}
    assert "101-199" in receipts and "referenced in this module" in receipt_reading(
        receipts["101-199"])
    assert "100" in receipts and "100-199" not in receipts
    root = corpus_root(tree)
    everything = shared_listing(root, api)
    assert shared_listing(root, api, "-r", "101") == everything
    assert shared_listing(root, api, "-r", "100") != everything
    source, line = receipts["200"].where.rsplit(":", 1)
    lines = (fmha_dir(root) / source).read_text(encoding="utf-8").splitlines()
    above = lines[int(line) - 2].strip()
    assert above.startswith("#") and receipts["200"].label == above.lstrip("# ").strip()


# --------------------------------------------------------------------------- 3. filter facts


def _splits_on(root: Path, separator: str, module: str = "*.py") -> bool:
    """Whether a codegen module of the tree calls ``.split(separator)`` (read here)."""
    call = re.compile(r"\.split\(\s*['\"]%s['\"]\s*\)" % re.escape(separator))
    return any(call.search(p.read_text(encoding="utf-8"))
               for p in (fmha_dir(root) / "codegen").rglob(module))


@pytest.mark.parametrize("tree, api, mask", _cases(masks=(None,), trees={OLDEST}))
def test_oldest_tree_uses_one_pattern_for_every_api(corpus_models, corpus_root, tree, api, mask):
    model = corpus_models.get(tree, api, mask).model
    assert model.filter.cli_split is None
    assert model.filter.api_split is None
    # read here: no codegen of the tree splits a filter on '@'
    assert not _splits_on(corpus_root(tree), "@")


@pytest.mark.parametrize("tree, api, mask", _cases(masks=(None,), trees={V281, V283, AITER}))
def test_newer_trees_split_the_filter_per_api_on_commas(corpus_models, tree, api, mask):
    assert corpus_models.get(tree, api, mask).model.filter.cli_split == ","


@pytest.mark.parametrize("tree, api, mask", _cases(masks=MASKS, trees={OLDEST}, apis={"bwd"}))
def test_oldest_bwd_filters_dq_dk_dv_only(corpus_models, tree, api, mask):
    model = corpus_models.get(tree, api, mask).model
    roles = {bwd_role(k): k for k in model.kernel_types}
    assert set(roles) == {"dot_do_o", "convert_dq", "dq_dk_dv"}
    spec = model.filter
    assert spec.cli_split is None and spec.api_split is None
    assert [p.position for p in spec.parts] == [0]
    assert spec.parts[0].applies_to == [roles["dq_dk_dv"].class_name]
    assert roles["dq_dk_dv"].filter_position == 0
    assert sorted(spec.unfiltered_types) == sorted(roles[r].class_name for r in ("dot_do_o", "convert_dq"))
    assert roles["dot_do_o"].filter_position is None and roles["convert_dq"].filter_position is None
    assert spec.drops == "kernel"


@pytest.mark.parametrize("tree, api, mask", _cases(masks=MASKS, trees={V283}, apis={"bwd"}))
def test_283_bwd_splits_the_filter_on_at(corpus_models, corpus_root, tree, api, mask):
    model = corpus_models.get(tree, api, mask).model
    roles = {bwd_role(k): k for k in model.kernel_types}
    spec = model.filter
    assert spec.cli_split == ","
    assert spec.api_split == "@"
    assert [p.position for p in spec.parts] == [0, 1, 2]
    expected = {0: "dot_do_o", 1: "convert_dq", 2: "dq_dk_dv"}
    for part in spec.parts:
        assert part.applies_to == [roles[expected[part.position]].class_name]
        assert roles[expected[part.position]].filter_position == part.position
    assert [p.missing_becomes for p in spec.parts[1:]] == ["*", "*"]
    assert spec.unfiltered_types == []
    assert _splits_on(corpus_root(tree), "@", "fmha_bwd.py")  # read here: .split('@')
    # generate.py's own answer (the oracle of "trait"): a pattern no dot_do_o kernel
    # matches, '*' for the other two sub-types, lists nothing, where filtering kernel by
    # kernel would keep the convert_dq and dq_dk_dv kernels of the independent listing
    listed = corpus_models.get(tree, api, mask).listing.kernels
    assert [n for n in listed if not n.startswith("fmha_bwd_dot_do_o_")]
    assert run_listing(fmha_dir(corpus_root(tree)), api, mask,
                       extra=["-f", "no-such-kernel@*@*"]).kernels == []
    assert spec.drops == "trait"


@pytest.mark.parametrize("tree, api, mask", _cases(masks=MASKS, trees={AITER}, apis={"fwd"}))
def test_aiter_fwd_names_carry_arch_suffixes(corpus_models, tree, api, mask):
    case = corpus_models.get(tree, api, mask)
    model = case.model
    assert model.options.get("targets") == "gfx9,gfx950"
    (kernel_type,) = model.kernel_types
    assert kernel_type.arch_suffixes == ["_gfx9", "_gfx950"]
    suffixes = {re.search(r"(_gfx\w+)\.cpp$", f).group(1) for f in case.listing.kernels}
    assert suffixes == {"_gfx9", "_gfx950"}
    for segment in kernel_type.segments:  # the suffix is not part of any segment
        assert not any("gfx" in token for token in segment.tokens), segment


# --------------------------------------------------------------------------- 5. tree untouched


@pytest.mark.parametrize("tree, api, mask", ALL)
def test_analysed_tree_is_byte_identical(corpus_models, tree, api, mask):
    case = corpus_models.get(tree, api, mask)
    assert snapshot_diff(case.before, case.after) == []
    assert pycache_dirs(case.after) == []


def test_fresh_analysis_leaves_a_real_tree_untouched(corpus_root, tmp_path, monkeypatch):
    """With an empty cache (so the probe and generate.py really run) and with no cache."""
    root = corpus_root(V283)
    trace = tmp_path / "trace.txt"
    monkeypatch.setenv("FMHA_TRACE_RUNS", str(trace))
    before = snapshot(root)
    assert pycache_dirs(before) == []
    spy = PopenSpy(monkeypatch)
    first = analyze_api(root, "fwd_appendkv", Options(mask="generic"),
                        cache=DiskCache(tmp_path / "cache"))
    second = analyze_api(root, "pagedkv_prefill", Options())
    after = snapshot(root)
    assert snapshot_diff(before, after) == []
    assert pycache_dirs(after) == []
    assert first.baseline.parsed == first.baseline.count == TREES[V283].apis["fwd_appendkv"]
    assert second.baseline.parsed == second.baseline.count == TREES[V283].apis["pagedkv_prefill"]
    # Both analyses did run generate.py (so the snapshot tested something).
    lines = trace.read_text().splitlines()
    assert len(lines) >= 2, lines
    assert sum(1 for c in spy.commands if any("probe_script" in str(a) for a in c)) == 2


# --------------------------------------------------------------------------- other options

OPTION_CASES = [
    pytest.param(V283, "fwd", {"receipt": 2}, ["-r", "2"],
                 marks=pytest.mark.xdist_group("analysis-options-283-r2"),
                 id="2.8.3-fwd-receipt2"),
    pytest.param(OLDEST, "fwd", {"receipt": 2}, ["-r", "2"],
                 marks=pytest.mark.xdist_group("analysis-options-274-r2"), id="2.7.4-fwd-receipt2"),
    pytest.param(V281, "fwd", {"optdim": "64,128"}, ["--optdim", "64,128"],
                 marks=pytest.mark.xdist_group("analysis-options-281-optdim"), id="2.8.1-fwd-optdim"),
    pytest.param(AITER, "fwd", {"targets": "gfx950"}, ["--targets", "gfx950"],
                 marks=pytest.mark.xdist_group("analysis-options-aiter-gfx950"), id="aiter-fwd-gfx950"),
]


@pytest.mark.parametrize("tree, api, options, argv", OPTION_CASES)
def test_other_options_parse_every_listed_name_once(corpus_root, analysis_cache, tree, api,
                                                    options, argv):
    root = corpus_root(tree)
    model = analyze_api(root, api, Options(**options), cache=analysis_cache)
    listing = run_listing(root / "example/ck_tile/01_fmha", api, extra=argv)
    for key, value in options.items():
        assert model.options[key] == str(value)
    if "targets" in options:
        assert [k.arch_suffixes for k in model.kernel_types] == [["_" + options["targets"]]]
    per_class, problems = check_parses(model, listing.kernels)
    assert not problems, "%d of %d names do not parse uniquely, e.g.:\n%s" % (
        len(problems), len(listing.kernels), "\n".join(problems[:5]))
    assert model.baseline.parsed == model.baseline.count == len(listing.kernels)


# --------------------------------------------------------------------------- filter drops

def _drops_cases():
    out = []
    for param in _cases(masks=(None,), trees={V281, V283, AITER}, apis={"bwd", "fwd_splitkv"}):
        tree, api, _mask = param.values
        marks = list(param.marks)
        out.append(pytest.param(tree, api, marks=marks, id=param.id))
    return out


@pytest.mark.parametrize("tree, api", _drops_cases())
def test_filter_drops_is_what_generate_does(corpus_models, tree, api):
    """-f with a pattern that matches nothing at position 0 and '*' elsewhere: 'trait'
    drops everything, 'kernel' keeps every kernel of the other positions."""
    case = corpus_models.get(tree, api, None)
    spec = case.model.filter
    assert spec.api_split == "@" and len(spec.parts) >= 2
    pattern = spec.api_split.join(["no-such-kernel"] + ["*"] * (len(spec.parts) - 1))
    listing = run_listing(case.root / "example/ck_tile/01_fmha", api, extra=["-f", pattern])
    first = set(spec.parts[0].applies_to)
    others = sum(k.count for k in case.model.kernel_types if k.class_name not in first)
    expected = {"trait": 0, "kernel": others}[spec.drops]
    assert len(listing.kernels) == expected, (spec.drops, len(listing.kernels), others)
