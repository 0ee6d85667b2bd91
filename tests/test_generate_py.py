from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

from sphinxext_fmha.analysis.analyze import Tree, module_rel_of
from sphinxext_fmha.analysis.offer import tree_offer
from sphinxext_fmha.errors import FmhaError
from sphinxext_fmha.locate import FMHA_SUBDIR
from sphinxext_fmha.model import ApiInfo, Gap, GenerateOption
from sphinxext_fmha.process.cache import DiskCache
from sphinxext_fmha.process.launch import GenerateError

from helpers.independent import run_generate
from helpers.launch_twin import Ran
from helpers.synthetic import make_tree

OPS = FMHA_SUBDIR + "/codegen/ops"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def _generate(root: Path) -> Path:
    return root / FMHA_SUBDIR / "generate.py"


def _list(root: Path, tmp_path: Path, *args: str) -> Ran:
    out = tmp_path / "listing.txt"
    proc = run_generate(root, "-l", str(out), *args, cwd=tmp_path, timeout=120)
    proc.lines = out.read_text().splitlines() if out.exists() else []  # type: ignore[attr-defined]
    return proc


def _names(apis: List[ApiInfo]) -> List[str]:
    return [api.name for api in apis]


def discover_apis(root: Path) -> Tuple[List[ApiInfo], List[Gap]]:
    apis, _options, gaps, _arch_names = tree_offer(root, sys.executable)
    return apis, gaps


def generate_options(root: Path) -> List[GenerateOption]:
    return tree_offer(root, sys.executable)[1]


# --------------------------------------------------------------------------- real trees

REAL_OPTIONS = {
    "flash-attn-2.7.4.post1": {
        "dests": ["direction", "output_dir", "list_blobs", "filter", "mask", "receipt"],
        "filter_default": None,
    },
    "flash-attn-2.8.1": {
        "dests": ["direction", "output_dir", "list_blobs", "filter", "mask", "receipt", "optdim"],
        "filter_default": "",
    },
    "flash-attn-2.8.3": {
        "dests": ["direction", "output_dir", "list_blobs", "filter", "mask", "receipt", "optdim"],
        "filter_default": "",
    },
    "amd-aiter-0.1.7.post2.dev18": {
        "dests": ["targets", "direction", "output_dir", "list_blobs", "filter", "mask", "receipt", "optdim"],
        "filter_default": "",
    },
}


@pytest.mark.corpus
def test_real_apis_match_the_corpus_table(corpus_tree):
    tree, root = corpus_tree
    apis, gaps = discover_apis(root)
    assert gaps == []
    assert _names(apis) == sorted(tree.apis)
    for api in apis:
        assert api.module == "fmha_" + api.name
        assert api.source == f"{OPS}/{api.module}.py"
        assert (root / api.source).is_file()
        assert api.in_generate


@pytest.mark.corpus
def test_real_options(corpus_tree):
    tree, root = corpus_tree
    expected = REAL_OPTIONS[tree.name]
    options = generate_options(root)
    by_dest = {o.dest: o for o in options}
    assert [o.dest for o in options] == expected["dests"]
    assert by_dest["direction"].flags == ["-d", "--direction", "-a", "--api"]
    assert by_dest["direction"].default == "fwd"
    assert by_dest["mask"].default == "simplified"
    assert by_dest["receipt"].default == "0"  # an int literal in the source
    assert by_dest["list_blobs"].default is None
    assert by_dest["filter"].default == expected["filter_default"]
    assert "fnmatch" in by_dest["filter"].help
    assert by_dest["receipt"].help.startswith("codegen receipt. 0: generate only 8xhdim coverage\n")
    # our dest rule agrees with argparse itself
    parser = argparse.ArgumentParser()
    for option in options:
        assert parser.add_argument(*option.flags).dest == option.dest


@pytest.mark.corpus
def test_real_version_differences(corpus_root):
    old = generate_options(corpus_root("flash-attn-2.7.4.post1"))
    assert {"filter"} == {o.dest for o in old} & {"filter", "optdim", "targets"}
    assert "600-699" not in {o.dest: o for o in old}["receipt"].help

    new = generate_options(corpus_root("flash-attn-2.8.1"))
    assert {"optdim"} == {o.dest for o in new} & {"optdim", "targets"}
    optdim = {o.dest: o for o in new}["optdim"]
    assert optdim.default == "-1"
    assert optdim.help.endswith("-1 is the default choiceeg. --optdim=32,64,128,256")  # sic
    assert "600-699: Only generate instance for aiter::mha_fwd" in {o.dest: o for o in new}["receipt"].help

    aiter = generate_options(corpus_root("amd-aiter-0.1.7.post2.dev18"))
    targets = {o.dest: o for o in aiter}["targets"]
    assert targets.flags == ["--targets"]
    assert targets.default == "gfx9,gfx950"
    assert targets.help == "list of GPU targets, separated by comma."
    # the target families its codegen's ArchTrait objects name (none before --targets)
    assert tree_offer(corpus_root("amd-aiter-0.1.7.post2.dev18"), sys.executable)[3] == [
        "gfx9", "gfx12", "gfx950"]
    assert tree_offer(corpus_root("flash-attn-2.8.1"), sys.executable)[3] == []


