"""The corpus of real CK FMHA trees: the pinned list of PyPI sdists, each downloaded
(:mod:`.package_index`), its sha256 checked, and its ``01_fmha`` folder extracted read-only
to ``<cache>/trees/<sdist stem>/`` (a stamp file marks a finished extraction).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple, Union

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

from .cachedir import cache_root, file_lock
from .locate import FMHA_SUBDIR
from .package_index import PackageIndexError, project_files

__all__ = ["CorpusError", "CorpusTree", "DEFAULT_CORPUS", "STAMP_NAME", "Step", "cache_root",
           "fetch_tree", "load_corpus", "tree_by_name"]

DEFAULT_CORPUS = Path(__file__).resolve().parent / "data" / "ck-corpus.toml"
STAMP_NAME = ".sphinxext-fmha-stamp"
_STAMP_FORMAT = 1
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar", ".zip")
_CHUNK = 1 << 20

Progress = Optional[Callable[[str], None]]


class CorpusError(Exception):
    """A corpus tree could not be loaded, downloaded, verified or extracted."""


@dataclass(frozen=True)
class CorpusTree:
    """One pinned CK tree (one ``[[tree]]`` table of ck-corpus.toml)."""

    name: str
    package: str
    version: str
    sdist: str
    sha256: str
    ck_prefix: str
    uploaded: str = ""
    apis: Dict[str, int] = field(default_factory=dict, hash=False, compare=False)
    seconds: Dict[str, float] = field(default_factory=dict, hash=False, compare=False)
    notes: str = ""

    @property
    def sdist_stem(self) -> str:
        return next((self.sdist[:-len(s)] for s in _ARCHIVE_SUFFIXES if self.sdist.endswith(s)),
                    self.sdist)

    @property
    def fmha_member_prefix(self) -> str:
        """The archive member prefix of the 01_fmha folder (with trailing '/')."""
        return self.ck_prefix.strip("/") + "/" + FMHA_SUBDIR + "/"


# --------------------------------------------------------------------------- loading

_REQUIRED = ("name", "package", "version", "sdist", "sha256", "ck_prefix")


def load_corpus(path: Union[str, Path, None] = None) -> List[CorpusTree]:
    """Read the corpus TOML (default: the copy packaged with sphinxext-fmha)."""
    toml_path = Path(path) if path is not None else DEFAULT_CORPUS
    try:
        with open(toml_path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise CorpusError(f"cannot read the corpus file {toml_path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise CorpusError(f"{toml_path} is not valid TOML: {exc}") from exc
    tables = data.get("tree", [])
    if not isinstance(tables, list):
        raise CorpusError(f"{toml_path}: 'tree' must be an array of tables ([[tree]])")
    trees: List[CorpusTree] = []
    seen = set()
    for index, table in enumerate(tables):
        missing = [key for key in _REQUIRED if not table.get(key)]
        if missing:
            raise CorpusError(f"{toml_path}: tree #{index + 1} lacks {', '.join(missing)}")
        sha = str(table["sha256"]).lower()
        if not re.fullmatch(r"[0-9a-f]{64}", sha):
            raise CorpusError(f"{toml_path}: tree {table['name']!r} has a malformed sha256")
        if table["name"] in seen:
            raise CorpusError(f"{toml_path}: tree name {table['name']!r} appears twice")
        seen.add(table["name"])
        trees.append(CorpusTree(
            **{key: str(table.get(key, "")) for key in (*_REQUIRED[:4], "uploaded", "notes")},
            sha256=sha, ck_prefix=str(table["ck_prefix"]).strip("/"),
            apis={str(k): int(v) for k, v in dict(table.get("apis", {})).items()},
            seconds={str(k): float(v) for k, v in dict(table.get("seconds", {})).items()}))
    return trees


def tree_by_name(name: str, path: Union[str, Path, None] = None) -> CorpusTree:
    """The corpus tree called ``name``; :class:`CorpusError` lists the known names."""
    trees = load_corpus(path)
    for tree in trees:
        if tree.name == name:
            return tree
    known = ", ".join(tree.name for tree in trees) or "(none)"
    raise CorpusError(f"no corpus tree named {name!r}; known trees: {known}")


class Step(str):
    """A finished step of :func:`fetch_tree` (``fmha: fetching ... 2.1 s``)."""


def _step(what: str, started: float) -> Step:
    return Step(f"fmha: {what}... {time.monotonic() - started:.1f} s")


# --------------------------------------------------------------------------- download


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _user_agent() -> str:
    # the distribution's metadata, not ``sphinxext_fmha.__version__``: a leaf module
    # does not import the package root (which is the Sphinx entry point)
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("sphinxext-fmha")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        release = "0"
    return f"sphinxext-fmha/{release} (+urllib)"


def _resolve_url(tree: CorpusTree) -> str:
    """Ask the package index pip would use for the URL of ``tree.sdist``."""
    try:
        page, files = project_files(tree.package, _user_agent())
    except PackageIndexError as exc:
        raise CorpusError(str(exc)) from exc
    for listed in files:
        if listed.filename != tree.sdist:
            continue
        if listed.sha256 and listed.sha256 != tree.sha256:
            raise CorpusError(f"{page} lists sha256 {listed.sha256} for {tree.sdist}, but the "
                              f"corpus pins {tree.sha256}; refusing to download")
        return listed.url
    raise CorpusError(f"{page} does not list {tree.sdist} (was it removed from the index?)")


def _download(url: str, dest: Path) -> Tuple[str, int]:
    """Stream ``url`` into ``dest``; return the sha256 and size of what was written."""
    request = urllib.request.Request(url, headers={"User-Agent": _user_agent()})
    try:
        with urllib.request.urlopen(request, timeout=120) as response, open(dest, "wb") as out:
            shutil.copyfileobj(response, out, _CHUNK)
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        with contextlib.suppress(OSError):
            dest.unlink()
        raise CorpusError(f"cannot download {url}: {reason}") from exc
    return _sha256_file(dest), dest.stat().st_size


def _ensure_archive(tree: CorpusTree, cache: Path, progress: Progress) -> Path:
    """The verified archive in ``<cache>/sdists/``, downloaded if needed."""
    sdists = cache / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    archive = sdists / tree.sdist
    if archive.is_file():
        actual = _sha256_file(archive)
        if actual == tree.sha256:
            return archive
        if progress:
            progress(f"cached {archive} has sha256 {actual}, expected {tree.sha256}; re-downloading")
        archive.unlink()
    if os.environ.get("FMHA_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        raise CorpusError(f"{tree.sdist} is not in the cache ({sdists}) and FMHA_OFFLINE=1 "
                          "forbids downloading it")
    started = time.monotonic()
    url = _resolve_url(tree)
    if progress:
        progress(f"downloading {url}")
    partial = sdists / f".{tree.sdist}.{os.getpid()}.{uuid.uuid4().hex[:8]}.part"
    actual, size = _download(url, partial)
    if progress:  # a finished step: one line a normal build log shows
        progress(_step(f"fetching {tree.package} {tree.version} from the package index "
                       f"({size / 1e6:.1f} MB)", started))
    if actual != tree.sha256:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise CorpusError(f"sha256 mismatch for {tree.sdist} downloaded from {url}: expected "
                          f"{tree.sha256}, got {actual}; the downloaded file was deleted")
    os.replace(partial, archive)
    return archive


# --------------------------------------------------------------------------- extraction


def _iter_members(archive: Path) -> Iterator[Tuple[str, str, int, Callable[[], object]]]:
    """(name, kind, mode, opener) for each member; kind is file/dir/link/other."""
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                mode = (info.external_attr >> 16) & 0o777 or 0o644
                kind = ("link" if stat.S_ISLNK(info.external_attr >> 16)
                        else "dir" if info.is_dir() else "file")
                yield info.filename, kind, mode, functools.partial(zf.open, info)
        return
    try:
        tf = tarfile.open(archive, "r:*")
    except (tarfile.TarError, OSError) as exc:
        raise CorpusError(f"cannot open {archive}: {exc}") from exc
    with tf:
        for member in tf:
            kind = ("dir" if member.isdir() else "file" if member.isfile()
                    else "link" if member.issym() or member.islnk() else "other")
            yield member.name, kind, member.mode, functools.partial(tf.extractfile, member)


def _wanted(tree: CorpusTree, raw: str) -> Tuple[bool, List[str]]:
    """Whether member ``raw`` belongs to the 01_fmha subtree (and its normalised path
    parts); raise if it is unsafe."""
    name = raw.replace("\\", "/")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    unsafe = name.startswith("/") or bool(re.match(r"^[A-Za-z]:", name)) or ".." in parts
    prefix = tree.fmha_member_prefix.rstrip("/").split("/")
    inside = parts[: len(prefix)] == prefix and len(parts) > len(prefix)
    if unsafe and (inside or tree.fmha_member_prefix.rstrip("/") in name):
        raise CorpusError(f"refusing to extract unsafe archive member {raw!r} (absolute path "
                          "or '..')")
    return inside, parts


def _extract(tree: CorpusTree, archive: Path, dest: Path) -> int:
    """Extract the 01_fmha members of ``archive`` below ``dest``; return the file count."""
    count = 0
    for raw, kind, mode, opener in _iter_members(archive):
        inside, parts = _wanted(tree, raw)
        if not inside:
            continue
        target = dest.joinpath(*parts)
        if kind == "dir":
            target.mkdir(parents=True, exist_ok=True)
        elif kind == "file":
            target.parent.mkdir(parents=True, exist_ok=True)
            with opener() as src, open(target, "wb") as out:  # type: ignore[attr-defined]
                shutil.copyfileobj(src, out, _CHUNK)
            os.chmod(target, 0o644 | (mode & 0o111))
            count += 1
        elif kind == "link":
            raise CorpusError(f"refusing to extract link member {raw!r} of {archive.name}")
        # devices, fifos: never part of a source tree; ignored
    if count == 0:
        raise CorpusError(f"{archive.name} holds no files under {tree.fmha_member_prefix}; "
                          "check the tree's ck_prefix")
    return count


def _chmod_tree(top: Path, writable: bool) -> None:
    """``top`` and everything below: read-only (a-w), or writable again (u+w, folders u+rwx)."""
    for dirpath, _dirnames, filenames in os.walk(top):
        for path, grant in [(dirpath, 0o700), *((os.path.join(dirpath, f), 0o200)
                                                 for f in filenames)]:
            if not os.path.islink(path):
                mode = stat.S_IMODE(os.stat(path).st_mode)
                os.chmod(path, mode | grant if writable else mode & ~0o222)


def _remove_tree(path: Path) -> None:
    if not path.exists() and not path.is_symlink():
        return
    if path.is_symlink() or path.is_file():
        path.unlink()
        return
    _chmod_tree(path, writable=True)
    shutil.rmtree(path)


def _ready(tree_dir: Path, ck_root: Path, tree: CorpusTree) -> bool:
    try:
        data = json.loads((tree_dir / STAMP_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (isinstance(data, dict) and data.get("sha256") == tree.sha256
            and data.get("ck_prefix") == tree.ck_prefix
            and (ck_root / FMHA_SUBDIR / "generate.py").is_file())


def fetch_tree(tree: CorpusTree, cache_dir: Union[str, Path, None] = None,
               progress: Progress = None) -> Path:
    """``tree``'s CK root, ``<cache>/trees/<sdist stem>/<ck_prefix>``, fetched if needed
    (an fcntl lock serialises processes); ``progress`` receives short messages."""
    cache = Path(cache_dir).expanduser() if cache_dir is not None else cache_root()
    trees = cache / "trees"
    tree_dir = trees / tree.sdist_stem
    ck_root = tree_dir.joinpath(*tree.ck_prefix.split("/"))
    if _ready(tree_dir, ck_root, tree):
        return ck_root
    with file_lock(cache / "locks" / f"{tree.sdist_stem}.lock"):
        if _ready(tree_dir, ck_root, tree):  # another process finished meanwhile
            return ck_root
        archive = _ensure_archive(tree, cache, progress)
        trees.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        staging = Path(tempfile.mkdtemp(prefix=f".tmp-{tree.sdist_stem}-", dir=str(trees)))
        try:
            files = _extract(tree, archive, staging)
            if progress:
                progress(_step(f"extracting {FMHA_SUBDIR} of {tree.package} {tree.version} "
                               f"({files:,} files)", started))
            stamp = {"format": _STAMP_FORMAT, "sha256": tree.sha256, "ck_prefix": tree.ck_prefix,
                     "files": files}
            (staging / STAMP_NAME).write_text(json.dumps(stamp, sort_keys=True) + "\n",
                                              encoding="utf-8")
            os.chmod(staging, 0o755)
            _chmod_tree(staging, writable=False)
            if tree_dir.exists() or tree_dir.is_symlink():
                trash = trees / f".trash-{tree.sdist_stem}-{uuid.uuid4().hex[:8]}"
                os.rename(tree_dir, trash)
                _remove_tree(trash)
            os.rename(staging, tree_dir)
        except BaseException:
            _remove_tree(staging)
            raise
    return ck_root
