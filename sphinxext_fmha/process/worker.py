"""Run ``sphinxext-fmha prepare`` in a worker interpreter: the whole guide of an API
computed in another process, on the other core, into the same store.

The worker is this package run by name (``python -m sphinxext_fmha prepare``, the
package's own folder first on its path, so it is the same code and its results land
under the same keys: tree digest, code digest, interpreter id). It starts its own
generate.py runs through its own launcher, in sessions of their own: the launcher of
this process finds them below the worker when it stops it (an interrupt, a timeout),
and they end with it (see :mod:`~sphinxext_fmha.process.launch`). Its standard output
says, per API, how long the analysis took (JSON lines); its step lines (``fmha: ...``)
are passed on.

No Sphinx imports here, and no import of the CLI: the module is launched by name.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, List, Mapping, Optional, Sequence, Tuple

from .launch import GenerateError, child_environment, output_files, run, scratch

__all__ = ["STEP_PREFIX", "WorkerOutcome", "current_interpreter", "prepare_argv", "run_worker"]

#: The folder that holds this package: first on the worker's path.
_PACKAGE_PARENT = Path(__file__).resolve().parents[2]
#: Marks the step lines the worker writes on stderr (its progress).
STEP_PREFIX = "fmha: "


@dataclass
class WorkerOutcome:
    """How a worker ended: ``ok`` when every API was analysed and kept; the seconds of
    the whole process and of each API's analysis (the difference is its start-up)."""

    ok: bool
    seconds: float
    api_seconds: Mapping[str, float] = field(default_factory=dict)
    step_lines: List[str] = field(default_factory=list)
    error: Optional[GenerateError] = None

    @property
    def start_up(self) -> float:
        return max(0.0, self.seconds - sum(self.api_seconds.values()))


def prepare_argv(ck_root: Path, apis: Sequence[str], *, cache_dir: Path, python: str,
                 timeout: float, option_args: Sequence[str] = (),
                 sections: Optional[str] = None, progress: bool = False) -> List[str]:
    """``sphinxext-fmha prepare``'s arguments (after the interpreter and ``-m``)."""
    argv = ["prepare", "--ck-root", str(ck_root), "--cache-dir", str(cache_dir),
            "--python", python, "--timeout", repr(float(timeout)), "--format", "json",
            "--progress", "always" if progress else "never", *option_args]
    if sections is not None:
        argv += ["--sections", sections]
    return argv + ["--", *apis]


def run_worker(interpreter: str, args: Sequence[str], *, timeout: float,
               on_api: Optional[Callable[[str, bool, float], None]] = None,
               on_step: Optional[Callable[[str], None]] = None) -> WorkerOutcome:
    """Run ``interpreter -m sphinxext_fmha <args>`` to its end; never raises (a worker
    that cannot start, fails or times out is an outcome that is not ok, with the
    :class:`GenerateError` that says why). While the worker runs: ``on_api(api, kept,
    seconds)`` as soon as it says it is done with an API (``kept``: with no problem;
    its analysis's seconds), while it goes on with the next; ``on_step(line)`` for each
    of its step lines (else they are only in the outcome)."""
    argv = [interpreter, "-m", "sphinxext_fmha", *args]
    display = shlex.join(["sphinxext-fmha", *args])
    try:
        with scratch("fmha-worker-") as workdir:
            path = os.pathsep.join(p for p in (str(_PACKAGE_PARENT),
                                               os.environ.get("PYTHONPATH", "")) if p)
            env = child_environment(workdir, {"PYTHONPATH": path})
            stdout_file, stderr_file = output_files(workdir)
            records, steps = _NewLines(stdout_file), _NewLines(stderr_file)

            def watch() -> None:
                if on_api is not None:
                    for record in filter(None, map(_api_record, records.read())):
                        on_api(*record)
                if on_step is not None:
                    for line in steps.read():
                        if line.startswith(STEP_PREFIX):
                            on_step(line)

            # the scratch folder as working folder: ``-m`` puts it first on the path,
            # and it holds no module that could stand in for ours
            # its guide is read later: the runs of the page being read come first
            outcome = run(argv, cwd=workdir, workdir=workdir, timeout=timeout,
                          display=display, env=env,
                          watch=watch if on_api is not None or on_step is not None else None)
            stdout = outcome.stdout.read_text(encoding="utf-8", errors="replace")
            stderr = outcome.stderr.read_text(encoding="utf-8", errors="replace")
            error = None if outcome.ok else outcome.error()
    except GenerateError as failure:
        return WorkerOutcome(ok=False, seconds=0.0, error=failure)
    api_seconds = {}
    for line in stdout.splitlines():
        record = _api_record(line)
        if record is not None:
            api_seconds[record[0]] = record[2]
    step_lines = [line for line in stderr.splitlines() if line.startswith(STEP_PREFIX)]
    return WorkerOutcome(ok=error is None, seconds=outcome.seconds, api_seconds=api_seconds,
                         step_lines=step_lines, error=error)


def _api_record(line: str) -> Optional[Tuple[str, bool, float]]:
    """(api, kept, seconds) of one line the worker wrote on stdout, or None."""
    try:
        record = json.loads(line)
        return str(record["api"]), not record.get("problems"), float(record["seconds"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


class _NewLines:
    """The whole lines a child has added to one of its output files since last asked."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0

    def read(self) -> List[str]:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                new = handle.read()
        except OSError:
            return []
        whole = new[: new.rfind(b"\n") + 1]  # a line still being written waits
        self.offset += len(whole)
        return whole.decode("utf-8", errors="replace").splitlines()


def current_interpreter() -> str:
    """The interpreter that runs this package (the worker needs this package; the
    interpreter that runs generate.py may not have it)."""
    return sys.executable
