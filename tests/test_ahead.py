"""Steps started ahead of the pages (``directives/page_scan.py``): the pages are the same
with and without them, a failure met ahead is still a located warning on each page
that needs it, nothing runs twice, and an interrupt ends them with the build (synthetic
trees: fast)."""

from __future__ import annotations

import os
import re
import signal
import sys
import textwrap
from pathlib import Path

import pytest

from sphinxext_fmha.directives import page_scan as ahead
from sphinxext_fmha.directives.page_scan import scan_directives
from sphinxext_fmha.directives.sphinx_glue import clear_sessions
from sphinxext_fmha.guide import steps_ahead

from helpers.faults import FAULTS, left_running
from helpers.launch_twin import interrupt_once_started
from helpers.project import broken_tree, build, located, write_project
from helpers.synthetic import make_tree

PAGES = {
    "guide.rst": "Guide\n=====\n\n.. fmha-kernel-guide:: toy\n",
    "second.md": "# Second\n\n```{fmha-kernel-guide} toy2\n:sections: 1, 2\n```\n",
    "checks.rst": "Checks\n======\n\n.. fmha-filter-check::\n   :api: toy\n   :filter: *_nlse*\n\n"
                  ".. fmha-filter-check:: *_lse*\n   :api: toy\n\n.. fmha-filename:: toy2\n",
    "apis.rst": "APIs\n====\n\n.. fmha-api-list::\n",
}


#: every test builds with a fixed date and no run tracing, from fresh sessions
pytestmark = pytest.mark.usefixtures("reproducible_build")


def test_scan_finds_rst_and_myst_directives_with_their_options():
    text = textwrap.dedent("""\
        .. fmha-kernel-guide:: fwd
           :receipt: 2
           :sections: 1-4

        Text.

           .. fmha-filter-check::
              :api: bwd
              :filter: *_d128_*

        ```{fmha-filename} fwd_splitkv
        :mask: "generic"
        ```

        :::{fmha-filter-playground} bwd
        :::

        .. note:: not ours
        .. fmha-warning-types::

        Examples are not directives::

            .. fmha-kernel-guide:: example_literal

        .. code-block:: rst

           .. fmha-kernel-guide:: example_code_block

        ```rst
        .. fmha-kernel-guide:: example_fence
        ```

        ````md
        ```{fmha-kernel-guide} example_nested_fence
        ```
        ````

        ::::{tab-set}
        :::{tab-item} In a tab
        ```{fmha-kernel-guide} in_a_tab
        ```
        :::
        ::::

        .. note::

           .. fmha-filename:: in_a_note

           .. admonition:: Nested::

              .. fmha-filename:: in_a_nested_admonition
        """)
    assert list(scan_directives(text)) == [
        ("fmha-kernel-guide", "fwd", {"receipt": "2", "sections": "1-4"}),
        ("fmha-filter-check", "", {"api": "bwd", "filter": "*_d128_*"}),
        ("fmha-filename", "fwd_splitkv", {"mask": "generic"}),
        ("fmha-filter-playground", "bwd", {}),
        ("fmha-kernel-guide", "in_a_tab", {}),
        ("fmha-filename", "in_a_note", {}),
        ("fmha-filename", "in_a_nested_admonition", {}),
    ]


def _html(app, names):
    return {name: (Path(app.outdir) / (name + ".html")).read_text(encoding="utf-8")
            for name in names}


