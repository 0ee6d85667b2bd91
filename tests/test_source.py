"""Tests of sphinxext_fmha.analysis.source (static reading of a codegen ops module).

The corpus tests assert facts verified by reading the real CK trees; the synthetic
tests check the generic behaviour on small modules written here.
"""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from sphinxext_fmha.analysis.source import SourceFacts, analyze_source
from sphinxext_fmha.corpus import load_corpus
from sphinxext_fmha.locate import FMHA_SUBDIR
from sphinxext_fmha.model import to_dict
from sphinxext_fmha.render.sections.rules import read_condition, receipt_reading, skip_words

CORPUS = {t.name: t for t in load_corpus()}
T274 = "flash-attn-2.7.4.post1"
T281 = "flash-attn-2.8.1"
T283 = "flash-attn-2.8.3"
AITER = "amd-aiter-0.1.7.post2.dev18"

CASES: List[Tuple[str, str]] = [(name, api) for name, tree in CORPUS.items() for api in tree.apis]


def _fmha(corpus_root, name: str) -> Path:
    return corpus_root(name) / FMHA_SUBDIR


_FACTS: Dict[Tuple[str, str], SourceFacts] = {}


def facts_of(corpus_root, name: str, api: str) -> SourceFacts:
    key = (name, api)
    if key not in _FACTS:
        _FACTS[key] = analyze_source(_fmha(corpus_root, name), f"codegen/ops/fmha_{api}.py")
    return _FACTS[key]


def skip_by_source(facts: SourceFacts, needle: str):
    return [s for s in facts.skip_conditions if needle in s.source]


# ------------------------------------------------------------------------- every module


@pytest.mark.parametrize("name,api", CASES, ids=[f"{n}:{a}" for n, a in CASES])
def test_every_module_is_analysed(corpus_root, name, api):
    facts = facts_of(corpus_root, name, api)
    data = to_dict(facts)
    json.dumps(data)  # JSON-serialisable
    assert not [g for g in facts.gaps if "analysis failed" in g.why], facts.gaps
    assert facts.module == f"codegen/ops/fmha_{api}.py"
    assert facts.tiles and all(t.fields for t in facts.tiles)
    assert any(f.comment for t in facts.tiles for f in t.fields), "tile field comments"
    assert facts.factories
    assert facts.dispatch.mechanism and facts.dispatch.order
    assert facts.enumeration.functions
    assert any(r.value == "2" for r in facts.receipts)
    for s in facts.skip_conditions:
        assert s.where.startswith("codegen/") and (skip_words(s) or s.kind != "assert")
        assert not skip_words(s) or skip_words(s).startswith("requires "), skip_words(s)
    for c in facts.classes:
        assert c.defined_at.startswith("codegen/") and ":" in c.defined_at
    # the symbol map module is found through the imports
    assert "BOOL_MAP" in facts.symbol_maps and "get_mask_map" in facts.symbol_maps
    expect_arch = name == AITER and api != "batch_prefill"
    assert facts.has_arch_factories is expect_arch


# ------------------------------------------------------------------------- factories


def test_aiter_fwd_factories(corpus_root):
    f = facts_of(corpus_root, AITER, "fwd")
    by = {x.class_name: x for x in f.factories}
    assert {by[n].arch for n in by} >= {"gfx9", "gfx950", "gfx12"}
    gfx950 = by["KernelComponentFactoryGfx950"]
    assert gfx950.arch == "gfx950"
    assert gfx950.bases == ["KernelComponentFactoryGfx9"]
    assert gfx950.selected_by == 'target.startswith("gfx950")'
    assert by["KernelComponentFactoryGfx9"].selected_by == 'target.startswith("gfx9")'
    assert "CK_TILE_FMHA_FWD_CUSTOM_FACTORY" in by["CustomFactory"].selected_by
    assert by["KernelComponentFactoryGfx12"].arch == "gfx12"
    assert f.has_arch_factories


