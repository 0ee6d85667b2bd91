"""A page's whole analysis, ahead, in a worker interpreter (``python -m sphinxext_fmha
prepare``) that fills the store on the other core; a page waits for its worker or claims it
first. How: ``docs/internals.md``. Kept because measured (issue 42, the cold flash-attn 2.8.3
gallery, ``benchmarks/bench_build.py``): (cold - warm) / plain ``-l`` 12.7x with workers,
15.5x without (13.6-17.5x): 18 % of the extension's own wall time, for the same CPU (49.8 s).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from .options import Options, cli_flag
from .process.ahead_pool import Item, Memo
from .process.launch import GenerateError, child_environment, output_files, run, scratch
from .process.progress import StepLine, report_step

__all__ = ["WORKER", "AnalysisWorkers", "WorkerPlace", "STEP_PREFIX", "WorkerOutcome",
           "current_interpreter", "prepare_argv", "run_worker"]

#: What the build log says of a guide the worker did not keep.
_NOT_COMPLETE = "the worker interpreter did not complete (the page computes the rest)"

#: The kind of the ahead step that analyses a page in a worker interpreter (one at a
#: time: this process reads the other pages on the other core).
WORKER = "worker"


@dataclasses.dataclass(frozen=True)
class WorkerPlace:
    """What a worker is started with: the session's tree, store, interpreter, limits."""

    ck_root: Path
    fmha_dir: Path
    cache_root: Path
    python: str
    timeout: float
    progress: Optional[Callable[[str], None]]
    has_mask: bool


def _options_key(options: object) -> str:
    return json.dumps(options, sort_keys=True)


class AnalysisWorkers:
    """The worker steps of one session, and the pages' wait for them (``observe``: the
    probe's observation; ``keep_other``: keeps the other ``--mask`` listing)."""

    def __init__(self, memo: Memo, place: WorkerPlace, *,
                 observe: Callable[[str, Options], dict],
                 keep_other: Callable[[str, Options], object],
                 stored: Callable[[str, str, Options], bool]) -> None:
        self.memo, self.place = memo, place
        self._observe, self._keep_other, self._stored = observe, keep_other, stored
        #: (api, options as stored) -> the memo key of its worker in this build
        self._keys: Dict[Tuple[str, str], Tuple] = {}
        self._builds = 0  # a worker's memo key is one build's
        #: seconds a worker interpreter took to start, as measured by the first one
        self._start_up: Optional[float] = None
        #: worker memo key -> (api, options, sections, mask) of the guides planned for a
        #: worker that none has taken yet
        self._pending: Dict[Tuple, Tuple[str, Options, Optional[str], bool]] = {}
        self._lock = threading.Lock()

    def step(self, api: str, options: Options, sections: Optional[str],
             kinds: Sequence[str]) -> Optional[Item]:
        """The worker step for the guide of ``api``; None when ``kinds`` are all stored."""
        if not self.place.has_mask:
            kinds = [kind for kind in kinds if kind != "mask-modes"]
        if all(self._stored(kind, api, options) for kind in kinds):
            return None
        key = (WORKER, api, options, self._builds)
        self._keys[(api, _options_key(dataclasses.asdict(options)))] = key
        mask = "mask-modes" in kinds and not self._stored("mask-modes", api, options)
        with self._lock:
            self._pending[key] = (api, options, sections, mask)
        return WORKER, lambda: self._ahead(key)

    def end_build(self) -> None:
        self._keys.clear()
        with self._lock:
            self._pending.clear()
        self._builds += 1

    def _ahead(self, key: Tuple) -> bool:
        """A worker step: once its own probe is done, the costliest guide whose probe is
        done and whose worker has not started (the pages are read in order, so the
        longest analyses are the ones to take off them). False when none started."""
        with self._lock:
            planned = self._pending.get(key)
        if planned is not None:
            try:  # through the memo: a probe that failed is not run again
                self._observe(planned[0], planned[1])
            except Exception:  # noqa: BLE001 - the page computes it and says why
                pass
        with self._lock:
            for claimed in [k for k in self._pending if self.memo.value(k) is not None]:
                del self._pending[claimed]  # its page got there first
            if not self._pending:
                return False
            key = max(self._pending, key=self._ready_kernels)
            api, options, sections, mask = self._pending.pop(key)
        try:
            observed = self._observe(api, options)
            if mask:  # the worker reads it from the store
                self._keep_other(api, options)
        except Exception:  # noqa: BLE001 - the page computes it and says why
            return False
        if not self._worth_it(observed):
            return False  # not claimed: the page computes it, as without workers
        started: List[bool] = []

        def run() -> bool:
            started.append(True)
            return self._run(api, options, sections)

        self.memo.once(key, run, ahead=True)  # skipped when a page claimed it
        return bool(started)

    def _ready_kernels(self, key: Tuple) -> int:
        api, options = self._pending[key][:2]
        observed = self.memo.value(("observation", api, options))
        return len(observed.get("listing") or []) if isinstance(observed, dict) else -1

    def _worth_it(self, observed: dict) -> bool:
        """Whether the probe's work took longer than a worker's start-up."""
        seconds = observed.get("seconds") or {}
        probe = sum(float(seconds.get(part) or 0.0) for part in ("observe", "perturb"))
        probe += float((observed.get("dispatch") or {}).get("seconds") or 0.0)
        return self._start_up is None or probe > self._start_up

    def _run(self, api: str, options: Options, sections: Optional[str]) -> bool:
        """Run the worker for ``api``; True when it kept every result. Never raises."""
        place, progress = self.place, self.place.progress
        option_args = [arg for dest, value in options.given().items()
                       for arg in (cli_flag(dest), str(value))]
        args = prepare_argv(place.ck_root, [api], cache_dir=place.cache_root,
                            python=place.python, timeout=place.timeout,
                            option_args=option_args, sections=sections,
                            progress=progress is not None)
        started, kept = time.monotonic(), []

        def done_with(name: str, ok: bool, seconds: float) -> None:
            kept.append(ok)
            if progress is not None:
                report_step(progress, place.fmha_dir, ["-a", name],
                            "analysed in a worker interpreter" if ok else _NOT_COMPLETE,
                            time.monotonic() - started)

        # room for the probe-free analysis and a few generate.py runs of the timeout each
        outcome = run_worker(current_interpreter(), args, timeout=4 * place.timeout,
                             on_api=done_with,
                             on_step=None if progress is None else
                             lambda line: progress(StepLine(line)))
        if outcome.api_seconds and self._start_up is None:
            self._start_up = outcome.start_up
        if progress is not None and not outcome.ok:
            if api not in outcome.api_seconds:  # it ended before it got to it
                report_step(progress, place.fmha_dir, ["-a", api], _NOT_COMPLETE,
                            outcome.seconds)
            if outcome.error is not None:
                progress(str(outcome.error))
        return outcome.ok or kept == [True]

    def wait_or_claim(self, parts: Sequence[object]) -> bool:
        """Wait for the worker of these results' API (``parts``: as stored), or claim it
        so that it never starts; True when one ran and kept its results."""
        if not self._keys or not parts or not isinstance(parts[-1], dict):
            return False
        key = self._keys.get((str(parts[0]), _options_key(parts[-1])))
        if key is None:
            return False
        return self.memo.once(key, lambda: False) is True


