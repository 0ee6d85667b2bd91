"""The one way this package starts a child process (:func:`run`): an argv, stdin from
``/dev/null``, output to files, its own session killed with every process of its run (found
by a mark, :func:`new_mark`) at its timeout, on SIGINT/SIGTERM, at exit, and by a watchdog
when we die. Why each: ``docs/internals.md``.
"""

from __future__ import annotations

import atexit
import concurrent.futures  # noqa: F401 - imported first: its exit hook must run after ours
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

from ..errors import FmhaError, WarningType, stderr_tail
from . import watchdog_script
from .scratch_place import TEMP_VARIABLES, free_space_note, scratch_parent
from .watchdog_script import MARKS, kill, processes, start_time

__all__ = ["output_files", "GenerateError", "Outcome", "child_environment", "live_children",
           "install_handlers", "interrupts", "run", "scratch",
           "stop_children", "total_processes_started"]

_POLL = 0.1
#: Re-entrant: the signal handler takes it in the main thread, which may hold it already.
_LOCK = threading.RLock()
#: process group id -> the process that started it (a fork must not kill its parent's
#: children), and the run's mark and start time (what its leftovers are found by).
_GROUPS: Dict[int, _Run] = {}
_SCRATCH: Dict[str, int] = {}
_STOPPING = threading.Event()
#: SIGINT/SIGTERM received so far: work started ahead stops taking new items when it grows.
_INTERRUPTS = [0]
_TOTAL_STARTED = 0
_HANDLERS_INSTALLED: Set[int] = set()
_COUNTER = itertools.count(1)
#: "token": every mark this process makes starts with it, and its watchdog ends every
#: process whose marks do; "fd": the write end of the watchdog's pipe (None where it
#: cannot run). A fork (Sphinx's parallel readers) keeps them: its children are ended
#: with ours. A fork of a process that had no watchdog yet starts one of its own.
_WATCHDOG: Dict[str, Any] = {}
#: The watchdog's Popen, never waited for: it ends after us.
_KEEP: List[subprocess.Popen[bytes]] = []


class GenerateError(FmhaError):
    """A child process failed, timed out, or was asked for something it cannot do."""

    default_kind = WarningType.GENERATE

    def __init__(self, message: str, *, command: str = "", returncode: Optional[int] = None,
                 timed_out: bool = False, stderr_tail: str = "",
                 kind: Optional[WarningType] = None) -> None:
        super().__init__(message, kind=kind, command=command, stderr_tail=stderr_tail)
        self.returncode = returncode
        self.timed_out = timed_out

    def own_failure(self) -> str:
        """The last line of the child's standard error when the child failed of itself
        (an exit code above 0: generate.py raised, e.g. an assertion of its write mode);
        ``""`` when it timed out, was killed or left no standard error."""
        if self.timed_out or not self.returncode or self.returncode < 0:
            return ""
        lines = [line.strip() for line in (self.stderr_tail or "").splitlines() if line.strip()]
        return lines[-1] if lines else ""


def total_processes_started() -> int:
    return _TOTAL_STARTED


def _note_started(display: str, cwd: Path) -> None:
    """Count a started child; with ``FMHA_TRACE_RUNS=<file>`` also log it there, so
    tests of other processes (a sphinx-build) can count them too."""
    global _TOTAL_STARTED
    with _LOCK:
        _TOTAL_STARTED += 1
    trace = os.environ.get("FMHA_TRACE_RUNS")
    if trace:
        with open(trace, "ab") as handle:  # appended in one write
            handle.write(f"{display}\t{cwd}\n".encode())


# --------------------------------------------------------------------------- the watchdog


def _watchdog() -> Tuple[str, Optional[int]]:
    """(this process's token, its watchdog's pipe or None), started on first use."""
    with _LOCK:
        if "token" not in _WATCHDOG:
            _WATCHDOG.update(token=os.urandom(6).hex(), fd=None)
            if sys.executable:  # else an embedded interpreter: nothing to run it with
                try:
                    watchdog = subprocess.Popen(
                        [sys.executable, "-I", "-S", watchdog_script.__file__,
                         _WATCHDOG["token"], str(os.getpid())],
                        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL, cwd="/", start_new_session=True,
                        close_fds=True)
                except OSError:
                    pass
                else:
                    assert watchdog.stdin is not None
                    # the raw descriptor (not inherited by children): each write one call
                    _WATCHDOG["fd"] = os.dup(watchdog.stdin.fileno())
                    watchdog.stdin.close()
                    _KEEP.append(watchdog)
        return _WATCHDOG["token"], _WATCHDOG["fd"]


def _tell(what: str, value: object) -> None:
    """One line for the watchdog, in one write below the pipe's atomic size (no interleaving)."""
    fd = _watchdog()[1]
    if fd is not None:
        with contextlib.suppress(OSError):  # the watchdog is gone: nothing to tell
            os.write(fd, json.dumps([what, value]).encode("utf-8") + b"\n")


