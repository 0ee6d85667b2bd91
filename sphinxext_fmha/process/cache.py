"""A small on-disk JSON cache, and the content hash of a CK FMHA codegen tree.

Entries are JSON files named by a sha256 key (see :meth:`DiskCache.key_for`).
Writes are atomic (temporary file in the same folder + :func:`os.replace`), so
several processes may share one cache folder: a reader sees either the old
entry, the new entry or no entry, never a partial one.  An entry that cannot be
read or decoded is deleted and reported as a miss.

A cache that cannot be written (a full disk, a read-only folder, a file in its
place, no home folder) never fails the work: the first failure is one warning
(:mod:`~.notices`), and the entries of this process are kept in its memory from then
on, so nothing is computed twice.

:func:`tree_digest` hashes what decides generate.py's output: ``generate.py``
and every ``*.py`` below ``codegen/``.  Everything the verification layer
caches is keyed by it, so editing the tree invalidates the cached runs. A result
is keyed by the tree as it was when its work started (:func:`tree_state`) and is
stored only if the tree's files are unchanged when it is done (``put(...,
inputs=...)``): an edit while generate.py runs (a docs author saving a codegen file
while ``sphinx-autobuild`` rebuilds) could otherwise keep the edited tree's answer
under the key of the tree as it is again after the edit is undone. Such a result is
used as it is, with one warning naming the files that changed, and not stored.

No Sphinx imports here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path, PurePath
from typing import Any, Dict, List, Optional, Tuple, Union

import orjson

from ..cachedir import cache_root
from ..errors import WarningType
from .notices import notice
from .scratch_place import free_space

__all__ = [
    "DiskCache",
    "dump_json",
    "load_json",
    "default_cache_root",
    "default_runs_dir",
    "tree_digest",
    "tree_files",
    "tree_state",
    "TreeState",
    "canonical_json",
    "cache_dir_problem",
    "pack",
    "unpack",
    "share_items",
    "unshare_items",
]

#: Version of the on-disk entry envelope; bump to orphan every old entry.
#: 2: entries are read by :func:`load_json` (an entry ``json`` wrote starts with a blank).
ENTRY_FORMAT = 2

#: The first byte of JSON that ``json`` wrote because orjson refused the value: such text
#: is read back by ``json`` (see :func:`load_json`).
JSON_WROTE_IT = b" "


def default_cache_root() -> Path:
    """``$FMHA_CACHE_DIR`` or ``~/.cache/sphinxext-fmha``."""
    return cache_root()


def default_runs_dir() -> Path:
    """Where generate.py runs are cached by default: ``<cache root>/runs``."""
    return default_cache_root() / "runs"


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


def dump_json(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON that :func:`load_json` reads back, made by orjson
    (a heavy entry, such as 2.8.3 bwd's dispatch file of 17.5 MB, in a tenth of the time
    ``json`` takes). Non-string keys become strings as ``json`` makes them; NaN and the
    infinities become ``null`` (JSON has no word for them). A value orjson refuses (an
    integer beyond 64 bits, a lone surrogate) is encoded by ``json`` itself, behind
    :data:`JSON_WROTE_IT`."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except (TypeError, ValueError):  # orjson.JSONEncodeError is a TypeError
        return JSON_WROTE_IT + json.dumps(value, separators=(",", ":")).encode("ascii")


def load_json(data: bytes) -> Any:
    """The value of JSON bytes that :func:`dump_json` (or the probe script) wrote: by
    orjson (2.8.3 bwd's probe result, 34 MB, in 0.10 s instead of json's 0.15 s, with no
    decoding to text first), or by ``json`` when the text starts with
    :data:`JSON_WROTE_IT`. orjson would read an integer beyond 64 bits as a float; only
    ``json`` writes one, and it marks its text. Raises ``ValueError`` on text that is
    not JSON."""
    if data[:1] == JSON_WROTE_IT:
        return json.loads(data)
    return orjson.loads(data)  # orjson.JSONDecodeError is a ValueError


def canonical_json(obj: Any) -> str:
    """Compact, key-sorted JSON of ``obj`` (dataclasses, paths and sets allowed)."""
    return json.dumps(_canon(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def pack(obj: Any) -> Any:
    """JSON data that :func:`unpack` turns back into an object equal to ``obj``:
    unlike plain JSON, tuples, dicts with non-string keys (in their order) and
    dataclasses survive the round trip."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {"dataclass": type(obj).__name__,
                "fields": {f.name: pack(getattr(obj, f.name)) for f in dataclasses.fields(obj)}}
    if isinstance(obj, dict):
        return {"dict": [[pack(k), pack(v)] for k, v in obj.items()]}
    if isinstance(obj, tuple):
        return {"tuple": [pack(v) for v in obj]}
    if isinstance(obj, list):
        return [pack(v) for v in obj]
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    raise TypeError("cannot pack a %s" % type(obj).__name__)


