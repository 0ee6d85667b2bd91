"""The one store: files named by a sha256 content-hash key, each ``zlib(pickle((key,
value)))`` written atomically; an unreadable entry is a miss; an unwritable folder keeps
entries in memory after one warning; a result is kept only if the tree did not change
while it was computed (:func:`tree_state`). Why pickle: ``docs/store.md``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import io
import json
import os
import pickle
import tempfile
import threading
import zlib
from pathlib import Path, PurePath
from typing import Any, Dict, List, Optional, Tuple, Union

import orjson

from ..cachedir import cache_root
from ..errors import WarningType
from .notices import notice
from .scratch_place import free_space

__all__ = ["DiskCache", "code_digest", "load_json", "default_runs_dir", "tree_digest",
           "tree_files", "tree_state", "TreeState", "cache_dir_problem"]

#: The first bytes of every entry; change it to orphan every old entry.
MAGIC = b"fmha-store-3\n"

#: The first byte of JSON that the probe script's ``json`` wrote because its fast
#: encoder refused the value: such text is read back by ``json`` (see :func:`load_json`).
JSON_WROTE_IT = b" "

#: What an entry may hold besides this package's own classes.
_SAFE_MODULES = frozenset({"builtins", "collections", "pathlib", "datetime"})


def default_runs_dir() -> Path:
    """Where generate.py runs are cached by default: ``<cache root>/runs``."""
    return cache_root() / "runs"


def _canon(obj: Any) -> Any:
    """Turn ``obj`` into plain JSON data with a deterministic shape."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _canon(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): _canon(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_canon(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted((_canon(v) for v in obj), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(obj, PurePath):
        return obj.as_posix()
    if isinstance(obj, bytes):
        return obj.hex()
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return str(obj)


def load_json(data: bytes) -> Any:
    """The JSON a child wrote, by orjson (2.8.3 bwd's 34 MB probe result in 0.10 s, json
    0.15 s), or by ``json`` after :data:`JSON_WROTE_IT` (integers orjson reads as floats)."""
    if data[:1] == JSON_WROTE_IT:
        return json.loads(data)
    return orjson.loads(data)  # orjson.JSONDecodeError is a ValueError


class _Unpickler(pickle.Unpickler):
    """Reads back only this package's classes and plain builtins (anything else: a miss)."""

    def find_class(self, module: str, name: str) -> Any:
        if module.partition(".")[0] not in _SAFE_MODULES | {"sphinxext_fmha"}:
            raise pickle.UnpicklingError("%s.%s is not kept in this store" % (module, name))
        return super().find_class(module, name)


def encode(key: str, value: Any) -> bytes:
    """An entry's bytes: :data:`MAGIC`, then ``(key, value)`` pickled and compressed."""
    return MAGIC + zlib.compress(pickle.dumps((key, value), pickle.HIGHEST_PROTOCOL), 1)


def decode(data: bytes, key: str) -> Any:
    """The value of an entry :func:`encode` made for ``key``; else ``ValueError``."""
    if not data.startswith(MAGIC):
        raise ValueError("not an entry of this store")
    try:
        kept_key, value = _Unpickler(io.BytesIO(zlib.decompress(data[len(MAGIC):]))).load()
    except Exception as error:  # noqa: BLE001 - any undecodable entry is a miss
        raise ValueError("an undecodable entry (%s)" % error) from None
    if kept_key != key:
        raise ValueError("not the entry of this key")
    return value


def cache_dir_problem(path: Path) -> Optional[str]:
    """Why ``path`` cannot be a cache folder (below a file, not writable), or None."""
    path = Path(path)
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            return None
        probe = probe.parent
    if not probe.is_dir():
        what = "is a file" if probe == path else "is below a file (%s)" % probe
        return "%s %s, not a folder" % (path, what)
    if not os.access(probe, os.W_OK | os.X_OK):
        return "%s is not writable" % probe
    return None