# --------------------------------------------------------------------------- synthetic


def test_synthetic_base(tmp_path):
    root = make_tree(tmp_path, "base")
    apis, gaps = discover_apis(root)
    assert gaps == []
    assert apis == [ApiInfo(name="toy", module="fmha_toy", source=f"{OPS}/fmha_toy.py", in_generate=True)]


def test_a_relative_ck_root_is_read_from_any_folder(tmp_path, monkeypatch):
    """CK's docs give their root relative (``..``); generate.py runs in its own folder."""
    root = make_tree(tmp_path / "ck", "base")
    monkeypatch.chdir(tmp_path)
    apis, gaps = discover_apis(Path("ck") / root.relative_to(tmp_path / "ck"))
    assert gaps == [] and _names(apis) == ["toy"]
    assert [a.source for a in apis] == [OPS + "/fmha_toy.py"]


def test_the_stored_offer_holds_for_a_copy_elsewhere(tmp_path):
    """The store keeps the offer by the tree's content: a copy at another place (CK's docs
    build copies the tree to a new folder each time) reads its APIs from its ops modules."""
    cache = DiskCache(tmp_path / "cache")
    first = make_tree(tmp_path / "a", "base")
    copy = tmp_path / "b" / first.relative_to(tmp_path / "a")
    shutil.copytree(first, copy, symlinks=True)
    for root in (first, copy):
        apis, _options, gaps, _arch = tree_offer(root, sys.executable, cache)
        assert gaps == [] and [(a.name, a.source) for a in apis] == [("toy", OPS + "/fmha_toy.py")]
    assert any((tmp_path / "cache").rglob("*"))  # the offer was stored, and read back above


def test_synthetic_new_api(tmp_path):
    root = make_tree(tmp_path, "new_api")
    apis, gaps = discover_apis(root)
    assert gaps == []
    assert [(a.name, a.module) for a in apis] == [("toy", "fmha_toy"), ("toy2", "fmha_toy2")]
    proc = _list(root, tmp_path, "-a", "toy2")
    assert proc.returncode == 0, proc.stderr
    assert proc.lines and all("fmha_toy2_" in line for line in proc.lines)


def test_synthetic_options(tmp_path):
    root = make_tree(tmp_path, "base")
    options = generate_options(root)
    assert [o.dest for o in options] == ["api", "output_dir", "list_blobs", "filter", "mask", "receipt",
                                         "optdim"]
    by_dest = {o.dest: o for o in options}
    assert by_dest["api"].flags == ["-a", "--api"] and by_dest["api"].default == "toy"
    assert by_dest["filter"].default == ""
    assert by_dest["filter"].help == "fnmatch pattern(s) for kernel names, one per API, separated by comma"
    assert by_dest["receipt"].default == "0"
    assert by_dest["receipt"].help.count("\n") == 2
    assert by_dest["output_dir"].default is None


def test_different_prefix_is_read_from_generate_py(tmp_path):
    root = make_tree(tmp_path, "base")
    ops = root / OPS
    (ops / "fmha_toy.py").rename(ops / "attn_toy.py")
    _edit(_generate(root), "unwanted_prefix = 'fmha_'", "unwanted_prefix = 'attn' + '_'")
    apis, gaps = discover_apis(root)
    assert gaps == []
    assert [(a.name, a.module, a.source) for a in apis] == [("toy", "attn_toy", f"{OPS}/attn_toy.py")]
    assert _list(root, tmp_path, "-a", "toy").returncode == 0


def test_removeprefix_dict_form(tmp_path):
    root = make_tree(tmp_path, "new_api")
    generate = _generate(root)
    text = generate.read_text()
    start = text.index("handlers = {")
    end = text.index("assert len(handlers)")
    generate.write_text(
        text[:start]
        + "handlers = dict((op.__name__.removeprefix(unwanted_prefix), "
          "(op.list_blobs, op.write_blobs)) for op in ops)\n"
        + text[end:]
    )
    apis, gaps = discover_apis(root)
    assert gaps == [] and _names(apis) == ["toy", "toy2"]
    assert _list(root, tmp_path, "-a", "toy2").returncode == 0


