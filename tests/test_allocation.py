"""The collector pause that a page's analysis and work started ahead share."""

import gc
import threading

import pytest

from sphinxext_fmha.cppapi.allocation import collector_paused


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_overlapping_blocks_in_two_threads_resume_when_the_last_ends(collector_on):
    entered, second_may_leave = threading.Event(), threading.Event()
    seen = {}

    def second() -> None:
        with collector_paused():
            entered.set()
            second_may_leave.wait(10)
            seen["while the second runs alone"] = gc.isenabled()

    thread = threading.Thread(target=second)
    with collector_paused():
        thread.start()
        assert entered.wait(10)
    seen["after the first ends"] = gc.isenabled()
    second_may_leave.set()
    thread.join(10)
    assert seen == {"after the first ends": False, "while the second runs alone": False}
    assert gc.isenabled()


def test_a_failing_block_resumes_and_a_paused_collector_stays_paused(collector_on):
    with pytest.raises(ValueError):
        with collector_paused():
            with collector_paused():
                raise ValueError("inner")
    assert gc.isenabled()
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def _sphinx(src, out):
    from sphinx.application import Sphinx

    return Sphinx(str(src), str(src), str(out / "html"), str(out / "doctrees"), "html",
                  status=None, warning=None, freshenv=True)


def test_a_build_ends_with_its_survivors_frozen_and_the_next_build_thaws_them(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text('extensions = ["sphinxext_fmha"]\n', encoding="utf-8")
    (src / "index.rst").write_text("Title\n=====\n\nText.\n", encoding="utf-8")
    gc.unfreeze()
    try:
        app = _sphinx(src, tmp_path / "out")
        app.build()
        # what the build left alive (Sphinx's environment at least) is out of sight
        frozen = gc.get_freeze_count()
        assert frozen > 1000, frozen
        assert not any(o is app.env for o in gc.get_objects())
        _sphinx(src, tmp_path / "again")  # builder-inited of the next build
        assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
