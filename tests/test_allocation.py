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
