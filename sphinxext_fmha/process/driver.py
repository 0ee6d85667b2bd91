"""One generate.py run for the union of several ``-f`` filters (``driver_script.py``).

generate.py rewrites its API dispatch file on every run, so the union of several
filter runs has no consistent dispatch file; the driver runs generate.py once with
fnmatch widened to "any of the filters" (see ``driver_script.py``). Listing mode
(``-l``) gives the kernel names, write mode (``-o``) the dispatch file and the kernel
sources a link check needs. Outputs go to temporary folders, never into the tree.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import List, Sequence

from ..cppapi.dispatch_file import kernel_trait_key
from .runner import ApiFileResult, GenerateError

__all__ = ["DRIVER_SCRIPT", "run_driver", "driver_listing", "driver_write"]

DRIVER_SCRIPT = Path(__file__).with_name("driver_script.py")
_STDERR_TAIL = 20


def run_driver(fmha_dir: Path, python: str, timeout: float, separator: str,
               filters: Sequence[str], generate_args: Sequence[str],
               out_args: Sequence[str]) -> None:
    """Run the driver; raise :class:`GenerateError` (with the stderr tail) on failure.

    ``separator``: the API's ``@``-like part separator ("" when it has none);
    ``generate_args``: generate.py's other arguments (``-a API`` and options).
    """
    command = [python, "-B", str(DRIVER_SCRIPT), str(fmha_dir), separator, *filters, "--",
               *generate_args, *out_args]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    display = " ".join(["driver_script.py", *filters, "--", *generate_args, *out_args[:1]])
    try:
        proc = subprocess.run(command, cwd=str(fmha_dir), env=env, capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as error:
        raise GenerateError("the driver run timed out after %g s" % timeout, command=display,
                            timed_out=True) from error
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-_STDERR_TAIL:])
        raise GenerateError("the driver run failed (exit code %d)\n%s" % (proc.returncode, tail),
                            command=display, returncode=proc.returncode, stderr_tail=tail)


def driver_listing(fmha_dir: Path, python: str, timeout: float, separator: str,
                   filters: Sequence[str], generate_args: Sequence[str]) -> List[str]:
    """Kernel file names (the API dispatch file left out) the driver lists, sorted."""
    with tempfile.TemporaryDirectory(prefix="fmha-driver-") as tmp:
        listing = Path(tmp) / "kernels.txt"
        run_driver(fmha_dir, python, timeout, separator, filters, generate_args,
                   ["-l", str(listing)])
        lines = listing.read_text(encoding="utf-8").splitlines() if listing.exists() else []
    names = {Path(line.strip()).name for line in lines if line.strip()}
    return sorted(n for n in names if not n.endswith("_api.cpp"))


def driver_write(fmha_dir: Path, python: str, timeout: float, separator: str,
                 filters: Sequence[str], generate_args: Sequence[str]) -> ApiFileResult:
    """The driver in write mode: the dispatch file and each kernel's trait keys.

    Write mode runs code that listing mode skips (newer CK checks in ``write_blobs``
    that every split-KV kernel has its combine kernel), so a set that lists can still
    fail here; the failure is raised with generate.py's stderr.
    """
    with tempfile.TemporaryDirectory(prefix="fmha-driver-") as tmp:
        out = Path(tmp) / "generated"
        out.mkdir()
        run_driver(fmha_dir, python, timeout, separator, filters, generate_args,
                   ["-o", str(out)])
        api_files = sorted(out.rglob("*_api.cpp"))
        kernels = sorted(p for p in out.rglob("*.cpp") if not p.name.endswith("_api.cpp"))
        if len(api_files) != 1:
            raise GenerateError("the driver wrote %d API dispatch files, expected one"
                                % len(api_files))
        text = api_files[0].read_text(encoding="utf-8", errors="replace")
        traits = {p.name: kernel_trait_key(p.read_text(encoding="utf-8", errors="replace"))
                  for p in kernels}
    return ApiFileResult(command="sphinxext-fmha generate ... -o generated",
                         api_file=api_files[0].name, text=text, kernel_files=sorted(traits),
                         kernel_traits=traits, seconds=0.0)
