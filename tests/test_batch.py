"""Batched ``-f`` runs give exactly what separate ``generate.py -f`` processes give.

For every API of every corpus tree, a few filters (one matching everything, one
matching nothing, and pieces of a real kernel name) run in one batch interpreter; each
result is compared with real, separate processes started here: the listing with
``-l``, the dispatch file byte for byte and each kernel's trait key with ``-o``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List

import pytest

from sphinxext_fmha.corpus import load_corpus
from sphinxext_fmha.locate import fmha_dir
from sphinxext_fmha.process.batch import prefetch
from sphinxext_fmha.process.cache import DiskCache
from sphinxext_fmha.process.runner import GenerateRequest, GenerateRunner

from helpers.analysis_fixtures import cached_listing
from helpers.independent import independent_listing, same_pairing, written_run

pytest_plugins = ["helpers.plugins_analysis"]

pytestmark = pytest.mark.corpus

CORPUS = load_corpus()
AITER = "amd-aiter-0.1.7.post2.dev18"

CASES = [
    pytest.param(tree.name, api, id="%s-%s" % (tree.name, api),
                 marks=pytest.mark.xdist_group("batch-%s-%s" % (tree.name, api)))
    for tree in CORPUS for api in sorted(tree.apis)
    if not (tree.name == AITER and api == "bwd")  # 50 s per unfiltered run
]


def _filters(root: Path, api: str, store: Path) -> List[str]:
    """Selective filters made of pieces of a real kernel name (of the session's
    independent listing of the API, which the analysis tests read too): two pieces
    each, so that a run writes a few dozen kernels, not half of the API (what the batch
    must equal does not grow with the selection: each run is compared whole)."""
    names = sorted(cached_listing(store, fmha_dir(root), api, None).kernels)
    # -f is matched against the kernel name: without ".cpp" and an arch suffix
    name = re.sub(r"_gfx[0-9a-z]+$", "", names[len(names) // 2][: -len(".cpp")])
    pieces = [p for p in name.split("_") if p]
    first, second = "*_%s_%s_*" % (pieces[2], pieces[3]), "*_%s_*_%s*" % (pieces[2], pieces[-1])
    # where the API splits -f on '@' (an empty part keeps every kernel of its sub-type),
    # every part gets a pattern, read from the API's module here: head dim and data type,
    # which every sub-type's names carry side by side, of this name and of another
    module = (fmha_dir(root) / "codegen" / "ops" / ("fmha_%s.py" % api))
    text = module.read_text(encoding="utf-8") if module.is_file() else ""
    parts = re.search(r"split\(\s*['\"]@['\"]\s*\)[\s\S]{0,200}?\*\s*\(\s*(\d+)\s*-\s*len", text)
    if not parts:
        return [first, second, "no-such-kernel"]
    other = [p for p in re.sub(r"_gfx[0-9a-z]+$", "", names[len(names) // 5][: -len(".cpp")])
             .split("_") if p]
    second = "*_%s_%s_*" % (other[2], other[3])
    return ["@".join([f] * int(parts.group(1))) for f in (first, second)] + ["no-such-kernel"]


@pytest.mark.parametrize("tree, api", CASES)
def test_batched_runs_equal_separate_processes(corpus_root, analysis_cache_dir, tmp_path,
                                               tree, api):
    root = corpus_root(tree)
    filters = _filters(root, api, analysis_cache_dir)
    runner = GenerateRunner(fmha_dir(root), cache=DiskCache(tmp_path / "cache"))
    requests = [GenerateRequest(api=api, filter=f) for f in filters]
    assert prefetch(runner, requests, dispatch=True) == len(filters)
    started = runner.processes_started
    for req, text in zip(requests, filters):
        listing = runner.list_kernels(req)
        assert listing.from_cache
        # the pieces of a real name select kernels (the check is not vacuous)
        assert listing.files or text == "no-such-kernel", text
        assert set(listing.files) == independent_listing(root, api, tmp_path, "-f", text), text
        written = written_run(root, api, "-f", text)
        if written is None:
            # generate.py's write mode fails here (aiter's fwd_splitkv asserts on some
            # filters): the batch must not have made up a dispatch file for it.
            assert not runner.has_result("api", req), text
            continue
        batched = runner.generate_api_file(req)
        assert batched.from_cache
        name, api_text, traits = written
        assert batched.api_file == name
        assert batched.text == api_text, text
        assert same_pairing(batched.kernel_traits, traits), text
    assert runner.processes_started == started  # every result came from the batches


def _leaking(root: Path) -> None:
    """generate.py sets a variable of the environment, and fails when it finds it set:
    a separate process never does."""
    generate = fmha_dir(root) / "generate.py"
    generate.write_text("import os\nif os.environ.get('FMHA_LEAK'):\n    raise SystemExit(3)\n"
                        "os.environ['FMHA_LEAK'] = 'x'\n" + generate.read_text(encoding="utf-8"),
                        encoding="utf-8")


def test_forked_runs_leave_nothing_to_the_next(synthetic_tree, tmp_path):
    """Each forked run starts from the batch interpreter as it was before any run: what
    one run changes (here the environment) no other run sees, as with processes."""
    root = synthetic_tree("base")
    _leaking(root)
    runner = GenerateRunner(fmha_dir(root), cache=DiskCache(tmp_path / "cache"))
    requests = [GenerateRequest(api="toy", filter=f) for f in ("*_d64_*", "*_nlse*", "*", "*_d128_*")]
    assert prefetch(runner, requests, dispatch=True) == len(requests)
    assert runner.processes_started == 1  # one interpreter
    for req in requests:
        listing = runner.list_kernels(req)
        assert set(listing.files) == independent_listing(root, "toy", tmp_path, "-f", req.filter)
        separate = written_run(root, "toy", "-f", req.filter)
        assert separate is not None, req.filter
        name, text, traits = separate
        written = runner.generate_api_file(req)
        assert (written.api_file, written.text) == (name, text)
        assert same_pairing(written.kernel_traits, traits)
    assert runner.processes_started == 1  # every result came from the batch


