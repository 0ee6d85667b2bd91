"""The command line, on synthetic trees (fast) and one real tree."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sphinxext_fmha.cli import main

from helpers.independent import independent_listing, written_bytes


def listing(root: Path, api: str, tmp: Path, *args: str):
    return independent_listing(root, api, tmp, *args)


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_apis_json_lists_every_ops_module(synthetic_tree, tmp_path, capsys):
    root = synthetic_tree("new_api")
    code, out, _ = run(capsys, "apis", "--ck-root", str(root), "--cache-dir", str(tmp_path),
                       "--format", "json")
    data = json.loads(out)
    assert code == 0
    assert [a["name"] for a in data["apis"]] == ["toy", "toy2"]
    assert "filter" in {o["dest"] for o in data["options"]}


def test_analyze_json_has_the_model_keys(synthetic_tree, tmp_path, capsys):
    root = synthetic_tree("base")
    code, out, _ = run(capsys, "analyze", "--ck-root", str(root), "--cache-dir", str(tmp_path),
                       "--api", "toy", "--format", "json")
    model = json.loads(out)
    assert code == 0
    for key in ("api", "source", "options", "kernel_types", "fields", "tiles", "factories",
                "filter", "skip_conditions", "receipts", "dispatch", "checks", "gaps", "baseline"):
        assert key in model
    assert model["baseline"]["parsed"] == model["baseline"]["count"] == len(listing(root, "toy", tmp_path))
    assert model["kernel_types"][0]["class"]


def test_check_counts_what_generate_py_selects(synthetic_tree, tmp_path, capsys):
    root = synthetic_tree("base")
    code, out, _ = run(capsys, "check", "--ck-root", str(root), "--cache-dir", str(tmp_path),
                       "--api", "toy", "--filter", "*_nlse*", "--format", "json")
    check = json.loads(out)
    assert code == 0 and check["verified"]
    assert check["count"] == len(listing(root, "toy", tmp_path, "-f", "*_nlse*")) > 0
    assert check["command"] == "python generate.py -a toy -f '*_nlse*' -l kernels.txt"


def test_check_names_the_sub_type_a_filter_misses_on_stderr(synthetic_tree, tmp_path, capsys):
    root = synthetic_tree("absent_when_off")  # no '_nbias': bias 'no' leaves no trace
    assert not listing(root, "toy", tmp_path, "-f", "*_nbias*")
    code, out, err = run(capsys, "check", "--ck-root", str(root), "--cache-dir", str(tmp_path),
                         "--api", "toy", "--filter", "*_nbias*")
    assert code == 1 and out.startswith("$ python generate.py")
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert lines[0].startswith("sphinxext-fmha: warning: toy -f '*_nbias*': none of the ")
    assert "'_nbias' occurs in no ToyKernel name" in lines[0]
    assert lines[1] == "sphinxext-fmha: error: toy -f '*_nbias*' selects no kernel"


def test_generate_driver_writes_the_union(synthetic_tree, tmp_path, capsys):
    root = synthetic_tree("base")
    union = listing(root, "toy", tmp_path, "-f", "*_d64_*") | listing(root, "toy", tmp_path, "-f", "*_lse")
    out = tmp_path / "driven.txt"
    code, _, err = run(capsys, "generate", "--ck-root", str(root), "--cache-dir", str(tmp_path),
                       "--api", "toy", "-f", "*_d64_*", "-f", "*_lse", "-l", str(out))
    assert code == 0, err
    driven = {Path(line).name for line in out.read_text().splitlines() if line.strip()}
    assert {n for n in driven if not n.endswith("_api.cpp")} == union


def test_recommend_json_is_verified_on_a_letter_encoded_tree(synthetic_tree, tmp_path, capsys):
    root = synthetic_tree("base")
    code, out, _ = run(capsys, "recommend", "--ck-root", str(root), "--cache-dir", str(tmp_path),
                       "--api", "toy", "--format", "json")
    rec = json.loads(out)
    selected = set()
    for r in rec["runs"]:
        selected |= listing(root, "toy", tmp_path, "-f", r["filter"])
    assert len(selected) == rec["union_count"] == rec["keep_count"]
    assert code == 0 and rec["verified"]
    # one run is its own union: its own write-mode run links, no driver command beside it
    assert len(rec["runs"]) == 1 and rec["write_verified"] and not rec["driver_command"]


def test_recommend_for_a_workload_is_the_json_contract(synthetic_tree, tmp_path, capsys):
    """``recommend --need`` (issue 43, item 7): the existing fields plus ``needs``,
    ``runs[].gloss`` and ``build``, each checked here against generate.py's own runs
    (the names read with a regex written here, the files written counted and weighed)."""
    root = synthetic_tree("base")
    code, out, err = run(capsys, "recommend", "--ck-root", str(root), "--cache-dir",
                         str(tmp_path), "--api", "toy", "--need", "dtype=fp16",
                         "--need", "hdim=_d64,128", "--format", "json")
    assert code == 0, err
    rec = json.loads(out)
    assert [(n["segment"], n["tokens"], n["given"]) for n in rec["needs"]] == [
        ("dtype", ["_fp16"], ["fp16"]), ("hdim", ["_d64", "_d128"], ["_d64", "128"])]
    assert rec["needs_unmet"] == [] and rec["verified"] and rec["write_verified"]
    selected = set()
    for number, r in enumerate(rec["runs"]):
        (tmp_path / str(number)).mkdir()
        mine = listing(root, "toy", tmp_path / str(number), "-f", r["filter"])
        selected |= mine
        assert r["gloss"] and "`_bf16` (dtype)" in r["gloss"], r["gloss"]
    assert {re.search(r"_(bf16|fp16)_", n).group(1) for n in selected} == {"fp16"}
    assert {re.search(r"_d(\d+)_", n).group(1) for n in selected} == {"64", "128"}
    assert rec["union_count"] == len(selected) < rec["counts"]["total"]["workload"]
    assert set(rec["build"]) == {"kernel_files", "source_bytes", "full_kernel_files",
                                 "full_source_bytes"}
    full = written_bytes(root, "toy", tmp_path / "full")
    assert rec["build"]["full_kernel_files"] == len(full) - 1  # (the dispatch file)
    assert rec["build"]["full_source_bytes"] == sum(full.values())
    if len(rec["runs"]) == 1:
        mine = written_bytes(root, "toy", tmp_path / "set", "-f", rec["runs"][0]["filter"])
        assert rec["build"]["kernel_files"] == len(mine) - 1 == len(selected)
        assert rec["build"]["source_bytes"] == sum(mine.values())


def test_an_unknown_need_is_a_usage_error_naming_the_valid_values(synthetic_tree, tmp_path,
                                                                  capsys):
    root = synthetic_tree("base")
    code, out, err = run(capsys, "recommend", "--ck-root", str(root), "--cache-dir",
                         str(tmp_path), "--api", "toy", "--need", "dtype=fp32")
    assert code == 2 and out == "" and "Traceback" not in err
    assert "no value of segment dtype is 'fp32' (its values: _bf16, _fp16)" in err
    code, _, err = run(capsys, "guide", "toy", "--ck-root", str(root), "--cache-dir",
                       str(tmp_path), "--need", "dtypes=fp16")
    assert code == 2 and "no segment 'dtypes'" in err and "hdim, dtype, mode" in err


def test_errors_are_one_line_for_humans(tmp_path, capsys):
    code, out, err = run(capsys, "analyze", "--ck-root", str(tmp_path / "nowhere"), "--api", "fwd")
    assert code == 2 and out == ""
    assert "Traceback" not in err and "nowhere" in err


def test_unknown_api_names_the_available_ones(synthetic_tree, tmp_path, capsys):
    root = synthetic_tree("base")
    code, _, err = run(capsys, "analyze", "--ck-root", str(root), "--cache-dir", str(tmp_path),
                       "--api", "nope")
    assert code == 2 and "nope" in err and "toy" in err


@pytest.mark.corpus
def test_unsupported_option_is_refused(corpus_root, tmp_path, capsys):
    root = corpus_root("flash-attn-2.7.4.post1")
    code, _, err = run(capsys, "check", "--ck-root", str(root), "--cache-dir", str(tmp_path),
                       "--api", "fwd", "--filter", "*", "--optdim", "128")
    assert code == 2 and "optdim" in err