def test_aiter_bwd_factory_bases(corpus_root):
    by = {x.class_name: x for x in facts_of(corpus_root, AITER, "bwd").factories}
    assert by["KernelComponentFactoryGfx950"].bases == ["KernelComponentFactoryGfx9"]


def test_274_has_no_per_arch_factories(corpus_root):
    f = facts_of(corpus_root, T274, "fwd")
    assert not f.has_arch_factories
    assert [x.class_name for x in f.factories] == ["get_fmha_fwd_tile_dict_from_dtype"]
    assert f.factories[0].arch == ""


def test_283_fwd_factories_without_arch(corpus_root):
    f = facts_of(corpus_root, T283, "fwd")
    by = {x.class_name: x for x in f.factories}
    assert set(by) == {"KernelComponentFactory", "CustomFactory"}
    assert not f.has_arch_factories
    assert by["CustomFactory"].bases == ["KernelComponentFactory"]
    assert by["KernelComponentFactory"].selected_by.startswith("not (")


def test_283_bwd_factory_function(corpus_root):
    fac = facts_of(corpus_root, T283, "bwd").factories[0]
    assert fac.class_name == "get_fmha_bwd_dq_dk_dv_tile_ppl_dict_from_dtype"


# ------------------------------------------------------------------------- classes & tiles


def test_tile_class_fields_and_comments(corpus_root):
    f = facts_of(corpus_root, T274, "fwd")
    tile = next(t for t in f.tiles if t.class_name == "FmhaFwdTileSize")
    comments = {x.name: x.comment for x in tile.fields}
    assert comments["F_bm0"] == "tile size along q seqlen (block size)"
    assert comments["F_occupancy"].startswith("occupancy, -1 will let pipeline decide")
    assert "def name" in tile.name_source
    assert tile.defined_at == "codegen/ops/fmha_fwd.py:288"


def test_tile_imported_from_other_ops_module(corpus_root):
    f = facts_of(corpus_root, AITER, "fwd_splitkv")
    tiles = {t.class_name: t for t in f.tiles}
    assert tiles["FmhaFwdTileSize"].imported_from == "codegen/ops/fmha_fwd.py"
    assert tiles["FmhaFwdSplitKVCombineTileSize"].imported_from == ""
    arch = next(c for c in f.classes if c.name == "ArchTrait")
    assert arch.imported_from == "codegen/arch.py" and arch.is_dataclass
    assert [x.name for x in arch.fields][:2] == ["name", "preprocessor_check"]


def test_kernel_classes_non_frozen(corpus_root):
    f = facts_of(corpus_root, T274, "bwd")
    info = next(c for c in f.classes if c.name == "FmhaBwdDQDKDVKernel")
    assert info.is_dataclass


# ------------------------------------------------------------------------- maps


def test_symbol_maps_and_map_uses(corpus_root):
    f = facts_of(corpus_root, T283, "fwd")
    mask = f.symbol_maps["get_mask_map"]
    assert mask.kind == "function"
    assert set(mask.branches) == {"generic", "simplified"}
    assert mask.branches["simplified"]["s_mask"].endswith("::SimplifiedGenericAttentionMask<true>")
    assert f.symbol_maps["BOOL_MAP"].entries == {"t": "true", "f": "false"}
    assert f.symbol_maps["BOOL_MAP"].defined_at.startswith("codegen/cpp_symbol_map.py:")
    uses = [(u.owner, u.path, u.map) for u in f.map_uses]
    assert ("FmhaFwdKernel", "F_pipeline.F_spad", "BOOL_MAP") in uses
    assert ("FmhaFwdKernel", "F_pipeline.F_bias", "BIAS_MAP") in uses
    mask_use = next(u for u in f.map_uses if u.owner == "FmhaFwdKernel" and u.map == "get_mask_map")
    assert mask_use.path == "F_pipeline.F_mask"
    aiter = facts_of(corpus_root, AITER, "fwd")
    assert aiter.symbol_maps["BOOL_MAP"].entries["True"] == "true"  # non-literal-str keys


