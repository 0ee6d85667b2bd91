"""Helpers for the analysis tests (``test_analysis_corpus.py``, ``test_analysis_synthetic.py``).

Everything here is deliberately independent of the code under test: the listing of a
tree is obtained by running the tree's own ``generate.py -l`` in a subprocess written
here (not through :mod:`sphinxext_fmha.process.runner`), and tree snapshots / content
keys are computed here with :mod:`hashlib` (not with ``tree_digest``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

import pytest

from sphinxext_fmha.cachedir import cache_root, file_lock
from sphinxext_fmha.model import ApiModel, KernelType, Segment

from helpers.independent import listed_lines, written_to

FMHA_SUBDIR = "example/ck_tile/01_fmha"

#: Keys the issue requires in a model's JSON (``to_dict``).
MODEL_KEYS = ("api", "source", "options", "kernel_types", "fields", "tiles", "factories",
              "filter", "skip_conditions", "receipts", "dispatch", "checks", "gaps", "baseline")
KERNEL_TYPE_KEYS = ("class", "frozen", "filter_position", "count", "arch_suffixes", "segments")
SEGMENT_KEYS = ("label", "fields", "tokens")
BASELINE_KEYS = ("count", "parsed", "unparsed")

#: Field categories that must each own a segment; order matters ("dbias" before "bias").
CATEGORIES = ("dbias", "bias", "mask", "pad")


# --------------------------------------------------------------------------- listing


@dataclass
class Listing:
    """An independent ``generate.py -l`` run: kernel files and API dispatch files."""

    kernels: List[str]
    api_files: List[str]
    lines: int
    seconds: float
    command: List[str]


def _listing_argv(api: str, mask: Optional[str], extra: Sequence[str] = ()) -> List[str]:
    argv = ["-a", api]
    if mask is not None:
        argv += ["-m", mask]
    return argv + list(extra)


def run_listing(fmha_dir: Path, api: str, mask: Optional[str] = None, *,
                python: str = sys.executable, timeout: float = 1200,
                extra: Sequence[str] = ()) -> Listing:
    """``python -B generate.py -a API [-m MASK] -l TMP`` with cwd = ``fmha_dir`` (the
    independent runner, :func:`helpers.independent.run_generate`)."""
    import time

    root = Path(fmha_dir).parents[2]  # <root>/example/ck_tile/01_fmha
    argv = _listing_argv(api, mask, extra)
    started = time.monotonic()
    lines = listed_lines(root, *argv, python=python, timeout=timeout)
    seconds = time.monotonic() - started
    names = [os.path.basename(line) for line in lines]
    api_files = [n for n in names if n.endswith("_api.cpp")]
    kernels = [n for n in names if not n.endswith("_api.cpp")]
    return Listing(kernels=kernels, api_files=api_files, lines=len(lines),
                   seconds=round(seconds, 3), command=[python, "-B", "generate.py", *argv])


def content_key(fmha_dir: Path, *parts: object) -> str:
    """sha256 over generate.py and codegen/**/*.py (our own hash) plus ``parts``."""
    fmha_dir = Path(fmha_dir)
    digest = hashlib.sha256()
    files = [fmha_dir / "generate.py"] + sorted(
        p for p in (fmha_dir / "codegen").rglob("*.py") if "__pycache__" not in p.parts)
    for path in files:
        digest.update(path.relative_to(fmha_dir).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    digest.update(json.dumps([str(p) for p in parts]).encode())
    return digest.hexdigest()


def with_analysis_group(cases: List[Tuple]) -> list:
    """(tree, api, ...) cases as parameters in the xdist group of that API's default-mask
    analysis (``--dist loadgroup`` runs a group on one worker, in collection order): a
    case that needs the API's model reads the one its group computed."""
    return [pytest.param(*case, id="-".join(str(part) for part in case),
                         marks=pytest.mark.xdist_group("analysis-%s-%s-default" % case[:2]))
            for case in cases]


def session_probe(root: Path, api: str, cache) -> dict:
    """The probe of ``api`` as a page's session runs it (its other ``--mask`` listing
    too): read back from the shared cache once the API's analysis group made it."""
    from sphinxext_fmha.analysis.observe import observe

    return observe(Path(root) / FMHA_SUBDIR, ["-a", api], also_list=other_mask_listing(api),
                   cache=cache)


