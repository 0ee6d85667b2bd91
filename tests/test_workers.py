"""Guides analysed ahead in worker interpreters (``sphinxext-fmha prepare``): the same
cache the pages read, the same pages and warnings whether a worker ran, failed or was
claimed by its page, and no child left behind when the build is interrupted
(synthetic trees: fast)."""

from __future__ import annotations

import os
import re
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sphinxext_fmha import analysis_workers as worker
from sphinxext_fmha.cli import main
from sphinxext_fmha.directives import page_scan as ahead
from sphinxext_fmha.directives.sphinx_glue import clear_sessions
from sphinxext_fmha.guide import DirectiveUse, steps_ahead
from sphinxext_fmha.session import Session

from helpers.faults import FAULTS, left_running
from helpers.launch_twin import interrupt_once_started
from helpers.project import EPOCH, build, write_project
from helpers.synthetic import make_tree

#: two guides, each on its own page; read in this order (the toctree sorts them)
GALLERY = {"a_first.rst": "First\n=====\n\n.. fmha-kernel-guide:: toy\n",
           "b_second.rst": "Second\n======\n\n.. fmha-kernel-guide:: toy2\n"}
PREPARE = "sphinxext-fmha prepare"


#: every test builds with a fixed date and no run tracing, from fresh sessions
pytestmark = pytest.mark.usefixtures("reproducible_build")


def _runs(trace: Path):
    return [line.split("\t")[0] for line in trace.read_text().splitlines()] if trace.exists() else []


def _pages(app):
    return {name: (Path(app.outdir) / (name + ".html")).read_text(encoding="utf-8")
            for name in ("a_first", "b_second")}


def _gallery(tmp_path, root, name, pages=GALLERY):
    src = write_project(tmp_path / name, pages, ck_root=root,
                        conf="fmha_cache_dir = %r" % str(tmp_path / ("cache-" + name)))
    app, status, warnings = build(src)
    return app, status, warnings.replace(str(src), "SRC")


def _without_workers(monkeypatch):
    monkeypatch.setattr(ahead, "steps_ahead", lambda session, uses, workers: steps_ahead(
        session, uses, workers=False))


def test_prepare_fills_the_cache_a_guide_then_reads_without_running_anything(
        synthetic_tree, tmp_path, capsys, monkeypatch):
    root = synthetic_tree("base")
    cache = tmp_path / "cache"
    assert main(["prepare", "--ck-root", str(root), "--cache-dir", str(cache), "toy"]) == 0
    out = capsys.readouterr().out
    assert re.fullmatch(r"toy: prepared in \d+\.\d s\n", out), out
    trace = tmp_path / "runs.txt"
    monkeypatch.setenv("FMHA_TRACE_RUNS", str(trace))
    assert main(["guide", "--ck-root", str(root), "--cache-dir", str(cache), "toy"]) == 0
    prepared = capsys.readouterr().out
    assert _runs(trace) == []  # every result the guide shows was kept by prepare
    monkeypatch.delenv("FMHA_TRACE_RUNS")
    assert main(["guide", "--ck-root", str(root), "--cache-dir", str(tmp_path / "other"),
                 "toy"]) == 0
    assert capsys.readouterr().out == prepared


def test_prepare_exit_codes(synthetic_tree, tmp_path, capsys):
    root = synthetic_tree("base")
    common = ["prepare", "--ck-root", str(root), "--cache-dir", str(tmp_path / "cache")]
    assert main(common + ["nosuchapi"]) == 2
    assert "nosuchapi" in capsys.readouterr().err
    assert main(common + ["--sections", "99", "toy"]) == 2
    assert "sections: 99" in capsys.readouterr().err
    crashing = _crash_when_filtered(synthetic_tree("base"))
    code = main(["prepare", "--ck-root", str(crashing), "--cache-dir", str(tmp_path / "c2"),
                 "--format", "json", "toy"])
    captured = capsys.readouterr()
    assert code == 1
    assert '"problems": ["cannot make the recommended minimal set' in captured.out, captured.out
    assert "Traceback" not in captured.err.split("stderr")[0]  # generate.py's own is shown


