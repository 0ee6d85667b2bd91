"""Run a CK tree's own ``generate.py`` (listing and API-file generation), cached.

generate.py runs in a subprocess: ``python -B generate.py ...`` with
``PYTHONDONTWRITEBYTECODE=1``, cwd = the ``01_fmha`` folder (generate.py does
``import codegen.ops``, found through ``sys.path[0]`` = the script's folder),
argv lists only (never a shell), outputs (``-l FILE`` / ``-o DIR``) in a
temporary folder.  Nothing is ever written into the analysed tree.

Results are cached in a :class:`~sphinxext_fmha.process.cache.DiskCache` keyed by
the tree's content digest, the request, the interpreter and
:data:`RUNNER_FORMAT`.  ``runner.processes_started`` counts subprocesses this
runner actually started; with ``FMHA_TRACE_RUNS=<file>`` every started process
appends one line (its command) to that file.

No Sphinx imports here.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set, Union

from .cache import DiskCache, tree_digest
from ..cppapi.dispatch_file import kernel_trait_key

__all__ = [
    "RUNNER_FORMAT",
    "GenerateError",
    "GenerateRequest",
    "ListingResult",
    "ApiFileResult",
    "GenerateRunner",
    "supported_options",
    "total_processes_started",
]

#: Bump when what the runner stores (or how it runs generate.py) changes.
RUNNER_FORMAT = 1

#: Options GenerateRequest can emit: request field -> (argparse dest, flag).
_OPTION_FLAGS = {
    "filter": ("filter", "-f"),
    "targets": ("targets", "--targets"),
    "mask": ("mask", "-m"),
    "receipt": ("receipt", "-r"),
    "optdim": ("optdim", "--optdim"),
}

_API_FILE_RE = re.compile(r"_api\.cpp$")
_STDERR_TAIL = 20
_PROGRESS_EVERY = 10.0

_COUNT_LOCK = threading.Lock()
_PY_VERSIONS: Dict[str, str] = {}
_TOTAL_STARTED = 0


def total_processes_started() -> int:
    """Subprocesses started by every runner (and the probe) of this Python process."""
    return _TOTAL_STARTED


def note_process_started(display: str, fmha_dir: Path) -> None:
    """Count a started subprocess; with ``FMHA_TRACE_RUNS=<file>`` also log it there,
    so tests of other processes (a sphinx-build) can count them too."""
    global _TOTAL_STARTED
    with _COUNT_LOCK:
        _TOTAL_STARTED += 1
    trace = os.environ.get("FMHA_TRACE_RUNS")
    if trace:
        line = f"{display}\t{fmha_dir}\n".encode("utf-8")
        fd = os.open(trace, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def interpreter_id(python: str, fmha_dir: Path) -> str:
    """Interpreter version + executable basename (part of every cache key)."""
    base = os.path.basename(python)
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        return f"{sys.version.split()[0]}|{base}"
    cached = _PY_VERSIONS.get(python)
    if cached is None:
        argv = [python, "-c", "import sys; print(sys.version.split()[0])"]
        note_process_started(shlex.join([base, *argv[1:]]), fmha_dir)
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
        except (OSError, subprocess.SubprocessError) as exc:
            raise GenerateError(f"cannot run interpreter {python!r}: {exc}") from exc
        cached = _PY_VERSIONS[python] = out.stdout.strip()
    return f"{cached}|{base}"


class GenerateError(RuntimeError):
    """generate.py failed, timed out, or was asked for something it cannot do."""

    def __init__(
        self,
        message: str,
        *,
        command: str = "",
        returncode: Optional[int] = None,
        timed_out: bool = False,
        stderr_tail: str = "",
    ) -> None:
        super().__init__(message)
        self.command = command
        self.returncode = returncode
        self.timed_out = timed_out
        self.stderr_tail = stderr_tail


@dataclass(frozen=True)
class GenerateRequest:
    """One generate.py invocation (without its output option).

    ``filter`` is passed verbatim to ``-f`` ("" = no ``-f``); the other options
    are omitted when None, so generate.py's own defaults apply.
    """

    api: str
    filter: str = ""
    targets: Optional[str] = None
    mask: Optional[str] = None
    receipt: Optional[int] = None
    optdim: Optional[str] = None

    def requested_options(self) -> List[str]:
        """argparse dests this request needs besides the API."""
        out = []
        for name, (dest, _) in _OPTION_FLAGS.items():
            value = getattr(self, name)
            if value is None or (name == "filter" and value == ""):
                continue
            out.append(dest)
        return out

    def argv(self, options_supported: Optional[Set[str]] = None) -> List[str]:
        """generate.py arguments, e.g. ``['-a', 'fwd', '-f', '*d64*']``.

        ``options_supported``: the tree's argparse dests (see
        :func:`supported_options`); a requested option missing there raises
        :class:`GenerateError` instead of being dropped.  None: no check.
        """
        if not self.api or not re.fullmatch(r"[A-Za-z0-9_]+", self.api):
            raise GenerateError(f"invalid API name {self.api!r} (one API per request)")
        args = ["-a", self.api]
        missing = []
        for name, (dest, flag) in _OPTION_FLAGS.items():
            value = getattr(self, name)
            if value is None or (name == "filter" and value == ""):
                continue
            if options_supported is not None and dest not in options_supported:
                missing.append(f"{flag} ({name}={value!r})")
                continue
            args += [flag, str(value)]
        if missing:
            have = ", ".join(sorted(options_supported or ())) or "none"
            raise GenerateError(
                "this tree's generate.py has no option "
                + ", ".join(missing)
                + f"; it supports: {have}"
            )
        return args

    def as_dict(self) -> Dict[str, object]:
        return dataclasses.asdict(self)


@dataclass
class ListingResult:
    """``generate.py -l``: the kernel ``.cpp`` files it would write."""

    command: str
    files: List[str]
    count: int
    seconds: float
    from_cache: bool = False
    api_file: Optional[str] = None
    request: Optional[GenerateRequest] = None


@dataclass
class ApiFileResult:
    """``generate.py -o``: the dispatch file's text and the kernels written.

    ``kernel_traits`` maps each kernel file to the normalised trait key(s) it
    specialises (:func:`~sphinxext_fmha.cppapi.dispatch_file.kernel_trait_key`).
    """

    command: str
    api_file: str
    text: str
    kernel_files: List[str]
    kernel_traits: Dict[str, str]
    seconds: float
    from_cache: bool = False
    request: Optional[GenerateRequest] = None

    @property
    def count(self) -> int:
        return len(self.kernel_files)


def supported_options(fmha_dir: Path) -> Set[str]:
    """argparse dests of generate.py's options, read statically (no process)."""
    from ..analysis.generate_py import generate_options_in

    return {option.dest for option in generate_options_in(fmha_dir)}


