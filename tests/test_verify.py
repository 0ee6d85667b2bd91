"""Filter checks and recommendations against real trees (issue: verified numbers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sphinxext_fmha.locate import fmha_dir
from sphinxext_fmha.render.sections.filter_check import check_notes
from sphinxext_fmha.render.sections.loss_words import loss_sentences
from sphinxext_fmha.session import Session

from helpers.analysis_fixtures import cached_listing, shared_listing, with_analysis_group

pytest_plugins = ["helpers.plugins_analysis"]

FILTERS = [
    ("flash-attn-2.8.3", "fwd", "*_nbias_*"),
    ("flash-attn-2.8.3", "bwd", "*d64*@*@*npad*"),
    ("flash-attn-2.8.3", "fwd_splitkv", "*_d64_*@*_nlse*"),
    ("flash-attn-2.8.1", "bwd", "*d64*@*@*npad*"),
    ("flash-attn-2.7.4.post1", "fwd", "*_nbias_*"),
    ("flash-attn-2.7.4.post1", "bwd", "*_d64_*"),
]


def generate_listing(root: Path, api: str, filter: str):
    return sorted(shared_listing(root, api, "-f", filter))


@pytest.fixture(scope="module")
def sessions(corpus_roots, analysis_sessions):
    """The trees' sessions on the analysis tests' shared cache (see plugins_analysis): each
    case is in its API's analysis group, so it reads the model that group computed."""
    return {name: analysis_sessions(name) for name in corpus_roots}


@pytest.mark.corpus
@pytest.mark.parametrize("tree,api,filter", with_analysis_group(FILTERS))
def test_filter_check_matches_generate_py(sessions, tree, api, filter):
    session = sessions[tree]
    check = session.check(api, filter)
    expected = generate_listing(session.ck_root, api, filter)
    assert check.count == len(expected)
    assert check.files == expected
    assert sum(check.per_type.values()) == check.count
    assert check.verified, check.notes
    assert check.predicted == check.count


@pytest.mark.corpus
@pytest.mark.xdist_group("analysis-flash-attn-2.7.4.post1-fwd-default")
def test_absent_token_is_reported(sessions):
    check = sessions["flash-attn-2.7.4.post1"].check("fwd", "*_nbias_*")
    assert check.count == 0
    assert any("_nbias_" in note for note in check_notes(check))


@pytest.mark.corpus
@pytest.mark.parametrize("tree,api", with_analysis_group([
    ("flash-attn-2.8.3", "fwd"), ("flash-attn-2.8.3", "bwd"), ("flash-attn-2.8.3", "fwd_splitkv"),
    ("flash-attn-2.7.4.post1", "fwd")]))
def test_recommended_commands_select_the_recommended_set(sessions, tree, api):
    session = sessions[tree]
    recommendation = session.recommend(api)
    assert recommendation.runs
    union = set()
    for run in recommendation.runs:
        union.update(generate_listing(session.ck_root, api, run.filter))
    assert len(union) == recommendation.union_count
    assert recommendation.counts["total"]["minimal"] == len(union)
    if not recommendation.verified:
        # e.g. flash-attn 2.7.4 names omit absent features: no fnmatch can say "no bias"
        assert recommendation.note_facts
        return
    assert recommendation.counts["total"]["minimal"] < recommendation.counts["total"]["full"]
    if recommendation.verified:
        assert recommendation.union_count == recommendation.keep_count
        # a driver command only for several runs (one run is its own union)
        assert recommendation.driver_verified or (
            len(recommendation.runs) == 1 and not recommendation.driver_command)
    for decision in recommendation.decisions:
        for token in decision.drop:
            assert token in loss_sentences(decision)


@pytest.mark.corpus
def test_second_session_starts_no_process(corpus_root, tmp_path, monkeypatch):
    root = corpus_root("flash-attn-2.8.3")
    trace = tmp_path / "trace.txt"
    monkeypatch.setenv("FMHA_TRACE_RUNS", str(trace))
    Session(root, cache_dir=tmp_path / "cache").check("fwd_appendkv", "*_pagedkv*")
    first = trace.read_text().splitlines()
    assert first
    Session(root, cache_dir=tmp_path / "cache").check("fwd_appendkv", "*_pagedkv*")
    assert trace.read_text().splitlines() == first


@pytest.mark.corpus
@pytest.mark.parametrize("tree,api", with_analysis_group([("amd-aiter-0.1.7.post2.dev18", "fwd")]))
def test_an_arch_suffix_in_a_filter_is_named_as_one(analysis_sessions, analysis_cache_dir,
                                                      corpus_root, tree, api):
    """Newer CK's file names end in ``_gfx950``, which fnmatch never sees: a filter that
    asks for it selects nothing, and the check says why (read here from generate.py's
    listing: the suffix ends file names and is in no kernel name)."""
    names = cached_listing(analysis_cache_dir, fmha_dir(corpus_root(tree)), api, None).kernels
    assert any(n.endswith("_gfx950.cpp") for n in names)
    assert not any("_gfx950" in n[:-len("_gfx950.cpp")] for n in names)
    check = analysis_sessions(tree).check(api, "*_gfx950")
    assert check.count == 0
    assert any(note.startswith("'_gfx950' occurs in no kernel name") and "arch suffix" in note
               for note in check_notes(check)), check_notes(check)


@pytest.mark.corpus
@pytest.mark.xdist_group("analysis-flash-attn-2.7.4.post1-bwd-default")
def test_a_sub_type_the_filter_selects_nothing_of_is_named(sessions):
    """2.7.4's bwd names omit absent features and ``-f`` reaches its dq_dk_dv kernels
    only: ``*_nbias_*`` selects the helper kernels and none of the 7,680 main ones.
    The check names that sub-type and the piece no name of it has (read here from
    generate.py's own listings)."""
    session = sessions["flash-attn-2.7.4.post1"]
    selected = generate_listing(session.ck_root, "bwd", "*_nbias_*")
    full = shared_listing(session.ck_root, "bwd")
    def helper(name: str) -> bool:
        return "_dot_do_o_" in name or "_convert_dq_" in name

    main = [n for n in full if not helper(n)]
    assert selected and all(helper(n) for n in selected)
    assert main and not any("_nbias_" in n for n in full)
    check = session.check("bwd", "*_nbias_*")
    assert check.count == len(selected)
    assert [(m.kernel_type, m.pattern, m.baseline, m.absent) for m in check.misses] == [
        ("FmhaBwdDQDKDVKernel", "*_nbias_*", len(main), ["_nbias_"])]
    # a filter whose sub-types are all selected misses nothing
    assert session.check("bwd", "*_d64_*").misses == []