def new_mark() -> str:
    """A mark for one run, unique among the runs of every process."""
    return "%s/%d/%d" % (_watchdog()[0], os.getpid(), next(_COUNTER))


# --------------------------------------------------------------------------- cleanup


@dataclass(frozen=True)
class _Run:
    owner: int
    mark: str
    since: int


def live_children() -> List[int]:
    """Process groups started by this process that have not been reaped yet."""
    with _LOCK:
        return [group for group, run in _GROUPS.items() if run.owner == os.getpid()]


def _kill_group(group: int, run: _Run, below: bool = True) -> None:
    """SIGKILL the child's group, every process with the run's mark, and (``below``: only
    while the child lives can they be told from strangers) everything below the child,
    with the groups they lead or belong to (what they fork meanwhile is in one)."""
    found = processes(run.mark.__eq__, roots=[group] if below else [], since=run.since)
    kill(found, [group])


def stop_children(folders: bool = True) -> None:
    """Kill every live child group of this process and (``folders``) remove its scratch
    folders."""
    with _LOCK:
        runs = [(group, run) for group, run in _GROUPS.items() if run.owner == os.getpid()]
        paths = [path for path, owner in _SCRATCH.items() if owner == os.getpid()] if folders else []
    for group, run in runs:
        _kill_group(group, run)
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)


def interrupts() -> int:
    """How many SIGINT/SIGTERM this process received (through our handler), plus one
    once the interpreter is exiting: background work compares it before each item."""
    return _INTERRUPTS[0] + (1 if _STOPPING.is_set() else 0)


def _on_signal(signum: int, frame: object) -> None:
    _INTERRUPTS[0] += 1
    if signum == signal.SIGINT:  # (its scratch folders go as the exception unwinds)
        stop_children(folders=False)
        raise KeyboardInterrupt
    # SIGTERM: clean up, then die of the signal as the default action would.
    stop_children()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def install_handlers() -> None:
    """Kill our children on SIGINT/SIGTERM where the default handlers are in place (main
    thread only); Ctrl-C still raises KeyboardInterrupt and SIGTERM still ends us."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum, default in ((signal.SIGINT, signal.default_int_handler),
                            (signal.SIGTERM, signal.SIG_DFL)):
        if signum not in _HANDLERS_INSTALLED and signal.getsignal(signum) is default:
            signal.signal(signum, _on_signal)
            _HANDLERS_INSTALLED.add(signum)


def _at_exit() -> None:
    _STOPPING.set()
    stop_children()


atexit.register(_at_exit)
# Worker threads (ThreadPoolExecutor) are joined before ``atexit`` runs; this hook runs
# before that join, so a worker waiting on a child stops instead of blocking the exit.
_register = getattr(threading, "_register_atexit", None)
if _register is not None:
    _register(_STOPPING.set)


@contextlib.contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A temporary folder removed in every case (exception, SIGTERM, exit); an ``OSError``
    in it (a full disk) is a :class:`GenerateError` naming the file, folder and room left."""
    parent = scratch_parent()
    try:
        path = tempfile.mkdtemp(prefix=prefix, dir=parent)
    except OSError as error:
        raise GenerateError("cannot make a scratch folder in %s: %s%s" % (
            parent or tempfile.gettempdir(), error.strerror or error,
            free_space_note(parent or tempfile.gettempdir()))) from None
    with _LOCK:
        _SCRATCH[path] = os.getpid()
    _tell("folder", path)
    try:
        yield Path(path)
    except OSError as error:
        raise GenerateError("%s: %s (while working in the scratch folder %s%s)" % (
            error.filename or "a file", error.strerror or error, path,
            free_space_note(path))) from None
    finally:
        shutil.rmtree(path, ignore_errors=True)
        with _LOCK:
            _SCRATCH.pop(path, None)
        _tell("removed", path)


# --------------------------------------------------------------------------- running