# --------------------------------------------------------------------------- the worker

#: The folder that holds this package: first on the worker's path.
_PACKAGE_PARENT = Path(__file__).resolve().parents[1]
#: Marks the step lines the worker writes on stderr (its progress).
STEP_PREFIX = "fmha: "


@dataclass
class WorkerOutcome:
    """How a worker ended (``ok``: every API analysed and kept), and its seconds."""

    ok: bool
    seconds: float
    api_seconds: Mapping[str, float] = field(default_factory=dict)
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
    """Run ``interpreter -m sphinxext_fmha <args>`` to its end; never raises (a failure is
    an outcome not ok, with its :class:`GenerateError`). While it runs: ``on_api(api, kept,
    seconds)`` as soon as it is done with an API; ``on_step(line)`` for its step lines."""
    argv = [interpreter, "-m", "sphinxext_fmha", *args]
    display = shlex.join(["sphinxext-fmha", *args])
    api_seconds: Dict[str, float] = {}
    try:
        with scratch("fmha-worker-") as workdir:
            path = os.pathsep.join(p for p in (str(_PACKAGE_PARENT),
                                               os.environ.get("PYTHONPATH", "")) if p)
            env = child_environment(workdir, {"PYTHONPATH": path})
            records, steps = map(_new_lines, output_files(workdir))

            def watch() -> None:
                for record in filter(None, map(_api_record, records())):
                    api_seconds[record[0]] = record[2]
                    if on_api is not None:
                        on_api(*record)
                for line in steps():
                    if line.startswith(STEP_PREFIX) and on_step is not None:
                        on_step(line)

            # cwd: the scratch folder (first on the path with ``-m``), which holds no module
            outcome = run(argv, cwd=workdir, workdir=workdir, timeout=timeout,
                          display=display, env=env, watch=watch)
            watch()  # (a run killed at its timeout was not watched at its end)
            error = None if outcome.ok else outcome.error()
    except GenerateError as failure:
        return WorkerOutcome(ok=False, seconds=0.0, error=failure)
    return WorkerOutcome(ok=error is None, seconds=outcome.seconds, api_seconds=api_seconds,
                         error=error)


def _api_record(line: str) -> Optional[Tuple[str, bool, float]]:
    """(api, kept, seconds) of one line the worker wrote on stdout, or None."""
    try:
        record = json.loads(line)
        return str(record["api"]), not record.get("problems"), float(record["seconds"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _new_lines(path: Path) -> Callable[[], List[str]]:
    """What reads the whole lines written to ``path`` since its last call."""
    offset = 0

    def read() -> List[str]:
        nonlocal offset
        try:
            with open(path, "rb") as handle:
                handle.seek(offset)
                new = handle.read()
        except OSError:
            return []
        whole = new[: new.rfind(b"\n") + 1]  # a line still being written waits
        offset += len(whole)
        return whole.decode("utf-8", errors="replace").splitlines()

    return read


def current_interpreter() -> str:
    """The interpreter that runs this package (generate.py's may not have it)."""
    return sys.executable
