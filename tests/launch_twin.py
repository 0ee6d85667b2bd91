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


def interrupt_once_started(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
                           pids: Path, started: int, signum: int, stderr: Path,
                           wait: float) -> Tuple[int, float]:
    """Start ``argv`` in its own session, wait until ``pids`` (written by the faulty
    generate.py) names ``started`` processes, send ``signum`` and wait up to ``wait``
    seconds: (exit status, seconds from the signal to the exit). The group is killed
    if it is still running, so a failing test leaves nothing behind."""
    with open(stderr, "wb") as err:
        proc = subprocess.Popen(list(argv), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while len(pids.read_text().split()) < started and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(pids.read_text().split()) >= started, "generate.py never started"
            sent = time.monotonic()
            proc.send_signal(signum)
            proc.wait(timeout=wait)
            return proc.returncode, time.monotonic() - sent
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
