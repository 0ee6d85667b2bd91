"""Run the probe (``probe_script.py``, which imports the tree's codegen) in a process of
generate.py's interpreter, writing no bytecode into the tree; results cached."""

from __future__ import annotations

import collections
import hashlib
import json
import shlex
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from ..cppapi.allocation import collector_paused
from ..errors import FmhaError, WarningType, stderr_tail
from ..process.cache import DiskCache, TreeState, load_json, tree_state
from ..process.launch import Outcome, install_handlers, run, scratch
from ..process.progress import options_shown, report_step
from ..process.runner import interpreter_id

PROBE_SCRIPT = Path(__file__).with_name("probe_script.py")
#: The probe and the modules it loads by path; the stdlib-only package it loads by path
#: for kernel files' trait keys
PROBE_FILES = sorted(Path(__file__).parent.glob("probe_*.py"))
TRAIT_READER = Path(__file__).parent.parent / "cppapi"
#: Results kept in this process (the model and the session read the same probe).
_MEMO_SIZE = 4
_MEMO: collections.OrderedDict[str, dict] = collections.OrderedDict()
_MEMO_LOCK = threading.Lock()
#: memo key of a probe -> its other listing (see :func:`observe_also`), pending while
#: the probe process still lists it
_ALSO: Dict[str, Future[dict]] = {}


class ProbeError(FmhaError):
    """The probe (i.e. the tree's own generate.py) failed; the message is for humans."""

    default_kind = WarningType.GENERATE

    def __init__(self, message: str, command: str = "", stderr_tail: str = ""):
        super().__init__(message, command=command, stderr_tail=stderr_tail)