def child_environment(workdir: Path, extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """Our environment for a Python child: no bytecode, no hooks, its temp files in ``workdir``."""
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    for var in ("PYTHONSAFEPATH", "PYTHONSTARTUP", "PYTHONINSPECT"):
        env.pop(var, None)
    tmp = workdir / "tmp"
    tmp.mkdir(exist_ok=True)
    env.update({var: str(tmp) for var in TEMP_VARIABLES}, **(extra or {}))
    return env


@dataclass
class Outcome:
    """How a child ended; its output stays in the scratch folder's files."""

    command: str
    cwd: Path
    returncode: Optional[int]
    seconds: float
    timed_out: bool
    timeout: float
    stdout: Path
    stderr: Path

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.returncode == 0

    def stderr_tail(self) -> str:
        """The end of the child's standard error (bounded)."""
        try:
            with open(self.stderr, "rb") as handle:
                handle.seek(max(0, handle.seek(0, os.SEEK_END) - 65536))
                text = handle.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        return stderr_tail(text)

    def status(self) -> str:
        if self.timed_out:
            return f"timed out after {self.timeout:g} s"
        if self.returncode is not None and self.returncode < 0:
            return f"killed by signal {-self.returncode}"
        return f"exit code {self.returncode}"

    def error(self, message: str = "", kind: Optional[WarningType] = None) -> GenerateError:
        """The :class:`GenerateError` for this outcome: what failed, where, its stderr's end."""
        tail = self.stderr_tail()
        lines = tail.splitlines()
        said = "\n".join([f"  last {len(lines)} lines of stderr:"] + ["    " + line for line in lines]
                         if lines else ["  (no stderr output)"])
        text = "%s%s\n  in %s\n%s" % (message or f"{self.command} failed: {self.status()}",
                                     free_space_note(str(self.stdout.parent)), self.cwd, said)
        return GenerateError(text, command=self.command,
                             returncode=None if self.timed_out else self.returncode,
                             timed_out=self.timed_out, stderr_tail=tail, kind=kind)


def output_files(workdir: Path) -> Tuple[Path, Path]:
    """Where :func:`run` writes a child's standard output and error in ``workdir``."""
    return workdir / "stdout.txt", workdir / "stderr.txt"


def run(argv: Sequence[str], *, cwd: Path, workdir: Path, timeout: float, display: str = "",
        env: Optional[Mapping[str, str]] = None,
        progress: Optional[Callable[[str], None]] = None, label: str = "",
        progress_every: float = 10.0,
        when_written: Optional[Tuple[Path, Callable[[], None]]] = None,
        watch: Optional[Callable[[], None]] = None) -> Outcome:
    """Run ``argv`` to its end or timeout: its :class:`Outcome`, or :class:`GenerateError`
    when it cannot start. ``workdir``: a :func:`scratch` folder for the output files;
    ``progress`` gets ``"<label>: still running (N s)"`` every ``progress_every`` s;
    ``when_written`` (a file, a callback): called once, here, when the child has created
    the file; ``watch``: called here at every poll and once after the end."""
    display = display or " ".join(argv)
    mark = new_mark()
    env = dict(child_environment(workdir) if env is None else env)
    # a worker interpreter's children keep the mark of the run that started the worker
    env[MARKS] = " ".join(env.get(MARKS, "").split() + [mark])
    stdout_path, stderr_path = output_files(workdir)
    install_handlers()
    _note_started(display, cwd)
    start = time.monotonic()
    try:
        with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
            proc = subprocess.Popen(list(argv), cwd=str(cwd), env=env,
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    start_new_session=True, close_fds=True)
    except OSError as exc:
        raise GenerateError(f"cannot start {display}: {exc.strerror or exc}"
                            f"{free_space_note(str(workdir))}", command=display) from None
    run_of = _Run(os.getpid(), mark, start_time(proc.pid))
    with _LOCK:
        _GROUPS[proc.pid] = run_of
    _tell("group", proc.pid)
    try:
        timed_out = _wait(proc, start, timeout, progress, label or display, progress_every,
                          when_written, watch, run_of)
    finally:
        if proc.poll() is None:  # an exception (KeyboardInterrupt, ...) or a stop request
            _kill_group(proc.pid, run_of)
            _reap(proc)
        with _LOCK:
            _GROUPS.pop(proc.pid, None)
        # the child is gone; whatever of its run is left (in its group, or a process
        # that left the group and lost its parent) goes too
        _kill_group(proc.pid, run_of, below=False)
        _tell("ended", proc.pid)
    return Outcome(command=display, cwd=Path(cwd), returncode=proc.returncode,
                   seconds=time.monotonic() - start, timed_out=timed_out, timeout=timeout,
                   stdout=stdout_path, stderr=stderr_path)


def _wait(proc: subprocess.Popen[bytes], start: float, timeout: float,
          progress: Optional[Callable[[str], None]], label: str, every: float,
          when_written: Optional[Tuple[Path, Callable[[], None]]],
          watch: Optional[Callable[[], None]], run: _Run) -> bool:
    """Wait for ``proc``; True when it was killed for taking longer than ``timeout``."""
    next_report = start + every
    while True:
        if when_written is not None and when_written[0].exists():
            callback, when_written = when_written[1], None
            callback()
        if watch is not None:
            watch()
        now = time.monotonic()
        if now - start >= timeout:
            _kill_group(proc.pid, run)
            _reap(proc)
            return True
        if _STOPPING.is_set():
            raise GenerateError(f"{label}: stopped (the interpreter is exiting)",
                                command=label)
        try:
            proc.wait(timeout=min(_POLL, max(0.0, timeout - (now - start))))
            if watch is not None:
                watch()  # what the child wrote last
            return False
        except subprocess.TimeoutExpired:
            pass
        if progress is not None and time.monotonic() >= next_report:
            next_report += every
            progress(f"{label}: still running ({int(time.monotonic() - start)} s)")


def _reap(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(subprocess.TimeoutExpired):  # SIGKILL not delivered yet
        proc.wait(timeout=5)
