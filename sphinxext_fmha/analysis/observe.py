"""Run the probe (``probe_script.py``) against a tree in a subprocess, with a cache.

The probe imports the tree's codegen, so it runs in its own process, with the
interpreter chosen for generate.py, without writing bytecode into the tree.
"""

from __future__ import annotations

import base64
import collections
import hashlib
import json
import sys
import threading
import time
import zlib
from pathlib import Path
from typing import Callable, List, Optional, Tuple

from ..cppapi.allocation import collector_paused
from ..errors import FmhaError, WarningType, stderr_tail
from ..process.cache import DiskCache, tree_digest
from ..process.launch import run, scratch
from ..process.progress import report_step, run_label
from ..process.runner import interpreter_id

PROBE_SCRIPT = Path(__file__).with_name("probe_script.py")
#: The probe loads this stdlib-only reader package by path for kernel files' trait keys.
TRAIT_READER = Path(__file__).parent.parent / "cppapi"
#: Results kept in this process (the model and the session read the same probe).
_MEMO_SIZE = 4
_MEMO: collections.OrderedDict[str, dict] = collections.OrderedDict()
_MEMO_LOCK = threading.Lock()


class ProbeError(FmhaError):
    """The probe (i.e. the tree's own generate.py) failed; the message is for humans."""

    default_kind = WarningType.GENERATE

    def __init__(self, message: str, command: str = "", stderr_tail: str = ""):
        super().__init__(message, command=command, stderr_tail=stderr_tail)


def _probe_version() -> str:
    digest = hashlib.sha256(PROBE_SCRIPT.read_bytes())
    for path in sorted(TRAIT_READER.glob("*.py")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def _pack_text(text: str) -> dict:
    """The cache entry of a result from its JSON text (the probe's own output: the
    same data, not serialised a second time). Level 3 packs a heavy result in half the
    time level 6 takes (2.8.3 bwd: 42 MB of JSON into 1.3 MB instead of 0.8 MB)."""
    return {"zlib": base64.b64encode(zlib.compress(text.encode(), 3)).decode("ascii")}


def _unpack(entry: dict) -> dict:
    return read_result(zlib.decompress(base64.b64decode(entry["zlib"])))


def read_result(text) -> dict:
    """The probe's result from the JSON text it wrote: the record fields it wrote once per
    distinct value (``share_record_fields`` in the probe script) back in every record,
    each record with a copy of its own. A heavy probe's result is a million containers
    that all survive: collector passes while they are made would free nothing."""
    with collector_paused():
        result = json.loads(text)
        tables = result.pop("record_tables", None) or {}
        for field, values in tables.items():
            for record in result["records"]:
                record[field] = dict(values[record[field]])
    return result


def observe(
    fmha_dir: Path,
    argv: List[str],
    *,
    python: Optional[str] = None,
    cache: Optional[DiskCache] = None,
    timeout: float = 900,
    progress: Optional[Callable[[str], None]] = None,
    also_list: Optional[List[str]] = None,
) -> dict:
    """Probe results for ``generate.py <argv>`` in ``fmha_dir`` (cached by content).

    ``also_list``: generate.py arguments of one more listing (``-l`` left out) that the
    probe runs as a new process would, in a child it forks before its own work (else in
    its interpreter): ``result["also_listed"]`` (see ``start_listing`` and
    ``list_isolated`` in the probe script) holds its ``listing`` and ``error``, or
    ``unsafe`` when it could not."""
    python = python or sys.executable
    parts = [list(argv)] + ([list(also_list)] if also_list is not None else [])
    key = DiskCache.key_for("probe", tree_digest(fmha_dir), *parts, _probe_version(),
                            interpreter_id(python, fmha_dir))
    if cache is None:  # no caching asked for: run the probe
        return _run_probe(fmha_dir, argv, python, timeout, progress, also_list)[0]
    memo_key = "%s|%s" % (cache.root, key)  # one memo per cache: its files stay the truth
    with _MEMO_LOCK:
        if memo_key in _MEMO:
            _MEMO.move_to_end(memo_key)
            return _MEMO[memo_key]
    result = None
    hit = cache.get(key)
    if hit is not None:
        try:
            result = _unpack(hit)
        except (KeyError, ValueError, zlib.error):
            result = None
    if result is None:
        result, text = _run_probe(fmha_dir, argv, python, timeout, progress, also_list)
        cache.put(key, _pack_text(text))
    with _MEMO_LOCK:
        _MEMO[memo_key] = result
        while len(_MEMO) > _MEMO_SIZE:
            _MEMO.popitem(last=False)
    return result


def display_command(argv: List[str]) -> str:
    import shlex

    return "python generate.py " + " ".join(shlex.quote(a) for a in argv)


def _run_probe(fmha_dir: Path, argv: List[str], python: str, timeout: float,
               progress: Optional[Callable[[str], None]],
               also_list: Optional[List[str]] = None) -> Tuple[dict, str]:
    """The probe's result and its JSON text."""
    shown = display_command(argv)
    with scratch("fmha-observe-") as workdir:
        out = workdir / "probe.json"
        command = [python, "-B", str(PROBE_SCRIPT), str(fmha_dir), str(out),
                   "--trait-reader", str(TRAIT_READER)]
        if also_list is not None:
            command += ["--also-list", json.dumps(list(also_list))]
        command += list(argv)
        started = time.time()
        outcome = run(command, cwd=fmha_dir, workdir=workdir, timeout=timeout,
                      display=shown + "  # observed by the probe", progress=progress,
                      label=shown + " (analysis)")
        if outcome.timed_out:
            error = outcome.error("%s timed out after %g s" % (shown, timeout))
            raise ProbeError(str(error), shown, error.stderr_tail)
        if not outcome.ok or not out.exists():
            status = outcome.status() if not outcome.ok else "exit code 0 but no result"
            error = outcome.error("%s failed (%s)" % (shown, status))
            raise ProbeError(str(error), shown, error.stderr_tail)
        try:
            text = out.read_text(encoding="utf-8")
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
    options = run_label(argv)
    report_step(progress, fmha_dir, argv,
                "probing generate.py" + (" " + options if options else ""),
                time.time() - started,
                kernels=len({n for n in result["listing"] if not n.endswith("_api.cpp")}))
    return result, text
