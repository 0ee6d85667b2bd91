"""The collector pause that a page's analysis and work started ahead share."""

import gc
import re
import subprocess
import sys
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


class _Cycle:
    """A container that refers to itself: only the cyclic collector can free it."""

    def __init__(self) -> None:
        self.me = self


def test_what_a_pause_leaves_alive_is_old_and_its_cycles_still_go(collector_on):
    """After the pause its survivors sit in the oldest generation (the younger
    generations' collections do not walk them again), nothing stays frozen, and a
    reference cycle dropped during the pause is freed by the next full collection."""
    import weakref

    with collector_paused():
        kept = [[index] for index in range(1000)]
        dropped = _Cycle()
        gone = weakref.ref(dropped)
        del dropped
    young = {id(obj) for obj in gc.get_objects(generation=0)}
    old = {id(obj) for obj in gc.get_objects(generation=2)}
    assert all(id(item) in old and id(item) not in young for item in kept)
    assert gc.get_freeze_count() == 0
    assert gone() is not None  # a cycle: reference counting alone does not free it
    gc.collect()
    assert gone() is None


def test_objects_frozen_on_purpose_stay_frozen(collector_on):
    """Checked on one object frozen here, not by counting: another thread may free
    frozen objects meanwhile (reference counting frees them as any other), and the
    count drops (seen in CI, under pytest-xdist)."""
    sentinel = [object()]  # a container: tracked by the collector until frozen
    gc.freeze()
    try:
        assert gc.get_freeze_count() > 0
        with collector_paused():
            kept = [[index] for index in range(100)]
        # get_objects() lists the three generations, not the frozen objects
        tracked = {id(obj) for obj in gc.get_objects()}
        assert id(sentinel) not in tracked
        assert all(id(item) in tracked for item in kept)  # the pause froze nothing
    finally:
        gc.unfreeze()
    assert id(sentinel) in {id(obj) for obj in gc.get_objects()}


EXIT_SCRIPT = """
import atexit, gc, sys
# registered first, so it runs last: after every handler the build registered
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count(), flush=True))
from sphinx.application import Sphinx
src, out = sys.argv[1], sys.argv[2]
app = Sphinx(src, src, out + "/html", out + "/doctrees", "html", status=None, warning=None)
app.build()
print("frozen after the build:", gc.get_freeze_count(), flush=True)
"""


def test_the_survivors_of_a_build_are_frozen_at_exit_not_before(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text('extensions = ["sphinxext_fmha"]\n', encoding="utf-8")
    (src / "index.rst").write_text("Title\n=====\n\nText.\n", encoding="utf-8")
    ran = subprocess.run([sys.executable, "-c", EXIT_SCRIPT, str(src), str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    after_build = re.search(r"frozen after the build: (\d+)", ran.stdout)
    at_exit = re.search(r"frozen at exit: (\d+)", ran.stdout)
    assert after_build and at_exit, ran.stdout
    assert int(after_build.group(1)) == 0  # while the process lives, nothing changes
    assert int(at_exit.group(1)) > 1000  # Sphinx's environment at least


CLI_EXIT_SCRIPT = """
import atexit, gc, sys
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count(), flush=True))
from sphinxext_fmha.cli import main
status = main(["apis", "--ck-root", sys.argv[1]])
print("frozen after the command:", gc.get_freeze_count(), "status", status, flush=True)
"""


def test_the_cli_freezes_what_is_alive_at_exit(tmp_path):
    """A worker interpreter (``sphinxext-fmha prepare``) ends holding a guide's analysis:
    the CLI registers the same exit handler (here a command that fails: no CK tree)."""
    ran = subprocess.run([sys.executable, "-c", CLI_EXIT_SCRIPT, str(tmp_path / "no-ck")],
                         capture_output=True, text=True, timeout=300)
    after = re.search(r"frozen after the command: (\d+) status (\d+)", ran.stdout)
    at_exit = re.search(r"frozen at exit: (\d+)", ran.stdout)
    assert after and at_exit, (ran.stdout, ran.stderr[-2000:])
    assert int(after.group(1)) == 0 and int(after.group(2)) != 0
    assert int(at_exit.group(1)) > 1000