def test_pages_are_the_same_with_and_without_steps_started_ahead(tmp_path, monkeypatch):
    root = make_tree(tmp_path / "tree", "new_api")
    trace = tmp_path / "runs.txt"
    monkeypatch.setenv("FMHA_TRACE_RUNS", str(trace))
    names = [name.rsplit(".", 1)[0] for name in PAGES] + ["index"]
    src = write_project(tmp_path / "ahead", PAGES, ck_root=root,
                        conf="fmha_cache_dir = %r" % str(tmp_path / "cache-ahead"))
    app, status, warnings = build(src)
    warnings_ahead = warnings.replace(str(src), "SRC")
    started = re.findall(r"^fmha: 2 APIs of \S+: started ahead of the pages, 2 at a time: "
                         r"(.*)\.\.\. \d+\.\d s$", status, re.M)
    # the guide's other --mask listing is made by its probe: no listing of its own; the
    # second guide (toy2, the last page read) is analysed in a worker interpreter
    assert started == ["1 batch, 2 probes, 1 worker"], status
    assert re.search(r"^fmha: toy2 of \S+: analysed in a worker interpreter\.\.\. \d+\.\d s$",
                     status, re.M), status
    with_ahead = _html(app, names)
    runs = [line.split("\t")[0] for line in trace.read_text().splitlines()]
    # nothing ran twice (a batch's command line does not name its filters)
    assert len(runs) == len(set(runs)) + sum(r.startswith("batch of") for r in runs) - len(
        {r for r in runs if r.startswith("batch of")}), runs
    assert sum("observed by the probe" in run for run in runs) == 2, runs
    assert sum(run.startswith("sphinxext-fmha prepare") for run in runs) == 1, runs

    # without worker interpreters (the same steps ahead otherwise)
    clear_sessions()
    monkeypatch.setattr(ahead, "steps_ahead", lambda session, uses, workers: steps_ahead(
        session, uses, workers=False))
    src = write_project(tmp_path / "no-workers", PAGES, ck_root=root,
                        conf="fmha_cache_dir = %r" % str(tmp_path / "cache-no-workers"))
    app, status, warnings = build(src)
    assert "1 batch, 2 probes..." in status and "worker interpreter" not in status
    assert warnings.replace(str(src), "SRC") == warnings_ahead
    assert _html(app, names) == with_ahead

    clear_sessions()
    monkeypatch.setattr(ahead, "steps_ahead", lambda session, uses, workers: [])
    src = write_project(tmp_path / "alone", PAGES, ck_root=root,
                        conf="fmha_cache_dir = %r" % str(tmp_path / "cache-alone"))
    app, status, warnings = build(src)
    assert "started ahead" not in status
    assert warnings.replace(str(src), "SRC") == warnings_ahead
    assert _html(app, names) == with_ahead


def test_a_probe_failing_ahead_is_a_located_warning_on_each_page(synthetic_tree, tmp_path,
                                                                  monkeypatch):
    root = broken_tree(synthetic_tree, "crash")
    trace = tmp_path / "runs.txt"
    monkeypatch.setenv("FMHA_TRACE_RUNS", str(trace))
    pages = {"page.rst": "Page\n====\n\n.. fmha-kernel-guide:: toy\n\n"
                         ".. fmha-filename:: toy\n",
             "other.rst": "Other\n=====\n\nText.\n\n.. fmha-filter-check::\n   :api: toy\n"
                          "   :filter: *_nlse*\n"}
    src = write_project(tmp_path / "src", pages, ck_root=root,
                        conf="fmha_cache_dir = %r" % str(tmp_path / "cache"))
    app, status, warnings = build(src, "html")
    assert "started ahead of the pages" in status
    for page, lines in (("page.rst", [4, 6]), ("other.rst", [6])):
        found = located(warnings, src / page)
        assert [line for line, _, _ in found] == lines, warnings
        assert all(kind == "generate" for _, kind, _ in found), warnings
        assert all("synthetic generate.py crash for the tests" in body for _, _, body in found)
    assert "Traceback (most recent call last)" not in warnings.split("stderr")[0]
    probes = [line for line in trace.read_text().splitlines() if "observed by the probe" in line]
    assert len(probes) == 1, probes  # run once, ahead; each page got its failure

    # the failure is not kept beyond the build: the next build (every page read again)
    # tries again
    trace.write_text("")
    build(src, "html", out=tmp_path / "again")
    assert "observed by the probe" in trace.read_text()


