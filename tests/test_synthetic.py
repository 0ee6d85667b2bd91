"""The synthetic trees must behave like real generators: every variant's generate.py runs."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import List

import pytest

from sphinxext_fmha.analysis.offer import tree_offer
from sphinxext_fmha.locate import FMHA_SUBDIR, is_ck_root

from helpers import independent
from helpers.launch_twin import Ran
from helpers.synthetic import EXPECTED_COUNTS, VARIANT_APIS, VARIANTS, make_tree, tree_files

CASES = [(variant, api) for variant in VARIANTS for api in VARIANT_APIS[variant]]


def run_generate(root: Path, workdir: Path, *args: str) -> Ran:
    return independent.run_generate(root, *args, cwd=workdir, timeout=120)


def listing(root: Path, workdir: Path, *args: str) -> List[str]:
    out = workdir / f"listing-{len(list(workdir.glob('listing-*')))}.txt"
    proc = run_generate(root, workdir, "-l", str(out), *args)
    assert proc.returncode == 0, proc.stderr
    return out.read_text().splitlines()


def names(lines: List[str]) -> List[str]:
    return [Path(line).name for line in lines]


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    base = tmp_path_factory.mktemp("synthetic")
    return {variant: make_tree(base, variant) for variant in VARIANTS}


@pytest.mark.parametrize("variant, api", CASES, ids=[f"{v}-{a}" for v, a in CASES])
def test_every_variant_lists_kernels(trees, tmp_path, variant, api):
    root = trees[variant]
    lines = listing(root, tmp_path, "-a", api)
    assert lines, "empty listing"
    assert len(lines) == len(set(lines)), "duplicate kernels"
    assert len(lines) == EXPECTED_COUNTS[variant][api]
    assert all(Path(line).parent == tmp_path for line in lines)
    assert all(re.fullmatch(r"[a-z0-9_]+\.cpp", name) for name in names(lines))
    assert names(lines)[-1] == f"fmha_{api}_api.cpp"
    assert all(name.startswith(f"fmha_{api}_") for name in names(lines))


@pytest.mark.parametrize("variant, api", CASES, ids=[f"{v}-{a}" for v, a in CASES])
def test_written_files_match_the_listing(trees, tmp_path, variant, api):
    root = trees[variant]
    lines = listing(root, tmp_path, "-a", api)
    out = tmp_path / "out"
    proc = run_generate(root, tmp_path, "-a", api, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(names(lines))
    api_cpp = (out / f"fmha_{api}_api.cpp").read_text()
    assert api_cpp.count("if (") >= 2 and "else if (" in api_cpp
    kernel = next(p for p in out.iterdir() if p.name != f"fmha_{api}_api.cpp")
    assert "template <>" in kernel.read_text()


def test_trees_stay_clean(trees, tmp_path):
    for variant in VARIANTS:
        listing(trees[variant], tmp_path, "-a", VARIANT_APIS[variant][0])
    for root in trees.values():
        assert not list(root.rglob("__pycache__"))
        assert not list(root.rglob("*.cpp"))


def test_make_tree_layout(tmp_path):
    root = make_tree(tmp_path)
    assert root == tmp_path / "ck_base"
    assert is_ck_root(root)
    fmha = root / FMHA_SUBDIR
    for rel in ("generate.py", "codegen/__init__.py", "codegen/ops/__init__.py",
                "codegen/cmake_config.py", "codegen/cpp_symbol_map.py", "codegen/ops/fmha_toy.py"):
        assert (fmha / rel).is_file(), rel
    assert 'GEN_DIR = ""' in (fmha / "codegen/cmake_config.py").read_text()
    symbols = (fmha / "codegen/cpp_symbol_map.py").read_text()
    for name in ("BOOL_MAP", "MODE_MAP", "DTYPE_MAP", "BIAS_MAP", "def get_mask_map(impl"):
        assert name in symbols
    with pytest.raises(ValueError, match="unknown variant"):
        make_tree(tmp_path, "nope")


def test_no_ck_text_in_the_templates():
    for variant in VARIANTS:
        for rel, text in tree_files(variant).items():
            assert "Advanced Micro Devices" not in text, rel
            assert "Copyright" not in text, rel


def test_discovery_of_every_variant(trees):
    for variant, root in trees.items():
        apis, _options, gaps, _arch_names = tree_offer(root, sys.executable)
        assert gaps == [], variant
        assert [a.name for a in apis] == VARIANT_APIS[variant]


# --------------------------------------------------------------------------- base behaviour


def test_base_names_and_skips(trees, tmp_path):
    kernels = names(listing(trees["base"], tmp_path, "-a", "toy"))[:-1]
    assert "fmha_toy_d64_fp16_batch_b128x64_qr_npad_nbias_nmask_lse.cpp" in kernels
    assert "fmha_toy_d128_fp16_group_b128x128_o2_qr_psd_bias_mask_nlse.cpp" in kernels
    # skip rules: group mode is always padded, forced-occupancy tiles carry no lse, no bf16 bias
    assert not [k for k in kernels if "_group_" in k and "_npad_" in k]
    assert not [k for k in kernels if "_o2_" in k and "_lse" in k]
    assert not [k for k in kernels if "_bf16_" in k and "_bias_" in k]
    assert not [k for k in kernels if "_fp8_" in k]  # fp8 has no tiles
    assert {re.search(r"_(psd|npad)_", k).group(1) for k in kernels} == {"psd", "npad"}


def test_base_filter_receipt_optdim_mask(trees, tmp_path):
    root = trees["base"]
    everything = names(listing(root, tmp_path, "-a", "toy"))[:-1]
    padded = names(listing(root, tmp_path, "-a", "toy", "-f", "*_psd_*"))[:-1]
    assert padded == [k for k in everything if "_psd_" in k] and padded
    receipt2 = names(listing(root, tmp_path, "-a", "toy", "-r", "2"))[:-1]
    assert receipt2 and all("_fp16_batch_" in k and "_nbias_" in k for k in receipt2)
    receipt3 = names(listing(root, tmp_path, "-a", "toy", "-r", "3"))[:-1]
    assert receipt3 == [k for k in everything if "_nlse" in k]
    d64 = names(listing(root, tmp_path, "-a", "toy", "--optdim", "64"))[:-1]
    assert d64 == [k for k in everything if k.startswith("fmha_toy_d64_")]
    generic = names(listing(root, tmp_path, "-a", "toy", "-m", "generic"))[:-1]
    assert len(generic) == 81
    found = {m.group(0) for k in generic for m in [re.search(r"_(mc|mg|nmask)_", k)]}
    assert {"_mc_", "_mg_", "_nmask_"} <= found


def test_filter_split_per_api(trees, tmp_path):
    root = trees["new_api"]
    lines = names(listing(root, tmp_path, "-a", "toy,toy2", "-f", "*_d64_*,*_rinter_*"))
    toy = [n for n in lines if n.startswith("fmha_toy_")]
    toy2 = [n for n in lines if n.startswith("fmha_toy2_")]
    assert toy[-1] == "fmha_toy_api.cpp" and toy2[-1] == "fmha_toy2_api.cpp"
    assert toy[:-1] and all("_d64_" in n for n in toy[:-1])
    assert toy2[:-1] and all("_rinter_" in n for n in toy2[:-1])


# --------------------------------------------------------------------------- mutants


def test_renamed_field(trees, tmp_path):
    source = (trees["renamed_field"] / FMHA_SUBDIR / "codegen/ops/fmha_toy.py").read_text()
    assert "F_seqpad" in source and "F_spad" not in source
    base = (trees["base"] / FMHA_SUBDIR / "codegen/ops/fmha_toy.py").read_text()
    assert source == base.replace("F_spad", "F_seqpad")
    assert names(listing(trees["renamed_field"], tmp_path, "-a", "toy")) == names(
        listing(trees["base"], tmp_path, "-a", "toy")
    )


def test_new_flag(trees, tmp_path):
    kernels = names(listing(trees["new_flag"], tmp_path, "-a", "toy"))[:-1]
    sink = [k for k in kernels if k.endswith("_sink.cpp")]
    nsink = [k for k in kernels if k.endswith("_nsink.cpp")]
    assert sink and nsink and len(sink) + len(nsink) == len(kernels)
    assert not [k for k in sink if "_nmask_" in k]  # sinks only with a mask
    base = names(listing(trees["base"], tmp_path, "-a", "toy"))[:-1]
    assert sorted(k.replace("_nsink.cpp", ".cpp") for k in nsink) == sorted(base)
    source = (trees["new_flag"] / FMHA_SUBDIR / "codegen/ops/fmha_toy.py").read_text()
    assert "F_sink : str" in source and "t.has_sink ==" in source


def test_pad_numbers(trees, tmp_path):
    kernels = names(listing(trees["pad_numbers"], tmp_path, "-a", "toy"))[:-1]
    pads = {re.search(r"_qr_([a-z0-9]+)_", k).group(1) for k in kernels}
    assert pads == {"npad", "pd8", "psd8"}
    source = (trees["pad_numbers"] / FMHA_SUBDIR / "codegen/ops/fmha_toy.py").read_text()
    assert "F_dpad : int" in source


def test_absent_when_off(trees, tmp_path):
    kernels = names(listing(trees["absent_when_off"], tmp_path, "-a", "toy"))
    assert not [k for k in kernels if "nbias" in k]
    assert [k for k in kernels if "_bias_" in k]
    base = names(listing(trees["base"], tmp_path, "-a", "toy"))
    assert kernels == [k.replace("_nbias", "") for k in base]
    # '*_nbias_*' matches nothing here, unlike in the base tree
    nbias = names(listing(trees["absent_when_off"], tmp_path, "-a", "toy", "-f", "*_nbias_*"))
    assert nbias == ["fmha_toy_api.cpp"]


def test_at_split(trees, tmp_path):
    root = trees["at_split"]
    lines = names(listing(root, tmp_path, "-a", "toy"))
    main = [n for n in lines if not n.startswith("fmha_toy_convert_") and n != "fmha_toy_api.cpp"]
    convert = [n for n in lines if n.startswith("fmha_toy_convert_")]
    assert len(main) == 54 and len(convert) == 12
    # one pattern: applies to the main kernels, the convert part becomes '*'
    only_d64 = names(listing(root, tmp_path, "-a", "toy", "-f", "*_d64_*"))
    main_d64 = [n for n in only_d64 if not n.startswith("fmha_toy_convert_")][:-1]
    assert main_d64 == [m for m in main if "_d64_" in m]
    assert {n for n in only_d64 if n.startswith("fmha_toy_convert_")} == {c for c in convert if "_d64_" in c}
    # a convert pattern drops the whole trait, main kernel included
    group = names(listing(root, tmp_path, "-a", "toy", "-f", "*@*_group_*"))
    assert group[:-1] and all("_group_" in n for n in group[:-1])
    main_group = [n for n in group if not n.startswith("fmha_toy_convert_")][:-1]
    assert len(main_group) == len([m for m in main if "_group_" in m])
    # an explicitly empty part matches nothing
    assert names(listing(root, tmp_path, "-a", "toy", "-f", "@*")) == ["fmha_toy_api.cpp"]
    # the '@' parts never reach generate.py's ',' split
    both = names(listing(root, tmp_path, "-a", "toy", "-f", "*_bf16_*@*_d128_*"))
    assert both[:-1] and all("_bf16_" in n and "_d128_" in n for n in both[:-1])