def test_import_module_keeps_the_package_in_the_name(tmp_path):
    """With importlib.import_module the module __name__ is dotted: no prefix to strip."""
    root = make_tree(tmp_path, "base")
    generate = _generate(root)
    _edit(generate, "import pkgutil\n", "import importlib\nimport pkgutil\n")
    _edit(
        generate,
        "ops.append(importer.find_spec(module_name).loader.load_module(module_name))",
        "ops.append(importlib.import_module('%s.%s' % (codegen.ops.__name__, module_name)))",
    )
    apis, gaps = discover_apis(root)
    assert gaps == []
    assert _names(apis) == ["codegen.ops.fmha_toy"]
    proc = _list(root, tmp_path, "-a", "codegen.ops.fmha_toy")
    assert proc.returncode == 0, proc.stderr
    assert _list(root, tmp_path, "-a", "toy").returncode != 0


def test_module_without_list_blobs_is_generate_pys_error(tmp_path):
    root = make_tree(tmp_path, "base")
    (root / OPS / "fmha_broken.py").write_text(
        "def write_blobs(output_dir, kernel_filter, receipt, optdim_list, mask_impl):\n    pass\n"
    )
    with pytest.raises(GenerateError, match="failed before parsing its arguments: exited with 1") as error:
        discover_apis(root)
    assert "AttributeError: module 'fmha_broken' has no attribute 'list_blobs'" in error.value.stderr_tail
    # and that is what generate.py really does with such a module:
    proc = _list(root, tmp_path, "-a", "toy")
    assert proc.returncode != 0
    assert "list_blobs" in proc.stderr


def test_a_mapping_made_by_a_function_is_observed(tmp_path):
    root = make_tree(tmp_path, "base")
    generate = _generate(root)
    text = generate.read_text()
    start = text.index("handlers = {")
    end = text.index("assert len(handlers)")
    generate.write_text(
        text[:start]
        + "def _table(mods):\n"
        + "    table = {}\n"
        + "    for op in mods:\n"
        + "        table[op.__name__.split('_', 1)[1]] = (op.list_blobs, op.write_blobs)\n"
        + "    return table\n\n\n"
        + "handlers = _table(ops)\n"
        + text[end:]
    )
    apis, gaps = discover_apis(root)
    assert _names(apis) == ["toy"] and gaps == []
    assert _list(root, tmp_path, "-a", "toy").returncode == 0


def test_two_modules_with_one_key(tmp_path):
    root = make_tree(tmp_path, "base")
    (root / OPS / "toy.py").write_text(
        "def list_blobs(file_path, kernel_filter, receipt, optdim_list, mask_impl):\n"
        "    with file_path.open('a') as f:\n"
        "        f.write('from-toy-module\\n')\n\n\n"
        "def write_blobs(output_dir, kernel_filter, receipt, optdim_list, mask_impl):\n"
        "    pass\n"
    )
    apis, gaps = discover_apis(root)
    assert [(a.name, a.module, a.in_generate) for a in apis] == [("fmha_toy", "fmha_toy", False),
                                                                 ("toy", "toy", True)]
    assert [g.what for g in gaps] == ["fmha_toy is not in generate.py's handler table"]
    proc = _list(root, tmp_path, "-a", "toy")
    assert proc.returncode == 0 and proc.lines == ["from-toy-module"]  # the later module wins


def test_literal_handler_table(tmp_path):
    root = make_tree(tmp_path, "new_api")
    generate = _generate(root)
    text = generate.read_text()
    start = text.index("# load every module")
    end = text.index("assert len(handlers)")
    generate.write_text(
        text[:start]
        + "from codegen.ops import fmha_toy\n"
        + "from codegen.ops import fmha_toy2 as second\n"
        + "handlers = {\n"
        + "    'toy': (fmha_toy.list_blobs, fmha_toy.write_blobs),\n"
        + "    'second': (second.list_blobs, second.write_blobs),\n"
        + "}\n"
        + text[end:]
    )
    (root / OPS / "fmha_extra.py").write_text(
        "def list_blobs(*args):\n    pass\n\n\ndef write_blobs(*args):\n    pass\n"
    )
    apis, gaps = discover_apis(root)
    assert [(a.name, a.module, a.in_generate) for a in apis] == [
        ("fmha_extra", "fmha_extra", False),
        ("toy", "fmha_toy", True),
        ("second", "fmha_toy2", True),
    ]
    assert [g.what for g in gaps] == ["fmha_extra is not in generate.py's handler table"]
    assert _list(root, tmp_path, "-a", "second").returncode == 0