def _crash_when_filtered(root: Path) -> Path:
    """generate.py fails for every ``-f`` run (the probe, unfiltered, still works)."""
    generate = root / "example" / "ck_tile" / "01_fmha" / "generate.py"
    text = generate.read_text(encoding="utf-8")
    anchor = "    args = parser.parse_args()\n"
    assert anchor in text
    generate.write_text(text.replace(anchor, anchor + (
        "    if args.filter:\n"
        "        raise RuntimeError('synthetic crash of a filtered run')\n")), encoding="utf-8")
    return root


def test_a_gallery_is_the_same_when_its_worker_fails_or_is_not_used(tmp_path, monkeypatch):
    root = make_tree(tmp_path / "tree", "new_api")
    trace = tmp_path / "runs.txt"
    monkeypatch.setenv("FMHA_TRACE_RUNS", str(trace))
    app, status, warnings = _gallery(tmp_path, root, "workers")
    assert "analysed in a worker interpreter" in status, status
    assert [r for r in _runs(trace) if r.startswith(PREPARE)] == [
        r for r in _runs(trace) if r.startswith(PREPARE) and r.endswith("-- toy2")]
    with_workers = _pages(app)
    assert sum("observed by the probe" in run for run in _runs(trace)) == 2

    # a worker that fails (here: an interpreter that is not one): the page computes it
    clear_sessions()
    trace.write_text("")
    monkeypatch.setattr(worker, "current_interpreter", lambda: "/bin/false")
    app, status, failed_warnings = _gallery(tmp_path, root, "failing")
    assert "the worker interpreter did not complete" in status, status
    assert failed_warnings == warnings
    assert _pages(app) == with_workers
    assert sum("observed by the probe" in run for run in _runs(trace)) == 2  # not again

    clear_sessions()
    monkeypatch.undo()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    _without_workers(monkeypatch)
    app, status, alone_warnings = _gallery(tmp_path, root, "alone")
    assert "worker interpreter" not in status
    assert alone_warnings == warnings
    assert _pages(app) == with_workers

    # warm: the worker's results are read back; nothing starts
    clear_sessions()
    monkeypatch.undo()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    monkeypatch.setenv("FMHA_TRACE_RUNS", str(trace))
    trace.write_text("")
    src = tmp_path / "workers"
    app, status, _ = build(src, out=tmp_path / "again")
    assert "fmha:" not in status and _runs(trace) == []
    assert _pages(app) == with_workers


def test_a_failure_met_by_the_worker_is_reported_by_the_page_as_without_workers(
        synthetic_tree, tmp_path, monkeypatch):
    root = _crash_when_filtered(synthetic_tree("new_api"))
    app, status, warnings = _gallery(tmp_path, root, "workers")
    assert "worker interpreter did not complete" in status, status
    assert "synthetic crash of a filtered run" in warnings
    assert re.search(r"b_second\.rst:4: WARNING: .*cannot make the recommended minimal set",
                     warnings), warnings
    assert "Traceback (most recent call last)" not in warnings.split("stderr")[0]
    with_workers = _pages(app)
    clear_sessions()
    _without_workers(monkeypatch)
    app, status, alone = _gallery(tmp_path, root, "alone")
    assert alone == warnings
    assert _pages(app) == with_workers


def test_a_page_that_gets_there_first_claims_its_worker(synthetic_tree, tmp_path, monkeypatch):
    root = synthetic_tree("new_api")
    trace = tmp_path / "runs.txt"
    monkeypatch.setenv("FMHA_TRACE_RUNS", str(trace))
    session = Session(root, cache_dir=tmp_path / "cache")
    uses = [DirectiveUse("fmha-kernel-guide", "toy"), DirectiveUse("fmha-kernel-guide", "toy2")]
    steps = steps_ahead(session, uses)
    assert [kind for kind, _ in steps].count("worker") == 1
    session.model("toy2")  # the page, before the pool: claims toy2
    for _, step in steps:
        step()
    assert not [run for run in _runs(trace) if run.startswith(PREPARE)]
    # a later build plans it again (the claim was this build's) and runs it
    session.stop_ahead()
    steps = steps_ahead(session, uses)
    for _, step in steps:
        step()
    assert [run for run in _runs(trace) if run.startswith(PREPARE)]
    # one guide: nothing to do side by side, no worker
    session.stop_ahead()
    fresh = Session(root, cache_dir=tmp_path / "fresh")
    assert "worker" not in [kind for kind, _ in steps_ahead(fresh, uses[1:])]


