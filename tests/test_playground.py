"""The filter playground without a browser: the directive's twins, the builders,
where the script goes, the embedded data's size and its decoding.

(The playground's answers are checked against generate.py in a real browser in
``test_playground_browser.py``.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sphinxext_fmha.analysis.analyze import Options
from sphinxext_fmha.directives.playground import fmha_playground
from sphinxext_fmha.render.playground_data import ALPHABET, _pack_rows, playground_data, to_script_json

# the same reproducible set-up as the directive tests
from helpers.project import build, write_project

pytest_plugins = ["helpers.plugins_analysis"]

AITER = "amd-aiter-0.1.7.post2.dev18"
#: The bound the issue sets for the largest API of the corpus (aiter bwd).
MAX_PAGE_BYTES = 300 * 1024

pytestmark = pytest.mark.usefixtures("reproducible_build")


@pytest.fixture(scope="module")
def ck_root(corpus_root) -> Path:
    return corpus_root("flash-attn-2.8.3")


def _playground(app, docname):
    nodes_ = list(app.env.get_doctree(docname).findall(fmha_playground))
    assert len(nodes_) == 1
    return nodes_[0]


def test_rst_and_myst_twins(ck_root, tmp_path):
    pages = {
        "page_rst.rst": "Page\n====\n\n.. fmha-filter-playground:: fwd_appendkv\n   :mask: generic\n",
        "page_md.md": "# Page\n\n```{fmha-filter-playground} fwd_appendkv\n:mask: generic\n```\n",
    }
    src = write_project(tmp_path / "src", pages, ck_root=ck_root)
    app, _status, warnings = build(src, "html")
    assert warnings == ""
    from_rst, from_md = _playground(app, "page_rst"), _playground(app, "page_md")
    assert from_rst.attributes["data"] == from_md.attributes["data"]
    assert from_rst["command"] == from_md["command"] == [
        "python generate.py -a fwd_appendkv", "-m generic -l kernels.txt"]
    assert from_rst["total"] == 195  # fwd_appendkv has no mask: the corpus fact
    for name in ("page_rst", "page_md"):
        page = (Path(app.outdir) / (name + ".html")).read_text(encoding="utf-8")
        assert page.count('class="fmha-playground"') == 1
        assert 'data-fmha-count="195"' in page
        assert "_static/fmha-playground.js" in page


PLAYGROUND_PAGE = """\
Playground
==========

.. fmha-filter-playground:: bwd

