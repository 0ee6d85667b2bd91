"""The tests' one independent generate.py runner, the yardstick they measure against: a
plain child process (the tests' launcher twin, ``launch_twin``), no cache and nothing of
sphinxext_fmha in between. Every test that runs a tree's generate.py itself runs it
through :func:`run_generate` (or the one-interpreter batch driver below)."""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Dict, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple

from helpers.launch_twin import Ran, run_child

#: Where generate.py lives in a CK tree (written here, not read from the package).
FMHA = "example/ck_tile/01_fmha"


def fmha_dir(root: Path) -> Path:
    return Path(root) / FMHA


def run_generate(root: Path, *argv: str, cwd: Optional[Path] = None, timeout: float = 1200,
                 python: str = sys.executable) -> Ran:
    """``python -B generate.py ARGV`` of the CK tree at ``root`` in a plain child (cwd:
    the tree's FMHA folder unless given); never raises on a failed run."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("FMHA_TRACE_RUNS", None)  # this process is ours, not the library's
    return run_child([python, "-B", str(fmha_dir(root) / "generate.py"), *argv],
                     cwd=cwd or fmha_dir(root), timeout=timeout, env=env)


def generated(root: Path, *argv: str, **kwargs) -> Ran:
    """:func:`run_generate`, which must succeed."""
    ran = run_generate(root, *argv, **kwargs)
    if ran.returncode != 0:
        raise AssertionError("generate.py %s failed (%s):\n%s" % (
            " ".join(argv), "timed out" if ran.timed_out else ran.returncode, ran.stderr[-3000:]))
    return ran


def listed_lines(root: Path, *argv: str, **kwargs) -> List[str]:
    """The non-empty lines ``generate.py ARGV -l FILE`` writes (which must succeed)."""
    with tempfile.TemporaryDirectory(prefix="fmha-test-list-") as tmp:
        out = Path(tmp) / "kernels.txt"
        generated(root, *argv, "-l", str(out), **kwargs)
        return [line.strip() for line in out.read_text(encoding="utf-8").splitlines()
                if line.strip()]


#: generate.py in one run for the union of several patterns (a name passes when any
#: pattern matches it): the oracle's own stand-in for the page's driver command
_UNION_RUN = """
import fnmatch, runpy, sys
api, patterns, out = sys.argv[1], sys.argv[2].split("\\n"), sys.argv[3]
one = fnmatch.fnmatch
fnmatch.fnmatch = lambda name, _pattern: any(one(name, p) for p in patterns)
sys.argv = ["generate.py", "-a", api, "-o", out, "-f", patterns[0]]
runpy.run_path("generate.py", run_name="__main__")
"""


def written_union(root: Path, api: str, out: Path, patterns: Sequence[str]) -> Ran:
    """One write-mode run of generate.py (which must succeed) keeping what any of
    ``patterns`` matches, into ``out``."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    ran = run_child([sys.executable, "-B", "-c", _UNION_RUN, api, "\n".join(patterns), str(out)],
                    cwd=fmha_dir(root), timeout=1200, env=env)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return ran


def written_to(root: Path, api: str, out: Path, *args: str) -> Path:
    """``out``, after ``generate.py -a API ARGS -o OUT`` (which must succeed) wrote it."""
    out.mkdir(parents=True, exist_ok=True)
    generated(root, "-a", api, *args, "-o", str(out))
    return out


_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_USING = re.compile(r"\busing\s+(\w+)\s*=\s*([^;]+);")


def _angle_args(code: str, start: int) -> str:
    """The text between the ``<`` at ``start`` and its matching ``>``."""
    depth = 0
    for end in range(start, len(code)):
        depth += {"<": 1, ">": -1}.get(code[end], 0)
        if depth == 0:
            return code[start + 1:end]
    return code[start + 1:]


def specialisations(text: str) -> FrozenSet[str]:
    """The template arguments of every explicit specialisation ``template<> R f<ARGS>(...)``
    of a kernel file, the file's ``using`` aliases expanded, blanks removed: this
    reading's key of the kernel (written here, not the package's reader)."""
    code = _COMMENT.sub("", text)
    aliases = {m.group(1): m.group(2) for m in _USING.finditer(code)}
    found = set()
    for m in re.finditer(r"template\s*<\s*>", code):
        stop = min([i for i in (code.find("{", m.end()), code.find(";", m.end())) if i >= 0]
                   or [len(code)])
        call = re.search(r"\w\s*<", code[m.end():stop])
        if call is None:
            continue
        args = _angle_args(code, m.end() + call.end() - 1)
        for _ in range(6):
            args = re.sub(r"\b\w+\b", lambda w: aliases.get(w.group(0), w.group(0)), args)
        found.add(re.sub(r"\s+", "", args))
    return frozenset(found)


def written_folder(out: Path) -> Tuple[str, str, Dict[str, FrozenSet[str]]]:
    """(API file name, its text, {kernel file: :func:`specialisations`}) of what a
    write-mode run wrote into ``out``; exactly one API file is expected."""
    files = {p.name: p for p in out.rglob("*.cpp")}
    api_files = [n for n in files if n.endswith("_api.cpp")]
    assert len(api_files) == 1, api_files
    traits = {n: specialisations(p.read_text(encoding="utf-8")) for n, p in files.items()
              if n != api_files[0]}
    return api_files[0], files[api_files[0]].read_text(encoding="utf-8"), traits