def other_mask_listing(api: str) -> List[str]:
    """The other --mask listing a page's session has its probe make too."""
    return ["-a", api, "-m", "generic"]


def cached_listing(store: Optional[Path], fmha_dir: Path, api: str, mask: Optional[str],
                   python: str = sys.executable, extra: Sequence[str] = ()) -> Listing:
    """:func:`run_listing`, kept in ``store`` keyed by the tree's content (our own files,
    not the library's cache) so a persistent test cache can skip the slow runs."""
    if store is None:
        return run_listing(fmha_dir, api, mask, python=python, extra=extra)
    key = content_key(fmha_dir, api, mask, python, sys.version, *extra)
    path = Path(store) / "independent-listings" / (key + ".json")
    # One listing per key for the whole session: a second worker that needs it while
    # the first runs it waits for it (aiter's bwd takes a minute and a half to list).
    with file_lock(path.with_suffix(".lock")):
        if path.is_file():
            try:
                return Listing(**json.loads(path.read_text(encoding="utf-8")))
            except (ValueError, TypeError):
                pass
        listing = run_listing(fmha_dir, api, mask, python=python, extra=extra)
        tmp = path.with_suffix(".tmp%d" % os.getpid())
        tmp.write_text(json.dumps(listing.__dict__), encoding="utf-8")
        os.replace(tmp, path)
    return listing


def results_store() -> Path:
    """The folder the tests of one session share their independent runs in: the
    session's results folder (``FMHA_CACHE_DIR``, made by conftest.py for the controller
    and its pytest-xdist workers), or ``FMHA_ANALYSIS_TEST_CACHE`` (kept between sessions)."""
    env = os.environ.get("FMHA_ANALYSIS_TEST_CACHE", "").strip()
    path = Path(env).expanduser() if env else cache_root()
    path.mkdir(parents=True, exist_ok=True)
    return path


def shared_listing(root: Path, api: str, *args: str) -> Set[str]:
    """The kernel files (the API file left out) ``generate.py -a API ARGS -l`` lists for a
    corpus tree, which no test changes: listed once per session for the tree's content,
    API and arguments (:func:`cached_listing`, whose listings the analysis groups make)."""
    fmha_dir = Path(root) / FMHA_SUBDIR
    if len(args) == 2 and args[0] == "-m":
        return set(cached_listing(results_store(), fmha_dir, api, args[1]).kernels)
    return set(cached_listing(results_store(), fmha_dir, api, None, extra=args).kernels)


def cached_write(root: Path, api: str, *args: str) -> Path:
    """The folder a separate ``generate.py -a API ARGS -o DIR`` (which must succeed) wrote:
    written once per session for a tree's content, API and arguments, in
    :func:`results_store` (as :func:`cached_listing`; a second worker that needs it waits
    for the first). Read it, never change it: other tests read the same folder."""
    fmha_dir = Path(root) / FMHA_SUBDIR
    key = content_key(fmha_dir, "write", api, *args, sys.executable, sys.version)
    path = results_store() / "independent-writes" / key
    with file_lock(path.with_suffix(".lock")):
        if not path.is_dir():
            tmp = path.with_name("%s.tmp%d" % (key, os.getpid()))
            shutil.rmtree(tmp, ignore_errors=True)
            written_to(Path(root), api, tmp, *args)
            os.replace(tmp, path)
    return path


# --------------------------------------------------------------------------- snapshots


def snapshot(root: Path) -> Dict[str, str]:
    """{relative path: sha256} of every file below ``root``; folders map to "<dir>",
    symlinks to "-> target"."""
    root = Path(root)
    out: Dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in dirnames:
            full = Path(dirpath) / name
            out[full.relative_to(root).as_posix() + "/"] = "<dir>"
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                out[rel] = "-> " + os.readlink(full)
            else:
                out[rel] = hashlib.sha256(full.read_bytes()).hexdigest()
    return out


def pycache_dirs(snap: Dict[str, str]) -> List[str]:
    return sorted(p for p in snap if "__pycache__" in p.split("/") or p.endswith(".pyc"))


def snapshot_diff(before: Dict[str, str], after: Dict[str, str]) -> List[str]:
    diff = ["+ " + p for p in sorted(set(after) - set(before))]
    diff += ["- " + p for p in sorted(set(before) - set(after))]
    diff += ["~ " + p for p in sorted(set(before) & set(after)) if before[p] != after[p]]
    return diff


