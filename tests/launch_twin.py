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
from typing import Mapping, Optional, Sequence


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
