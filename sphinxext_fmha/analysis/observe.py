"""Run the probe (``probe_script.py``) against a tree in a subprocess, with a cache.

The probe imports the tree's codegen, so it runs in its own process, with the
interpreter chosen for generate.py, without writing bytecode into the tree.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path
from typing import Callable, List, Optional

from ..process.cache import DiskCache, tree_digest
from ..process.runner import interpreter_id, note_process_started

PROBE_SCRIPT = Path(__file__).with_name("probe_script.py")
STDERR_TAIL_LINES = 20


class ProbeError(RuntimeError):
    """The probe (i.e. the tree's own generate.py) failed; the message is for humans."""

    def __init__(self, message: str, command: str = "", stderr_tail: str = ""):
        super().__init__(message)
        self.command = command
        self.stderr_tail = stderr_tail


def _probe_version() -> str:
    return hashlib.sha256(PROBE_SCRIPT.read_bytes()).hexdigest()[:16]


def _pack(data: dict) -> dict:
    raw = json.dumps(data, sort_keys=True).encode()
    return {"zlib": base64.b64encode(zlib.compress(raw, 6)).decode("ascii")}


def _unpack(entry: dict) -> dict:
    return json.loads(zlib.decompress(base64.b64decode(entry["zlib"])))


def observe(
    fmha_dir: Path,
    argv: List[str],
    *,
    python: Optional[str] = None,
    cache: Optional[DiskCache] = None,
    timeout: float = 900,
    progress: Optional[Callable[[str], None]] = None,
) -> dict:
    """Probe results for ``generate.py <argv>`` in ``fmha_dir`` (cached by content)."""
    python = python or sys.executable
    key = None
    if cache is not None:
        key = cache.key_for("probe", tree_digest(fmha_dir), list(argv), _probe_version(),
                            interpreter_id(python, fmha_dir))
        hit = cache.get(key)
        if hit is not None:
            try:
                return _unpack(hit)
            except (KeyError, ValueError, zlib.error):
                pass
    result = _run_probe(fmha_dir, argv, python, timeout, progress)
    if cache is not None and key is not None:
        cache.put(key, _pack(result))
    return result


def display_command(argv: List[str]) -> str:
    import shlex

    return "python generate.py " + " ".join(shlex.quote(a) for a in argv)


def _run_probe(fmha_dir: Path, argv: List[str], python: str, timeout: float,
               progress: Optional[Callable[[str], None]]) -> dict:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    shown = display_command(argv)
    note_process_started(shown + "  # observed by the probe", fmha_dir)
    with tempfile.TemporaryDirectory(prefix="fmha-observe-") as tmp:
        out = Path(tmp) / "probe.json"
        command = [python, "-B", str(PROBE_SCRIPT), str(fmha_dir), str(out)] + list(argv)
        started = time.time()
        proc = subprocess.Popen(command, cwd=str(fmha_dir), env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        done = threading.Event()

        def report() -> None:
            while not done.wait(10):
                if progress:
                    progress("%s: still analysing (%d s)" % (shown, time.time() - started))

        reporter = threading.Thread(target=report, daemon=True)
        reporter.start()
        try:
            _stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            _stdout, stderr = proc.communicate()
            raise ProbeError("%s timed out after %d s" % (shown, timeout), shown,
                             _tail(stderr)) from None
        finally:
            done.set()
        if proc.returncode != 0 or not out.exists():
            raise ProbeError("%s failed (exit code %s)" % (shown, proc.returncode), shown,
                             _tail(stderr))
        result = json.loads(out.read_text())
    if result.get("error"):
        raise ProbeError("%s failed: %s" % (shown, result["error"].strip().splitlines()[-1]),
                         shown, _tail(result["error"]))
    return result


def _tail(text: str) -> str:
    return "\n".join((text or "").strip().splitlines()[-STDERR_TAIL_LINES:])
