"""The Sphinx directives, built with real Sphinx apps on real and fake CK trees.

* twin reStructuredText and MyST pages give the same doctree; a small reviewed snapshot
  of its outline (sections, diagrams) or filter-check numbers in ``tests/test_directives/``
  (``pytest --force-regen`` rewrites them: review the diff), and its counts equal
  independent generate.py runs;
* html, latex and text builds finish without any warning;
* every bad input is one located warning (``file:line``) while the page still builds;
* ``-j 2`` works; an incremental build re-reads exactly the dependent page; a build
  with nothing changed starts no generate.py process.

The real tree is flash-attn 2.8.3 (fast APIs: fwd_appendkv, bwd for the '@' filter);
the broken ones are synthetic trees (``tests/helpers/synthetic.py``) with a generate.py that
crashes, hangs, or rejects a filter.
"""

from __future__ import annotations

import os
import pickle
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from html import unescape
from pathlib import Path
from typing import Set

import pytest
from docutils import nodes
from sphinx.application import Sphinx

from sphinxext_fmha.corpus import tree_by_name
from sphinxext_fmha.directives.sphinx_glue import clear_sessions

from helpers.independent import independent_listing
from helpers.outline import (
    carrying,
    column,
    diagrams,
    filter_check_summary,
    filter_of,
    outline,
    table_rows,
    table_summary,
    tables,
)
from helpers.project import broken_tree, build, build_page, located, write_project

TREE = "flash-attn-2.8.3"
CORPUS_FACTS = tree_by_name(TREE)  # kernels per API, measured by hand (ck-corpus.toml)

_ANSI = re.compile(r"\x1b\[[0-9;]*m")



#: every test builds with a fixed date and no run tracing, from fresh sessions
pytestmark = pytest.mark.usefixtures("reproducible_build")


@pytest.fixture(scope="module")
def ck_root(corpus_root) -> Path:
    return corpus_root(TREE)


def section_pformat(app: Sphinx, docname: str) -> str:
    """The page's first section (what the directive produced), without the source."""
    doctree = app.env.get_doctree(docname)
    text = doctree[0].pformat()
    # docutils < 0.22 prints boolean attributes as True/False, later versions as 1/0
    text = re.sub(r'="True"', '="1"', re.sub(r'="False"', '="0"', text))
    return text.replace(str(app.srcdir), "<src>")







# --------------------------------------------------------------------------- twins

TWINS = {
    "guide": (
        ".. fmha-kernel-guide:: fwd_appendkv\n",
        "```{fmha-kernel-guide} fwd_appendkv\n```\n",
    ),
    "guide_rubrics": (
        ".. fmha-kernel-guide:: bwd\n   :sections: 1, filter, 3\n   :headings: rubric\n",
        "```{fmha-kernel-guide} bwd\n:sections: 1, filter, 3\n:headings: rubric\n```\n",
    ),
    "filter_check": (
        ".. fmha-filter-check::\n   :api: fwd_appendkv\n   :filter: *_d128_*\n"
        "   :expect-count: 49\n   :expect-keep: _d128\n   :expect-drop: hdim:_d64, _d32\n",
        "```{fmha-filter-check}\n:api: fwd_appendkv\n:filter: '*_d128_*'\n"
        ":expect-count: 49\n:expect-keep: _d128\n:expect-drop: hdim:_d64, _d32\n```\n",
    ),
    "filter_check_at": (
        ".. fmha-filter-check:: *@*@*_d64_*_nbias_*\n   :api: bwd\n   :expect-count: 516\n",
        "```{fmha-filter-check} *@*@*_d64_*_nbias_*\n:api: bwd\n:expect-count: 516\n```\n",
    ),
    "api_list": (
        ".. fmha-api-list::\n",
        "```{fmha-api-list}\n```\n",
    ),
    "filename": (
        ".. fmha-filename:: bwd\n   :legend:\n",
        "```{fmha-filename} bwd\n:legend:\n```\n",
    ),
    "kernel_set": (
        ".. fmha-kernel-set:: fwd_appendkv\n   :need: hdim=128; dtype=_fp16\n",
        "```{fmha-kernel-set} fwd_appendkv\n:need: hdim=128; dtype=_fp16\n```\n",
    ),
}


# What each twin page must say, measured here: counts from independent generate.py runs
# (tests/helpers/independent.py) and the corpus table, names and tokens counted with regexes.

GUIDE_SECTIONS = ["types", "filename", "filter", "fields", "minimal", "losses", "commands",
                  "counts", "examples", "tiles", "rules", "dispatch", "gaps"]


def _listing(root: Path, api: str, tmp: Path, *args: str) -> Set[str]:
    folder = tmp / ("listing-%d" % len(list(tmp.glob("listing-*"))))
    folder.mkdir()
    return independent_listing(root, api, folder, *args)