class DiskCache:
    """Values stored as ``<root>/<key[:2]>/<key>.pickle`` (in memory once a write failed)."""

    def __init__(self, root: Optional[Path] = None) -> None:
        #: entries kept in memory because the folder cannot take them (None: it can),
        #: encoded: each reader gets objects of its own, as from a file
        self._memory: Optional[Dict[str, bytes]] = None
        self._lock = threading.Lock()
        if root is not None:
            self.root = Path(root)
            return
        try:
            self.root = default_runs_dir()
        except RuntimeError as error:  # no HOME, no password entry: no home folder
            self.root = Path(os.devnull) / "sphinxext-fmha"  # (nothing is read there)
            self._unwritable("no cache folder: %s (set FMHA_CACHE_DIR)" % error)

    def __repr__(self) -> str:
        return f"DiskCache({str(self.root)!r})"

    @staticmethod
    def key_for(*parts: Any) -> str:
        """sha256 hex digest of a canonical JSON of ``parts``."""
        text = json.dumps(_canon(list(parts)), sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def path_for(self, key: str) -> Path:
        if not key or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"cache keys are lowercase hex digests, not {key!r}")
        return self.root / key[:2] / f"{key}.pickle"

    def code_store_path(self, fmha_dir: Union[str, Path], python: str) -> Path:
        """Where the interpreters that run one tree's generate.py keep the code they compiled
        (``marshal``, the probe script's ``load_code_store``): one file per tree and Python."""
        key = self.key_for("code-store", os.path.realpath(fmha_dir), python)
        return self.root / "compiled" / (key + ".marshal")

    def _in_memory(self, key: str) -> Optional[bytes]:
        if self._memory is None:
            return None
        with self._lock:
            return self._memory.get(key)

    def has(self, key: str) -> bool:
        """Whether an entry is kept for ``key`` (readable or not)."""
        return self._in_memory(key) is not None or self.path_for(key).is_file()

    def get(self, key: str) -> Any:
        """The value kept for ``key``, or None."""
        kept = self._in_memory(key)
        if kept is not None:
            return decode(kept, key)
        path = self.path_for(key)
        try:
            return decode(path.read_bytes(), key)
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            self._discard(path)
            return None

    def put(self, key: str, value: Any, inputs: Optional[TreeState] = None) -> Optional[Path]:
        """Keep ``value`` under ``key``: its path, or None when not written to the folder;
        nothing is kept (a warning names the files) when the tree changed since ``inputs``."""
        path = self.path_for(key)
        if inputs is not None:
            changed = inputs.changed()
            if changed:
                shown = ", ".join(changed[:5]) + (" and %d more" % (len(changed) - 5)
                                                  if len(changed) > 5 else "")
                notice(WarningType.SUSPICIOUS, "the CK tree changed while generate.py's "
                       "results were computed (%s in %s): they are used as they are, and "
                       "not kept in the cache" % (shown, inputs.root),
                       subject="%s\0%s" % (inputs.root, changed))
                return None
        data = encode(key, value)
        if self._memory is None:
            try:
                self._write(path, data)
                return path
            except OSError as error:
                room = free_space(str(self.root)) if self.root.exists() else None
                self._unwritable("cannot write the cache entry %s: %s%s" % (
                    error.filename or path, error.strerror or error,
                    " (%d bytes free there)" % room if room is not None and room < 1 << 20
                    else ""))
        with self._lock:
            self._memory[key] = data  # type: ignore[index]
        return None

    def _write(self, path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=str(path.parent), prefix=f".{path.stem[:12]}.",
                                   suffix=".tmp")
        try:
            # No fsync: os.replace already makes the entry whole or absent for every
            # reader, and an entry a power cut leaves undecodable is read as a miss.
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _unwritable(self, why: str) -> None:
        """Keep this process's entries in memory from now on, and say so once."""
        with self._lock:
            if self._memory is None:
                self._memory = {}
        notice(WarningType.CACHE, "%s: results are computed but not kept for later runs"
               % why, subject=str(self.root))

    def delete(self, key: str) -> None:
        if self._memory is not None:
            with self._lock:
                self._memory.pop(key, None)
        self._discard(self.path_for(key))

    @staticmethod
    def _discard(path: Path) -> None:
        with contextlib.suppress(OSError):
            path.unlink()