def _compress(obj: object) -> str:
    raw = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(zlib.compress(raw, 6)).decode("ascii")


def _decompress(text: str) -> object:
    return json.loads(zlib.decompress(base64.b64decode(text.encode("ascii"))).decode("utf-8"))




class GenerateRunner:
    """Runs one tree's generate.py; see the module docstring."""

    def __init__(
        self,
        fmha_dir: Union[str, Path],
        python: str = sys.executable,
        cache: Optional[DiskCache] = None,
        timeout: float = 600,
        progress: Optional[Callable[[str], None]] = None,
        options: Optional[Set[str]] = None,
    ) -> None:
        self.fmha_dir = Path(fmha_dir).resolve()
        if not (self.fmha_dir / "generate.py").is_file():
            raise GenerateError(f"no generate.py in {self.fmha_dir}")
        self.python = python
        self.cache = cache
        self.timeout = timeout
        self.progress = progress
        self.progress_interval = _PROGRESS_EVERY
        self._options = set(options) if options is not None else None
        self._lock = threading.Lock()
        self.processes_started = 0

    # ------------------------------------------------------------------ helpers

    @property
    def options(self) -> Set[str]:
        """The tree's generate.py option dests (parsed once)."""
        if self._options is None:
            self._options = supported_options(self.fmha_dir)
        return self._options

    def digest(self) -> str:
        return tree_digest(self.fmha_dir)

    def _python_id(self) -> str:
        return interpreter_id(self.python, self.fmha_dir)

    def _key(self, kind: str, req: GenerateRequest) -> str:
        return DiskCache.key_for(
            "generate-run", RUNNER_FORMAT, kind, self.digest(), req.as_dict(), self._python_id()
        )

    def listing_command(self, req: GenerateRequest, listing: str = "kernels.txt") -> str:
        """The command a reader runs for ``req``'s listing (no absolute paths)."""
        return self._display(req, ["-l", listing])

    def _display(self, req: GenerateRequest, tail: Sequence[str]) -> str:
        return shlex.join(["python", "generate.py", *req.argv(self.options), *tail])

    def _count_start(self, argv: Sequence[str], display: str) -> None:
        with self._lock:
            self.processes_started += 1
        note_process_started(display, self.fmha_dir)

    def _run(self, req: GenerateRequest, out_args: List[str], display: str, workdir: Path) -> float:
        """Run generate.py; return wall seconds or raise GenerateError."""
        argv = [self.python, "-B", str(self.fmha_dir / "generate.py"), *req.argv(self.options), *out_args]
        env = dict(os.environ)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        for var in ("PYTHONSAFEPATH", "PYTHONSTARTUP", "PYTHONINSPECT"):
            env.pop(var, None)
        stdout_path = workdir / "stdout.txt"
        stderr_path = workdir / "stderr.txt"
        label = f"generate.py -a {req.api}"
        self._count_start(argv, display)
        start = time.monotonic()
        with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
            try:
                proc = subprocess.Popen(
                    argv,
                    cwd=str(self.fmha_dir),
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=(os.name == "posix"),
                )
            except OSError as exc:
                raise GenerateError(
                    f"cannot start {display}: {exc}", command=display
                ) from exc
            timed_out = False
            try:
                while True:
                    elapsed = time.monotonic() - start
                    remaining = self.timeout - elapsed
                    if remaining <= 0:
                        timed_out = True
                        self._kill(proc)
                        break
                    try:
                        proc.wait(timeout=min(remaining, self.progress_interval))
                        break
                    except subprocess.TimeoutExpired:
                        if self.progress is not None and time.monotonic() - start < self.timeout:
                            self.progress(f"{label}: still running ({int(time.monotonic() - start)} s)")
            except BaseException:
                # a failing progress callback, KeyboardInterrupt, ...: do not leave
                # generate.py running behind us
                if proc.poll() is None:
                    self._kill(proc)
                raise
        seconds = time.monotonic() - start
        if timed_out or proc.returncode != 0:
            tail_lines = stderr_path.read_text(encoding="utf-8", errors="replace").splitlines()[-_STDERR_TAIL:]
            tail = "\n".join(tail_lines)
            if timed_out:
                status = f"timed out after {self.timeout:g} s"
            else:
                status = f"exit code {proc.returncode}"
            message = (
                f"{display} failed: {status}\n"
                f"  in {self.fmha_dir}\n"
                + (
                    f"  last {len(tail_lines)} lines of stderr:\n"
                    + "\n".join("    " + line for line in tail_lines)
                    if tail_lines
                    else "  (no stderr output)"
                )
            )
            raise GenerateError(
                message,
                command=display,
                returncode=None if timed_out else proc.returncode,
                timed_out=timed_out,
                stderr_tail=tail,
            )
        return seconds

    @staticmethod
    def _kill(proc: "subprocess.Popen[bytes]") -> None:
        try:
            if os.name == "posix":
                os.killpg(proc.pid, signal.SIGKILL)
            else:  # pragma: no cover
                proc.kill()
        except (ProcessLookupError, PermissionError, OSError):
            proc.kill()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass

    # ------------------------------------------------------------------ listing

    def list_kernels(self, req: GenerateRequest) -> ListingResult:
        """``generate.py -a API -l FILE [...]``: kernel files, sorted basenames."""
        display = self.listing_command(req)
        key = self._key("list", req) if self.cache is not None else ""
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                try:
                    return ListingResult(
                        command=display,
                        files=list(hit["files"]),
                        count=int(hit["count"]),
                        seconds=float(hit["seconds"]),
                        from_cache=True,
                        api_file=hit.get("api_file"),
                        request=req,
                    )
                except (KeyError, TypeError, ValueError):
                    self.cache.delete(key)
        with tempfile.TemporaryDirectory(prefix="fmha-list-") as tmp:
            workdir = Path(tmp)
            listing = workdir / "kernels.txt"
            seconds = self._run(req, ["-l", str(listing)], display, workdir)
            try:
                lines = listing.read_text(encoding="utf-8").splitlines()
            except FileNotFoundError:
                lines = []
        names = [os.path.basename(line.strip()) for line in lines if line.strip()]
        api_files = sorted({n for n in names if _API_FILE_RE.search(n)})
        files = sorted({n for n in names if not _API_FILE_RE.search(n)})
        result = ListingResult(
            command=display,
            files=files,
            count=len(files),
            seconds=round(seconds, 3),
            from_cache=False,
            api_file=api_files[0] if len(api_files) == 1 else (", ".join(api_files) or None),
            request=req,
        )
        if self.cache is not None:
            self.cache.put(
                key,
                {
                    "command": display,
                    "files": files,
                    "count": result.count,
                    "seconds": result.seconds,
                    "api_file": result.api_file,
                },
            )
        return result

    # ------------------------------------------------------------------ api file

    def generate_api_file(self, req: GenerateRequest) -> ApiFileResult:
        """``generate.py -a API -o DIR [...]``: the dispatch file and kernel names.

        The kernel sources are read once (for their trait keys) and dropped.
        """
        display = self._display(req, ["-o", "generated"])
        key = self._key("api", req) if self.cache is not None else ""
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                try:
                    payload = _decompress(hit["payload"])
                    assert isinstance(payload, dict)
                    return ApiFileResult(
                        command=display,
                        api_file=hit["api_file"],
                        text=payload["text"],
                        kernel_files=list(payload["kernel_files"]),
                        kernel_traits=dict(payload["kernel_traits"]),
                        seconds=float(hit["seconds"]),
                        from_cache=True,
                        request=req,
                    )
                except (KeyError, TypeError, ValueError, AssertionError, zlib.error):
                    self.cache.delete(key)
        with tempfile.TemporaryDirectory(prefix="fmha-gen-") as tmp:
            workdir = Path(tmp)
            outdir = workdir / "generated"
            outdir.mkdir()
            seconds = self._run(req, ["-o", str(outdir)], display, workdir)
            api_paths = []
            kernel_paths = []
            for dirpath, _dirnames, filenames in os.walk(outdir):
                for name in filenames:
                    if not name.endswith(".cpp"):
                        continue
                    (api_paths if _API_FILE_RE.search(name) else kernel_paths).append(Path(dirpath) / name)
            if len(api_paths) != 1:
                found = ", ".join(sorted(p.name for p in api_paths)) or "none"
                raise GenerateError(
                    f"{display}: expected one *_api.cpp in the output, found {found}",
                    command=display,
                )
            api_path = api_paths[0]
            text = api_path.read_text(encoding="utf-8")
            kernel_traits = {
                p.name: kernel_trait_key(p.read_text(encoding="utf-8", errors="replace"))
                for p in sorted(kernel_paths, key=lambda p: p.name)
            }
        result = ApiFileResult(
            command=display,
            api_file=api_path.name,
            text=text,
            kernel_files=sorted(kernel_traits),
            kernel_traits=kernel_traits,
            seconds=round(seconds, 3),
            from_cache=False,
            request=req,
        )
        if self.cache is not None:
            self.cache.put(
                key,
                {
                    "command": display,
                    "api_file": result.api_file,
                    "seconds": result.seconds,
                    "count": result.count,
                    "payload": _compress(
                        {
                            "text": text,
                            "kernel_files": result.kernel_files,
                            "kernel_traits": kernel_traits,
                        }
                    ),
                },
            )
        return result

    # ------------------------------------------------------------------ parallel

    def run_many(
        self,
        reqs: Iterable[GenerateRequest],
        jobs: int = 2,
        kind: str = "list",
    ) -> List[Union[ListingResult, ApiFileResult]]:
        """Run independent requests in parallel (``kind``: "list" or "api").

        Results come back in request order; the first failure is raised after
        the other runs have finished.
        """
        if kind == "list":
            func: Callable[[GenerateRequest], Union[ListingResult, ApiFileResult]] = self.list_kernels
        elif kind == "api":
            func = self.generate_api_file
        else:
            raise ValueError(f"kind must be 'list' or 'api', not {kind!r}")
        reqs = list(reqs)
        if not reqs:
            return []
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(reqs)))) as pool:
            futures = [pool.submit(func, req) for req in reqs]
        return [f.result() for f in futures]