def _guide_facts(section, root, tmp):
    ids = [s["ids"][0] for s in section.findall(nodes.section)][1:]
    assert ids == ["fmha-fwd-appendkv-" + name for name in GUIDE_SECTIONS]
    full = _listing(root, "fwd_appendkv", tmp)
    assert len(full) == CORPUS_FACTS.apis["fwd_appendkv"]
    assert column(tables(section, "fmha-types")[0], "Kernels") == [str(len(full))]
    (diagram,) = diagrams(section)
    assert _name_and_ruler(diagram)[0] in full  # a real file name
    # the recommended commands select what the counts table says (the example
    # workloads' commands are in a section of their own)
    (shown,) = [s for s in section.findall(nodes.section)
                if s["ids"][0] == "fmha-fwd-appendkv-commands"]
    commands = _commands(shown)
    assert commands
    union: Set[str] = set()
    for command in commands:
        union |= _listing(root, "fwd_appendkv", tmp, "-f", filter_of(command))
    counts = tables(section, "fmha-counts")[0]
    assert column(counts, "Full")[0] == str(len(full))
    assert column(counts, "Minimal")[0] == str(len(union))


def _commands(node) -> list:
    """The generate.py commands with ``-f`` in the literal blocks under ``node``
    (wrapped commands joined)."""
    commands = [line for block in node.findall(nodes.literal_block)
                for line in re.sub(r" \\\n\s*", " ", block.astext()).splitlines()
                if line.startswith("python generate.py")]
    return [c for c in commands if " -f " in c]


#: The kernel-set twin's workload, and how the test reads those values in a name.
SET_NEEDS = {"hdim": ("128", re.compile(r"_d(\d+)_")),
             "dtype": ("fp16", re.compile(r"_(bf16|fp16|fp8)_"))}


def _kernel_set_facts(section, root, tmp):
    """Each command, run by generate.py: every name has the needed values (read with
    the regexes above), the union is what the counts and build tables say, and each
    command has a gloss."""
    commands = _commands(section)
    assert commands
    union: Set[str] = set()
    for command in commands:
        union |= _listing(root, "fwd_appendkv", tmp, "-f", filter_of(command))
    assert union
    for segment, (value, read) in SET_NEEDS.items():
        assert {read.search(name).group(1) for name in union} == {value}, segment
    full = _listing(root, "fwd_appendkv", tmp)
    assert {SET_NEEDS["hdim"][1].search(n).group(1) for n in full} != {"128"}
    counts = tables(section, "fmha-counts")[0]
    assert column(counts, "Full")[0] == str(len(full))
    assert column(counts, "Set")[0] == str(len(union))
    assert int(column(counts, "Workload")[0]) >= len(union)
    build = tables(section, "fmha-build")[0]
    assert column(build, "Kernel files (translation units)")[:2] == [str(len(union)),
                                                                    str(len(full))]
    glosses = [p.astext() for p in section.findall(nodes.paragraph)
               if p.astext().startswith("What it keeps: ")]
    assert len(glosses) == len(commands)


def _rubric_facts(section, root, tmp):
    rubrics = [r["ids"][0] for r in section.findall(nodes.rubric) if "fmha-rubric" in r["classes"]]
    assert rubrics == ["fmha-bwd-types", "fmha-bwd-filter"]
    assert list(section.findall(nodes.section))[1:] == []
    full = _listing(root, "bwd", tmp)
    kinds = {"FmhaBwdOGradDotOKernel": "fmha_bwd_dot_do_o_",
             "FmhaBwdConvertQGradKernel": "fmha_bwd_convert_dq_"}
    types = tables(section, "fmha-types")[0]
    for name, kernels in zip(column(types, "Class"), column(types, "Kernels")):
        if name in kinds:
            expected = sum(1 for f in full if f.startswith(kinds[name]))
        else:
            expected = sum(1 for f in full if not f.startswith(tuple(kinds.values())))
        assert kernels == str(expected), name


def _filter_check_facts(section, root, tmp):
    selected = _listing(root, "fwd_appendkv", tmp, "-f", "*_d128_*")
    full = _listing(root, "fwd_appendkv", tmp)
    counts = tables(section, "fmha-check-counts")[0]
    assert column(counts, "Selected") == [str(len(selected))] and len(selected) == 49
    assert column(counts, "All") == [str(len(full))]
    breakdown = table_rows(tables(section, "fmha-breakdown")[0])
    token, every, chosen = (breakdown[0].index(h) for h in ("Token", "All", "Selected"))
    checked = 0
    for row in breakdown[1:]:
        if row[token].startswith("_"):
            assert row[every] == str(carrying(full, row[token])), row
            assert row[chosen] == str(carrying(selected, row[token])), row
            checked += 1
    assert checked >= 10


def _filter_check_at_facts(section, root, tmp):
    selected = _listing(root, "bwd", tmp, "-f", "*@*@*_d64_*_nbias_*")
    counts = tables(section, "fmha-check-counts")[0]
    assert sum(int(c) for c in column(counts, "Selected")) == len(selected) == 516
    assert column(counts, "Selected") == column(counts, "Predicted")