# ------------------------------------------------------------------------- enumeration & skips


def _words(skip) -> str:
    """A skip condition's source in words (the analysis keeps the source only)."""
    return read_condition(ast.parse(skip.source, mode="eval").body)


def test_group_mode_padding_rule(corpus_root):
    for name in (T274, T283, AITER):
        f = facts_of(corpus_root, name, "fwd")
        rule = [s for s in f.skip_conditions if s.source.startswith("mode == \"group\"")]
        assert len(rule) == 1, name
        assert _words(rule[0]) == ("mode is group and "
                                   "(pipeline.spad is not t or pipeline.skpad is not t)")
        assert rule[0].kind == "continue"
    bwd = facts_of(corpus_root, T283, "bwd")
    rule = skip_by_source(bwd, '(mode == "group") and (spad == "f" or skpad == "f")')
    assert rule and _words(rule[0]) == "mode is group and (spad is f or skpad is f)"
    assert _words(skip_by_source(bwd, '"wg32" in dropout')[0]) == "dropout contains wg32"


def test_skip_readings_aiter(corpus_root):
    f = facts_of(corpus_root, AITER, "fwd")
    assert skip_by_source(f, "pipeline.F_logits")
    trload = [s for s in f.skip_conditions if "not in [(64, 64), (128, 128)]" in s.source]
    assert trload and "starts with gfx9" in _words(trload[0])
    assert "is neither (64, 64) nor (128, 128)" in _words(trload[0])
    kinds = {s.kind for s in f.skip_conditions}
    assert {"continue", "option", "unsupported", "assert"} <= kinds
    # the filter and the receipt blocks are not skip conditions
    assert not [s for s in f.skip_conditions if "fnmatch" in s.source or "receipt" in s.source]
    bwd = facts_of(corpus_root, AITER, "bwd")
    trl = [s for s in bwd.skip_conditions if s.source.startswith('tr_load == "t"')]
    # two names compared read as a comparison, not as a value named dvpad
    assert trl and _words(trl[0]) == "tr_load is t and (dpad differs from dvpad or dpad is 1)"
    other = [s for s in bwd.skip_conditions if s.source.startswith('not (tr_load == "t")')]
    assert other and _words(other[0]) == ("tr_load is not t and dpad differs from dvpad "
                                          "and dpad is 8")


def test_enumeration_functions(corpus_root):
    f = facts_of(corpus_root, T283, "bwd")
    assert list(f.enumeration.functions) == ["get_bwd_blobs"]


# ------------------------------------------------------------------------- receipts


def test_receipts_fwd_28x(corpus_root):
    for name in (T281, T283):
        f = facts_of(corpus_root, name, "fwd")
        values = {r.value for r in f.receipts}
        assert {"2", "3", "4", "100", "200", "600"} <= values, name
        r2 = next(r for r in f.receipts if r.value == "2")
        # one branch for 2 and 3 (its comment says "2 - ..."): named by generate.py's help
        assert r2.label == "Only generate instance for Flash attention integration"
        assert "pipeline.F_bias in ['no', 'alibi']" in r2.conditions
        r100 = next(r for r in f.receipts if r.value == "100")
        assert r100.label == "Aiter(mha_fwd) integration"  # the comment above its branch
        r4 = next(r for r in f.receipts if r.value == "4")
        assert "pipeline.bias is no or bias" in receipt_reading(r4)
        # 2.8.3 added the batch-mode-only restriction for PyTorch
        assert ("mode is batch" in receipt_reading(r4)) is (name == T283)
    f274 = facts_of(corpus_root, T274, "fwd")
    assert {"2"} <= {r.value for r in f274.receipts}
    assert "4" not in {r.value for r in f274.receipts}
    r1 = next(r for r in f274.receipts if r.value == "1")
    assert "get_pipelines" in receipt_reading(r1) and "pipelines.append" in receipt_reading(r1)


