"""Run ``driver_script.py``: one generate.py run for the union of several filters.

Started through the launcher like every other child; no Sphinx, no session.
:func:`cached_listing` / :func:`cached_write` read the runner's cache first, where a
batch (``batch.py``) may have kept the driver run's results, and run the driver as a
process only on a miss.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence

from .launch import GenerateError, run, scratch
from .runner import ApiFileResult, DriverRun, GenerateRunner, listing_lines

__all__ = ["DRIVER_SCRIPT", "run_driver", "driver_listing", "driver_write", "listed_kernels",
           "write_result", "cached_listing", "cached_write"]

#: What the write result says was run (the driver's own command line is the CLI's).
WRITE_COMMAND = "sphinxext-fmha generate ... -o generated"

DRIVER_SCRIPT = Path(__file__).with_name("driver_script.py")
#: Seconds between the "still running" lines of a driver run (``sphinxext-fmha generate``).
PROGRESS_EVERY = 5.0


def run_driver(python: str, fmha_dir: Path, separator: str, filters: Sequence[str],
               generate_args: Sequence[str], out_args: Sequence[str], timeout: float,
               progress: Optional[Callable[[str], None]] = None) -> None:
    """Run the driver; raise :class:`~sphinxext_fmha.process.launch.GenerateError` (with
    the tail of its stderr) when it fails or times out.

    ``separator``: the API's sub-filter separator ('' for none); ``generate_args``:
    generate.py's arguments without ``-f``; ``out_args``: ``-l FILE`` or ``-o DIR``;
    ``progress``: told every :data:`PROGRESS_EVERY` seconds that it still runs.
    """
    argv = [python, "-B", str(DRIVER_SCRIPT), str(fmha_dir), separator, *filters, "--",
            *generate_args, *out_args]
    display = shlex.join(["python", DRIVER_SCRIPT.name, ".", separator, *filters, "--",
                          *generate_args, *out_args])
    with scratch("fmha-driver-") as workdir:
        label = "generate.py %s with %d filter%s" % (
            " ".join(generate_args), len(filters), "" if len(filters) == 1 else "s")
        outcome = run(argv, cwd=fmha_dir, workdir=workdir, timeout=timeout, display=display,
                      progress=progress, label=label, progress_every=PROGRESS_EVERY)
        if not outcome.ok:
            raise outcome.error("the driver run failed (%s): %s" % (outcome.status(), display))


def driver_listing(python: str, fmha_dir: Path, separator: str, filters: Sequence[str],
                   generate_args: Sequence[str], timeout: float) -> List[str]:
    """Kernel file names (API file left out) the driver run lists, sorted."""
    with scratch("fmha-driver-list-") as tmp:
        listing = tmp / "kernels.txt"
        run_driver(python, fmha_dir, separator, filters, generate_args, ["-l", str(listing)],
                   timeout)
        lines = listing_lines(listing)
    return listed_kernels(lines)


def listed_kernels(lines: Iterable[str]) -> List[str]:
    """The kernel files of a listing's lines: basenames, API file left out, sorted."""
    names = [Path(line.strip()).name for line in lines if line.strip()]
    return sorted(n for n in names if not n.endswith("_api.cpp"))


def write_result(api_file: str, text: str, kernel_traits: Dict[str, str],
                 seconds: float = 0.0, kernel_bytes: Optional[Dict[str, int]] = None,
                 api_bytes: int = 0) -> ApiFileResult:
    """What :func:`driver_write` returns, from the dispatch file, the trait keys and
    the bytes of the files written."""
    return ApiFileResult(command=WRITE_COMMAND, api_file=api_file, text=text,
                         kernel_files=sorted(kernel_traits), kernel_traits=dict(kernel_traits),
                         seconds=seconds, kernel_bytes=dict(kernel_bytes or {}),
                         api_bytes=api_bytes)


def driver_write(python: str, fmha_dir: Path, separator: str, filters: Sequence[str],
                 generate_args: Sequence[str], timeout: float) -> ApiFileResult:
    """The driver in write mode (``-o`` into a temporary folder): the dispatch file and
    each kernel file's trait keys, for a link check.

    Write mode runs code listing mode skips (newer CK asserts in ``write_blobs`` that
    every split-KV kernel has its combine kernel), so a set that lists can still fail
    here; the failure is raised with generate.py's stderr.
    """
    from ..cppapi.matching import kernel_trait_key

    with scratch("fmha-driver-write-") as tmp:
        out = tmp / "generated"
        out.mkdir()
        run_driver(python, fmha_dir, separator, filters, generate_args, ["-o", str(out)],
                   timeout)
        api_files = sorted(out.rglob("*_api.cpp"))
        if len(api_files) != 1:
            raise GenerateError("the driver wrote %d API dispatch files, expected one"
                                % len(api_files))
        text = api_files[0].read_text(encoding="utf-8", errors="replace")
        kernels = [p for p in sorted(out.rglob("*.cpp")) if not p.name.endswith("_api.cpp")]
        traits = {p.name: kernel_trait_key(p.read_text(encoding="utf-8", errors="replace"))
                  for p in kernels}
        sizes = {p.name: p.stat().st_size for p in kernels}
        api_bytes = api_files[0].stat().st_size
    return write_result(api_files[0].name, text, traits, kernel_bytes=sizes, api_bytes=api_bytes)


def cached_listing(runner: GenerateRunner, run: DriverRun) -> List[str]:
    """:func:`driver_listing` of ``run``: from the cache, else run (and kept there)."""
    inputs = runner.state()
    files = runner.stored_driver_listing(run, inputs)
    if files is None:
        started = time.monotonic()
        files = driver_listing(runner.python, runner.fmha_dir, run.separator, run.filters,
                               run.request.argv(runner.options), runner.timeout)
        runner.store_driver_listing(run, files, time.monotonic() - started, inputs=inputs)
    return files


def cached_write(runner: GenerateRunner, run: DriverRun) -> ApiFileResult:
    """:func:`driver_write` of ``run``: from the cache, else run (and kept there)."""
    inputs = runner.state()
    result = runner.stored_driver_write(run, inputs)
    if result is None:
        started = time.monotonic()
        result = driver_write(runner.python, runner.fmha_dir, run.separator, run.filters,
                              run.request.argv(runner.options), runner.timeout)
        result.seconds = round(time.monotonic() - started, 3)
        runner.store_driver_write(run, result, inputs=inputs)
    return result
