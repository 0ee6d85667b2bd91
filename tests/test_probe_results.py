"""What one probe run yields instead of separate generate.py runs, on every corpus tree.

* The API dispatch file the probe renders from the pool the codegen built is byte for
  byte the one a real ``generate.py -o`` writes, and each kernel's trait key is the key
  of the kernel file written there (read with the same C++ reader, from the real file).
* The probe's listing is an independent ``generate.py -l``'s, and so is the listing of
  the other ``--mask`` mode that it makes too (``--also-list``), in its interpreter
  (not compared on aiter's bwd: :data:`ALSO_LIST_LEFT_OUT`).
* Perturbing one representative per (field, value, name layout) gives every record the
  influence that perturbing every field of every kernel gives.

The oracle runs are plain subprocesses, written here. The dispatch-file and perturbation
cases share the session's analysis cache and its independent listings with the analysis
tests of the same API (same xdist group, so the same worker, in order): on aiter's bwd a
probe is about five minutes of a loaded CI machine, and a plain listing over one; each
runs once a session (the representative perturbation checked is the session's probe's).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sphinxext_fmha.analysis.observe import PROBE_SCRIPT, TRAIT_READER, observe_also, read_result
from sphinxext_fmha.corpus import load_corpus
from sphinxext_fmha.locate import fmha_dir

from helpers.analysis_fixtures import (
    cached_listing,
    cached_write,
    other_mask_listing,
    session_probe,
    shared_listing,
    with_analysis_group,
)
from helpers.independent import same_pairing, written_folder

pytestmark = pytest.mark.corpus
pytest_plugins = ["helpers.plugins_analysis"]

CORPUS = load_corpus()
AITER = "amd-aiter-0.1.7.post2.dev18"

#: The other --mask listing is compared with an independent one on every API but aiter's
#: bwd, whose -m generic listing is the costliest listing of the suite (more kernels than
#: its 15,156) and read by no other test (its -m generic model is left out too): the
#: probe makes it with the same code on the 21 other APIs, three bwd among them.
ALSO_LIST_LEFT_OUT = {(AITER, "bwd")}

# With the analysis tests of the API's default mask: their Session probes with the same
# arguments (its other --mask listing included), so the probe here is read back.
DISPATCH_CASES = with_analysis_group([(tree.name, api) for tree in CORPUS
                                      for api in sorted(tree.apis)])


@pytest.mark.parametrize("tree, api", DISPATCH_CASES)
def test_probe_renders_the_dispatch_file_write_mode_writes(corpus_root, analysis_cache,
                                                           analysis_cache_dir, tree, api):
    root = corpus_root(tree)
    observed = session_probe(root, api, analysis_cache)
    dispatch = observed["dispatch"]
    assert not dispatch.get("error"), dispatch.get("error")
    name, text, traits = written_folder(cached_write(root, api))
    assert dispatch["api_file"] == name
    assert dispatch["text"] == text
    assert same_pairing(dispatch["kernel_traits"], traits)
    listed = cached_listing(analysis_cache_dir, fmha_dir(root), api, None)
    assert {n for n in observed["listing"] if not n.endswith("_api.cpp")} == set(listed.kernels)
    if (tree, api) in ALSO_LIST_LEFT_OUT:
        return
    also = observe_also(fmha_dir(root), ["-a", api], other_mask_listing(api), cache=analysis_cache)
    assert "listing" in also and not also["error"], also
    listed = cached_listing(analysis_cache_dir, fmha_dir(root), api, "generic")
    assert {n for n in also["listing"] if not n.endswith("_api.cpp")} == set(listed.kernels)


# With the analysis tests of the API too: the representative perturbation checked is the
# one of the probe a page uses (the session's, read back from the shared cache).
# Left out: aiter's bwd (15,157 kernels), and the APIs of flash-attn 2.8.1 whose listing
# holds no name 2.8.3's lacks (bwd, fwd_splitkv, fwd_appendkv, batch_prefill, measured
# 2026-12-07): their name layouts are perturbed in 2.8.3 (2.8.1's fwd differs: kept).
_SAME_NAMES_AS_283 = {("flash-attn-2.8.1", api)
                      for api in ("bwd", "fwd_splitkv", "fwd_appendkv", "batch_prefill")}
PERTURB_CASES = with_analysis_group([(tree.name, api) for tree in CORPUS
                                     for api in sorted(tree.apis)
                                     if not (tree.name == AITER and api == "bwd")
                                     and (tree.name, api) not in _SAME_NAMES_AS_283])


@pytest.mark.parametrize("api", sorted(api for _, api in _SAME_NAMES_AS_283))
def test_the_apis_left_out_list_no_name_283_lacks(corpus_root, api):
    """What leaves those 2.8.1 APIs out of the perturbation check stays true."""
    old = shared_listing(corpus_root("flash-attn-2.8.1"), api)
    assert old and old <= shared_listing(corpus_root("flash-attn-2.8.3"), api)


@pytest.mark.parametrize("tree, api", PERTURB_CASES)
def test_representative_perturbation_equals_perturbing_every_kernel(corpus_root, analysis_cache,
                                                                    tmp_path, tree, api):
    root = corpus_root(tree)
    out = tmp_path / "all.json"
    subprocess.run([sys.executable, "-B", str(PROBE_SCRIPT), str(fmha_dir(root)), str(out),
                    "--perturb-all", "-a", api], cwd=fmha_dir(root), check=True,
                   capture_output=True, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    every = read_result(out.read_bytes())
    few = session_probe(root, api, analysis_cache)
    assert [r["name"] for r in every["records"]] == [r["name"] for r in few["records"]]
    wrong = [(r["name"], p, v, f["influence"].get(p))
             for r, f in zip(every["records"], few["records"])
             for p, v in r["influence"].items() if f["influence"].get(p) != v]
    wrong += [(f["name"], p, None, v) for r, f in zip(every["records"], few["records"])
              for p, v in f["influence"].items() if p not in r["influence"]]
    assert not wrong, wrong[:5]
    # Fewer fields were perturbed: at most a fifth of the (kernel, field) pairs (a few
    # hundred on the 2.8 trees; 2.7.4's names leave out absent features, so its bwd
    # names come in 780 layouts and take about a sixth).
    pairs = every["perturbation"]["perturbed fields"]
    assert few["perturbation"]["perturbed fields"] * 5 <= max(pairs, 100)


def test_probe_cache_key_follows_the_trait_reader():
    """The probe computes trait keys with the package's reader: a new reader must not
    reuse old probe results."""
    from sphinxext_fmha.analysis import observe as observe_module

    assert (TRAIT_READER / "__init__.py").is_file()
    assert observe_module._probe_version()