def test_an_interrupted_worker_ends_its_own_children(tmp_path):
    root = make_tree(tmp_path / "tree", "base")
    generate = root / "example" / "ck_tile" / "01_fmha" / "generate.py"
    generate.write_text(textwrap.dedent(FAULTS["hang_with_grandchild"]) + "\n"
                        + generate.read_text(encoding="utf-8"), encoding="utf-8")
    pids, tmpdir = tmp_path / "pids.txt", tmp_path / "tmpdir"
    pids.touch()
    tmpdir.mkdir()
    env = dict(os.environ, FMHA_FAULT_PIDS=str(pids), TMPDIR=str(tmpdir),
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("FMHA_TRACE_RUNS", None)
    # the build's side: a worker started through the launcher, then Ctrl-C
    code = textwrap.dedent("""\
        import sys
        from pathlib import Path
        from sphinxext_fmha.analysis_workers import prepare_argv, run_worker
        args = prepare_argv(Path(sys.argv[1]), ["toy"], cache_dir=Path(sys.argv[2]),
                            python=sys.executable, timeout=300)
        run_worker(sys.executable, args, timeout=300)
        """)
    argv = [sys.executable, "-c", code, str(root), str(tmp_path / "cache")]
    returncode, _ = interrupt_once_started(
        argv, cwd=tmp_path, env=env, pids=pids, started=2, signum=signal.SIGINT,
        stderr=tmp_path / "err", wait=60)
    assert returncode != 0  # it ended on the interrupt (the wait only bounds a hang)
    started = [int(p) for p in pids.read_text().split()]
    assert not left_running(started), "children left running"
    assert not list(tmpdir.glob("fmha-*")), "temporary folders left behind"


def test_a_worker_past_its_timeout_ends_its_own_children(tmp_path, monkeypatch):
    root = make_tree(tmp_path / "tree", "base")
    generate = root / "example" / "ck_tile" / "01_fmha" / "generate.py"
    generate.write_text(textwrap.dedent(FAULTS["hang_with_grandchild"]) + "\n"
                        + generate.read_text(encoding="utf-8"), encoding="utf-8")
    pids = tmp_path / "pids.txt"
    pids.touch()
    monkeypatch.setenv("FMHA_FAULT_PIDS", str(pids))
    args = worker.prepare_argv(root, ["toy"], cache_dir=tmp_path / "cache",
                               python=sys.executable, timeout=300)
    outcome = worker.run_worker(sys.executable, args, timeout=4)
    assert not outcome.ok and outcome.error is not None and outcome.error.timed_out
    assert "timed out after 4 s" in str(outcome.error)
    started = [int(p) for p in pids.read_text().split()]
    # Each generate.py run that started wrote its pid and its grandchild's: the probe's
    # own run, and the other --mask listing in the child the probe forks beside it.
    assert len(started) in (2, 4) and len(set(started)) == len(started), started
    assert not left_running(started), "children left running"


def test_the_pool_runs_one_worker_at_a_time_and_the_other_steps_beside_it():
    import threading

    from sphinxext_fmha.process.ahead_pool import AheadPool

    lock, running, most, order = threading.Lock(), [0], [0], []
    probes_ran = threading.Event()
    w1_saw_the_probes = []

    def step(kind, name):
        def run():
            with lock:
                order.append(name)
                if kind == "worker":
                    running[0] += 1
                    most[0] = max(most[0], running[0])
            if name == "w1":  # the first worker ends only once both probes ran beside it
                w1_saw_the_probes.append(probes_ran.wait(60))  # (60 s: a hang guard only)
            with lock:
                if kind == "worker":
                    running[0] -= 1
                if kind == "probe" and sum(n.startswith("p") for n in order) == 2:
                    probes_ran.set()
            return False if name == "skipped" else None  # False: it did nothing
        return kind, run

    items = [step("worker", "w1"), step("worker", "w2"), step("probe", "p1"),
             step("worker", "skipped"), step("probe", "p2")]
    done = []
    pool = AheadPool(items, on_done=lambda seconds, ran: done.append(dict(ran)),
                     limits={"worker": 1}).start()
    pool.wait()
    assert most[0] == 1  # never two workers at once (w1 runs until the probes are done)
    assert sorted(order) == ["p1", "p2", "skipped", "w1", "w2"]
    assert w1_saw_the_probes == [True]  # the probes did not wait for the workers
    assert order.index("p2") < order.index("w2")
    assert done == [{"worker": 2, "probe": 2}]  # a step that did nothing is not counted


def blocked_in_a_wait(thread, timeout: float = 60.0) -> bool:
    """Whether ``thread`` gets to block (a lock's acquire, a ``with`` on a lock, an
    Event's or a Future's wait) while it is still running: its innermost Python frame
    is read, at the same instruction in three readings in a row; False if it ends
    first. Nothing is slept on but the polling interval."""
    import linecache

    blocking = re.compile(r"\bwith\b.*lock|\.(?:wait|acquire|result|join)\(")
    deadline, same, last = time.monotonic() + timeout, 0, None
    while thread.is_alive() and time.monotonic() < deadline:
        frame = sys._current_frames().get(thread.ident)
        here = (frame.f_code, frame.f_lasti) if frame is not None else None
        line = linecache.getline(frame.f_code.co_filename, frame.f_lineno) if frame else ""
        same = same + 1 if here == last and blocking.search(line) else 0
        if same >= 2:
            return thread.is_alive()
        last = here
        time.sleep(0.02)
    return False


def _workers(tmp_path, memo, observe, keep_other=lambda api, options: None, mask=False):
    """The workers of a session of the test's own: its memo, its probes."""
    from sphinxext_fmha.analysis_workers import AnalysisWorkers, WorkerPlace

    place = WorkerPlace(tmp_path, tmp_path, tmp_path, sys.executable, 60.0, None, mask)
    return AnalysisWorkers(memo, place, observe=observe, keep_other=keep_other,
                           stored=lambda kind, api, options: False)


def test_a_worker_takes_the_costliest_ready_guide_and_its_page_waits_for_it(
        tmp_path, monkeypatch):
    """Each worker step analyses the guide with the most kernels whose probe is done
    (its own probe waited for first), one per interpreter: its page waits for it (not
    computing it) and reads what it kept; one it did not keep, and one not worth an
    interpreter (its probe took less than the first worker's start-up), is computed by
    its page."""
    import threading

    from sphinxext_fmha.options import Options
    from sphinxext_fmha.process.ahead_pool import Memo as _Memo

    memo = _Memo()
    reading_order = ["small", "big", "late", "tiny", "mid"]  # the first page is a sixth
    probe_seconds = {"big": 3.0, "mid": 2.0, "late": 1.0, "small": 0.1, "tiny": 0.05}

    def observation(api, options=Options()):
        return memo.once(("observation", api, options), lambda: {
            "listing": ["k%d" % i for i in range(int(probe_seconds[api] * 100))],
            "seconds": {"observe": probe_seconds[api]}})

    workers = _workers(tmp_path, memo, observation)
    started, waited, readers = [], {}, []

    def page(api):
        return workers.wait_or_claim([api, {f: None for f in Options.__dataclass_fields__}])

    def fake_worker(interpreter, args, *, timeout, on_api=None, on_step=None):
        apis = args[args.index("--") + 1:]
        started.append(apis)
        for api in apis:
            if api == "mid":  # its page, reached meanwhile, waits for the worker
                reader = threading.Thread(target=lambda: waited.update(mid=page("mid")))
                reader.start()
                assert blocked_in_a_wait(reader)  # not returned: waiting for the worker
                readers.append(reader)
            on_api(api, api != "late", 1.0)  # late: the worker met a problem
        return worker.WorkerOutcome(ok=False, seconds=5.5,
                                    api_seconds={a: 5.0 / len(apis) for a in apis})

    monkeypatch.setattr(worker, "run_worker", fake_worker)
    for api in probe_seconds:
        if api != "late":  # its probe is not done when the first worker starts
            observation(api)
    # planned as steps_ahead plans them: from the last page back
    steps = [workers.step(api, Options(), None, ["guide"]) for api in reversed(reading_order)]
    for step in steps:
        assert step is not None
        step[1]()
    for reader in readers:
        reader.join(60)
    # late: its probe done by its own step; small and tiny: not worth an interpreter
    # (start-up 0.5 s)
    assert started == [["big"], ["mid"], ["late"]]
    assert waited == {"mid": True}
    assert page("big") is True and page("mid") is True
    assert page("late") is False  # not kept: its page computes it
    assert page("small") is False and page("tiny") is False  # no worker


def test_the_worker_s_own_other_mask_listing_is_kept_before_it_starts(tmp_path,
                                                                     monkeypatch):
    """The worker reads the other ``--mask`` listing from the store: it is kept first."""
    from sphinxext_fmha.options import Options
    from sphinxext_fmha.process.ahead_pool import Memo as _Memo

    memo, events = _Memo(), []

    def observation(api, options=Options()):
        return memo.once(("observation", api, options), lambda: {
            "listing": ["k0"], "seconds": {"observe": 5.0}})

    def fake_worker(interpreter, args, *, timeout, on_api=None, on_step=None):
        events.append(("worker", tuple(args[args.index("--") + 1:])))
        return worker.WorkerOutcome(ok=True, seconds=1.0, api_seconds={"own": 0.3})

    monkeypatch.setattr(worker, "run_worker", fake_worker)
    workers = _workers(tmp_path, memo, observation, mask=True,
                       keep_other=lambda api, options: events.append(("listing", api)))
    step = workers.step("own", Options(), None, ["guide", "mask-modes"])
    assert step is not None
    step[1]()
    assert events == [("listing", "own"), ("worker", ("own",))]


def test_the_worker_says_each_api_and_step_as_soon_as_it_is_done(tmp_path):
    """run_worker passes on each API's line, and each step line, while the worker
    still runs."""
    # The fake worker says its second API only once the test has received the first
    # API's line and the step line (gate files the callbacks write); had run_worker kept
    # them until the end, the worker gives up waiting and says 9.9 s instead.
    api_gate, step_gate = tmp_path / "api-received", tmp_path / "step-received"
    fake = tmp_path / "fake-interpreter"
    fake.write_text(textwrap.dedent("""\
        #!/bin/sh
        echo 'fmha: first of tree: 2 filtered runs... 0.1 s' >&2
        echo 'not a step line' >&2
        echo '{"api": "first", "seconds": 0.1, "problems": []}'
        seconds=9.9
        for _ in $(seq 600); do
            if [ -e '%s' ] && [ -e '%s' ]; then seconds=0.2; break; fi
            sleep 0.1
        done
        echo '{"api": "second", "seconds": '$seconds', "problems": ["it failed"]}'
        """ % (api_gate, step_gate)))
    fake.chmod(0o755)
    said, steps = [], []

    def on_api(api, kept, seconds):
        said.append((api, kept, seconds))
        api_gate.touch()

    def on_step(line):
        steps.append(line)
        step_gate.touch()

    outcome = worker.run_worker(str(fake), ["prepare"], timeout=120, on_api=on_api,
                                on_step=on_step)
    assert said == [("first", True, 0.1), ("second", False, 0.2)]  # both before the end
    assert steps == ["fmha: first of tree: 2 filtered runs... 0.1 s"]
    assert outcome.api_seconds == {"first": 0.1, "second": 0.2}
