"""The project's own site (sphinx-book-theme, the theme rocm-docs-core builds on), built
as HTML and read in headless Chromium at 1400 px in light and dark mode: the gallery
guides, the filter checks and the API list."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helpers.browser import browser_check, reading_problems  # noqa: F401 - the fixture

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = ["index.html", "examples.html", "ck-docs.html", "gallery/api/fwd.html", "gallery/api/bwd.html",
         "gallery/api/fwd_appendkv.html"]

# Same group as test_docs_site: both build docs/, whose conf.py writes the gallery pages.
pytestmark = [pytest.mark.corpus, pytest.mark.xdist_group("docs-site")]


@pytest.fixture(scope="module")
def site_html(tmp_path_factory):
    out = tmp_path_factory.mktemp("docs-html")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-nW", "--keep-going", "-q",
                           "-b", "html", str(DOCS), str(out)],
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_site_pages_read_well_in_chromium(site_html, browser_check):  # noqa: F811 - the fixture
    for name in PAGES:
        assert (site_html / name).exists(), name
    results = browser_check(site_html, PAGES)
    for page, modes in results.items():
        if page.startswith("gallery/"):
            assert all(found["diagrams"] and found["tables"] for found in modes.values()), page
    problems = reading_problems(results)
    assert not problems, "\n".join(problems)