def _api_list_facts(section, root, tmp):
    table = tables(section, "fmha-apis")[0]
    assert column(table, "API") == sorted(CORPUS_FACTS.apis)
    assert column(table, "Kernels") == [str(CORPUS_FACTS.apis[a]) for a in sorted(CORPUS_FACTS.apis)]


def _name_and_ruler(diagram):
    """A long name's text diagram is chunks (part of the name, its ruler, numbers)
    separated by blank lines; each chunk's ruler is as long as its part."""
    chunks = [chunk.splitlines() for chunk in diagram[0].astext().split("\n\n")]
    assert all(len(chunk[0]) == len(chunk[1]) for chunk in chunks)
    return "".join(c[0] for c in chunks), "".join(c[1] for c in chunks)


def _filename_facts(section, root, tmp):
    full = _listing(root, "bwd", tmp)
    shown = [_name_and_ruler(d)[0] for d in diagrams(section)]
    assert len(shown) == 3 and set(shown) <= full
    prefixes = ("fmha_bwd_dot_do_o_", "fmha_bwd_convert_dq_")
    assert sorted(sum(1 for p in prefixes if n.startswith(p)) for n in shown) == [0, 1, 1]
    for diagram in diagrams(section):
        name, ruler = _name_and_ruler(diagram)
        assert len(ruler) == len(name) and ruler.endswith("." * len(".cpp"))


TWIN_VIEWS = {
    "guide": outline,
    "guide_rubrics": lambda section: outline(section) + table_summary(
        section, "fmha-types", ["Class", "Kernels", "Filter position"]),
    "filter_check": filter_check_summary,
    "filter_check_at": filter_check_summary,
    "api_list": lambda section: table_summary(section, "fmha-apis", ["API", "Module", "Kernels"]),
    "filename": outline,
    "kernel_set": outline,
}

TWIN_FACTS = {
    "guide": _guide_facts,
    "guide_rubrics": _rubric_facts,
    "filter_check": _filter_check_facts,
    "filter_check_at": _filter_check_at_facts,
    "api_list": _api_list_facts,
    "filename": _filename_facts,
    "kernel_set": _kernel_set_facts,
}


@pytest.fixture
def twins(sphinx_doctree, ck_root):
    """Build an rST page and a MyST page with sphinx-pytest; return their first sections."""

    def build_pages(rst: str, md: str):
        sphinx_doctree.set_conf({"extensions": ["myst_parser", "sphinx_design", "sphinxext_fmha"],
                                 "fmha_ck_root": str(ck_root), "show_warning_types": True})
        src = sphinx_doctree.srcdir
        (src / "page_rst.rst").write_text("Page\n====\n\nText before.\n\n" + rst, encoding="utf-8")
        (src / "page_md.md").write_text("# Page\n\nText before.\n\n" + md, encoding="utf-8")
        result = sphinx_doctree("Index\n=====\n\n.. toctree::\n\n   page_rst\n   page_md\n")
        assert _ANSI.sub("", result.warnings) == ""
        return result.doctrees["page_rst"][0], result.doctrees["page_md"][0]

    return build_pages


def _pformat(section) -> str:
    # docutils < 0.22 prints boolean attributes as True/False, later versions as 1/0
    text = section.pformat()
    return re.sub(r'="True"', '="1"', re.sub(r'="False"', '="0"', text))


@pytest.mark.parametrize("case", sorted(TWINS))
def test_rst_and_myst_give_the_same_doctree(case, twins, file_regression, ck_root,
                                            tmp_path):
    """Both syntaxes give one doctree; its outline (or, for a filter check, its numbers)
    is a small snapshot reviewed by hand in tests/test_directives/."""
    from_rst, from_md = twins(*TWINS[case])
    assert _pformat(from_rst) == _pformat(from_md)
    file_regression.check(TWIN_VIEWS[case](from_rst), basename=case, extension=".txt")
    TWIN_FACTS[case](from_rst, ck_root, tmp_path)


def test_myst_nb_gives_the_same_doctree(ck_root, tmp_path):
    """myst-nb parses .md pages with its own MyST renderer: same doctree again."""
    pytest.importorskip("myst_nb")
    rst, md = TWINS["guide_rubrics"]
    pages = {
        "page_rst.rst": "Page\n====\n\nText before.\n\n" + rst,
        "page_md.md": "# Page\n\nText before.\n\n" + md,
    }
    src = write_project(tmp_path / "src", pages, ck_root=ck_root)
    conf = src / "conf.py"
    conf.write_text(conf.read_text(encoding="utf-8").replace('"myst_parser"', '"myst_nb"'),
                    encoding="utf-8")
    # its own process: myst-nb and myst-parser apps do not mix in one interpreter
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", "-d",
                             str(out / "doctrees"), str(src), str(out / "html")],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert _ANSI.sub("", result.stderr) == ""

    def pformat(docname):
        doctree = pickle.loads((out / "doctrees" / (docname + ".doctree")).read_bytes())
        return doctree[0].pformat()

    assert pformat("page_rst") == pformat("page_md")