def same_pairing(keys: Mapping[str, str], mine: Mapping[str, FrozenSet[str]]) -> bool:
    """Whether the package's trait key per kernel file (``keys``) tells the kernels apart
    as this reading does: the same files, two files share a key there exactly when they
    share their specialisations here, and a key names the traits types read here."""
    if set(keys) != set(mine):
        return False

    def groups(by: Mapping[str, object]) -> Set[FrozenSet[str]]:
        grouped: Dict[object, Set[str]] = {}
        for name, key in by.items():
            grouped.setdefault(key, set()).add(name)
        return {frozenset(names) for names in grouped.values()}

    if groups(keys) != groups(mine):
        return False
    blank = re.compile(r"\s+")
    return all(all(t in blank.sub("", keys[name])
                   for spec in specs for t in re.findall(r"\w+_traits_\w*", spec))
               for name, specs in mine.items())


def written_run(root: Path, api: str, *args: str) -> Optional[Tuple[str, str, Dict[str, str]]]:
    """What a separate ``generate.py -a API ARGS -o DIR`` writes (:func:`written_folder`),
    or None when it fails. DIR is a scratch folder where the library puts its own (a
    tmpfs when the machine has room, see ``scratch_place``): aiter's bwd writes 15,157
    files, 143 MB, which on a disk cost seconds of file system work and are written back
    while later tests run."""
    from sphinxext_fmha.process.scratch_place import scratch_parent

    with tempfile.TemporaryDirectory(prefix="fmha-test-write-", dir=scratch_parent()) as tmp:
        ran = run_generate(root, "-a", api, *args, "-o", tmp)
        return written_folder(Path(tmp)) if ran.returncode == 0 else None


def written_bytes(root: Path, api: str, out: Path, *args: str) -> Dict[str, int]:
    """{file: bytes} of every ``.cpp`` file a separate ``generate.py -a API ARGS -o OUT``
    writes (the dispatch file included)."""
    out.mkdir(parents=True)
    written_to(root, api, out, *args)
    return {p.name: p.stat().st_size for p in out.rglob("*.cpp")}


def independent_listing(root: Path, api: str, tmp: Path, *args: str) -> Set[str]:
    """Kernel file names (the API dispatch file left out) that generate.py lists."""
    names = {Path(line).name for line in listed_lines(root, "-a", api, *args)}
    return {n for n in names if not n.endswith("_api.cpp")}


#: The start of a driver that runs generate.py (as ``__main__``, with a fresh import of
#: its codegen each time) once per filter in one interpreter: the same code path as one
#: process per filter, without paying the interpreter start-up each time. Standard
#: library only; what follows runs in the loop, once per ``pattern``, and appends to
#: ``results`` (``python DRIVER FMHA_DIR REQUEST.json``).
FRESH_RUNS_HEAD = r'''
import json, os, runpy, sys, tempfile
fmha_dir, request_path = sys.argv[1], sys.argv[2]
request = json.load(open(request_path))
root = os.path.realpath(fmha_dir)
sys.path.insert(0, fmha_dir)
os.chdir(fmha_dir)
sys.dont_write_bytecode = True
results = []
for pattern in request["filters"]:
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if path and os.path.realpath(path).startswith(root + os.sep):
            del sys.modules[name]
'''
_BATCH_DRIVER = FRESH_RUNS_HEAD + r'''    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "kernels.txt")
        sys.argv = ["generate.py", "-a", request["api"], *request["args"]] \
            + (["-f", pattern] if pattern != "" else []) + ["-l", out]
        try:
            runpy.run_path("generate.py", run_name="__main__")
        except SystemExit as exc:
            if exc.code not in (0, None):
                results.append(None)
                continue
        except Exception:
            results.append(None)
            continue
        lines = open(out).read().splitlines() if os.path.exists(out) else []
        results.append(sorted({os.path.basename(l.strip()) for l in lines
                               if l.strip() and not l.strip().endswith("_api.cpp")}))
json.dump(results, open(request["out"], "w"))
'''


def independent_listings(root: Path, api: str, tmp: Path, filters: Sequence[str],
                         *args: str) -> List[Optional[Set[str]]]:
    """For each filter ("" = no ``-f``), the kernel files generate.py lists (None: it
    failed), from one plain interpreter running generate.py once per filter."""
    driver = tmp / "independent_batch.py"
    driver.write_text(_BATCH_DRIVER, encoding="utf-8")
    out = tmp / ("independent_%s.json" % api)
    request = tmp / ("independent_%s_request.json" % api)
    request.write_text(json.dumps({"api": api, "args": list(args), "filters": list(filters),
                                   "out": str(out)}), encoding="utf-8")
    ran = run_child([sys.executable, "-B", str(driver), str(fmha_dir(root)), str(request)],
                    cwd=tmp, timeout=3600, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    if ran.returncode != 0:
        raise AssertionError("independent listings failed (%s):\n%s" % (ran.returncode,
                                                                        ran.stderr[-3000:]))
    return [set(r) if r is not None else None for r in json.loads(out.read_text())]
