"""The shorter switch interval while threads of ours wait for children: shared by
nested and concurrent holds, never raised, and in force while a build reads pages
with the directives, restored after it."""

from __future__ import annotations

import sys
import threading

import pytest

from sphinxext_fmha.process.handoffs import lower_switch_interval, quick_handoffs

from helpers.project import build, write_project
from helpers.synthetic import make_tree

DEFAULT = 0.005  # CPython's


@pytest.fixture
def default_interval():
    was = sys.getswitchinterval()
    sys.setswitchinterval(DEFAULT)
    yield
    sys.setswitchinterval(was)


def test_holds_share_the_shorter_interval_and_the_last_one_restores_it(default_interval):
    first = lower_switch_interval()
    assert sys.getswitchinterval() == pytest.approx(0.001)
    in_thread = []
    holding, may_end = threading.Event(), threading.Event()

    def second() -> None:
        with quick_handoffs():
            holding.set()
            may_end.wait(10)
            in_thread.append(sys.getswitchinterval())

    thread = threading.Thread(target=second)
    thread.start()
    assert holding.wait(10)
    first()
    first()  # ending a hold twice ends it once: the thread's hold goes on
    may_end.set()
    thread.join(10)
    assert in_thread == [pytest.approx(0.001)]
    assert sys.getswitchinterval() == pytest.approx(DEFAULT)


def test_an_interval_already_shorter_is_kept(default_interval):
    sys.setswitchinterval(0.0002)
    shorter = sys.getswitchinterval()  # as CPython keeps it (whole microseconds)
    with quick_handoffs():
        assert sys.getswitchinterval() == shorter
    assert sys.getswitchinterval() == shorter


@pytest.mark.usefixtures("reproducible_build")
def test_pages_with_directives_are_read_with_the_shorter_interval(tmp_path, default_interval):
    root = make_tree(tmp_path / "tree", "new_api")
    seen = tmp_path / "seen.txt"
    # conf.py's own setup() records the interval as each page is read
    conf = "\n".join([
        "import sys",
        "fmha_cache_dir = %r" % str(tmp_path / "cache"),
        "def setup(app):",
        "    def read(app, docname, source):",
        "        with open(%r, 'a') as out:" % str(seen),
        "            out.write('%s %r\\n' % (docname, sys.getswitchinterval()))",
        "    app.connect('source-read', read)",
    ])
    pages = {"guide.rst": "Guide\n=====\n\n.. fmha-kernel-guide:: toy\n"}
    src = write_project(tmp_path / "src", pages, ck_root=root, conf=conf)
    _app, status, _warnings = build(src)
    assert "started ahead of the pages" in status
    read = dict(line.split() for line in seen.read_text().splitlines())
    assert sorted(read) == ["guide", "index"]
    assert all(float(value) == pytest.approx(0.001) for value in read.values()), read
    assert sys.getswitchinterval() == pytest.approx(DEFAULT)  # the build gave it back