# --------------------------------------------------------------------------- builders

ALL_DIRECTIVES = """\
All directives
==============

.. fmha-api-list::
   :link: guide/{api}

.. fmha-filename:: fwd_appendkv

.. fmha-filter-check::
   :api: fwd_appendkv
   :filter: *_vr_*

Guide
-----

.. fmha-kernel-guide:: fwd_appendkv
"""


@pytest.fixture(scope="module")
def builders_project(ck_root, tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("builders") / "src"
    pages = {"all.rst": ALL_DIRECTIVES}
    for api in ("batch_prefill", "bwd", "fwd", "fwd_appendkv", "fwd_splitkv", "pagedkv_prefill"):
        pages["guide/%s.rst" % api] = "%s\n%s\n\nA page.\n" % (api, "=" * len(api))
    (src / "guide").mkdir(parents=True)
    pages["index.rst"] = "Index\n=====\n\n.. toctree::\n   :glob:\n\n   all\n   guide/*\n"
    return write_project(src, pages, ck_root=ck_root)


@pytest.mark.parametrize("builder", ["html", "latex", "text", "epub"])
def test_builders_finish_without_warnings(builder, builders_project):
    app, _status, warnings = build(builders_project, builder)
    assert warnings == ""
    out = Path(app.outdir)
    if builder == "html":
        page = (out / "all.html").read_text(encoding="utf-8")
        assert '<div class="fmha-name"' in page
        assert "<details" in page and "sd-dropdown" in page
        assert "_static/fmha.css" in page
        assert (out / "_static" / "fmha.css").is_file()
        assert 'href="guide/fwd_appendkv.html"' in page
    elif builder == "latex":
        tex = next(out.glob("*.tex")).read_text(encoding="utf-8")
        tex = tex.replace("\\DUrole{fmha-wbr}{}", "")  # break points of long literals
        assert "fmha\\_fwd\\_appendkv\\_d128" in tex or "fmha_fwd_appendkv_d128" in tex
        assert "fmha-name" not in tex
        assert "=================" in tex  # the ruler under the example name
    elif builder == "epub":
        page = (out / "all.xhtml").read_text(encoding="utf-8")
        assert "fmha_fwd_appendkv_d128" in page
        assert next(out.glob("*.epub")).stat().st_size > 0
    else:
        text = (out / "all.txt").read_text(encoding="utf-8")
        assert "fmha_fwd_appendkv_d128_bf16" in text
        assert "=================-----=====" in text
        assert "Kernel sub-types" in text
    for path in out.rglob("*"):
        if path.suffix in (".html", ".xhtml", ".tex", ".txt") and path.is_file():
            content = path.read_text(encoding="utf-8", errors="replace")
            assert str(builders_project) not in content, path
            assert str(app.env.srcdir) not in content


# --------------------------------------------------------------------------- headings


def _titles(app, docname):
    from docutils import nodes

    doctree = app.env.get_doctree(docname)
    sections = [n[0].astext() for n in doctree.findall(nodes.section)]
    rubrics = [n.astext() for n in doctree.findall(nodes.rubric)]
    return sections, rubrics


def test_heading_modes(ck_root, tmp_path):
    guide = ".. fmha-kernel-guide:: fwd_appendkv\n   :sections: types, counts\n"
    pages = {
        "auto_last.rst": "Auto\n====\n\n" + guide,
        "auto_body_after.rst": "Body after\n==========\n\n" + guide + "\nA paragraph after.\n",
        "in_note.rst": "In a note\n=========\n\n.. note::\n\n" + "\n".join(
            "   " + line for line in guide.splitlines()) + "\n",
        "none.rst": "None\n====\n\n" + guide + "   :headings: none\n",
        "twice.rst": "Twice\n=====\n\n" + guide + "   :headings: section\n\n" + guide
        + "   :headings: section\n",
        "myst_sub.md": "# MyST\n\n## Sub\n\n```{fmha-kernel-guide} fwd_appendkv\n"
        ":sections: types, counts\n```\n\n## Next\n\nText.\n",
    }
    src = write_project(tmp_path / "src", pages, ck_root=ck_root)
    app, _status, warnings = build(src, "html")
    assert warnings == ""
    assert _titles(app, "auto_last")[0] == ["Auto", "Kernel sub-types", "Kernel counts"]
    sections, rubrics = _titles(app, "auto_body_after")
    assert sections == ["Body after"] and rubrics == ["Kernel sub-types", "Kernel counts"]
    sections, rubrics = _titles(app, "in_note")
    assert sections == ["In a note"] and rubrics == ["Kernel sub-types", "Kernel counts"]
    assert _titles(app, "none") == (["None"], [])
    sections, _ = _titles(app, "myst_sub")
    assert sections == ["MyST", "Sub", "Kernel sub-types", "Kernel counts", "Next"]
    doctree = app.env.get_doctree("twice")
    ids = [n["ids"][0] for n in doctree.findall(lambda n: n.tagname == "section")][1:]
    assert ids == ["fmha-fwd-appendkv-types", "fmha-fwd-appendkv-counts",
                   "fmha-fwd-appendkv-types-2", "fmha-fwd-appendkv-counts-2"]



def test_the_same_guide_twice_writes_each_id_once(ck_root, tmp_path):
    """Two copies of one guide on a page: no id is written twice, and every in-page
    link of a copy lands inside that copy (read back from the HTML with a regex)."""
    guide = ".. fmha-kernel-guide:: fwd_appendkv\n   :sections: types, fields\n"
    page = "Twice\n=====\n\nFirst\n-----\n\n" + guide + "\nSecond\n------\n\n" + guide
    src = write_project(tmp_path / "src", {"twice.rst": page}, ck_root=ck_root)
    _app, _status, warnings = build(src, "html")
    assert warnings == ""
    html = (src / "_build" / "html" / "twice.html").read_text(encoding="utf-8")
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert [i for i in set(ids) if ids.count(i) > 1] == []
    html = html[:html.index('class="sphinxsidebar"')]  # the theme's own page contents
    second = html.index('id="second"')
    for start, end in ((html.index('id="first"'), second), (second, len(html))):
        part = html[start:end]
        links = [h for h in re.findall(r'href="#([^"]+)"', part) if h.startswith("fmha-")]
        assert links, "the fields section links to its anchors"
        assert set(links) <= set(re.findall(r'\bid="([^"]+)"', part))


# --------------------------------------------------------------------------- bad input

BAD = """\
Bad inputs
==========

.. fmha-kernel-guide:: no_such_api

.. fmha-kernel-guide:: fwd_appendkv
   :mask: bogus

.. fmha-kernel-guide:: fwd_appendkv
   :receipt: two

.. fmha-kernel-guide:: fwd_appendkv
   :sections: 1, 99

.. fmha-filter-check::
   :api: fwd_appendkv
   :filter: *_nbias_*

.. fmha-filter-check::
   :api: fwd_appendkv
   :filter: *_d128_*
   :expect-count: 50

.. fmha-filename:: fwd_appendkv
   :type: NoSuchKernel

Still here: the good directive below renders.

.. fmha-filename:: fwd_appendkv
"""

EXPECTED_BAD = [
    (4, "api", "unknown FMHA API 'no_such_api'"),
    (6, "option", "mask: 'bogus' is not one of simplified, generic"),
    (9, "option", "receipt: 'two' is not an integer"),
    (12, "option", "sections: 99 is not a section number"),
    (15, "filter", "selects no kernel"),
    (19, "expectation", "expected 50 kernels (generate.py selects 49)"),
    (24, "option", "'NoSuchKernel' is not a kernel sub-type"),
]


def test_bad_inputs_are_located_warnings(ck_root, tmp_path):
    src = write_project(tmp_path / "src", {"bad.rst": BAD}, ck_root=ck_root)
    app, _status, warnings = build(src, "html")
    found = located(warnings, src / "bad.rst")
    assert len(found) == len(EXPECTED_BAD), warnings
    for (line, kind, text), (got_line, got_kind, body) in zip(EXPECTED_BAD, found):
        assert (got_line, got_kind) == (line, kind), body
        assert text in body
    assert "Traceback" not in warnings
    # the filter that matches nothing names its command
    assert "python generate.py -a fwd_appendkv -f '*_nbias_*' -l kernels.txt" in warnings
    html = (Path(app.outdir) / "bad.html").read_text(encoding="utf-8")
    assert "Still here: the good directive below renders." in html
    assert html.count('<div class="fmha-name"') == 1
    assert html.count("fmha-problem") == 6  # the expectation still renders the check
    assert str(src) not in html


def test_a_sub_type_the_filter_misses_is_a_located_warning(ck_root, tmp_path):
    """2.8.3's fwd_splitkv matches part 0 of ``-f`` against its combine kernels, whose
    names have no bias: ``*_nbias_*@*_d64_*`` selects split-KV kernels and none of the
    combine kernels they need. The page still shows the check."""
    pages = {"page.rst": "Page\n====\n\n.. fmha-filter-check::\n   :api: fwd_splitkv\n"
                         "   :filter: *_nbias_*@*_d64_*\n"}
    src = write_project(tmp_path / "src", pages, ck_root=ck_root)
    app, _status, warnings = build(src, "html")
    found = [(line, kind, body) for line, kind, body in located(warnings, src / "page.rst")
             if "FmhaFwdSplitKVCombineKernel" in body]
    # the miss, and the write mode's unresolved combine kernels it causes
    assert [(line, kind) for line, kind, _ in found] == [(4, "filter")] * 2, warnings
    assert sum("'_nbias_' occurs in no FmhaFwdSplitKVCombineKernel name" in body
               for _, _, body in found) == 1
    html = (Path(app.outdir) / "page.html").read_text(encoding="utf-8")
    assert "fmha-miss" in html and "generate.py selects <strong>" in html


NEEDS = """\
Needs
=====

.. fmha-kernel-set:: fwd_appendkv
   :need: hdim=48

.. fmha-kernel-guide:: fwd_appendkv
   :need: head=128
   :sections: minimal

.. fmha-kernel-set:: fwd_appendkv
   :need: dtype=fp8; hdim=32

.. fmha-kernel-guide:: fwd_appendkv
   :need: dtype=fp8; hdim=32,128
   :sections: minimal, counts
"""


def test_needs_the_api_lacks_are_located_errors_and_warnings(ck_root, tmp_path):
    """An unknown segment or value is an error at the directive's line naming the valid
    ones; values no kernel has together are said in the page and are a warning (issue
    43, item 1)."""
    src = write_project(tmp_path / "src", {"needs.rst": NEEDS}, ck_root=ck_root)
    app, _status, warnings = build(src, "html")
    path = re.escape(str(src / "needs.rst"))
    errors = re.findall(r"^%s:(\d+): ERROR: (.*?)\[fmha\.need\]$" % path, warnings,
                        re.M | re.S)
    assert [int(line) for line, _ in errors] == [4, 7], warnings
    assert "no value of segment hdim is '48' (its values: _d32, _d64, _d128, _d256)" \
        in errors[0][1]
    assert "no segment 'head'" in errors[1][1] and "hdim, dtype, tile b" in errors[1][1]
    found = [(line, kind) for line, kind, _ in located(warnings, src / "needs.rst")]
    assert found == [(11, "need"), (14, "need")], warnings
    html = unescape(re.sub(r"<[^>]+>", "", (Path(app.outdir) / "needs.html").read_text(
        encoding="utf-8"))).replace("\u2019", "'")  # (smart quotes)
    assert "No kernel of fwd_appendkv has the workload's values together" in html
    assert "No kernel of fwd_appendkv has this combination of the workload's values: " \
           "hdim _d32; dtype _fp8" in html
    assert "Kernel set for the workload" in html


def test_missing_ck_root(tmp_path):
    pages = {"page.rst": "Page\n====\n\n.. fmha-api-list::\n\nText after.\n"}
    src = write_project(tmp_path / "src", pages, ck_root=tmp_path / "does-not-exist")
    app, _status, warnings = build(src, "html")
    found = located(warnings, src / "page.rst")
    assert [(line, kind) for line, kind, _ in found] == [(4, "ck-root")]
    assert "does not exist" in found[0][2]
    assert "Text after." in (Path(app.outdir) / "page.html").read_text(encoding="utf-8")


def test_no_ck_root_found_upward():
    # not under pytest's shared temporary folder: the upward search also looks at each
    # ancestor's grandchildren, and other tests leave composable_kernel folders there
    base = Path(tempfile.mkdtemp(prefix="fmha-no-ck-"))
    try:
        pages = {"page.rst": "Page\n====\n\n.. fmha-kernel-guide:: fwd\n"}
        src = write_project(base / "project" / "src", pages)
        _app, _status, warnings = build(src, "html")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    found = located(warnings, src / "page.rst")
    assert [(line, kind) for line, kind, _ in found] == [(4, "ck-root")]
    assert "no Composable Kernel tree found" in found[0][2]


def test_recommendation_not_available(ck_root, tmp_path, monkeypatch):
    from sphinxext_fmha.session import Session

    def unavailable(self, api, options=None, needs=(), brief=False, prepared=None):
        raise NotImplementedError("recommendations are switched off in this test")

    monkeypatch.setattr(Session, "recommend", unavailable)
    pages = {"page.rst": "Page\n====\n\n.. fmha-kernel-guide:: fwd_appendkv\n"
                         "   :sections: 1, 5-8\n"}
    src = write_project(tmp_path / "src", pages, ck_root=ck_root)
    app, _status, warnings = build(src, "html")
    found = located(warnings, src / "page.rst")
    assert [(line, kind) for line, kind, _ in found] == [(4, "recommend")], warnings
    assert "recommendations are switched off in this test" in found[0][2]
    sections, _ = _titles(app, "page")
    assert sections == ["Page", "Kernel sub-types", "Kernel counts"]
    doctree = app.env.get_doctree("page")
    counts = [t for t in doctree.findall(lambda n: n.tagname == "table")
              if "fmha-counts" in t["classes"]][0]
    assert [e.astext() for e in counts.findall(lambda n: n.tagname == "entry")][:2] == [
        "Sub-type", "Full"]


def test_gaps_are_warnings(ck_root, tmp_path, monkeypatch):
    import copy

    from sphinxext_fmha.model import Gap
    from sphinxext_fmha.session import Session

    original = Session.model

    def with_gap(self, api, options=None):
        model = copy.deepcopy(original(self, api, options) if options else original(self, api))
        model.gaps.append(Gap(what="a test gap", where="codegen/ops/x.py:1", why="made up"))
        # a fact only a section this page does not show needs: not a warning here
        model.gaps.append(Gap(what="a tiles gap", why="unknown", section="tiles"))
        return model

    monkeypatch.setattr(Session, "model", with_gap)
    pages = {"page.rst": "Page\n====\n\n.. fmha-kernel-guide:: fwd_appendkv\n"
                         "   :sections: gaps\n"}
    src = write_project(tmp_path / "src", pages, ck_root=ck_root)
    app, _status, warnings = build(src, "html")
    found = located(warnings, src / "page.rst")
    assert [(line, kind) for line, kind, _ in found] == [(4, "gap")], warnings
    assert "left 1 gap(s): a test gap (codegen/ops/x.py:1): made up" in found[0][2]
    assert "tiles gap" not in warnings
    html = (Path(app.outdir) / "page.html").read_text(encoding="utf-8")
    assert "a test gap" in html and "a tiles gap" in html
    # suppress_warnings works with the subtype
    src2 = write_project(tmp_path / "src2", pages, ck_root=ck_root,
                         conf='suppress_warnings = ["fmha.gap"]')
    _app, _status, warnings = build(src2, "html")
    assert warnings == ""


def test_strict_mode_fails_the_build_without_a_crash_report(ck_root, tmp_path):
    pages = {"page.rst": "Page\n====\n\n.. fmha-kernel-guide:: no_such_api\n\n"
                         ".. fmha-kernel-guide:: other_api\n"}
    src = write_project(tmp_path / "src", pages, ck_root=ck_root, conf="fmha_strict = True")
    app, _status, warnings = build(src, "html")
    assert app.statuscode == 1
    # every problem is a located error line; no traceback, no "Extension error"
    assert re.search(r"page\.rst:4: ERROR: .*unknown FMHA API 'no_such_api'", warnings)
    assert re.search(r"page\.rst:6: ERROR: .*unknown FMHA API 'other_api'", warnings)
    assert "Traceback" not in warnings and "Extension error" not in warnings
    # the next (incremental) build reads the page again and still fails
    app, _status, warnings = build(src, "html")
    assert app.statuscode == 1 and "page.rst:4: ERROR" in warnings


# --------------------------------------------------------------------------- fake trees


@pytest.mark.parametrize("how", ["crash", "hang"])
def test_generate_py_failures(how, synthetic_tree, tmp_path):
    root = broken_tree(synthetic_tree, how)
    page = "Page\n====\n\n.. fmha-kernel-guide:: toy\n\nText after.\n"
    if how == "crash":
        page += "\n.. fmha-api-list::\n"
    src = write_project(tmp_path / "src", {"page.rst": page}, ck_root=root,
                        conf="fmha_timeout = 3\nfmha_cache_dir = %r" % str(tmp_path / "cache"))
    app, _status, warnings = build(src, "html")
    found = located(warnings, src / "page.rst")
    expected = [(4, "generate")] + ([(8, "generate")] if how == "crash" else [])
    assert [(line, kind) for line, kind, _ in found] == expected, warnings
    body = found[0][2]
    assert "python generate.py -a toy" in body
    if how == "crash":
        assert "synthetic generate.py crash for the tests" in body  # the stderr tail
        assert "sphinxext_fmha" not in body  # generate.py's frames, not the probe's around them
        assert "python generate.py -a toy -l kernels.txt" in found[1][2]
        html = (Path(app.outdir) / "page.html").read_text(encoding="utf-8")
        assert "listing failed (see the build log)" in html  # the table still renders
    else:
        assert "timed out after 3 s" in body
    assert "Traceback (most recent call last)" not in warnings.split("stderr")[0]
    html = (Path(app.outdir) / "page.html").read_text(encoding="utf-8")
    assert "Text after." in html and "fmha-problem" in html


def test_filter_rejected_by_generate_py(synthetic_tree, tmp_path):
    root = broken_tree(synthetic_tree, "reject")
    app, warnings, found = build_page(
        tmp_path, root, "Page\n====\n\n.. fmha-filter-check::\n   :api: toy\n"
                        "   :filter: *reject*\n\n.. fmha-filename:: toy\n", tmp_path / "cache")
    assert [(line, kind) for line, kind, _ in found] == [(4, "filter")], warnings
    assert "python generate.py -a toy -f '*reject*'" in found[0][2]
    assert "invalid filter" in found[0][2]
    html = (Path(app.outdir) / "page.html").read_text(encoding="utf-8")
    assert '<div class="fmha-name"' in html


# --------------------------------------------------------------------------- parallel, incremental


PID_LOG = """
import os
def setup(app):
    def note(app, docname, source):
        with open(LOG, "a") as handle:
            handle.write(docname + " " + str(os.getpid()) + "\\n")
    app.connect("source-read", note)
"""


def test_parallel_build(ck_root, tmp_path):
    pages = {}
    for index in range(7):
        pages["p%d.rst" % index] = "Page %d\n=======\n\n.. fmha-filename:: fwd_appendkv\n\n" \
                                   ".. fmha-filter-check::\n   :api: fwd_appendkv\n" \
                                   "   :filter: *_d%d_*\n" % (index, (32, 64, 128, 256)[index % 4])
    pages["guide.md"] = "# Guide\n\n```{fmha-kernel-guide} fwd_appendkv\n```\n"
    pids = tmp_path / "pids.txt"
    src = write_project(tmp_path / "src", pages, ck_root=ck_root,
                        extra_conf=PID_LOG.replace("LOG", repr(str(pids))))
    app, _status, warnings = build(src, "html", parallel=2)
    assert warnings == ""
    assert app.parallel == 2
    readers = {line.split()[1] for line in pids.read_text().splitlines()}
    assert str(os.getpid()) not in readers  # the pages were read in worker processes
    for index in range(7):
        assert '<div class="fmha-name"' in (Path(app.outdir) / ("p%d.html" % index)).read_text(
            encoding="utf-8")
    assert "Recommended minimal set" in (Path(app.outdir) / "guide.html").read_text(encoding="utf-8")


def _copy_tree(ck_root: Path, dest: Path) -> Path:
    from sphinxext_fmha.locate import FMHA_SUBDIR

    target = dest / FMHA_SUBDIR
    shutil.copytree(ck_root / FMHA_SUBDIR, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return dest


READ_LOG = """
def setup(app):
    def note(app, docname, source):
        with open(%r, "a") as handle:
            handle.write(docname + "\\n")
    app.connect("source-read", note)
"""


def test_incremental_build(ck_root, tmp_path, monkeypatch):
    root = _copy_tree(ck_root, tmp_path / "ck")
    trace = tmp_path / "runs.txt"
    read_log = tmp_path / "read.txt"
    monkeypatch.setenv("FMHA_TRACE_RUNS", str(trace))
    pages = {
        "guide.rst": "Guide\n=====\n\n.. fmha-kernel-guide:: fwd_appendkv\n   :sections: 1, 2, 4\n",
        "plain.rst": "Plain\n=====\n\nNo directive here.\n",
        "other.md": "# Other\n\nNo directive either.\n",
    }
    src = write_project(tmp_path / "src", pages, ck_root=root,
                        conf="fmha_cache_dir = %r" % str(tmp_path / "cache"),
                        extra_conf=READ_LOG % str(read_log))
    _app, _status, warnings = build(src)
    assert warnings == ""
    assert sorted(read_log.read_text().split()) == ["guide", "index", "other", "plain"]
    assert trace.read_text().strip(), "the first build runs generate.py"

    # nothing changed: nothing is read, no generate.py process is started
    read_log.unlink()
    trace.write_text("")
    clear_sessions()
    _app, _status, warnings = build(src)
    assert warnings == ""
    assert not read_log.exists()
    assert trace.read_text() == ""

    # a codegen file changes: only the page that uses the tree is read again
    module = root / "example/ck_tile/01_fmha/codegen/ops/fmha_fwd_appendkv.py"
    module.write_text(module.read_text(encoding="utf-8") + "\n# touched by the tests\n",
                      encoding="utf-8")
    stamp = module.stat().st_mtime + 2
    os.utime(module, (stamp, stamp))
    app, _status, warnings = build(src)
    assert warnings == ""
    assert read_log.read_text().split() == ["guide"]
    assert trace.read_text().strip(), "the changed tree is analysed again"
    assert "Kernel sub-types" in (Path(app.outdir) / "guide.html").read_text(encoding="utf-8")


def test_one_session_per_build(ck_root, tmp_path, monkeypatch):
    """Many directives on many pages: the expensive work is done once per (tree, API,
    options), not once per directive."""
    from sphinxext_fmha.directives import sphinx_glue as common

    trace = tmp_path / "runs.txt"
    monkeypatch.setenv("FMHA_TRACE_RUNS", str(trace))
    directive = ".. fmha-filename:: fwd_appendkv\n\n.. fmha-filename:: fwd_appendkv\n"
    pages = {"p%d.rst" % i: "P%d\n==\n\n%s" % (i, directive) for i in range(3)}
    src = write_project(tmp_path / "src", pages, ck_root=ck_root,
                        conf="fmha_cache_dir = %r" % str(tmp_path / "cache"))
    _app, _status, warnings = build(src)
    assert warnings == ""
    assert len(common._SESSIONS) == 1
    runs = [line.split("\t")[0] for line in trace.read_text().splitlines()]
    assert len(runs) == len(set(runs)), runs  # no command ran twice