# --------------------------------------------------------------------------- digest

@functools.cache
def code_digest() -> str:
    """This package's analysis code: a new version must not reuse old results."""
    digest = hashlib.sha256()
    package = Path(__file__).parents[1]
    layers = ("analysis", "verify", "process", "cppapi", "stages")
    paths = [path for layer in layers for path in sorted(package.glob(layer + "/**/*.py"))]
    for path in paths + [package / "model.py", package / "session.py"]:
        digest.update(path.relative_to(package).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()


def tree_files(fmha_dir: Path) -> List[Path]:
    """``generate.py`` and every ``codegen/**/*.py``, sorted by their relative POSIX path."""
    return [Path(fmha_dir, rel) for rel, _ in _tree_stamp(str(fmha_dir))]


#: A file's stat signature: what changes when it is written or replaced (its change
#: time cannot be set back, unlike its modification time).
Signature = Tuple[int, int, int, int]
Stamp = Tuple[Tuple[str, Signature], ...]

_DIGEST_MEMO: Dict[Tuple[str, Stamp], str] = {}
_DIGEST_LOCK = threading.Lock()


@dataclasses.dataclass(frozen=True)
class TreeState:
    """A CK tree's codegen files at one moment: stat signatures and the content digest."""

    root: str
    stamp: Stamp
    digest: str

    def changed(self) -> List[str]:
        """The files (relative paths) written, replaced, added or removed since."""
        then = dict(self.stamp)
        now = dict(_tree_stamp(self.root))
        return sorted(rel for rel in then.keys() | now.keys() if then.get(rel) != now.get(rel))


def tree_state(fmha_dir: Path) -> TreeState:
    """The tree's state now. The digest is memoised per (path, stamp): a call costs a walk
    and ``stat`` calls, on plain strings (through ``pathlib``: 2.7 ms a call, 0.6 s of a
    cold 2.8.3 gallery's keys); files written while read are read again."""
    root = os.path.realpath(fmha_dir)
    stamp = _tree_stamp(root)
    if not stamp:
        raise FileNotFoundError(f"no generate.py or codegen/*.py under {Path(root)}")
    digest = ""
    for attempt in (1, 2, 3):
        with _DIGEST_LOCK:
            digest = _DIGEST_MEMO.get((root, stamp), "")
        if digest:
            break
        digest = _content_digest(root, stamp)
        after = _tree_stamp(root)
        if after == stamp:
            with _DIGEST_LOCK:
                _DIGEST_MEMO[(root, stamp)] = digest
            break
        # Written while it was read: read again. Still written to after the third
        # time: the stamp from before that reading, so that changed() tells every
        # result computed from this state that it is not the digest's.
        if attempt < 3:
            stamp = after
    return TreeState(root, stamp, digest)


def _content_digest(root: str, stamp: Stamp) -> str:
    digest = hashlib.sha256()
    for rel, _ in stamp:
        rel_bytes = rel.encode("utf-8")
        try:
            with open(os.path.join(root, rel), "rb") as handle:
                content = handle.read()
        except FileNotFoundError:  # removed meanwhile: the stamps differ
            content = b""
        digest.update(b"%d:" % len(rel_bytes) + rel_bytes + b"\n")
        digest.update(b"%d:" % len(content) + content + b"\n")
    return digest.hexdigest()


def tree_digest(fmha_dir: Path) -> str:
    """The content digest of the tree's codegen files now (see :func:`tree_state`)."""
    return tree_state(fmha_dir).digest


def _tree_stamp(root: str) -> Stamp:
    """(relative POSIX path, stat signature) of :func:`tree_files`; a file gone is left out."""
    files = ["generate.py"] if os.path.isfile(os.path.join(root, "generate.py")) else []
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, "codegen")):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        files += [rel_dir + "/" + name for name in filenames if name.endswith(".py")]
    found = []
    for rel in sorted(files):
        try:
            st = os.stat(os.path.join(root, rel))
        except FileNotFoundError:
            continue
        found.append((rel, (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)))
    return tuple(found)
