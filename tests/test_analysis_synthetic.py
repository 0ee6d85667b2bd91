"""The analysis on synthetic CK-like trees and their mutants (fast, no network).

Each mutant (tests/helpers/synthetic.py) changes the codegen the way a new CK version could:
a renamed field, a new boolean feature, a new pad encoding, a new API module,
absent-when-off tokens, a bwd-like '@' filter split.  The same, unchanged analysis
code must model every one of them, with every listed name parsing exactly once.
Also: the analysed tree stays byte-identical, and the analysis cache starts no
process on a hit and is invalidated by a codegen change.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Dict, List

import pytest

from sphinxext_fmha.analysis.analyze import Options, Tree, analyze_api
from sphinxext_fmha.model import ApiModel, from_json, to_dict, to_json
from sphinxext_fmha.process.cache import DiskCache
from sphinxext_fmha.process.runner import total_processes_started

from helpers import synthetic
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
    segment_with_field,
    snapshot,
    snapshot_diff,
    token_parses,
)

pytest_plugins = ["helpers.plugins_analysis"]

FMHA = "example/ck_tile/01_fmha"
CASES = [(v, a) for v in synthetic.VARIANTS for a in synthetic.VARIANT_APIS[v]]
IDS = ["%s-%s" % case for case in CASES]


@pytest.fixture(scope="module")
def trees(tmp_path_factory) -> Dict[str, Path]:
    base = tmp_path_factory.mktemp("analysis_synthetic")
    return {variant: synthetic.make_tree(base, variant) for variant in synthetic.VARIANTS}


@pytest.fixture(scope="module")
def snapshots_before(trees) -> Dict[str, Dict[str, str]]:
    return {variant: snapshot(root) for variant, root in trees.items()}


class _Models:
    def __init__(self, trees: Dict[str, Path], cache: DiskCache) -> None:
        self.trees, self.cache, self.memo = trees, cache, {}

    def __call__(self, variant: str, api: str = "toy", mask=None) -> ApiModel:
        key = (variant, api, mask)
        if key not in self.memo:
            self.memo[key] = analyze_api(self.trees[variant], api, Options(mask=mask), cache=self.cache)
        return self.memo[key]


@pytest.fixture(scope="module")
def models(trees, snapshots_before, tmp_path_factory) -> _Models:
    return _Models(trees, DiskCache(tmp_path_factory.mktemp("analysis_synthetic_cache")))


# --------------------------------------------------------------------------- every variant


@pytest.mark.parametrize("mask", [None, "generic"], ids=["default", "generic"])
@pytest.mark.parametrize("variant, api", CASES, ids=IDS)
def test_every_listed_name_parses_once(models, trees, variant, api, mask):
    model = models(variant, api, mask)
    listing = run_listing(trees[variant] / FMHA, api, mask)
    assert listing.api_files == ["fmha_%s_api.cpp" % api]
    if mask is None:
        assert len(listing.kernels) == synthetic.EXPECTED_COUNTS[variant][api] - 1
    per_class, problems = check_parses(from_json(ApiModel, to_json(model)), listing.kernels)
    assert not problems, "\n".join(problems[:20])
    assert per_class == {k.class_name: k.count for k in model.kernel_types}
    assert model.baseline.count == model.baseline.parsed == len(listing.kernels)
    assert model.baseline.unparsed == [] and model.baseline.ambiguous == []
    for kernel_type in model.kernel_types:
        assert segment_isolation_problems(kernel_type) == []
    assert model.options["mask"] == (mask or "simplified")


@pytest.mark.parametrize("variant, api", CASES, ids=IDS)
def test_model_json_shape_and_round_trip(models, trees, variant, api):
    model = models(variant, api)
    data = to_dict(model)
    assert set(MODEL_KEYS) <= set(data)
    assert data["api"] == api
    assert data["source"] == "%s/codegen/ops/fmha_%s.py" % (FMHA, api)
    assert (trees[variant] / data["source"]).is_file()
    assert data["options"] == {"mask": "simplified", "receipt": "0", "optdim": "-1"}
    for kernel_type in data["kernel_types"]:
        assert set(KERNEL_TYPE_KEYS) <= set(kernel_type)
        assert kernel_type["arch_suffixes"] == [""]
        for segment in kernel_type["segments"]:
            assert set(SEGMENT_KEYS) <= set(segment)
    assert set(BASELINE_KEYS) <= set(data["baseline"])
    json.loads(to_json(model))
    assert from_json(ApiModel, to_json(model)) == model


# --------------------------------------------------------------------------- the mutants


def _pad_segment(model: ApiModel, class_name: str = "ToyKernel"):
    (segment,) = category_segments(model.kernel_type(class_name))["pad"]
    return segment


def test_base_segments(models):
    model = models("base")
    kernel_type = model.kernel_type("ToyKernel")
    assert sorted(_pad_segment(model).fields) == ["F_pipeline.F_dpad", "F_pipeline.F_spad"]
    assert set(_pad_segment(model).tokens) == {"_npad", "_psd"}
    assert set(segment_with_field(kernel_type, "F_pipeline.F_bias").tokens) == {"_nbias", "_bias"}
    assert set(segment_with_field(kernel_type, "F_pipeline.F_mask").tokens) == {"_nmask", "_mask"}
    assert kernel_type.segments[0].literal and list(kernel_type.segments[0].tokens) == ["fmha_toy"]
    assert model.filter.cli_split == "," and model.filter.api_split is None
    assert model.filter.drops == "kernel"
    assert kernel_type.filter_position == 0 and kernel_type.frozen is True


def test_renamed_field_shows_up_in_the_pad_segment(models):
    renamed, base = models("renamed_field"), models("base")
    segment = _pad_segment(renamed)
    assert "F_pipeline.F_seqpad" in segment.fields
    assert sorted(segment.fields) == ["F_pipeline.F_dpad", "F_pipeline.F_seqpad"]
    assert segment.tokens.keys() == _pad_segment(base).tokens.keys()
    paths = {f.path for f in renamed.fields}
    assert "F_pipeline.F_seqpad" in paths and "F_pipeline.F_spad" not in paths
    info = next(f for f in renamed.fields if f.path == "F_pipeline.F_seqpad")
    assert info.segment == segment.label
    # Same grammar shape otherwise.
    assert [s.label for s in renamed.kernel_types[0].segments] == \
        [s.label for s in base.kernel_types[0].segments]


def test_new_boolean_feature_gets_its_own_segment(models):
    model = models("new_flag")
    kernel_type = model.kernel_type("ToyKernel")
    segment = segment_with_field(kernel_type, "F_pipeline.F_sink")
    assert segment.fields == ["F_pipeline.F_sink"]
    assert set(segment.tokens) == {"_sink", "_nsink"}
    assert not segment.literal
    assert kernel_type.segments[-1] is segment  # written last in the name
    assert "sink" in segment.label
    assert "F_pipeline.F_sink" in {f.path for f in model.fields}
    assert all("F_pipeline.F_sink" not in s.fields for s in kernel_type.segments if s is not segment)


def test_number_pad_encoding_is_picked_up(models):
    model = models("pad_numbers")
    segment = _pad_segment(model)
    assert sorted(segment.fields) == ["F_pipeline.F_dpad", "F_pipeline.F_spad"]
    assert set(segment.tokens) == {"_npad", "_pd8", "_psd8"}
    dpad = next(f for f in model.fields if f.path == "F_pipeline.F_dpad")
    assert dpad.values == ["0", "8"]


def test_new_api_module_is_discovered_and_modelled(models, trees):
    tree = Tree.load(trees["new_api"])
    assert [a.name for a in tree.apis] == ["toy", "toy2"]
    model = models("new_api", "toy2")
    assert model.api == "toy2"
    assert model.source == FMHA + "/codegen/ops/fmha_toy2.py"
    (kernel_type,) = model.kernel_types
    assert kernel_type.class_name == "Toy2Kernel"
    assert kernel_type.count == synthetic.EXPECTED_COUNTS["new_api"]["toy2"] - 1
    rope = segment_with_field(kernel_type, "F_rope")
    assert set(rope.tokens) == {"_nrope", "_rinter", "_rhalf"}
    assert set(segment_with_field(kernel_type, "F_pagedkv").tokens) == {"_pagedkv", "_npagedkv"}
    # The first API of the same tree is unchanged by the new module.
    assert [s.label for s in models("new_api").kernel_types[0].segments] == \
        [s.label for s in models("base").kernel_types[0].segments]


def test_absent_when_off_tokens_are_empty_tokens(models, trees):
    model = models("absent_when_off")
    kernel_type = model.kernel_type("ToyKernel")
    bias = segment_with_field(kernel_type, "F_pipeline.F_bias")
    assert set(bias.tokens) == {"", "_bias"}
    assert bias.tokens[""].startswith("(no token)")
    assert bias.values[""] == [{"F_pipeline.F_bias": "no"}]
    index = kernel_type.segments.index(bias)
    listed = run_listing(trees["absent_when_off"] / FMHA, "toy").kernels
    without = [f for f in listed if "_bias" not in f]
    assert without
    for filename in without:
        (tokens,) = token_parses(kernel_type, filename)
        assert tokens[index] == ""


def test_at_split_yields_two_filtered_kernel_types(models):
    model = models("at_split")
    positions = {k.class_name: k.filter_position for k in model.kernel_types}
    assert positions == {"ToyKernel": 0, "ToyConvertKernel": 1}
    spec = model.filter
    assert spec.api_split == "@"
    assert spec.drops == "trait"
    assert [(p.position, p.applies_to) for p in spec.parts] == [
        (0, ["ToyKernel"]), (1, ["ToyConvertKernel"])]
    assert spec.parts[1].missing_becomes == "*"
    assert spec.unfiltered_types == []
    convert = model.kernel_type("ToyConvertKernel")
    assert convert.segments[0].literal and list(convert.segments[0].tokens) == ["fmha_toy_convert"]
    assert sorted(_pad_segment(model, "ToyConvertKernel").fields) == ["F_dpad", "F_spad"]


# --------------------------------------------------------------------------- tree untouched


def test_analysed_synthetic_trees_are_byte_identical(models, trees, snapshots_before):
    for variant, api in CASES:
        for mask in (None, "generic"):
            models(variant, api, mask)
    for variant, root in trees.items():
        after = snapshot(root)
        assert snapshot_diff(snapshots_before[variant], after) == [], variant
        assert pycache_dirs(after) == [], variant


def test_uncached_analysis_leaves_the_tree_untouched(synthetic_tree, tmp_path, monkeypatch):
    root = synthetic_tree("at_split")
    before = snapshot(root)
    trace = tmp_path / "trace.txt"
    monkeypatch.setenv("FMHA_TRACE_RUNS", str(trace))
    spy = PopenSpy(monkeypatch)
    model = analyze_api(root, "toy", Options(mask="generic"))  # no cache: everything runs
    assert model.baseline.parsed == model.baseline.count > 0
    assert trace.read_text().count("\n") >= 1
    assert any(any("probe_script" in str(a) for a in c) for c in spy.commands), spy.commands
    assert snapshot_diff(before, snapshot(root)) == []
    assert pycache_dirs(snapshot(root)) == []


# --------------------------------------------------------------------------- cache


def _trace_lines(path: Path) -> List[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_cache_hit_starts_no_process(tmp_path, monkeypatch):
    root = synthetic.make_tree(tmp_path, "new_flag")
    cache = DiskCache(tmp_path / "cache")
    trace = tmp_path / "trace.txt"
    monkeypatch.setenv("FMHA_TRACE_RUNS", str(trace))

    spy = PopenSpy(monkeypatch)
    first = analyze_api(root, "toy", Options(), cache=cache)
    cold = _trace_lines(trace)
    assert any("# observed" in line for line in cold), cold  # the probe ran
    assert any(any("probe_script" in str(a) for a in c) for c in spy.commands), spy.commands

    spy.commands.clear()
    started = total_processes_started()
    second = analyze_api(root, "toy", Options(), cache=cache)
    assert _trace_lines(trace) == cold
    assert total_processes_started() == started
    assert spy.commands == []
    assert second == first
    assert to_json(second) == to_json(first)

    # Another mask is another request: it runs.
    analyze_api(root, "toy", Options(mask="generic"), cache=cache)
    assert len(_trace_lines(trace)) > len(cold)


def test_changed_codegen_file_invalidates_the_cache(tmp_path, monkeypatch):
    original = synthetic.make_tree(tmp_path / "orig", "base")
    root = tmp_path / "copy"
    shutil.copytree(original, root)
    cache = DiskCache(tmp_path / "cache")
    trace = tmp_path / "trace.txt"
    monkeypatch.setenv("FMHA_TRACE_RUNS", str(trace))

    before = analyze_api(root, "toy", Options(), cache=cache)
    cold = len(_trace_lines(trace))
    analyze_api(root, "toy", Options(), cache=cache)
    assert len(_trace_lines(trace)) == cold

    module = root / FMHA / "codegen" / "ops" / "fmha_toy.py"
    text = module.read_text()
    assert text.count("n += '_nlse'") == 1
    module.write_text(text.replace("n += '_nlse'", "n += '_nolse'"))

    spy = PopenSpy(monkeypatch)
    after = analyze_api(root, "toy", Options(), cache=cache)
    new_lines = _trace_lines(trace)[cold:]
    assert any("# observed" in line for line in new_lines), new_lines
    assert any(any("probe_script" in str(a) for a in c) for c in spy.commands), spy.commands
    lse = segment_with_field(after.kernel_type("ToyKernel"), "F_pipeline.F_lse")
    assert set(lse.tokens) == {"_nolse", "_lse"}
    assert set(segment_with_field(before.kernel_type("ToyKernel"), "F_pipeline.F_lse").tokens) \
        == {"_nlse", "_lse"}
    assert after.baseline.parsed == after.baseline.count == before.baseline.count

    # A change outside generate.py/codegen (e.g. a README) does not invalidate.
    (root / FMHA / "README.md").write_text("notes\n")
    settled = len(_trace_lines(trace))
    analyze_api(root, "toy", Options(), cache=cache)
    assert len(_trace_lines(trace)) == settled


# --------------------------------------------------------------------------- known library bug


def test_optional_token_between_two_constant_literals(tmp_path):
    """A constant tile name, then an occupancy token that only some kernels carry, then
    a constant pipeline name: every name must still parse exactly once."""
    root = synthetic.make_tree(tmp_path, "base")
    module = root / FMHA / "codegen" / "ops" / "fmha_toy.py"
    text = module.read_text()
    old = "128 : [ToyTileSize(128, 128, 32,  2)],"
    assert text.count(old) == 1
    module.write_text(text.replace(
        old, "128 : [ToyTileSize(128, 64, 32,  2), ToyTileSize(128, 64, 32, -1)],"))
    model = analyze_api(root, "toy", Options())
    listing = run_listing(root / FMHA, "toy")
    per_class, problems = check_parses(model, listing.kernels)
    assert not problems, "%d of %d: %s" % (len(problems), len(listing.kernels), problems[:2])
    kernel_type = model.kernel_type("ToyKernel")
    occupancy = segment_with_field(kernel_type, "F_tile.F_occupancy")
    index = kernel_type.segments.index(occupancy)
    tile, pipeline = kernel_type.segments[index - 1], kernel_type.segments[index + 1]
    assert list(tile.tokens) == ["_b128x64"]
    assert list(pipeline.tokens) == ["_qr"]
    # Issue 9 item 6: constant text keeps its fields. The tile's fields are the ones
    # the toy's format string writes there (read here with a regex), the pipeline's
    # is its tag; neither is a keep/drop choice.
    written = re.search(r'f"b\{self\.(\w+)\}x\{self\.(\w+)\}"', text)
    assert written, "the toy tile name is no longer b{...}x{...}"
    assert tile.fields == sorted("F_tile." + a for a in written.groups())
    assert pipeline.fields == ["F_pipeline.tag"]
    assert tile.constant and pipeline.constant and not tile.literal and not pipeline.literal
    assert tile.label == "tile b" and pipeline.label == "pipeline"
    assert [s for s in kernel_type.segments if s.literal] == kernel_type.segments[:1]


def test_field_that_writes_nothing_in_the_tree_has_no_segment(tmp_path):
    """An occupancy of -1 everywhere writes no ``_o`` token in any name: perturbing it
    would insert one, but a segment that is empty in every name is not shown."""
    root = synthetic.make_tree(tmp_path, "base")
    module = root / FMHA / "codegen" / "ops" / "fmha_toy.py"
    text = module.read_text()
    old = "128 : [ToyTileSize(128, 128, 32,  2)],"
    assert text.count(old) == 1
    module.write_text(text.replace(old, "128 : [ToyTileSize(128, 128, 32, -1)],"))
    model = analyze_api(root, "toy", Options())
    _, problems = check_parses(model, run_listing(root / FMHA, "toy").kernels)
    assert not problems, problems[:2]
    kernel_type = model.kernel_type("ToyKernel")
    assert all(set(s.tokens) != {""} for s in kernel_type.segments), \
        [(s.label, s.tokens) for s in kernel_type.segments]
    assert all("F_tile.F_occupancy" not in s.fields for s in kernel_type.segments)
    tile = segment_with_field(kernel_type, "F_tile.F_bn0")
    assert tile.fields == ["F_tile.F_bm0", "F_tile.F_bn0"] and not tile.constant


def test_constant_field_alternatives_come_from_sibling_fields_then_made_up():
    """What the probe tries on a field with one value everywhere: the other values of
    the smallest sibling field that has that value among several, then a made-up
    value of the same type (never a value of another type: 1 is not True)."""
    from sphinxext_fmha.analysis.probe_perturb import constant_alternatives

    sets = {"F_lse": {("str", "f"): 9}, "F_spad": {("str", "t"): 4, ("str", "f"): 5},
            "F_bias": {("str", "no"): 3, ("str", "f"): 1, ("str", "alibi"): 5},
            "F_rm0": {("int", 1): 9}, "F_rm2": {("int", 1): 6, ("int", 2): 3},
            "F_flag": {("bool", True): 9}}
    assert constant_alternatives("F_lse", "f", sets) == ["t", "f0"]
    assert constant_alternatives("F_rm0", 1, sets) == [2]
    assert constant_alternatives("F_flag", True, sets) == [False]
    assert constant_alternatives("F_none", None, {"F_none": {("NoneType", None): 2}}) == []


def test_repeated_labels_take_their_fields_shared_ending():
    """``tile r`` three times: ``tile r0``/``r1``/``r2`` from the fields (F_rm0, F_rn0,
    F_rk0, ...); labels the fields cannot tell apart are numbered."""
    from sphinxext_fmha.analysis.grammar import disambiguate_labels
    from sphinxext_fmha.model import Segment

    def tile_r(n: int) -> Segment:
        fields = ["F_tile.F_r%s%d" % (axis, n) for axis in "kmn"]
        return Segment("tile r", fields=fields, tokens={"_r1x4x1": ""})

    segments = [Segment("literal", tokens={"fmha": ""}, literal=True),
                tile_r(0), tile_r(1), tile_r(2),
                Segment("pad", fields=["F_a"]), Segment("pad", fields=["F_b"])]
    disambiguate_labels(segments)
    assert [s.label for s in segments] == ["literal", "tile r0", "tile r1", "tile r2",
                                           "pad 1", "pad 2"]
    assert segments[1].constant and not segments[0].constant and not segments[4].constant


# --------------------------------------------------------------------------- the tests' own parser


def test_token_parses_finds_every_reading():
    """The parser the tests use instead of the library's grammar: every reading, arch
    suffixes, absent tokens, and no reading for a foreign name."""
    from sphinxext_fmha.model import KernelType, Segment

    kernel_type = KernelType("K", False, 0, 0, arch_suffixes=["", "_gfx9"], segments=[
        Segment("name", tokens={"fmha": ""}, literal=True),
        Segment("b", tokens={"": "", "_x": "", "_x_y": ""}),
        Segment("c", tokens={"": "", "_y": ""}),
    ])
    assert token_parses(kernel_type, "fmha_x_y.cpp") == [["fmha", "_x", "_y"], ["fmha", "_x_y", ""]]
    assert token_parses(kernel_type, "fmha_x_gfx9.cpp") == [["fmha", "_x", ""]]
    assert token_parses(kernel_type, "fmha_z.cpp") == []
    assert token_parses(kernel_type, "fmha_x.hpp") == []


def test_a_field_two_sub_types_share_keeps_each_ones_hard_coded_values(tmp_path):
    """Newer CK bwd: ``F_dvpad`` is 0/1/8 in dq_dk_dv kernels and t/f (``BOOL_MAP``) in
    dot_do_o kernels. Here the convert kernels' ``F_mode`` becomes a number written as
    is, while the main kernels' stays a ``MODE_MAP`` key: the values without a map entry
    are each sub-type's own, not those of every sub-type with a field of that name."""
    from sphinxext_fmha.render.ir import text_of
    from sphinxext_fmha.render.sections.fields import _field_items

    root = synthetic.make_tree(tmp_path, "at_split")
    module = root / FMHA / "codegen" / "ops" / "fmha_toy.py"
    text = module.read_text()
    for old, new in (
            ("    F_mode  : str  # key of MODE_MAP\n", "    F_mode  : int  # 1: group mode\n"),
            ('_{self.F_mode}_b{self.F_bm0}"', "_{'group' if self.F_mode else 'batch'}_b{self.F_bm0}\""),
            ("            F_mode  = MODE_MAP[self.F_mode],",
             "            F_mode  = 'true' if self.F_mode else 'false',"),
            ("cvt = ToyConvertKernel(F_hdim=hdim, F_dtype=dtype, F_mode=mode,",
             "cvt = ToyConvertKernel(F_hdim=hdim, F_dtype=dtype, F_mode=int(mode == 'group'),")):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    module.write_text(text)
    model = analyze_api(root, "toy", Options())
    _, problems = check_parses(model, run_listing(root / FMHA, "toy").kernels)
    assert not problems, problems[:2]
    infos = {info.path: info for info in model.fields}
    said = {}
    for class_name in ("ToyKernel", "ToyConvertKernel"):
        segment = segment_with_field(model.kernel_type(class_name), "F_mode")
        said[class_name] = text_of(_field_items(segment, infos, True, class_name)[
            segment.fields.index("F_mode")])
    assert "hard-coded" not in said["ToyKernel"], said
    assert said["ToyConvertKernel"].endswith("(hard-coded): 0, 1"), said