def test_filter_passed_whole(tmp_path):
    """The 2.7.4 shape: -f defaults to None and reaches every API unsplit."""
    root = make_tree(tmp_path, "base")
    generate = _generate(root)
    _edit(generate, "        default='',\n        required=False,\n        help='fnmatch",
          "        required=False,\n        help='fnmatch")
    _edit(generate, "    filter_list = args.filter.split(',')\n", "    filter_list = [args.filter] * 99\n")
    assert {o.dest: o for o in generate_options(root)}["filter"].default is None
    proc = _list(root, tmp_path, "-a", "toy", "-f", "*_psd_*,*")
    assert proc.returncode == 0 and proc.lines == [proc.lines[-1]]  # the comma is part of the pattern


def test_dest_and_action_defaults(tmp_path):
    root = make_tree(tmp_path, "base")
    _edit(
        _generate(root),
        "    args = parser.parse_args()\n",
        "    parser.add_argument('--dry-run', action='store_true', help='do ' 'nothing')\n"
        "    parser.add_argument('-j', dest='jobs', default=2 * 4, help=f'{2}')\n"
        "    parser.add_argument('-x', '--extra-pattern', default=None)\n"
        "    args = parser.parse_args()\n",
    )
    by_dest = {o.dest: o for o in generate_options(root)}
    assert by_dest["dry_run"].default == "False" and by_dest["dry_run"].help == "do nothing"
    assert by_dest["jobs"].flags == ["-j"] and by_dest["jobs"].default == "8"
    assert by_dest["jobs"].help == "2"
    assert by_dest["extra_pattern"].default is None
    assert "targets" not in by_dest
    parser = argparse.ArgumentParser()
    assert parser.add_argument("-x", "--extra-pattern").dest == "extra_pattern"


def test_a_loader_that_fails_is_generate_pys_error(tmp_path):
    root = make_tree(tmp_path, "base")
    _edit(
        _generate(root),
        "ops.append(importer.find_spec(module_name).loader.load_module(module_name))",
        "ops.append(__import__(module_name))",
    )
    with pytest.raises(GenerateError) as error:
        discover_apis(root)
    assert "No module named 'fmha_toy'" in error.value.stderr_tail
    assert "No module named 'fmha_toy'" in _list(root, tmp_path, "-a", "toy").stderr


def test_missing_generate_py(tmp_path):
    root = make_tree(tmp_path, "base")
    _generate(root).unlink()
    with pytest.raises(GenerateError, match="there is no generate.py in"):
        discover_apis(root)


def test_a_table_of_generate_pys_own_functions_is_a_gap(tmp_path):
    """Handlers that wrap the ops functions in generate.py: no table of codegen/ops
    functions, so the API names fall back to the module names, and say so."""
    root = make_tree(tmp_path, "base")
    _edit(_generate(root), "        (op.list_blobs, op.write_blobs)\n",
          "        (lambda *a, op=op: op.list_blobs(*a), lambda *a, op=op: op.write_blobs(*a))\n")
    apis, gaps = discover_apis(root)
    assert [(a.name, a.module, a.in_generate) for a in apis] == [("fmha_toy", "fmha_toy", True)]
    assert [g.what for g in gaps] == ["API names"]
    assert _list(root, tmp_path, "-a", "toy").returncode == 0  # the real name differs: hence the gap


def test_an_api_of_functions_outside_codegen_ops(tmp_path):
    root = make_tree(tmp_path, "base")
    fmha = _generate(root).parent
    (fmha / "extra.py").write_text("def list_blobs(*args):\n    pass\n\n\n"
                                   "def write_blobs(*args):\n    pass\n")
    _edit(_generate(root), "assert len(handlers) > 0\n",
          "import extra\nhandlers['more'] = (extra.list_blobs, extra.write_blobs)\n")
    apis, gaps = discover_apis(root)
    assert [(a.name, a.module, a.source) for a in apis] == [
        ("toy", "fmha_toy", f"{OPS}/fmha_toy.py"), ("more", "extra", "")]
    assert len(gaps) == 1 and "'more' runs list_blobs, write_blobs of " in gaps[0].what
    assert _list(root, tmp_path, "-a", "more").returncode == 0
    tree = Tree.load(root)  # its guide is an error that says why, not a ValueError
    with pytest.raises(FmhaError, match="'more': generate.py runs it, but not from a codegen/ops"):
        module_rel_of(tree, tree.api("more"))


def test_a_generate_py_that_parses_no_arguments(tmp_path):
    root = make_tree(tmp_path, "base")
    _edit(_generate(root), "if __name__ == '__main__':", "if False:")
    with pytest.raises(GenerateError, match="without parsing arguments with argparse"):
        discover_apis(root)
