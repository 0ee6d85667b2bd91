"""Recommendations on synthetic trees, one per filter semantics (issue 9, item 4 and 5).

Each mutant is a synthetic tree (``synthetic.py``) with one more rewrite
(``synthetic_coupled.py``): ``@`` parts filtered independently, and a dispatcher that
launches the main and the convert kernel together while ``write_blobs`` refuses a main
kernel without its convert kernel (as newer CK does for split-KV and combine kernels).
The checks are independent: generate.py runs (list and write mode) and fnmatch-free
name reading.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import List, Set

import pytest

from sphinxext_fmha.render.sections.loss_words import loss_sentences
from sphinxext_fmha.render.sections.reasons import POLICY, decision_reason
from sphinxext_fmha.render.sections.recommendation import _links_text
from sphinxext_fmha.session import Session

from helpers import synthetic_coupled

FMHA = "example/ck_tile/01_fmha"


# the rewrites are shared with the filter-semantics tests (test_filter_semantics.py)
_independent_parts = synthetic_coupled.independent_parts
_coupled_in_write_mode = synthetic_coupled.coupled_in_write_mode
_make = synthetic_coupled.make_coupled


def _generate(root: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return synthetic_coupled.generate(root, *args)


_listing = synthetic_coupled.listing


def _check(root: Path, tmp: Path) -> List[str]:
    """Recommend, then verify independently; return the filters."""
    rec = Session(root, cache_dir=tmp / "cache").recommend("toy")
    assert rec.verified, rec.notes
    assert rec.runs
    union: Set[str] = set()
    for number, run in enumerate(rec.runs):
        union |= _listing(root, tmp, "-f", run.filter)
        out = tmp / ("out%d" % number)
        out.mkdir()
        proc = _generate(root, tmp, "-f", run.filter, "-o", str(out))
        assert proc.returncode == 0, (run.filter, proc.stderr[-1500:])
    assert len(union) == rec.union_count == rec.counts["total"]["minimal"]
    assert rec.union_count < rec.counts["total"]["full"]
    assert rec.write_verified, rec.notes
    assert all(run.written for run in rec.runs), rec.notes
    assert not rec.links_missing
    full = _listing(root, tmp)
    for decision in rec.decisions:
        for token in (t for t in decision.drop if t):
            assert not any(token + "_" in n or n.endswith(token + ".cpp") for n in union)
    # No head dimension, data type or mode of the full listing is lost.
    def classes(names):
        return {tuple(n.split("_")[2:5]) for n in names if n.startswith("fmha_toy_d")}
    assert classes(full) == classes(union)
    return [r.filter for r in rec.runs]


@pytest.mark.parametrize("variant", ["base", "absent_when_off", "pad_numbers", "at_split"])
def test_each_filter_semantics(tmp_path, variant):
    _check(_make(tmp_path, variant), tmp_path)


def test_absent_features_are_expressed_by_adjacency(tmp_path):
    filters = _check(_make(tmp_path, "absent_when_off"), tmp_path)
    assert "*" not in filters  # the keep set is expressible, not the whole listing


def test_independent_parts_with_coupling_only_write_mode_enforces(tmp_path):
    root = _make(tmp_path, "at_split", _independent_parts, _coupled_in_write_mode)
    # The mutant is real: a main kernel without its convert kernel lists fine but
    # does not write.
    assert _listing(root, tmp_path, "-f", "*_npad*@*_ps*")
    out = tmp_path / "naive"
    out.mkdir()
    assert _generate(root, tmp_path, "-f", "*_npad*@*_ps*", "-o", str(out)).returncode != 0
    filters = _check(root, tmp_path)
    assert all("@" in f for f in filters)


def test_a_batched_check_makes_the_checks_of_write_mode(tmp_path):
    """A filtered set that lists but fails in write mode fails in the batch as in its
    own ``-o`` process: the batch's dispatch file comes from write mode, not the pool.
    The check says so (``write_error``: generate.py's last line) instead of failing."""
    root = _make(tmp_path, "at_split", _independent_parts, _coupled_in_write_mode)
    failing, writing = "*_npad*@*_ps*", "*_pad*@*"
    out = tmp_path / "separate"
    out.mkdir()
    refused = _generate(root, tmp_path, "-f", failing, "-o", str(out))
    assert refused.returncode != 0
    session = Session(root, cache_dir=tmp_path / "cache")
    session.prefetch_checks("toy", [failing, writing])
    from sphinxext_fmha.options import Options

    request = session.tree.request("toy", Options(), filter=failing)
    assert session.runner.has_result("list", request)  # the batch ran the job
    assert not session.runner.has_result("api", request)
    check = session.check("toy", failing)
    assert check.count == len(_listing(root, tmp_path, "-f", failing))
    assert check.write_error == refused.stderr.strip().splitlines()[-1]
    assert check.write_error.startswith("AssertionError: no convert kernel for")
    assert not check.write_verified and not check.dispatch_checked
    written = session.check("toy", writing)
    assert written.dispatch_checked and written.write_verified and not written.write_error


def _recommended(root: Path, tmp: Path):
    """The recommendation, and the union of what its commands list (generate.py here)."""
    rec = Session(root, cache_dir=tmp / "cache").recommend("toy")
    union: Set[str] = set()
    for run in rec.runs:
        union |= _listing(root, tmp, "-f", run.filter)
    return rec, union


def _tile_only_with_bias(text: str) -> str:
    """A second hdim-64 tile (``b64x64``) that only biased kernels use (newer CK has
    tiles only some features use): a minimal set without bias drops the tile too."""
    old_tiles = "            64  : [ToyTileSize(128, 64,  32, -1)],"
    assert old_tiles in text
    text = text.replace(old_tiles, "            64  : [ToyTileSize(128, 64,  32, -1), "
                                    "ToyTileSize(64, 64, 32, -1)],")
    old_skip = "                if tile.F_occupancy != -1 and pipeline.F_lse == 't':"
    assert old_skip in text
    return text.replace(old_skip, (
        "                if tile.F_bm0 == 64 and pipeline.F_bias == 'no':\n"
        "                    continue\n" + old_skip))


def test_a_dropped_tile_says_what_is_lost(tmp_path):
    """Every dropped value, a tile among them, says what dropping it loses; counted here
    from generate.py's listings: the tile's kernels, all of them outside the set and
    each also carrying a dropped bias."""
    root = _make(tmp_path, "base", _tile_only_with_bias)
    full = _listing(root, tmp_path)
    with_tile = {n for n in full if "_b64x64_" in n}
    assert with_tile and all("_bias" in n for n in with_tile)
    rec, union = _recommended(root, tmp_path)
    assert not union & with_tile
    dropped = {(d.segment, t): loss_sentences(d).get(t) for d in rec.decisions for t in d.drop}
    assert all(dropped.values()), dropped
    tile_losses = [loss for (_, token), loss in dropped.items() if token == "_b64x64"]
    # a call asks for bias, never for a tile: the tile's kernels are said under the bias
    head = "%d kernels, each said under a dropped value a call asks for: " % len(with_tile)
    assert len(tile_losses) == 1 and tile_losses[0].startswith(head), tile_losses
    named = tile_losses[0][len(head):].split(", ")
    assert "_bias" in named
    # each value named is one the tile's kernels carry, and one the set drops
    def carries(name: str, token: str) -> bool:
        return token + "_" in name or token + "." in name

    assert all(any(carries(n, t) for n in with_tile) for t in named), named
    assert all(not any(carries(n, t) for n in union) for t in named), named
    bias_losses = " ".join(loss for (segment, _), loss in dropped.items() if segment == "bias")
    assert "bias" in bias_losses and "no kept kernel takes" in bias_losses, dropped


def _pipeline_only_with_bias(text: str) -> str:
    """A second pipeline (``qr_async``) that only biased kernels use: the pipeline's rule
    keeps every value, yet a minimal set without bias has none of its kernels."""
    old = "        pipelines.append(ToyPipeline('qr', spad, dpad, bias, mask, lse))"
    assert old in text
    return text.replace(old, old + (
        "\n        if bias != 'no':\n"
        "            pipelines.append(ToyPipeline('qr_async', spad, dpad, bias, mask, lse))"))


def test_a_rule_that_keeps_every_value_says_which_it_lost(tmp_path):
    """The Why of a row says what the set is, not only what the rule meant: a pipeline
    none of whose kernels the other rows keep (every one of them biased, per the
    listing read here) is named as not in the set."""
    root = _make(tmp_path, "base", _pipeline_only_with_bias)
    full = _listing(root, tmp_path)
    async_kernels = {n for n in full if "_qr_async_" in n}
    assert async_kernels and all("_bias_" in n for n in async_kernels)
    rec, union = _recommended(root, tmp_path)
    assert not any("_bias_" in n or "_qr_async_" in n for n in union)
    pipeline = [d for d in rec.decisions if "_qr_async" in d.drop]
    assert len(pipeline) == 1 and pipeline[0].keep == ["_qr"]
    assert decision_reason(pipeline[0]) == ("keep every value; _qr_async is not in the set: the rules of "
                                  "the other segments keep none of its kernels (see What you "
                                  "lose)")
    kept_whole = [d for d in rec.decisions if not d.drop and not d.partial]
    assert kept_whole and all(decision_reason(d) == POLICY[d.category] for d in kept_whole)


def test_kernels_only_a_dead_dispatcher_launches_are_left_out(tmp_path):
    """The v2_v3 tree's entry calls ``fmha_toy_v3`` only ``if (false and ...)``: the d128
    no-bias batch kernels without lse are generated and never run (the tree's design,
    read here from the names), so no minimal set has them, and the page says so."""
    root = _make(tmp_path, "v2_v3")
    full = _listing(root, tmp_path)
    v3_only = {n for n in full if all(t in n for t in ("_d128_", "_batch_", "_nbias", "_nlse"))}
    rec, union = _recommended(root, tmp_path)
    assert v3_only and not union & v3_only
    assert rec.never_run_left_out == len(v3_only) and rec.never_run_selected == 0
    assert rec.unreachable_facts == {}
    assert "every generated kernel is reached" in _links_text(rec)


def test_a_set_without_the_full_dispatch_file_says_what_it_cannot_use(tmp_path, monkeypatch):
    """When generate.py cannot write the full API's dispatch file, the set still stands
    and its notes say why coupling and the dispatch conditions are not used, with the
    first line of the failure."""
    from sphinxext_fmha.process.launch import GenerateError
    from sphinxext_fmha.render.sections.reasons import set_notes

    session = Session(_make(tmp_path, "base"), cache_dir=tmp_path / "cache")

    def refuse(request):
        raise GenerateError("write mode refused\nsecond line")

    monkeypatch.setattr(session.runner, "generate_api_file", refuse)
    rec = session.recommend("toy")
    assert rec.runs and rec.verified
    notes = set_notes(rec)
    assert ["the full API dispatch file is not available (write mode refused): coupling and "
            "dispatch conditions are not used"] == [n for n in notes if "dispatch file" in n]


def _traits_used(api_text: str, kernel_texts: List[str]) -> List[bool]:
    """Per written convert kernel: does the written dispatch file name its trait?"""

    named = set(re.findall(r"using ctrait_ = (toy_convert_traits_<[^>]*>);", api_text))
    return [bool(set(re.findall(r"using ctrait_ = (toy_convert_traits_<[^>]*>);", text)) & named)
            for text in kernel_texts]


def test_an_unfiltered_follower_is_not_said_to_be_kept_with_its_users(tmp_path):
    """ck-2024-10 bwd: the convert kernels are launched with the main kernels but ``-f``
    never filters them; the set's dispatch file launches only some of them. The guide
    says they are all generated, and how many no kept kernel uses (counted here from the
    written files), never that they are kept exactly with the kernels that use them."""
    from sphinxext_fmha.render.ir import text_of
    from sphinxext_fmha.render.sections.loss_words import fill_words
    from sphinxext_fmha.render.sections.reasons import coupling_sentence, follower_usage, set_notes

    root = _make(tmp_path, "at_split", synthetic_coupled.launched_together,
                 synthetic_coupled.unfiltered_lse_convert)
    rec, union = _recommended(root, tmp_path)
    assert [r.filter for r in rec.runs] and len(rec.runs) == 1
    out = tmp_path / "set"
    out.mkdir()
    assert _generate(root, tmp_path, "-f", rec.runs[0].filter, "-o", str(out)).returncode == 0
    converts = sorted(out.glob("fmha_toy_convert_*.cpp"))
    assert len(converts) == len({n for n in _listing(root, tmp_path) if "_convert_" in n})
    used = _traits_used((out / "fmha_toy_api.cpp").read_text(), [p.read_text() for p in converts])
    unused = used.count(False)
    assert 0 < unused < len(converts)
    coupling = coupling_sentence(rec)
    assert "kept exactly" not in coupling
    assert "ToyConvertKernel is not filtered by -f in this tree" in coupling
    said = text_of(follower_usage(rec, "ToyConvertKernel"))
    assert said == ("Not filtered by -f in this tree: all %d are generated whatever the filter. "
                    "%d of them are launched by no call of the set's written dispatch file: no "
                    "kept ToyKernel kernel uses them." % (len(converts), unused))
    assert not any("not filtered" in note for note in set_notes(rec))  # said once
    # the CLI's JSON says it per decision too, never "follows ... it is launched with"
    fill_words(rec)
    reasons = [d.reason for d in rec.decisions if d.kernel_type == "ToyConvertKernel"]
    assert reasons and all(r.startswith("not filtered by -f in this tree") for r in reasons)


def test_a_filtered_follower_is_kept_with_its_users(tmp_path):
    """The same dispatch with both parts of ``-f`` filtering: the convert kernels are
    kept exactly with the main kernels that launch them, and each is launched."""
    from sphinxext_fmha.render.ir import text_of
    from sphinxext_fmha.render.sections.reasons import coupling_sentence, follower_usage

    root = _make(tmp_path, "at_split", synthetic_coupled.launched_together)
    rec, union = _recommended(root, tmp_path)
    assert rec.coupled["unused"] == {"ToyConvertKernel": 0}
    assert coupling_sentence(rec).endswith(
        "; they are kept exactly with the ToyKernel kernels that use them")
    kept = len([n for n in union if "_convert_" in n])
    full = len([n for n in _listing(root, tmp_path) if "_convert_" in n])
    assert text_of(follower_usage(rec, "ToyConvertKernel")) == (
        "Follows the kept ToyKernel kernels: %d of %d kept." % (kept, full))


def test_main_kernels_launched_without_a_follower_are_counted(tmp_path):
    """Newer CK bwd: the ``_maxq`` traits launch ``void`` in the convert_dq kernel's
    place. The coupling says how many main kernels are launched without one (counted
    here from the written dispatch file's calls), not that every one has it."""

    from sphinxext_fmha.render.sections.reasons import coupling_sentence

    root = _make(tmp_path, "at_split", synthetic_coupled.launched_together,
                 synthetic_coupled.lse_without_convert)
    out = tmp_path / "full"
    out.mkdir()
    assert _generate(root, tmp_path, "-o", str(out)).returncode == 0
    calls = re.findall(r"return fmha_toy_<trait_, std::conditional_t<(true|false), ",
                       (out / "fmha_toy_api.cpp").read_text())
    mains = len(list(out.glob("fmha_toy_d*.cpp")))
    assert len(calls) == mains and 0 < calls.count("false") < mains
    rec, _ = _recommended(root, tmp_path)
    assert ("(read from the API dispatch file); %d of the %d ToyKernel kernels it launches are "
            "launched without a ToyConvertKernel kernel." % (calls.count("false"), mains)
            ) in coupling_sentence(rec)


def _lse_convert_unlisted(text: str) -> str:
    """The lse traits' would-be convert kernels get a block size no listed one has (b129),
    so their names, matched against ``-f`` but never written, appear in no listing (like
    newer CK bwd's ``_maxq`` traits, whose convert_dq would have an M0 of its own)."""
    old = "cvt = ToyConvertKernel(F_hdim=hdim, F_dtype=dtype, F_mode=mode, F_bm0=tile.F_bm0,"
    assert old in text
    return text.replace(old, old[:-1] + " + (pipeline.F_lse == 't'),")


def test_the_trait_drop_rule_claims_no_kernel_per_sub_type(tmp_path):
    """The lse traits generate no convert kernel, yet a failed convert part drops them:
    the filter mechanism says a trait is dropped as a whole, and not that each trait has
    one kernel of each filtered sub-type (the listing has main kernels without one)."""
    from sphinxext_fmha.guide import collect_guide
    from sphinxext_fmha.render.markdown import guide_markdown

    root = _make(tmp_path, "at_split", synthetic_coupled.launched_together,
                 synthetic_coupled.lse_without_convert, _lse_convert_unlisted)
    full = _listing(root, tmp_path)
    mains = [n for n in full if not n.startswith("fmha_toy_convert_")]
    assert len([n for n in full if n.startswith("fmha_toy_convert_")]) < len(mains)
    # the convert part still decides the lse traits, which have no convert kernel
    assert not any(n.endswith("_lse.cpp") for n in _listing(root, tmp_path, "-f", "*@nomatch"))
    session = Session(root, cache_dir=tmp_path / "cache")
    text = guide_markdown(collect_guide(session, "toy", sections=["filter"]), ["filter"])
    assert "one failed match drops the whole trait" in text
    assert "one kernel of each" not in text
    # and it says how many traits the convert part decides without writing their kernel,
    # naming one such would-be convert kernel that no listing has
    lse_traits = [n for n in mains if n.endswith("_lse.cpp")]
    said = re.search(r"Part 1 also decides the (\d+) traits? that write no `ToyConvertKernel` "
                     r"kernel \(such as the trait of `([^`]+)`\): generate.py matches it "
                     r"against the name that kernel would have \(`([^`]+)`\)", text)
    assert said and int(said.group(1)) == len(lse_traits) > 0, text
    assert said.group(2) in lse_traits and said.group(3).startswith("fmha_toy_convert_")
    assert "_b129_" in said.group(3) and not any("_b129_" in n for n in full)