def unpack(data: Any, classes: Dict[str, type]) -> Any:
    """The object :func:`pack` made ``data`` of; ``classes``: the dataclasses by name
    (an unknown one raises KeyError: the entry is not ours)."""
    if isinstance(data, list):
        return [unpack(v, classes) for v in data]
    if isinstance(data, dict):
        if "dataclass" in data:
            return classes[data["dataclass"]](**{k: unpack(v, classes)
                                                 for k, v in data["fields"].items()})
        if "dict" in data:
            return {unpack(k, classes): unpack(v, classes) for k, v in data["dict"]}
        return tuple(unpack(v, classes) for v in data["tuple"])
    return data


def share_items(rows: Dict[str, Dict[str, Any]], fields: Tuple[str, ...]) -> Dict[str, Any]:
    """``rows`` (name -> record) as JSON data in which each list item of the records'
    ``fields`` is an index into one table of the distinct items: a dispatch reading
    repeats a few dozen condition terms across thousands of kernels, and JSON written
    and read whole costs what it spells out. :func:`unshare_items` turns it back."""
    table: List[Any] = []
    index: Dict[str, int] = {}
    # id of an item already numbered -> its number: a reading shares one object among
    # the records that hold an item (the items stay alive in ``rows`` meanwhile)
    numbered: Dict[int, int] = {}

    def number(item: Any) -> int:
        found = numbered.get(id(item))
        if found is not None:
            return found
        # repr, not a hashable copy: made in C, and for JSON data (str, int, float,
        # bool, None, lists and dicts of them) equal only for equal values (True and
        # 1 apart, as JSON keeps them)
        key = repr(item)
        found = index.get(key)
        if found is None:
            found = index[key] = len(table)
            table.append(item)
        numbered[id(item)] = found
        return found

    shared = {}
    for name, record in rows.items():
        record = dict(record)
        for field in fields:
            if field in record:
                record[field] = [number(item) for item in record[field]]
        shared[name] = record
    return {"items": table, "rows": shared}


def unshare_items(data: Dict[str, Any], fields: Tuple[str, ...]) -> Dict[str, Dict[str, Any]]:
    """The ``rows`` :func:`share_items` made ``data`` of. An item that is a list of plain
    values (a condition term) comes back as one tuple that every record holding it
    shares: nothing to copy, nothing a reader could change for the others, and nothing
    for the garbage collector to walk again and again (a dispatch reading of 2.8.3's
    bwd holds 170,000 of them). Any other item comes back as a copy of its own."""
    items = data["items"]
    # per item: its one shared tuple, or None where each record needs a copy of its own
    tuples = [tuple(item) if isinstance(item, list)
              and not any(isinstance(v, (list, dict)) for v in item) else None
              for item in items]
    rows = {}
    for name, record in data["rows"].items():
        for field in fields:
            if field in record:
                record[field] = [tuples[number] if tuples[number] is not None
                                 else _copy_item(items[number]) for number in record[field]]
        rows[name] = record
    return rows


def _copy_item(item: Any) -> Any:
    if isinstance(item, dict):
        return {key: _copy_item(value) for key, value in item.items()}
    return [_copy_item(value) for value in item] if isinstance(item, list) else item


