"""The guides in CK's own documentation setup: a CK-style docs project
(``tests/rocm_docs_project``: ``ROCmDocs(...).setup()``, ``_toc.yml.in``,
``extensions += ["sphinxext_fmha"]``) built with the real rocm-docs-core from PyPI,
offline and with warnings as errors, then read in headless Chromium in light and dark
mode.  The docs page "Using it in CK's docs" shows these same files as the recipe.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from browser import browser_check, reading_problems  # noqa: F401 - the fixture

from independent import independent_listing

PROJECT = Path(__file__).resolve().parent / "rocm_docs_project"
TREE = "flash-attn-2.8.3"
PAGES = ["fwd-kernel-selection-guide.html", "bwd-kernel-selection-guide.html", "filter-check.html"]

pytestmark = [pytest.mark.corpus, pytest.mark.xdist_group("rocm-docs")]

rocm_docs = pytest.importorskip("rocm_docs", reason="rocm-docs-core needs Python >= 3.10")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def rocm_site(tmp_path_factory, corpus_root):
    """The project built with ``sphinx-build -W -b html`` in a git checkout, no network:
    ``rocm_docs_offline`` answers rocm-docs-core's GitHub files, and a resolver that
    knows no host makes any other request fail at once instead of hanging."""
    src = tmp_path_factory.mktemp("ck-docs") / "docs"
    shutil.copytree(PROJECT, src, ignore=shutil.ignore_patterns("__pycache__", "_build"))
    _git(src, "init", "-q")
    _git(src, "add", "-A")
    _git(src, "commit", "-q", "-m", "docs")
    out = src / "_build" / "html"
    env = dict(os.environ, ROCM_DOCS_OFFLINE="1", FMHA_CK_ROOT=str(corpus_root(TREE)),
               PYTHONDONTWRITEBYTECODE="1")
    for name in ("READTHEDOCS", "ROCM_DOCS_REMOTE_DETAILS"):
        env.pop(name, None)
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q",
                           "-b", "html", str(src), str(out)],
                          cwd=src, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-4000:])
    assert proc.stderr.strip() == "", proc.stderr[-4000:]
    return out


def test_offline_answers_only_rocm_docs_core_files(monkeypatch):
    monkeypatch.syspath_prepend(str(PROJECT))
    import requests
    from requests.adapters import HTTPAdapter

    original = HTTPAdapter.send
    try:
        import rocm_docs_offline

        answer = requests.get(rocm_docs_offline.DATA_URL + "new_data/latest_version.txt")
        assert answer.status_code == 200 and ":" in answer.text
        assert requests.get(rocm_docs_offline.DATA_URL + "data/unknown.txt").text == ""
        with pytest.raises(requests.ConnectionError):  # anything else goes out as usual
            requests.get("http://host.invalid/", timeout=5)
    finally:
        HTTPAdapter.send = original
        sys.modules.pop("rocm_docs_offline", None)


def _text(path: Path) -> str:
    html = path.read_text(encoding="utf-8")
    html = re.sub(r"<span class=\"fmha-wbr\"></span>", "", html)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


def test_guides_and_filter_check_are_in_the_rocm_theme(rocm_site, corpus_root, tmp_path):
    for page in PAGES:
        html = (rocm_site / page).read_text(encoding="utf-8")
        assert "rocm_header.css" in html, page  # the ROCm theme, not a fallback
        assert "fmha.css" in html, page
    fwd = _text(rocm_site / "fwd-kernel-selection-guide.html")
    total = len(independent_listing(corpus_root(TREE), "fwd", tmp_path))
    assert re.search(r"generate\.py -a fwd lists %d kernel files" % total, fwd)
    check = _text(rocm_site / "filter-check.html")
    selected = independent_listing(corpus_root(TREE), "bwd", tmp_path, "-f", "*@*@*_nbias_*")
    assert "generate.py selects %d of" % len(selected) in check


def test_pages_read_well_in_chromium(rocm_site, browser_check):  # noqa: F811 - the fixture
    results = browser_check(rocm_site, PAGES)
    for page, modes in results.items():
        for found in modes.values():
            assert found["tables"], page
            if page.startswith(("fwd", "bwd")):
                assert found["diagrams"], page
    problems = reading_problems(results)
    assert not problems, "\n".join(problems)