def test_a_warm_rebuild_starts_nothing_and_recomputes_no_token_fact(synthetic_tree, tmp_path,
                                                                     monkeypatch):
    from sphinxext_fmha.verify import token_facts

    root = synthetic_tree("base")
    pages = {"guide.rst": PAGES["guide.rst"],
             "checks.rst": PAGES["checks.rst"].replace("toy2", "toy")}
    src = write_project(tmp_path / "src", pages, ck_root=root,
                        conf="fmha_cache_dir = %r" % str(tmp_path / "cache"))
    app, status, _warnings = build(src, "html")
    assert "started ahead of the pages" in status
    cold = _html(app, ["guide", "checks"])
    clear_sessions()
    trace = tmp_path / "runs.txt"
    monkeypatch.setenv("FMHA_TRACE_RUNS", str(trace))

    def recomputed(*args, **kwargs):
        raise AssertionError("a token fact was computed again")

    monkeypatch.setattr(token_facts, "token_counts", recomputed)
    monkeypatch.setattr(token_facts, "token_dispatch", recomputed)
    # every page read again (a new output folder: as -E), with the same cache
    app, status, warnings = build(src, "html", out=tmp_path / "again")
    assert warnings == "" and "fmha:" not in status
    assert not trace.exists() or trace.read_text() == ""
    assert _html(app, ["guide", "checks"]) == cold  # the kept token facts are the same


def test_an_interrupt_ends_the_steps_started_ahead_and_their_children(tmp_path):
    root = make_tree(tmp_path / "tree", "new_api")
    generate = root / "example" / "ck_tile" / "01_fmha" / "generate.py"
    # it hangs in the steps' runs, not where the session first reads what generate.py
    # offers (a run with no arguments, up to its parse_args)
    generate.write_text("import sys\nif len(sys.argv) > 1:\n"
                        + textwrap.indent(textwrap.dedent(FAULTS["hang_with_grandchild"]), "    ")
                        + "\n" + generate.read_text(encoding="utf-8"), encoding="utf-8")
    src = write_project(tmp_path / "src", PAGES, ck_root=root,
                        conf="fmha_cache_dir = %r\nfmha_timeout = 300" % str(tmp_path / "cache"))
    pids, tmpdir = tmp_path / "pids.txt", tmp_path / "tmpdir"
    pids.touch()
    tmpdir.mkdir()
    env = dict(os.environ, FMHA_FAULT_PIDS=str(pids), TMPDIR=str(tmpdir), NO_COLOR="1",
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("FMHA_TRACE_RUNS", None)
    argv = [sys.executable, "-m", "sphinx", "-b", "html", str(src), str(tmp_path / "out")]
    # two steps run ahead at once: two hanging generate.py, each with a grandchild
    returncode, _ = interrupt_once_started(
        argv, cwd=tmp_path, env=env, pids=pids, started=4, signum=signal.SIGINT,
        stderr=tmp_path / "err", wait=60)
    assert returncode != 0  # it ended on the interrupt (the wait only bounds a hang)
    assert "Traceback" not in (tmp_path / "err").read_text(errors="replace")
    started = [int(p) for p in pids.read_text().split()]
    assert not left_running(started), "children left running"
    # nothing new started after the interrupt: two probes were running, each with its
    # generate.py run and maybe already the forked run of the other --mask mode, each
    # run with its grandchild (a third step would add more)
    assert len(started) in (4, 6, 8), started
    assert not list(tmpdir.glob("fmha-*")), "temporary folders left behind"


def test_with_parallel_reading_the_steps_finish_before_the_readers_fork(tmp_path, monkeypatch):
    root = make_tree(tmp_path / "tree", "new_api")
    trace = tmp_path / "runs.txt"
    monkeypatch.setenv("FMHA_TRACE_RUNS", str(trace))
    src = write_project(tmp_path / "src", PAGES, ck_root=root,
                        conf="fmha_cache_dir = %r" % str(tmp_path / "cache"))
    app, status, _warnings = build(src, "html", parallel=2)
    assert app.parallel == 2
    ahead_at = status.index("started ahead of the pages")
    assert ahead_at < status.index("reading sources"), status
    runs = [line.split("\t")[0] for line in trace.read_text().splitlines()]
    assert sum("observed by the probe" in run for run in runs) == 2, runs  # not in a reader
    assert sum("-m generic -l" in run for run in runs) == 0, runs  # the probe lists it
    # the readers analyse their pages side by side: no worker interpreter
    assert not [run for run in runs if run.startswith("sphinxext-fmha prepare")], runs