def cache_dir_problem(path: Path) -> Optional[str]:
    """Why ``path`` cannot be a cache folder (it or a parent is a file, it is not
    writable), or None when it can (it need not exist yet)."""
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
    """JSON values (dicts) stored as ``<root>/<key[:2]>/<key>.json``; in this process's
    memory once a write failed (see the module docstring)."""

    def __init__(self, root: Optional[Path] = None) -> None:
        #: entries kept in memory because the folder cannot take them (None: it can),
        #: as JSON: each reader gets objects of its own, as from a file
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
        return hashlib.sha256(canonical_json(list(parts)).encode("utf-8")).hexdigest()

    def path_for(self, key: str) -> Path:
        if not key or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"cache keys are lowercase hex digests, not {key!r}")
        return self.root / key[:2] / f"{key}.json"

    def code_store_path(self, fmha_dir: Union[str, Path], python: str) -> Path:
        """Where the interpreters that run one tree's generate.py keep the code they
        compiled (``load_code_store`` in the probe script), one file per tree (however
        its path is spelled) and Python: beside the JSON entries, in a folder of its own."""
        key = self.key_for("code-store", os.path.realpath(fmha_dir), python)
        return self.root / "compiled" / (key + ".marshal")

    def has(self, key: str) -> bool:
        """Whether an entry is kept for ``key`` (readable or not)."""
        if self._memory is not None:
            with self._lock:
                if key in self._memory:
                    return True
        return self.path_for(key).is_file()

    def get(self, key: str) -> Optional[Dict[str, Any]]:
        if self._memory is not None:
            with self._lock:
                kept = self._memory.get(key)
            if kept is not None:
                return load_json(kept)
        path = self.path_for(key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError:
            self._discard(path)
            return None
        try:
            entry = load_json(raw)
            if (
                not isinstance(entry, dict)
                or entry.get("format") != ENTRY_FORMAT
                or entry.get("key") != key
                or not isinstance(entry.get("value"), dict)
            ):
                raise ValueError("not a cache entry for this key")
        except ValueError:  # UnicodeDecodeError is one
            self._discard(path)
            return None
        return entry["value"]

    def put(self, key: str, value: Dict[str, Any],
            inputs: Optional[TreeState] = None) -> Optional[Path]:
        """Keep ``value`` under ``key``; its path, or None when it was not written to
        the folder. ``inputs``: the tree as it was when the work that computed
        ``value`` started (the key was made from its digest): when its files changed
        since, nothing is kept (and a warning names them)."""
        if not isinstance(value, dict):
            raise TypeError("DiskCache values are dicts")
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
        if self._memory is None:
            try:
                self._write(path, dump_json({"format": ENTRY_FORMAT, "key": key,
                                             "value": value}))
                return path
            except OSError as error:
                room = free_space(str(self.root)) if self.root.exists() else None
                self._unwritable("cannot write the cache entry %s: %s%s" % (
                    error.filename or path, error.strerror or error,
                    " (%d bytes free there)" % room if room is not None and room < 1 << 20
                    else ""))
        with self._lock:
            self._memory[key] = dump_json(value)  # type: ignore[index]
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
            try:
                os.unlink(tmp)
            except OSError:
                pass
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
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError:
            pass


# --------------------------------------------------------------------------- digest


def tree_files(fmha_dir: Path) -> List[Path]:
    """``generate.py`` and every ``codegen/**/*.py`` (no ``__pycache__``), sorted
    by their POSIX path relative to ``fmha_dir``."""
    return [Path(path) for _, path in _tree_entries(str(fmha_dir))]


def _tree_entries(fmha_dir: str) -> List[Tuple[str, str]]:
    """(POSIX path relative to ``fmha_dir``, path) of :func:`tree_files`, on plain
    strings, in its order."""
    files: List[Tuple[str, str]] = []
    gen = os.path.join(fmha_dir, "generate.py")
    if os.path.isfile(gen):
        files.append(("generate.py", gen))
    codegen = os.path.join(fmha_dir, "codegen")
    if os.path.isdir(codegen):
        for dirpath, dirnames, filenames in os.walk(codegen):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            rel_dir = os.path.relpath(dirpath, fmha_dir).replace(os.sep, "/")
            for name in filenames:
                if name.endswith(".py"):
                    files.append((rel_dir + "/" + name, os.path.join(dirpath, name)))
    files.sort()
    return files


#: A file's stat signature: what changes when it is written or replaced (its change
#: time cannot be set back, unlike its modification time).
Signature = Tuple[int, int, int, int]
Stamp = Tuple[Tuple[str, Signature], ...]

_DIGEST_MEMO: Dict[Tuple[str, Stamp], str] = {}
_DIGEST_LOCK = threading.Lock()


@dataclasses.dataclass(frozen=True)
class TreeState:
    """A CK tree's codegen files as they are at one moment: their stat signatures
    (``stamp``) and the content digest (``digest``) cache keys are made of."""

    root: str
    stamp: Stamp
    digest: str

    def changed(self) -> List[str]:
        """The files (relative paths) written, replaced, added or removed since."""
        then = dict(self.stamp)
        now = dict(_tree_stamp(self.root))
        return sorted(rel for rel in then.keys() | now.keys() if then.get(rel) != now.get(rel))


def tree_state(fmha_dir: Path) -> TreeState:
    """The tree's state now (see :class:`TreeState`).

    The digest is sha256 over relative paths and contents of generate.py and
    codegen/**/*.py, memoised in-process per (resolved path, stamp), so calling it
    often (every cache key of a build) costs a directory walk and some ``stat`` calls,
    made on plain strings: through ``pathlib`` they cost ten times more (2.7 ms a
    call, 0.6 s of a cold 2.8.3 gallery's keys). Files written while they are read
    are read again: the digest is always that of the stamp's contents.
    """
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
    """(POSIX path relative to ``root``, stat signature) of the files of
    :func:`tree_files`, in the same order; a file gone meanwhile is left out."""
    found = []
    for rel, path in _tree_entries(root):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        found.append((rel, (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)))
    return tuple(found)