def _probe_version() -> str:
    digest = hashlib.sha256()
    for path in PROBE_FILES + sorted(TRAIT_READER.glob("*.py")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def read_result(text: bytes) -> dict:
    """The probe's result, each record's shared fields (``share_record_fields``) put back,
    a copy each. Its million containers all survive: collector passes would free nothing."""
    with collector_paused():
        result = load_json(text)
        tables = result.pop("record_tables", None) if isinstance(result, dict) else None
        try:
            for field, values in (tables or {}).items():
                for record in result["records"]:
                    record[field] = dict(values[record[field]])
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ValueError("the record tables do not fit the records (%r)" % exc) from None
    return result


def _probe_key(fmha_dir: Path, argv: List[str], python: str,
               also_list: Optional[List[str]], inputs: Optional[TreeState] = None,
               timeout: float = 60) -> str:
    parts = [list(argv)] + ([list(also_list)] if also_list is not None else [])
    return DiskCache.key_for("probe", (inputs or tree_state(fmha_dir)).digest, *parts,
                             _probe_version(), interpreter_id(python, fmha_dir, timeout))


def _memo_key(cache: Optional[DiskCache], key: str) -> str:  # one memo per cache
    return "%s|%s" % (cache.root if cache is not None else "", key)


def observe(fmha_dir: Path, argv: List[str], *, python: Optional[str] = None,
            cache: Optional[DiskCache] = None, timeout: float = 900,
            progress: Optional[Callable[[str], None]] = None,
            also_list: Optional[List[str]] = None, inputs: Optional[TreeState] = None) -> dict:
    """Probe results for ``generate.py <argv>`` in ``fmha_dir`` (cached by content).
    ``also_list``: one more listing's arguments (no ``-l``), see :func:`observe_also`;
    ``inputs``: the tree as found (default: now), kept only if still so at the end."""
    python = python or sys.executable
    inputs = inputs or tree_state(fmha_dir)
    key = _probe_key(fmha_dir, argv, python, also_list, inputs, timeout)
    memo_key = _memo_key(cache, key)
    if cache is None:  # no caching asked for: run the probe
        return _run_probe(fmha_dir, argv, python, timeout, progress, also_list, memo_key)[0]
    with _MEMO_LOCK:
        if memo_key in _MEMO:
            _MEMO.move_to_end(memo_key)
            return _MEMO[memo_key]
    try:
        result = read_result((cache.get(key) or {})["json"])  # the probe's own JSON text
    except (KeyError, TypeError, ValueError):  # not kept, or unreadable
        result = None
    if result is None:
        def keep_also(listed: dict) -> None:
            cache.put(_also_key(key), listed, inputs)

        result, text = _run_probe(fmha_dir, argv, python, timeout, progress, also_list,
                                  memo_key, keep_also, cache.code_store_path(fmha_dir, python))
        cache.put(key, {"json": text}, inputs)
        if not cache.has(key):  # the tree changed meanwhile: this result is nobody else's
            with _MEMO_LOCK:
                _ALSO.pop(memo_key, None)
            return result
    with _MEMO_LOCK:
        _MEMO[memo_key] = result
        while len(_MEMO) > _MEMO_SIZE:
            _MEMO.popitem(last=False)
    return result


def observe_also(fmha_dir: Path, argv: List[str], also_list: List[str], *,
                 python: Optional[str] = None, cache: Optional[DiskCache] = None,
                 inputs: Optional[TreeState] = None) -> Optional[dict]:
    """The other listing of :func:`observe`'s probe with these arguments (``listing`` and
    ``error``, or ``unsafe``), waited for while that probe runs; None when neither this
    process nor the cache has it (the caller lists it itself)."""
    python = python or sys.executable
    key = _probe_key(fmha_dir, argv, python, also_list, inputs)
    with _MEMO_LOCK:
        pending = _ALSO.get(_memo_key(cache, key))
    if pending is not None:
        return pending.result()
    hit = cache.get(_also_key(key)) if cache is not None else None
    return hit if hit is not None and ("listing" in hit or "error" in hit) else None


def _also_key(key: str) -> str:
    return DiskCache.key_for("probe-also", key)


def _run_probe(fmha_dir: Path, argv: List[str], python: str, timeout: float,
               progress: Optional[Callable[[str], None]],
               also_list: Optional[List[str]] = None, memo_key: str = "",
               keep_also: Optional[Callable[[dict], None]] = None,
               code_store: Optional[Path] = None) -> Tuple[dict, bytes]:
    """The probe's result and its JSON text. With ``also_list``, a thread waits for the
    probe, handing over the result once written, the other listing (under ``memo_key``;
    to ``keep_also`` when clean) at the end. ``code_store``: see the probe script."""
    command = [python, "-B", str(PROBE_SCRIPT), str(fmha_dir), "RESULT",
               "--trait-reader", str(TRAIT_READER)]
    if code_store is not None:
        command += ["--code-store", str(code_store)]
    if also_list is None:
        return _probe_process(command + list(argv), fmha_dir, argv, timeout, progress)
    command += ["--also-list", json.dumps(list(also_list)), "--also-out", "ALSO"]
    result: Future[Tuple[dict, bytes]] = Future()
    also: Future[dict] = Future()
    with _MEMO_LOCK:
        _ALSO[memo_key] = also
        for done in [k for k, f in _ALSO.items() if f.done()][:-_MEMO_SIZE or None]:
            del _ALSO[done]  # a few are kept; the cache has them all

    def hand_over(listed: dict) -> None:
        # kept before it is handed over: whoever waits for it may start a process (a
        # worker interpreter) that reads it from the cache
        if keep_also is not None and "listing" in listed and not listed.get("error"):
            try:
                keep_also(listed)
            except OSError:  # not kept: a later build lists it again
                pass
        also.set_result(listed)

    def work() -> None:
        try:
            _probe_process(command + list(argv), fmha_dir, argv, timeout, progress,
                           result, hand_over, also_list)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting threads
            if not result.done():
                result.set_exception(exc)
        if not also.done():
            also.set_result({"error": "the probe ended without the other listing"})

    install_handlers()  # the thread cannot: signal handlers belong to the main thread
    threading.Thread(target=work, name="fmha-probe", daemon=True).start()
    return result.result()


def _probe_process(command: List[str], fmha_dir: Path, argv: List[str], timeout: float,
                   progress: Optional[Callable[[str], None]],
                   early: Optional[Future[Tuple[dict, bytes]]] = None,
                   also: Optional[Callable[[dict], None]] = None,
                   also_list: Optional[List[str]] = None) -> Tuple[dict, bytes]:
    """Run the probe process to its end; ``early``: set once the result is written;
    ``also``: given the other listing at the end."""
    shown = "python generate.py " + " ".join(shlex.quote(a) for a in argv)
    with scratch("fmha-observe-") as workdir:
        out, also_out = workdir / "probe.json", workdir / "also.json"
        command = [{"RESULT": str(out), "ALSO": str(also_out)}.get(a, a) for a in command]
        started = time.time()
        handed_over = [0.0]  # seconds from the start to the result's hand-over

        def written() -> None:
            # a result that reports a failure waits for the end: stderr says more
            try:
                text = out.read_bytes()
                found = read_result(text)
            except (OSError, ValueError):
                return
            if early is not None and isinstance(found, dict) and not found.get("error"):
                handed_over[0] = time.time() - started
                _report_probe(progress, fmha_dir, argv, found, handed_over[0])
                early.set_result((found, text))

        outcome = run(command, cwd=fmha_dir, workdir=workdir, timeout=timeout,
                      display=shown + "  # observed by the probe", progress=progress,
                      label=shown + " (analysis)",
                      when_written=(out, written) if early is not None else None)
        if also is not None and early is not None and early.done():
            listed = _other_listing(outcome, also_out)
            # a step of its own for the reader only when it outlasted the probe's work
            own = float(listed.get("seconds") or 0.0)
            if also_list is not None and not listed.get("error") and own > handed_over[0]:
                report_step(progress, fmha_dir, also_list,
                            "listing generate.py%s beside the probe" % options_shown(also_list),
                            own, kernels=_kernels(listed))
            also(listed)
            return early.result()
        if outcome.timed_out or not outcome.ok or not out.exists():
            error = outcome.error("%s timed out after %g s" % (shown, timeout) if outcome.timed_out
                                  else "%s failed (%s)" % (shown, outcome.status() if not outcome.ok
                                                           else "exit code 0 but no result"))
            raise ProbeError(str(error), shown, error.stderr_tail)
        try:
            text = out.read_bytes()
            result = read_result(text)
        except ValueError as exc:
            raise ProbeError("%s: the analysis wrote an unreadable result (%s)" % (shown, exc),
                             shown, outcome.stderr_tail()) from None
        if result.get("error"):
            # generate.py ran inside the probe: its own stderr is the probe's
            error_text = result["error"].strip()
            tail = stderr_tail(outcome.stderr_tail() + "\n" + error_text)
            lines = tail.splitlines()
            raise ProbeError("%s failed: %s\n  in %s\n  last %d lines of stderr:\n%s" % (
                shown, error_text.splitlines()[-1] if error_text else "unknown error",
                fmha_dir, len(lines), "\n".join("    " + line for line in lines)),
                shown, tail)
        if also is not None:
            also(_other_listing(outcome, also_out))
    _report_probe(progress, fmha_dir, argv, result, time.time() - started)
    if early is not None:
        early.set_result((result, text))
    return result, text


def _other_listing(outcome: Outcome, also_out: Path) -> dict:
    """The other listing the probe wrote, or why there is none."""
    try:
        found = load_json(also_out.read_bytes())
    except (OSError, ValueError):
        return {"error": "the probe wrote no other listing (%s)" % outcome.status()}
    return found if isinstance(found, dict) else {"error": "the other listing is unreadable"}


def _kernels(result: dict) -> int:
    return len({n for n in result.get("listing") or () if not n.endswith("_api.cpp")})


def _report_probe(progress: Optional[Callable[[str], None]], fmha_dir: Path,
                  argv: List[str], result: dict, seconds: float) -> None:
    report_step(progress, fmha_dir, argv, "probing generate.py" + options_shown(argv),
                seconds, kernels=_kernels(result))