# --------------------------------------------------------------------------- parsing


def token_parses(kernel_type: KernelType, filename: str, limit: int = 2) -> List[List[str]]:
    """Every way (up to ``limit``) to write ``filename`` as one token of each segment, in
    order, then one of the arch suffixes and ``.cpp``.

    Written here, not with the library's grammar: a plain depth-first walk over the
    tokens the model publishes, so the test checks the model's data, not its parser.
    """
    if not filename.endswith(".cpp"):
        return []
    stem = filename[:-len(".cpp")]
    segments = [sorted(s.tokens) for s in kernel_type.segments]
    suffixes = kernel_type.arch_suffixes or [""]
    found: List[List[str]] = []

    def walk(position: int, index: int, tokens: List[str]) -> None:
        if len(found) >= limit:
            return
        if index == len(segments):
            if any(stem[position:] == suffix for suffix in suffixes):
                found.append(list(tokens))
            return
        for token in segments[index]:
            if stem.startswith(token, position):
                walk(position + len(token), index + 1, tokens + [token])

    walk(0, 0, [])
    return found


def check_parses(model: ApiModel, files: Iterable[str]) -> Tuple[Dict[str, int], List[str]]:
    """Parse every file with nothing but the model's published segments and tokens.

    Returns ({kernel class: parsed count}, [problems]); a problem is a name with no
    parse or several parses (over all sub-types).
    """
    per_class: Dict[str, int] = {k.class_name: 0 for k in model.kernel_types}
    problems: List[str] = []
    for filename in files:
        found = [(k, tokens) for k in model.kernel_types for tokens in token_parses(k, filename)]
        if len(found) != 1:
            problems.append("%s: %d parses %s" % (
                filename, len(found), [(k.class_name, t) for k, t in found][:3]))
            continue
        per_class[found[0][0].class_name] += 1
    return per_class, problems


# --------------------------------------------------------------------------- fields


def leaf(path: str) -> str:
    return path.split(".")[-1].lower()


def category(path: str) -> Optional[str]:
    """'dbias', 'bias', 'mask', 'pad' or None, from the field's own (leaf) name."""
    name = leaf(path)
    for cat in CATEGORIES:
        if cat in name:
            return cat
    return None


def category_segments(kernel_type: KernelType) -> Dict[str, List[Segment]]:
    """{category: segments holding at least one field of that category}."""
    out: Dict[str, List[Segment]] = {}
    for segment in kernel_type.segments:
        for cat in {category(f) for f in segment.fields} - {None}:
            out.setdefault(cat, []).append(segment)
    return out


def segment_isolation_problems(kernel_type: KernelType) -> List[str]:
    """Every segment holding a pad/mask/bias/dbias field holds only fields of that one
    category, and each category has exactly one segment."""
    problems = []
    for cat, segments in category_segments(kernel_type).items():
        if len(segments) != 1:
            problems.append("%s: %s fields are spread over %d segments %s" % (
                kernel_type.class_name, cat, len(segments), [s.label for s in segments]))
        for segment in segments:
            others = [f for f in segment.fields if category(f) != cat]
            if others:
                problems.append("%s: segment %r holds %s fields and also %s" % (
                    kernel_type.class_name, segment.label, cat, others))
            if segment.literal:
                problems.append("%s: segment %r is literal" % (kernel_type.class_name, segment.label))
    return problems


def segment_with_field(kernel_type: KernelType, path: str) -> Segment:
    for segment in kernel_type.segments:
        if path in segment.fields:
            return segment
    raise AssertionError("%s has no segment with field %s; segments: %s" % (
        kernel_type.class_name, path, [(s.label, s.fields) for s in kernel_type.segments]))


# --------------------------------------------------------------------------- processes


class PopenSpy:
    """Records every ``subprocess.Popen`` this process starts (``subprocess.run``
    included), while ``monkeypatch`` is active."""

    def __init__(self, monkeypatch) -> None:
        self.commands: List[List[str]] = []
        original = subprocess.Popen
        spy = self

        class Popen(original):  # type: ignore[misc, valid-type]
            def __init__(self, args, *a, **kw):
                spy.commands.append([str(x) for x in args] if not isinstance(args, (str, bytes))
                                    else [str(args)])
                super().__init__(args, *a, **kw)

        monkeypatch.setattr(subprocess, "Popen", Popen)
