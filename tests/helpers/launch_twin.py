"""The tests' own way to start a child: the launcher's rules, written independently of
``sphinxext_fmha.process.launch`` (a test must not trust the code it checks).

No shell, stdin from /dev/null, stdout/stderr into files, its own session, the whole
process group killed on timeout or on any exception (Ctrl-C included).
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence, Tuple


@dataclass
class Ran:
    returncode: Optional[int]
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool


def run_child(argv: Sequence[str], *, cwd: Path, timeout: float,
              env: Optional[Mapping[str, str]] = None) -> Ran:
    with tempfile.TemporaryDirectory(prefix="fmha-test-child-") as tmp:
        out_path, err_path = Path(tmp) / "out", Path(tmp) / "err"
        start = time.monotonic()
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen(list(argv), cwd=str(cwd), env=dict(env or os.environ),
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    start_new_session=True)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
        return Ran(None if timed_out else proc.returncode,
                   out_path.read_text(encoding="utf-8", errors="replace"),
                   err_path.read_text(encoding="utf-8", errors="replace"),
                   time.monotonic() - start, timed_out)


def _as_a_job() -> None:
    """What a shell with job control gives a job it starts (in the child, before exec):
    SIGINT and SIGQUIT at their default. A shell without it (``pytest ... &`` in a
    script, some CI runners) starts the tests with them ignored, every child inherits
    that, and a Python started so ignores Ctrl-C for good: an interrupt test would then
    test nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def ignores(pid: int, signum: int) -> bool:
    """Whether process ``pid`` ignores ``signum`` (``SigIgn`` of /proc/PID/status)."""
    with open("/proc/%d/status" % pid) as status:
        mask = next(line.split()[1] for line in status if line.startswith("SigIgn:"))
    return bool(int(mask, 16) >> (signum - 1) & 1)


def interrupt_once_started(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
                           pids: Path, started: int, signum: int, stderr: Path,
                           wait: float) -> Tuple[int, float]:
    """Start ``argv`` in its own session as a shell with job control starts a job (see
    :func:`_as_a_job`), wait until ``pids`` (written by the faulty generate.py) names
    ``started`` processes, send ``signum`` and wait up to ``wait`` seconds: (exit
    status, seconds from the signal to the exit). The group is killed if it is still
    running, so a failing test leaves nothing behind."""
    with open(stderr, "wb") as err:
        proc = subprocess.Popen(list(argv), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                                preexec_fn=_as_a_job)
        try:
            deadline = time.monotonic() + 60
            while len(pids.read_text().split()) < started and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(pids.read_text().split()) >= started, "generate.py never started"
            assert not ignores(proc.pid, signal.SIGINT), "the command ignores SIGINT"
            sent = time.monotonic()
            proc.send_signal(signum)
            proc.wait(timeout=wait)
            return proc.returncode, time.monotonic() - sent
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