def test_receipts_aiter_default_branch(corpus_root):
    f = facts_of(corpus_root, AITER, "fwd")
    default = [r for r in f.receipts if r.value == "other"]
    assert len(default) == 1
    assert default[0].label == "Don't build fp32 by default"
    assert default[0].conditions == ['not (dtype == "fp32")']
    assert receipt_reading(default[0]).startswith(
        "any receipt other than 800, 801: drops kernels where dtype is fp32")
    r100 = next(r for r in f.receipts if r.value == "100")
    assert 'hdim == 128 (when dtype == "fp8bf16")' in r100.conditions
    assert "hdim is 128 when dtype is fp8bf16" in receipt_reading(r100)
    assert {r.value for r in f.receipts} >= {"2", "3", "4", "100", "200", "600", "888", "800", "801", "0"}


def test_receipts_bwd_281_per_kernel_function(corpus_root):
    f = facts_of(corpus_root, T281, "bwd")
    r300 = [r for r in f.receipts if r.value == "300"]
    assert len(r300) == 3  # dq_dk_dv, dot_do_o and convert_dq each filter on it
    assert {receipt_reading(r).rsplit("(in ", 1)[1] for r in r300} == {
        "get_bwd_dq_dk_dv_blobs)", "get_bwd_dot_do_o_blobs)", "get_bwd_convert_dq_blobs)"}


def test_suspicious_receipt_literal_aiter_splitkv(corpus_root):
    f = facts_of(corpus_root, AITER, "fwd_splitkv")
    r4 = next(r for r in f.receipts if r.value == "4")
    assert 'dtype is "fp16, bf16"' in receipt_reading(r4)
    assert {"800", "801"} <= {r.value for r in f.receipts}


# ------------------------------------------------------------------------- dispatch


def test_duplicate_check_in_padding_order(corpus_root):
    bwd = facts_of(corpus_root, AITER, "bwd")
    assert "check_duplicates_and_paddings defined at codegen/utils.py" in bwd.dispatch.padding_order


def test_dispatch(corpus_root):
    f = facts_of(corpus_root, AITER, "fwd")
    assert f.dispatch.mechanism == "property FmhaFwdApiPool.api"
    assert f.dispatch.order == ["arch", "dtype", "(hdim, hdim_v)", "trait"]
    assert any("codegen/arch.py" in s and "reverse=True" in s for s in f.dispatch.sorts)
    assert "order of get_pipelines() matters" in f.dispatch.padding_order
    bwd = facts_of(corpus_root, AITER, "bwd")
    assert bwd.dispatch.order == ["arch", "dtype", "hdim", "trait"]  # trait loop is in _api_inners
    assert any("max_seq_q_sort_key" in s and "sort 0 to the end" in s for s in bwd.dispatch.sorts)
    f283 = facts_of(corpus_root, T283, "bwd")
    assert f283.dispatch.order == ["dtype", "hdim", "trait", "spad1"]
    disp = [s for s in f283.skip_conditions if s.kind == "dispatch"]
    assert disp and _words(disp[0]).startswith("spad1 is f")
    assert facts_of(corpus_root, T274, "fwd").dispatch.order == ["dtype", "hdim", "trait"]


def test_analysis_never_writes_into_the_tree(corpus_root):
    fmha = _fmha(corpus_root, T283)

    def snapshot() -> Dict[str, Tuple[int, int]]:
        return {p.relative_to(fmha).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
                for p in sorted(fmha.rglob("*"))}

    before = snapshot()
    for api in CORPUS[T283].apis:
        analyze_source(fmha, f"codegen/ops/fmha_{api}.py")
    assert snapshot() == before


# ------------------------------------------------------------------------- synthetic modules