Text after.
"""


@pytest.fixture(scope="module")
def builders_project(ck_root, tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("playground-builders") / "src"
    pages = {"play.rst": PLAYGROUND_PAGE, "plain.rst": "Plain\n=====\n\nNo playground here.\n",
             "guide.rst": "Guide\n=====\n\n.. fmha-filename:: fwd_appendkv\n"}
    return write_project(src, pages, ck_root=ck_root,
                         extra_conf='html_baseurl = "https://example.org/docs/"')


@pytest.mark.parametrize("builder", ["html", "latex", "text", "epub"])
def test_builders(builder, builders_project):
    app, _status, warnings = build(builders_project, builder)
    assert warnings == ""
    out = Path(app.outdir)
    command = "python generate.py -a bwd -f PATTERN -l kernels.txt"
    if builder == "html":
        play = (out / "play.html").read_text(encoding="utf-8")
        assert play.count("_static/fmha-playground.js") == 1
        assert (out / "_static" / "fmha-playground.js").is_file()
        assert re.search(r'<input class="fmha-pg-input" id="[^"]+"', play)
        assert "fmha-pg-result" in play and "Text after." in play
        for other in ("plain.html", "guide.html", "index.html", "genindex.html", "search.html"):
            assert "fmha-playground" not in (out / other).read_text(encoding="utf-8"), other
        return
    if builder == "latex":
        text = next(out.glob("*.tex")).read_text(encoding="utf-8")
        text = text.replace("\\sphinxhyphen{}", "-").replace("\\_", "_").replace("{-}", "-")
    elif builder == "epub":
        text = (out / "play.xhtml").read_text(encoding="utf-8")
        assert "fmha-playground.js" not in text
        assert not (out / "_static" / "fmha-playground.js").exists()  # nor in the book
        assert (out / "_static" / "fmha.css").is_file()
        text = re.sub(r"<[^>]+>", "", text)
    else:
        text = (out / "play.txt").read_text(encoding="utf-8")
    assert "Filter playground for bwd" in text
    assert command in re.sub(r"\s+", " ", text)
    assert "https://docs.python.org/3/library/fnmatch.html" in text
    assert "https://example.org/docs/play.html" in text
    assert "fmha-pg-input" not in text


def test_packed_rows_round_trip():
    rows = [[0, 0, 5], [0, 0, 63], [0, 1, 64], [3, 1, 64], [3, 1, 64], [70, 2, 4095]]
    widths = [2, 1, 2]
    packed = _pack_rows(rows, widths)
    assert set(packed) <= set(ALPHABET)
    # the first row shares nothing, the fifth everything
    assert packed.startswith("0" + "00" + "0" + "05")
    assert "3" in packed
    with pytest.raises(ValueError):
        _pack_rows([[0] * 64], [1] * 64)


def test_script_json_cannot_close_its_script():
    text = to_script_json({"a": "</script><!-- & -->"})
    assert "<" not in text and ">" not in text and "&" not in text


@pytest.mark.xdist_group("analysis-%s-bwd-default" % AITER)
def test_largest_api_stays_small(analysis_sessions):
    """aiter's bwd (15,156 kernels, the corpus' largest API): the whole embedded data
    stays under the bound, and it does carry every kernel and every trait. (The group's
    session: its model, listing and traits, not built a second time.)"""
    session = analysis_sessions(AITER)
    options = Options()
    model = session.model("bwd", options)
    listing = session.runner.list_kernels(session.tree.request("bwd", options))
    parsed = session.parsed_listing("bwd", options, listing.files)
    assert listing.count == 15156 and not parsed.unparsed
    data = playground_data(model, parsed.parsed, session.trait_groups("bwd", options),
                           ("python generate.py -a bwd", "-l kernels.txt"))
    assert data["total"] == 15156
    assert sum(t["count"] for t in data["types"]) == 15156
    assert data["drops"] == "trait" and data["traits"]["count"] > 0
    size = len(to_script_json(data).encode("utf-8"))
    assert size < MAX_PAGE_BYTES - 20 * 1024, size  # room for the page around it


def test_a_sets_patterns_link_to_the_pages_playground(ck_root, tmp_path):
    """Each run's gloss links to the page's playground of its API, prefilled with the
    pattern (issue 43, item 4); a page without one, and a text build, show no link."""
    with_playground = (".. fmha-kernel-set:: fwd_appendkv\n   :need: hdim=128\n\n"
                       ".. fmha-filter-playground:: fwd_appendkv\n")
    pages = {"set.rst": "Set\n===\n\n" + with_playground,
             "alone.rst": "Alone\n=====\n\n.. fmha-kernel-set:: fwd_appendkv\n   :need: hdim=128\n"}
    src = write_project(tmp_path / "src", pages, ck_root=ck_root)
    app, _status, warnings = build(src, "html")
    assert warnings == ""
    out = Path(app.outdir)
    page = (out / "set.html").read_text(encoding="utf-8")
    playground_id = re.search(r'<div class="fmha-playground" id="([^"]+)"', page).group(1)
    commands = re.findall(r"-f\s*(?:<[^>]*>)*'([^']+)'", re.sub(r"<[^>]+>", "", page))
    links = re.findall(r'href="\?fmha-filter=([^"#]+)#([^"]+)"', page)
    assert links and len(links) == len(set(commands))
    from urllib.parse import unquote
    assert {unquote(pattern) for pattern, _ in links} == set(commands)
    assert {target for _, target in links} == {playground_id}
    alone = (out / "alone.html").read_text(encoding="utf-8")
    assert "fmha-filter=" not in alone and "What it keeps:" in alone
    assert "Try it in the filter playground" not in alone
    app, _status, warnings = build(src, "text")
    text = (Path(app.outdir) / "set.txt").read_text(encoding="utf-8")
    assert "Try it in the filter playground" not in text and "What it keeps:" in text
