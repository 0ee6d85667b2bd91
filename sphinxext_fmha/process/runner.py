"""Run a CK tree's own ``generate.py`` (listing and write mode) through the launcher, in
its folder, its outputs in a scratch folder (never in the tree); results kept in the store,
keyed by the tree's digest when the run started, the request, the interpreter and
:data:`RUNNER_FORMAT`. What it is asked (a :class:`GenerateRequest`, a :class:`DriverRun`)
and returns (a :class:`ListingResult`, an :class:`ApiFileResult`). No Sphinx imports here.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import shlex
import stat
import sys
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union

from ..cppapi.matching import kernel_trait_key
from ..errors import WarningType
from ..options import GENERATE_OPTIONS, OptionError, check_supported, flag_of
from .cache import DiskCache, TreeState, tree_state
from .launch import GenerateError, run, scratch, total_processes_started
from .progress import options_shown, report_step

__all__ = ["RUNNER_FORMAT", "GenerateError", "GenerateRequest", "ListingResult", "ApiFileResult",
           "DriverRun", "GenerateRunner", "total_processes_started", "interpreter_id",
           "api_file_result", "check_generate_py", "listing_lines", "read_written"]

#: Bump when what the runner stores (or how it runs generate.py) changes (3: the
#: results themselves, pickled by the store; 4: their classes moved here).
RUNNER_FORMAT = 4

_PROGRESS_EVERY = 10.0
#: Write-mode results a runner keeps in memory (one per API and options, a few MB each).
_API_RESULTS_KEPT = 8

_PY_LOCK = threading.Lock()
_PY_VERSIONS: Dict[str, Union[str, GenerateError]] = {}
#: Request fields that become generate.py flags, in argv order (see ``options.py``).
_REQUEST_FIELDS = ("filter",) + tuple(spec.dest for spec in GENERATE_OPTIONS)


@dataclasses.dataclass(frozen=True)
class GenerateRequest:
    """One generate.py invocation (without its output option): ``filter`` verbatim to
    ``-f`` ("": none); an option None is left out (generate.py's default applies)."""

    api: str
    filter: str = ""
    targets: Optional[str] = None
    mask: Optional[str] = None
    receipt: Optional[int] = None
    optdim: Optional[str] = None

    def requested_options(self) -> List[str]:
        """argparse dests this request needs besides the API."""
        return [name for name in _REQUEST_FIELDS if getattr(self, name) not in (None, "")]

    def argv(self, options_supported: Optional[Set[str]] = None) -> List[str]:
        """generate.py arguments, e.g. ``['-a', 'fwd', '-f', '*d64*']``; a requested option
        not in ``options_supported`` (the tree's argparse dests; None: all) raises."""
        if not self.api or not re.fullmatch(r"[A-Za-z0-9_]+", self.api):
            raise GenerateError(f"invalid API name {self.api!r} (one API per request)",
                                kind=WarningType.API)
        requested = self.requested_options()
        if options_supported is not None:
            try:
                check_supported(requested, options_supported)
            except OptionError as error:
                raise GenerateError(str(error), kind=WarningType.OPTION) from None
        args = ["-a", self.api]
        for name in requested:
            args += [flag_of(name), str(getattr(self, name))]
        return args


@dataclasses.dataclass(frozen=True)
class DriverRun:
    """generate.py once for the union of ``filters`` (``batch_script.py``); ``request``: the
    API and options (its ``filter`` is ""); ``separator``: the API's sub-filter separator."""

    request: GenerateRequest
    separator: str
    filters: Tuple[str, ...]


@dataclasses.dataclass
class ListingResult:
    """``generate.py -l``: the kernel ``.cpp`` files it would write."""

    command: str
    files: List[str]
    count: int
    seconds: float
    from_cache: bool = False
    api_file: Optional[str] = None
    request: Optional[GenerateRequest] = None


@dataclasses.dataclass
class ApiFileResult:
    """``generate.py -o``: the dispatch file's text and the kernels written, each with its
    trait key(s) (:func:`~sphinxext_fmha.cppapi.matching.kernel_trait_key`) and its size
    (``api_bytes``: the dispatch file's; empty / 0 when not measured)."""

    command: str
    api_file: str
    text: str
    kernel_files: List[str]
    kernel_traits: Dict[str, str]
    seconds: float
    from_cache: bool = False
    request: Optional[GenerateRequest] = None
    kernel_bytes: Dict[str, int] = dataclasses.field(default_factory=dict)
    api_bytes: int = 0

    @property
    def count(self) -> int:
        return len(self.kernel_files)


def interpreter_id(python: str, fmha_dir: Path, timeout: float = 60) -> str:
    """Interpreter version + basename (in every cache key); :class:`GenerateError` when
    ``python`` cannot run (within a minute at most) or is not a Python. Answer and failure
    are kept per interpreter file: a build does not wait for a hanging one twice."""
    base = os.path.basename(python)
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        return f"{sys.version.split()[0]}|{base}"
    try:
        st = os.stat(python)
        memo = f"{python}|{st.st_ino}|{st.st_mtime_ns}|{st.st_size}"
    except OSError:
        memo = python
    with _PY_LOCK:
        cached = _PY_VERSIONS.get(memo)
    if cached is None:
        try:
            cached = _python_version(python, fmha_dir, min(timeout, 60))
        except GenerateError as error:
            cached = error
        with _PY_LOCK:
            _PY_VERSIONS[memo] = cached
    if isinstance(cached, GenerateError):
        raise cached
    return f"{cached}|{base}"


def _python_version(python: str, cwd: Path, timeout: float) -> str:
    """``X.Y.Z`` of ``python``: it must print it (``/bin/echo`` exits 0 too)."""
    marker = "fmha-python-version"
    code = f'import sys; print("{marker}", sys.version.split()[0])'
    display = shlex.join([os.path.basename(python), "-c", code])
    with scratch("fmha-python-") as workdir:
        outcome = run([python, "-c", code], cwd=cwd, workdir=workdir, timeout=timeout,
                      display=display)
        if not outcome.ok:
            raise outcome.error(f"cannot run interpreter {python!r}: {outcome.status()}")
        words = outcome.stdout.read_text(encoding="utf-8", errors="replace").split()
    if len(words) != 2 or words[0] != marker:
        raise GenerateError(
            f"interpreter {python!r} is not a Python: it ran, but did not print its "
            "version (set fmha_python / --python to a python3 executable)", command=display)
    return words[1]


def check_generate_py(fmha_dir: Path) -> None:
    """:class:`GenerateError` (``CK_ROOT``) when ``fmha_dir`` has no generate.py that can run."""
    path = Path(fmha_dir) / "generate.py"
    try:
        mode = path.stat().st_mode  # through symlinks: a loop is ELOOP
    except FileNotFoundError:
        problem = "there is no generate.py in %s" % fmha_dir
    except OSError as error:
        problem = "cannot use %s: %s" % (path, "it is a symlink loop" if error.errno == errno.ELOOP
                                        else error.strerror or error)
    else:
        if stat.S_ISREG(mode):
            return
        problem = "%s is %s, not a file" % (path, "a folder" if stat.S_ISDIR(mode) else
                                            "a special file")
    raise GenerateError(problem, kind=WarningType.CK_ROOT)


def listing_lines(path: Path) -> List[str]:
    """The lines of a listing generate.py wrote (none without a file; bad UTF-8 as U+FFFD)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []
    except OSError as error:
        raise GenerateError("cannot read the listing generate.py wrote, %s: %s"
                            % (path, error.strerror or error)) from None


def read_written(outdir: Path, display: str) -> Dict[str, Any]:
    """What write mode wrote into ``outdir``, as :func:`api_file_result` reads it (each kernel
    source read once, for its trait keys, and dropped)."""
    written = sorted(outdir.rglob("*.cpp"), key=lambda p: p.name)
    api_paths = [p for p in written if p.name.endswith("_api.cpp")]
    kernels = [p for p in written if not p.name.endswith("_api.cpp")]
    if len(api_paths) != 1:
        found = ", ".join(p.name for p in api_paths) or "none"
        raise GenerateError(f"{display}: expected one *_api.cpp in the output, found {found}",
                            command=display)
    return {"api_file": api_paths[0].name,
            "text": api_paths[0].read_text(encoding="utf-8", errors="replace"),
            "kernel_traits": {p.name: kernel_trait_key(p.read_text(encoding="utf-8",
                                                                   errors="replace"))
                              for p in kernels},
            "kernel_bytes": {p.name: p.stat().st_size for p in kernels},
            "api_bytes": api_paths[0].stat().st_size}


def api_file_result(command: str, found: Mapping[str, Any], seconds: float,
                    **more: Any) -> ApiFileResult:
    """The write-mode result of what a run wrote (:func:`read_written`), or of what the
    probe or a batch rendered (the same keys)."""
    return ApiFileResult(command=command, api_file=found["api_file"], text=found["text"],
                         kernel_files=sorted(found["kernel_traits"]),
                         kernel_traits=dict(found["kernel_traits"]), seconds=round(seconds, 3),
                         kernel_bytes=dict(found.get("kernel_bytes") or {}),
                         api_bytes=int(found.get("api_bytes") or 0), **more)


class GenerateRunner:
    """Runs one tree's generate.py; see the module docstring."""

    def __init__(self, fmha_dir: Union[str, Path], python: str = sys.executable,
                 cache: Optional[DiskCache] = None, timeout: float = 600,
                 progress: Optional[Callable[[str], None]] = None,
                 options: Optional[Set[str]] = None) -> None:
        self.fmha_dir = Path(fmha_dir).resolve()
        check_generate_py(self.fmha_dir)
        self.python = python
        self.cache = cache
        self.timeout = timeout
        self.progress = progress
        self.progress_interval = _PROGRESS_EVERY
        #: the tree's generate.py option dests: another is refused before any run (None: all)
        self.options = set(options) if options is not None else None
        self._lock = threading.Lock()
        self.processes_started = 0
        # the last write-mode results stored or read, by key: the sections ask for the same
        # dispatch file many times, and the store decompresses megabytes each time
        self._api_results: OrderedDict[str, ApiFileResult] = OrderedDict()

    def state(self) -> TreeState:
        return tree_state(self.fmha_dir)

    def python_id(self) -> str:
        """The interpreter's id in cache keys (:func:`interpreter_id`)."""
        return interpreter_id(self.python, self.fmha_dir, self.timeout)

    def _key(self, kind: str, req: Union[GenerateRequest, DriverRun],
             inputs: Optional[TreeState] = None) -> str:
        # a driver run's keys are its own ("driver-run"), not those of the separate runs
        return DiskCache.key_for("driver-run" if isinstance(req, DriverRun) else "generate-run",
                                 RUNNER_FORMAT, kind, (inputs or self.state()).digest,
                                 dataclasses.asdict(req), self.python_id())

    def _hit(self, kind: str, req: Union[GenerateRequest, DriverRun],
             inputs: Optional[TreeState], cls: type, key: Optional[str] = None) -> Any:
        """The ``cls`` result kept for ``req`` (under ``key`` when known), or None (an entry
        of another shape is dropped)."""
        if self.cache is None:
            return None
        key = key or self._key(kind, req, inputs)
        hit = self.cache.get(key)
        if hit is not None and not isinstance(hit, cls):
            self.cache.delete(key)
            return None
        return hit

    def _put(self, kind: str, req: Union[GenerateRequest, DriverRun], value: Any,
             inputs: TreeState) -> Optional[str]:
        """Keep ``value`` for ``req``: its key, or None when not kept (no cache, or the
        tree changed since ``inputs``)."""
        if self.cache is None:
            return None
        key = self._key(kind, req, inputs)
        self.cache.put(key, value, inputs)
        return key if self.cache.has(key) else None

    def has_result(self, kind: str, req: Union[GenerateRequest, DriverRun]) -> bool:
        """Whether the cache holds the result of a request or driver run ("list", "api")."""
        return self.cache is not None and self.cache.has(self._key(kind, req))

    def listing_command(self, req: GenerateRequest, listing: str = "kernels.txt",
                        appends: bool = False) -> str:
        """The command a reader runs for ``req``'s listing; ``appends``: this generate.py
        appends to the ``-l`` file, so the command removes it first."""
        command = self._display(req, ["-l", listing])
        return "rm -f %s && %s" % (shlex.quote(listing), command) if appends else command

    def api_file_command(self, req: GenerateRequest) -> str:
        """The write-mode command whose dispatch file ``generate_api_file`` reads."""
        return self._display(req, ["-o", "generated"])

    def _display(self, req: GenerateRequest, tail: Sequence[str]) -> str:
        return shlex.join(["python", "generate.py", *req.argv(self.options), *tail])

    def _run(self, req: GenerateRequest, out_args: List[str], display: str, workdir: Path,
             command: Optional[List[str]] = None) -> float:
        """Run generate.py (or ``command``: the batch) through the launcher: its wall seconds,
        or :class:`GenerateError` with the tail of its stderr."""
        argv = command or [self.python, "-B", str(self.fmha_dir / "generate.py"),
                           *req.argv(self.options), *out_args]
        with self._lock:
            self.processes_started += 1
        outcome = run(argv, cwd=self.fmha_dir, workdir=workdir, timeout=self.timeout,
                      display=display, progress=self.progress,
                      label=f"generate.py -a {req.api}", progress_every=self.progress_interval)
        if not outcome.ok:
            raise outcome.error()
        return outcome.seconds

    # ------------------------------------------------------------------ listing

    def list_kernels(self, req: GenerateRequest) -> ListingResult:
        """``generate.py -a API -l FILE [...]``: kernel files, sorted basenames."""
        display = self.listing_command(req)
        inputs = self.state()
        hit = self._hit("list", req, inputs, ListingResult)
        if hit is not None:
            return dataclasses.replace(hit, command=display, from_cache=True, request=req)
        with scratch("fmha-list-") as workdir:
            seconds = self._run(req, ["-l", str(workdir / "kernels.txt")], display, workdir)
            lines = listing_lines(workdir / "kernels.txt")
        names = [os.path.basename(line.strip()) for line in lines if line.strip()]
        result = self.store_listing(req, names, seconds, from_cache=False, inputs=inputs)
        self._report(req, "-l", seconds, result.count)
        return result

    def _report(self, req: GenerateRequest, mode: str, seconds: float, kernels: int) -> None:
        argv = req.argv(self.options)
        report_step(self.progress, self.fmha_dir, argv,
                    "generate.py %s%s" % (mode, options_shown(argv)), seconds, kernels)

    def store_listing(self, req: GenerateRequest, names: Sequence[str], seconds: float,
                      from_cache: bool = True, *, inputs: TreeState) -> ListingResult:
        """Keep ``names`` (basenames ``-l`` wrote) as ``req``'s listing (the probe's too);
        ``inputs``: the tree when the run started."""
        api_files = sorted({n for n in names if n.endswith("_api.cpp")})
        files = sorted({n for n in names if not n.endswith("_api.cpp")})
        result = ListingResult(
            command=self.listing_command(req), files=files, count=len(files),
            seconds=round(seconds, 3), from_cache=from_cache, request=req,
            api_file=api_files[0] if len(api_files) == 1 else (", ".join(api_files) or None))
        self._put("list", req, dataclasses.replace(result, from_cache=True), inputs)
        return result

    # ------------------------------------------------------------------ api file

    def generate_api_file(self, req: GenerateRequest) -> ApiFileResult:
        """``generate.py -a API -o DIR [...]``: the dispatch file and kernel names."""
        display = self.api_file_command(req)
        inputs = self.state()
        if self.cache is not None:
            key = self._key("api", req, inputs)
            kept = self._kept_api_result(key)
            if kept is not None:
                return kept
            hit = self._hit("api", req, inputs, ApiFileResult, key)
            if hit is not None:
                result = dataclasses.replace(hit, command=display, from_cache=True, request=req)
                self._keep_api_result(key, result)
                return result
        with scratch("fmha-gen-") as workdir:
            outdir = workdir / "generated"
            outdir.mkdir()
            seconds = self._run(req, ["-o", str(outdir)], display, workdir)
            written = read_written(outdir, display)
        result = self.store_api_file(req, written, seconds, from_cache=False, inputs=inputs)
        self._report(req, "-o", seconds, result.count)
        return result

    def store_api_file(self, req: GenerateRequest, written: Mapping[str, Any], seconds: float,
                       from_cache: bool = True, *, inputs: TreeState) -> ApiFileResult:
        """Keep what write mode wrote for ``req`` (:func:`api_file_result`; the probe's
        too, which renders the same files without writing them); ``inputs``: the tree
        when the run started."""
        result = api_file_result(self.api_file_command(req), written, seconds,
                                 from_cache=from_cache, request=req)
        kept = dataclasses.replace(result, from_cache=True)
        key = self._put("api", req, kept, inputs)
        if key is not None:
            self._keep_api_result(key, kept)
        return result

    def _keep_api_result(self, key: str, result: ApiFileResult) -> None:
        with self._lock:
            self._api_results[key] = result
            self._api_results.move_to_end(key)
            while len(self._api_results) > _API_RESULTS_KEPT:
                self._api_results.popitem(last=False)

    def _kept_api_result(self, key: str) -> Optional[ApiFileResult]:
        """A kept result, as a copy its reader may change (its text is a str)."""
        with self._lock:
            kept = self._api_results.get(key)
        if kept is None or not self.cache.has(key):  # type: ignore[union-attr]
            return None  # the cache's files stay the truth: an entry removed is a miss
        return dataclasses.replace(kept, kernel_files=list(kept.kernel_files),
                                   kernel_traits=dict(kept.kernel_traits),
                                   kernel_bytes=dict(kept.kernel_bytes))

    # ------------------------------------------------------------------ driver

    def stored_driver_listing(self, run: DriverRun,
                              inputs: Optional[TreeState] = None) -> Optional[List[str]]:
        """The kernel files the driver run lists, when kept for the tree ``inputs``."""
        hit = self._hit("list", run, inputs, list)
        return None if hit is None else list(hit)

    def store_driver_listing(self, run: DriverRun, files: Sequence[str], *,
                             inputs: TreeState) -> None:
        self._put("list", run, list(files), inputs)

    def stored_driver_write(self, run: DriverRun,
                            inputs: Optional[TreeState] = None) -> Optional[ApiFileResult]:
        """The driver's write-mode result, when kept for the tree ``inputs``."""
        hit = self._hit("api", run, inputs, ApiFileResult)
        return None if hit is None else dataclasses.replace(hit, from_cache=True)

    def store_driver_write(self, run: DriverRun, result: ApiFileResult, *,
                           inputs: TreeState) -> None:
        self._put("api", run, dataclasses.replace(
            result, seconds=round(result.seconds, 3), request=None,
            kernel_files=sorted(result.kernel_traits)), inputs)