_SYMBOLS = '''
DT_MAP = {"half": "Half", "bfloat": "BFloat"}
FLAG_MAP = {"y": "true", "n": "false"}
_A = {"x": "X"}
_B = {"x": "Y", "z": "Z"}


def pick_map(kind):
    if kind == "alpha":
        return _A
    elif kind == "beta":
        return _B
    assert False
'''

_SHAPES = '''
from dataclasses import dataclass


@dataclass
class BlockTile:
    m_rows: int  # rows handled per block
    n_cols: int  # columns handled per block
    waves: int  # waves per block, -1 = auto

    @property
    def name(self) -> str:
        return f"m{self.m_rows}n{self.n_cols}" + ("" if self.waves == -1 else f"_w{self.waves}")
'''

_DEMO = '''
import fnmatch
import itertools
from dataclasses import dataclass

from codegen.symbols import DT_MAP, FLAG_MAP, pick_map
from codegen.ops.fmha_shapes import BlockTile

TEMPLATE = """{F_if}(t.flag == {F_flag} && {F_v3}) {{ run<{F_dtype}>(); }}"""


@dataclass
class DemoKernel:
    k_dtype: str  # element type
    k_hdim: int
    k_tile: BlockTile
    k_seqpad: str  # pad the sequence

    @property
    def name(self) -> str:
        seqpad = "_ps" if self.k_seqpad == "y" else ""
        return f"demo_{self.k_dtype}_d{self.k_hdim}_" + self.k_tile.name + seqpad

    @property
    def filename(self) -> str:
        return self.name + ".cpp"

    @property
    def template(self) -> str:
        return FLAG_MAP[self.k_seqpad] + DT_MAP[self.k_dtype] + pick_map("alpha")[self.k_dtype]


class DemoRule:
    """Padding is mandatory for long sequences."""

    def check(self, kernel):
        return kernel.k_seqpad == "y"


class DemoApiPool:
    def __init__(self):
        self.pool = {}

    def register_traits(self, k):
        self.pool.setdefault(k.k_dtype, {}).setdefault(k.k_hdim, []).append(k)

    @property
    def api(self) -> str:
        out = ""
        for i, (dtype, by_dtype) in enumerate(self.pool.items()):
            for j, (hdim, ks) in enumerate(by_dtype.items()):
                for k in ks:
                    out += TEMPLATE.format(F_if="if", F_flag=FLAG_MAP[k.k_seqpad], F_v3="false",
                                           F_dtype=DT_MAP[dtype])
        return out


def get_demo_tiles(dtype):
    if dtype in ["half", "bfloat"]:
        return {64: [BlockTile(64, 32, -1), BlockTile(128, 32, 2)], 128: [BlockTile(128, 64, -1)]}
    elif dtype == "fp8":
        return []
    return None


def get_demo_blobs(kernel_filter, receipt):
    pool = DemoApiPool()
    gen = []
    for dtype in DT_MAP.keys():
        tiles = get_demo_tiles(dtype)
        if tiles is None:
            continue
        for (hdim, tl), seqpad in itertools.product(tiles.items(), FLAG_MAP.keys()):
            for tile in tl:
                if hdim == 128 and not (seqpad == "y" or tile.waves in [-1, 4]):
                    continue
                k = DemoKernel(dtype, hdim, tile, seqpad)
                if not fnmatch.fnmatch(k.name, kernel_filter):
                    continue
                if 100 <= receipt < 200:
                    cond = dtype == "half"
                    cond &= seqpad == "n"
                    if not cond:
                        continue
                elif receipt == 700:
                    continue
                pool.register_traits(k)
                gen.append(k)
    return pool, gen


def write_blobs(out, kernel_filter, receipt):
    parts = kernel_filter.split("@")
    parts.extend(["*"] * (2 - len(parts)))
    get_demo_blobs(parts[1], receipt)
'''

