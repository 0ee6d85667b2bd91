"""Filter checks and recommendations against real trees (issue: verified numbers)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sphinxext_fmha.locate import fmha_dir
from sphinxext_fmha.session import Session

FILTERS = [
    ("flash-attn-2.8.3", "fwd", "*_nbias_*"),
    ("flash-attn-2.8.3", "bwd", "*d64*@*@*npad*"),
    ("flash-attn-2.8.3", "fwd_splitkv", "*_d64_*@*_nlse*"),
    ("flash-attn-2.8.1", "bwd", "*d64*@*@*npad*"),
    ("flash-attn-2.7.4.post1", "fwd", "*_nbias_*"),
    ("flash-attn-2.7.4.post1", "bwd", "*_d64_*"),
]


def independent_listing(root: Path, api: str, filter: str, tmp: Path):
    listing = tmp / "independent.txt"
    subprocess.run([sys.executable, "-B", "generate.py", "-a", api, "-f", filter, "-l", str(listing)],
                   cwd=fmha_dir(root), check=True, capture_output=True,
                   env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    names = [Path(line.strip()).name for line in listing.read_text().splitlines() if line.strip()]
    return sorted(n for n in names if not n.endswith("_api.cpp"))


@pytest.fixture(scope="module")
def sessions(corpus_roots):
    # The shared default cache: other test modules warm the same generate.py runs.
    return {name: Session(root) for name, root in corpus_roots.items()}


@pytest.mark.corpus
@pytest.mark.parametrize("tree,api,filter", FILTERS)
def test_filter_check_matches_generate_py(sessions, tree, api, filter, tmp_path):
    session = sessions[tree]
    check = session.check(api, filter)
    expected = independent_listing(session.ck_root, api, filter, tmp_path)
    assert check.count == len(expected)
    assert check.files == expected
    assert sum(check.per_type.values()) == check.count
    assert check.verified, check.notes
    assert check.predicted == check.count


@pytest.mark.corpus
def test_absent_token_is_reported(sessions):
    check = sessions["flash-attn-2.7.4.post1"].check("fwd", "*_nbias_*")
    assert check.count == 0
    assert any("_nbias_" in note for note in check.notes)


@pytest.mark.corpus
@pytest.mark.parametrize("tree,api", [("flash-attn-2.8.3", "fwd"), ("flash-attn-2.8.3", "bwd"),
                                      ("flash-attn-2.8.3", "fwd_splitkv"),
                                      ("flash-attn-2.7.4.post1", "fwd")])
def test_recommended_commands_select_the_recommended_set(sessions, tree, api, tmp_path):
    session = sessions[tree]
    recommendation = session.recommend(api)
    assert recommendation.runs
    union = set()
    for run in recommendation.runs:
        union.update(independent_listing(session.ck_root, api, run.filter, tmp_path))
    assert len(union) == recommendation.union_count
    assert recommendation.counts["total"]["minimal"] == len(union)
    if not recommendation.verified:
        # e.g. flash-attn 2.7.4 names omit absent features: no fnmatch can say "no bias"
        assert recommendation.notes
        return
    assert recommendation.counts["total"]["minimal"] < recommendation.counts["total"]["full"]
    if recommendation.verified:
        assert recommendation.union_count == recommendation.keep_count
        assert recommendation.driver_verified
    for decision in recommendation.decisions:
        for token in decision.drop:
            assert token in decision.losses


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
