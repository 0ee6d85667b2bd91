"""Cold and warm docs builds against plain `generate.py -l` runs, side by side (by hand).

usage: python benchmarks/bench_build.py TREE API [API ...] [--code DIR ...] [--rounds N]

For one corpus tree and a set of APIs (one guide page each) this measures, in one run
and interleaved so that the machine's load falls on all of them alike:

* plain: `python -B generate.py -a API -l FILE` for every API, summed (wall seconds);
* cold: `sphinx-build -E` with a new, empty cache (what hosted CI pays);
* warm: `sphinx-build -E` again with that cache (Sphinx's own rendering, and reading
  the cache);
* for scale, `generate.py -a API -o DIR` for every API (write mode: what rendering the
  dispatch file and the kernel sources costs the codegen itself);

and reports cold - warm (the extension's own work) over plain. Beside the wall seconds it
reports the CPU seconds of each build and listing with all the processes it started
(``getrusage`` of the children, user + system): the extension's CPU over generate.py's
says how much work a cold build adds, whatever the cores did meanwhile (idle gaps do
not count; two processes slowing each other on a shared machine still do). Each row
starts after ``os.sync()``, untimed. The package built with is compiled to bytecode
first, as an installed wheel is (pip compiles it): the builds then measure its work, not
compiling its modules again in every interpreter. `--code DIR` builds with
the sphinxext_fmha found in DIR (another checkout) instead of the installed one; given
several times, each round builds with each checkout in turn (one row each), so that two
versions are compared under the same load. The step lines of the cold build's log
(`fmha: ...`) are printed too, and with several rounds the median and range of each
checkout's ratios. Never a test.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from sphinxext_fmha.corpus import fetch_tree, tree_by_name
from sphinxext_fmha.locate import fmha_dir


def children_cpu() -> float:
    """CPU seconds (user + system) of every child process waited for so far, with the
    processes they waited for in turn."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def plain_seconds(root: Path, apis: List[str], mode: str = "-l") -> Tuple[float, float]:
    """Wall and CPU seconds of `generate.py -a API -l FILE` (or `-o DIR`) for every API."""
    total = 0.0
    cpu = children_cpu()
    with tempfile.TemporaryDirectory() as tmp:
        for number, api in enumerate(apis):
            out = Path(tmp) / ("%s%d" % (mode.strip("-"), number))
            start = time.perf_counter()
            subprocess.run([sys.executable, "-B", "generate.py", "-a", api, mode, str(out)],
                           cwd=fmha_dir(root), check=True,
                           capture_output=True, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
            total += time.perf_counter() - start
    return total, children_cpu() - cpu


def project(src: Path, root: Path, cache: Path, apis: List[str]) -> None:
    src.mkdir(parents=True)
    (src / "conf.py").write_text(
        'extensions = ["sphinxext_fmha"]\nproject = "bench"\n'
        "fmha_ck_root = %r\nfmha_cache_dir = %r\n" % (str(root), str(cache)), encoding="utf-8")
    pages = "".join("   %s\n" % api for api in apis)
    (src / "index.rst").write_text("Bench\n=====\n\n.. toctree::\n\n" + pages, encoding="utf-8")
    for api in apis:
        (src / ("%s.rst" % api)).write_text(".. fmha-kernel-guide:: %s\n" % api, encoding="utf-8")


def compile_package(code: Optional[Path]) -> None:
    """Bytecode for the sphinxext_fmha a build uses (``code``'s, else the installed
    one), written beside it as pip writes it for an installed wheel."""
    if code is not None:
        package = code / "sphinxext_fmha"
    else:
        spec = importlib.util.find_spec("sphinxext_fmha")
        assert spec is not None and spec.origin is not None
        package = Path(spec.origin).parent
    compileall.compile_dir(str(package), quiet=1)


def build_seconds(src: Path, out: Path, code: Optional[Path]) -> Tuple[float, float, str]:
    """Wall and CPU seconds of one ``sphinx-build -E``, and its output."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", NO_COLOR="1")
    if code is not None:
        env["PYTHONPATH"] = str(code)
    start, cpu = time.perf_counter(), children_cpu()
    # cwd: not a checkout (``-m`` puts the working folder first on sys.path, before
    # PYTHONPATH: started from this repository, --code would build with its package)
    proc = subprocess.run([sys.executable, "-B", "-m", "sphinx", "-E", "-b", "html", str(src),
                           str(out)], capture_output=True, text=True, env=env, cwd=src.parent)
    seconds, cpu = time.perf_counter() - start, children_cpu() - cpu
    if proc.returncode != 0:
        raise SystemExit("sphinx-build failed:\n" + proc.stderr[-3000:])
    return seconds, cpu, proc.stdout


def load() -> str:
    return " ".join("%.1f" % v for v in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tree")
    parser.add_argument("apis", nargs="+")
    parser.add_argument("--code", type=Path, action="append",
                        help="a checkout whose sphinxext_fmha to build with (repeatable)")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    root = fetch_tree(tree_by_name(args.tree))
    codes: List[Optional[Path]] = list(args.code or [None])
    for code in codes:
        compile_package(code)
    rows: List[Dict[str, Any]] = []
    for _ in range(args.rounds):
        for code in codes:
            with tempfile.TemporaryDirectory(prefix="fmha-bench-") as tmp:
                src, cache = Path(tmp) / "src", Path(tmp) / "cache"
                project(src, root, cache, args.apis)
                row: Dict[str, Any] = {"code": str(code or "installed"),
                                       "load before": os.getloadavg()[0]}
                # Write mode (the previous row's `-o`) leaves tens of MB of dirty pages
                # (its files are gone, the file system's work on them is not): written
                # back now, untimed, not while the builds run.
                os.sync()
                before, before_cpu = plain_seconds(root, args.apis)
                row["cold"], row["cold cpu"], log = build_seconds(src, Path(tmp) / "out", code)
                row["warm"], row["warm cpu"], _ = build_seconds(src, Path(tmp) / "out", code)
                after, after_cpu = plain_seconds(root, args.apis)
                row["plain"] = (before + after) / 2
                row["plain cpu"] = (before_cpu + after_cpu) / 2
                row["write"] = plain_seconds(root, args.apis, "-o")[0]
                row["load after"] = os.getloadavg()[0]
                rows.append(row)
                shutil.rmtree(cache, ignore_errors=True)
            print("\n".join(line for line in log.splitlines() if line.startswith("fmha: ")))
    print("| tree | APIs | code | plain `-l` | plain `-o` | cold build | warm `-E` build "
          "| (cold - warm) / plain `-l` | CPU: plain `-l`, cold, warm | CPU ratio "
          "| load (1 min) |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for row in rows:
        ratio, cpu_ratio = ratios(row)
        print("| %s | %s | %s | %.1f s | %.1f s | %.1f s | %.1f s | %.1f× | %.1f, %.1f, %.1f s "
              "| %.1f× | %.1f → %.1f |" % (
                  args.tree, " ".join(args.apis), row["code"], row["plain"], row["write"],
                  row["cold"], row["warm"], ratio, row["plain cpu"], row["cold cpu"],
                  row["warm cpu"], cpu_ratio, row["load before"], row["load after"]))
    if args.rounds > 1:
        print_spread(rows)


def ratios(row: Dict[str, Any]) -> Tuple[float, float]:
    """(cold - warm) / plain of one row, in wall seconds and in CPU seconds."""
    return ((row["cold"] - row["warm"]) / row["plain"],
            (row["cold cpu"] - row["warm cpu"]) / row["plain cpu"])


def print_spread(rows: List[Dict[str, Any]]) -> None:
    """Per checkout, the median of its rounds' ratios and their range: on a shared
    machine the same build's ratio moves by a third from one round to the next, so a
    single round says little, and a claim rests on the median of several."""
    print()
    print("| code | rounds | (cold - warm) / plain `-l`: median (range) "
          "| CPU ratio: median (range) |")
    print("| --- | ---: | ---: | ---: |")
    for code in dict.fromkeys(row["code"] for row in rows):
        mine = [ratios(row) for row in rows if row["code"] == code]
        wall, cpu = [r[0] for r in mine], [r[1] for r in mine]
        print("| %s | %d | %.1f× (%.1f–%.1f) | %.1f× (%.1f–%.1f) |" % (
            code, len(mine), statistics.median(wall), min(wall), max(wall),
            statistics.median(cpu), min(cpu), max(cpu)))


if __name__ == "__main__":
    main()