_GENERATE = '''
import argparse

parser = argparse.ArgumentParser()
parser.add_argument("-r", "--receipt", default=0,
                    help="receipt. 0: all kernels\\n" + "  100-199: demo integration\\n"
                    + "      (half, no seqpad)\\n" + "  700: none of them")
'''

_WEIRD = '''
from dataclasses import dataclass


@dataclass
class WeirdTile:
    a: int  # first
    b: int  # second

    @property
    def name(self) -> str:
        return f"a{self.a}b{self.b}"


@dataclass
class WeirdKernel:
    tile: WeirdTile

    @property
    def filename(self) -> str:
        return self.tile.name + ".cpp"


def get_weird_tiles(dtype):
    return {h: WeirdTile(h, h) for h in (32, 64)} if dtype == "half" else None


def get_weird_blobs(receipt):
    for dtype in ["half", "single"]:
        d = get_weird_tiles(dtype)
        if d is None:
            continue
        while False:
            continue
'''


def _write(root: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


@pytest.fixture
def demo_dir(tmp_path) -> Path:
    return _write(tmp_path / "fmha", {
        "generate.py": _GENERATE,
        "codegen/__init__.py": "",
        "codegen/ops/__init__.py": "",
        "codegen/symbols.py": _SYMBOLS,
        "codegen/ops/fmha_shapes.py": _SHAPES,
        "codegen/ops/fmha_demo.py": _DEMO,
        "codegen/ops/fmha_weird.py": _WEIRD,
        "codegen/ops/fmha_broken.py": "def broken(:\n    pass\n",
    })


def test_synthetic_classes_tiles_and_maps(demo_dir):
    f = analyze_source(demo_dir, "codegen/ops/fmha_demo.py")
    json.dumps(to_dict(f))
    kernel = next(c for c in f.classes if c.name == "DemoKernel")
    assert kernel.is_dataclass
    assert [(x.name, x.comment) for x in kernel.fields][0] == ("k_dtype", "element type")
    assert kernel.defined_at.startswith("codegen/ops/fmha_demo.py:")
    tile = f.tiles[0]
    assert tile.class_name == "BlockTile" and tile.imported_from == "codegen/ops/fmha_shapes.py"
    assert [(x.name, x.comment) for x in tile.fields] == [
        ("m_rows", "rows handled per block"), ("n_cols", "columns handled per block"),
        ("waves", "waves per block, -1 = auto")]
    assert f.symbol_maps["pick_map"].branches == {"alpha": {"x": "X"}, "beta": {"x": "Y", "z": "Z"}}
    uses = {(u.owner, u.path, u.map) for u in f.map_uses}
    assert ("DemoKernel", "k_seqpad", "FLAG_MAP") in uses
    assert ("DemoKernel", "k_dtype", "pick_map") in uses
    assert ("DemoApiPool", "k.k_seqpad", "FLAG_MAP") in uses


def test_synthetic_factory_function(demo_dir):
    f = analyze_source(demo_dir, "codegen/ops/fmha_demo.py")
    assert not f.has_arch_factories
    fac = f.factories[0]
    assert fac.class_name == "get_demo_tiles" and fac.arch == ""


def test_synthetic_skips_receipts_filter_dispatch(demo_dir):
    f = analyze_source(demo_dir, "codegen/ops/fmha_demo.py")
    readings = [_words(s) for s in f.skip_conditions if s.kind != "rule"]
    assert "tiles is None" in readings
    assert "hdim is 128 and seqpad is not y and tile.waves is neither -1 nor 4" in readings
    rule = [s for s in f.skip_conditions if s.kind == "rule"]
    assert 'kernel.k_seqpad == "y"' in rule[0].source
    rec = {r.value: r for r in f.receipts}
    # a label's continuation line is part of it
    assert rec["100-199"].label == "demo integration (half, no seqpad)"
    assert rec["700"].label == "none of them"
    # a receipt that skips everything drops the kernels of its function only
    assert receipt_reading(rec["700"]) == (
        "receipt 700: drops every kernel of the function (in get_demo_blobs)")
    assert rec["100-199"].conditions == ['dtype == "half"', 'seqpad == "n"']
    assert rec["0"].label == "all kernels"
    assert f.dispatch.mechanism == "property DemoApiPool.api"
    assert f.dispatch.order == ["dtype", "hdim", "k"]


def test_synthetic_unknown_constructs_become_gaps(demo_dir):
    f = analyze_source(demo_dir, "codegen/ops/fmha_weird.py")
    json.dumps(to_dict(f))
    assert any(g.what == "dispatch" for g in f.gaps)
    broken = analyze_source(demo_dir, "codegen/ops/fmha_broken.py")
    assert broken.classes == [] and any("cannot be parsed" in g.why for g in broken.gaps)
    missing = analyze_source(demo_dir, "codegen/ops/fmha_missing.py")
    assert any("file not found" in g.why for g in missing.gaps)


def test_synthetic_renamed_field_variant(synthetic_tree):
    root = synthetic_tree("renamed_field") / FMHA_SUBDIR
    f = analyze_source(root, "codegen/ops/fmha_toy.py")
    assert any("seqpad" in s.source for s in f.skip_conditions)
    assert not any("spad" in s.source.replace("seqpad", "") for s in f.skip_conditions)


def _rule_defs(text: str) -> Dict[str, int]:
    """{Class.get_rules.function: line} of the functions nested in each ``get_rules``."""
    return {f"{c.name}.{m.name}.{d.name}": d.lineno for c in ast.parse(text).body
            if isinstance(c, ast.ClassDef) for m in c.body
            if isinstance(m, ast.FunctionDef) and m.name == "get_rules"
            for d in m.body if isinstance(d, ast.FunctionDef)}


def test_rule_functions_one_row_each(synthetic_tree, tmp_path, capsys):
    """Newest CK's rule lists (``get_rules`` returning nested functions, extending a base
    class's): one skip row per rule function, with its line, what it returns when, and
    the base class; and each rule really drops kernels (listings with it undone)."""
    import re

    from sphinxext_fmha.cli import main

    from helpers.independent import listed_lines

    root = synthetic_tree("rule_functions")
    module = root / FMHA_SUBDIR / "codegen/ops/fmha_toy.py"
    text = module.read_text(encoding="utf-8")
    defs = _rule_defs(text)
    assert len(defs) == 3
    out = tmp_path / "toy.md"
    assert main(["guide", "toy", "--ck-root", str(root), "--cache-dir", str(tmp_path / "c"),
                 "-o", str(out)]) == 0, capsys.readouterr().err
    rows = re.findall(r"^\| rule \| `([\w.]+)`: (.*) \| `codegen/ops/fmha_toy\.py:(\d+)` \|$",
                      out.read_text(encoding="utf-8"), re.M)
    assert {name: int(line) for name, _, line in rows} == defs
    said = {name: words for name, words, _ in rows}
    assert said["ToyRules.get_rules.padded_groups"].startswith(
        "if kernel.mode is group and kernel.pipeline.spad is not t, drops the kernel; "
        "otherwise keeps the kernel (its comment: a group has one seqlen per batch")
    assert "if kernel.tile.occupancy differs from -1, keeps the kernel only if " \
        "kernel.pipeline.lse is f; otherwise" in said["InferenceTileRules.get_rules.pinned_without_lse"]
    assert said["WideTileRules.get_rules.wide_groups_fp16_only"] == (
        "if kernel.tile.bn0 \\< 128, keeps the kernel; otherwise keeps the kernel only if "
        "kernel.dtype is fp16 or kernel.mode is batch. `WideTileRules.get_rules` lists it "
        "after the rules of `InferenceTileRules`")
    assert said["InferenceTileRules.get_rules.pinned_without_lse"].endswith(
        "lists it after the rules of `ToyRules`")

    def listed_without(old: str, new: str) -> List[str]:
        assert text.count(old) == 1, old
        module.write_text(text.replace(old, new), encoding="utf-8")
        try:
            return [Path(line).name for line in listed_lines(root, "-a", "toy")]
        finally:
            module.write_text(text, encoding="utf-8")

    kept = [Path(line).name for line in listed_lines(root, "-a", "toy")]
    wide_bf16_groups = re.compile(r"_d\d+_bf16_group_b\d+x128_")
    unpadded_groups = re.compile(r"_group_.*_qr_npad_")
    assert not any(wide_bf16_groups.search(n) or unpadded_groups.search(n) for n in kept)
    more = listed_without("return kernel.F_dtype == 'fp16' or kernel.F_mode == 'batch'",
                          "return True")
    assert sorted(set(more) - set(kept)) == sorted(n for n in more if wide_bf16_groups.search(n))
    assert len(more) > len(kept) and set(kept) <= set(more)
    more = listed_without("                    return False\n", "                    pass\n")
    assert set(more) - set(kept) == {n for n in more if unpadded_groups.search(n)} != set()


@pytest.mark.parametrize("expr,reading", [
    ('mode == "group" and (spad == "f" or skpad == "f")', "mode is group and (spad is f or skpad is f)"),
    ("x in [a, b]", "x is a or b"),
    ("hdim not in [64, 128]", "hdim is neither 64 nor 128"),
    ("hdim not in [64, 128, 256]", "hdim is none of 64, 128 or 256"),
    ('not (a == 1 and b == 2)', "a is not 1 or b is not 2"),
    ('target.startswith("gfx9")', "target starts with gfx9"),
    ('not target.startswith("gfx9")', "target does not start with gfx9"),
    ("self.F_pipeline.F_spad != 't'", "pipeline.spad is not t"),
    ('"no" not in mask', "mask does not contain no"),
    ("d is None", "d is None"),
    ('dtype in ["fp16, bf16"]', 'dtype is "fp16, bf16"'),
])
def test_read_condition(expr, reading):
    assert read_condition(ast.parse(expr, mode="eval").body) == reading


def test_receipts_not_referenced_take_the_branch_for_any_other(synthetic_tree, tmp_path, capsys):
    """A receipt chain ending in ``else`` (aiter's "don't build fp32 by default"): a
    receipt the module never names (``0``, from generate.py's help) takes that branch, so
    the guide points to the ``other`` row; ``-r 0``'s listing, read here, has none of the
    kernels that branch drops, ``-r 3``'s has them."""
    import re

    from sphinxext_fmha.cli import main

    from helpers.independent import listed_lines

    root = synthetic_tree("base")
    module = root / FMHA_SUBDIR / "codegen/ops/fmha_toy.py"
    text = module.read_text(encoding="utf-8")
    chain_end = ("                elif receipt == 3:\n"
                 "                    if pipeline.F_lse == 't':\n"
                 "                        continue\n")
    assert chain_end in text
    module.write_text(text.replace(chain_end, chain_end + (
        "                else:\n"
        "                    # group mode only where a receipt asks for it\n"
        "                    if mode == 'group':\n"
        "                        continue\n")), encoding="utf-8")
    out = tmp_path / "toy.md"
    assert main(["guide", "toy", "--ck-root", str(root), "--cache-dir", str(tmp_path / "c"),
                 "-o", str(out)]) == 0, capsys.readouterr().err
    guide = out.read_text(encoding="utf-8")
    assert re.search(r"^\| `other` \|", guide, re.M)
    assert re.search(r"^1 receipt not referenced in this module, so the row `other` above "
                     r"applies to them \(`generate\.py:\d+`\): `0` \(everything\)\.$", guide, re.M)
    assert not [n for n in listed_lines(root, "-a", "toy", "-r", "0") if "_group_" in n]
    assert [n for n in listed_lines(root, "-a", "toy", "-r", "3") if "_group_" in n]
