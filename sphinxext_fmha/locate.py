"""Find the CK root (a folder holding ``example/ck_tile/01_fmha/codegen/ops/``), also
vendored below the given path (flash-attention's ``csrc/composable_kernel``, aiter's
``3rdparty/composable_kernel``); :func:`find_ck_root` is the CLI's and directives' lookup.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Tuple, Union

from .errors import FmhaError, WarningType

__all__ = ["CKRootNotFound", "FMHA_SUBDIR", "MARKER_FILE", "find_ck_root", "fmha_dir",
           "forget_roots", "is_ck_root", "locate_ck_root"]

FMHA_SUBDIR = "example/ck_tile/01_fmha"
MARKER_FILE = ".ck-project-root"
_OPS_SUBDIR = FMHA_SUBDIR + "/codegen/ops"

#: Where projects that vendor CK usually keep it, relative to their own root.
CANDIDATE_SUBROOTS = (
    "csrc/composable_kernel",
    "3rdparty/composable_kernel",
    "aiter_meta/3rdparty/composable_kernel",
    "projects/composablekernel",
    "composable_kernel",
    "external/composable_kernel",
)

_CK_NAME = re.compile(r"^composable[-_]?kernels?$", re.IGNORECASE)
_SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".tox", ".venv", "venv"}

PathLike = Union[str, "os.PathLike[str]"]


class CKRootNotFound(FmhaError):
    """No CK root was found; ``searched`` lists every folder that was checked."""

    default_kind = WarningType.CK_ROOT

    def __init__(self, message: str, searched: Optional[List[str]] = None) -> None:
        self.searched: List[str] = list(searched or [])
        if self.searched:
            message = message + "\nSearched:\n" + "\n".join("  " + s for s in self.searched)
        super().__init__(message)


def fmha_dir(ck_root: PathLike) -> Path:
    """``<ck_root>/example/ck_tile/01_fmha``."""
    return Path(ck_root) / FMHA_SUBDIR


def is_ck_root(path: PathLike) -> bool:
    return (Path(path) / _OPS_SUBDIR).is_dir()


def _subdirs(path: Path) -> List[Path]:
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError:
        return []
    result = []
    for entry in entries:
        try:
            if entry.name not in _SKIP_DIRS and entry.is_dir():
                result.append(Path(entry.path))
        except OSError:
            continue
    return result


def _candidates(base: Path) -> Iterator[Path]:
    """``base`` itself, the usual vendoring places, then CK-named first/second-level folders."""
    yield base
    for sub in CANDIDATE_SUBROOTS:
        yield base / sub
    children = _subdirs(base)
    yield from (child for child in children if _CK_NAME.match(child.name))
    for child in children:
        yield from (grand for grand in _subdirs(child) if _CK_NAME.match(grand.name))


def _search(bases: Iterable[Path], searched: List[str]) -> Optional[Path]:
    for base in bases:
        for candidate in _candidates(base):
            if str(candidate) in searched:
                continue
            searched.append(str(candidate))
            if is_ck_root(candidate):
                return candidate
    return None


def locate_ck_root(path: Optional[PathLike] = None, start: Optional[PathLike] = None, *,
                   stop: Optional[PathLike] = None) -> Path:
    """The CK root: ``path`` itself, its ``01_fmha`` folder or a repository holding CK
    (:data:`CANDIDATE_SUBROOTS`, folders named like ``composable_kernel``); without ``path``,
    the nearest ``.ck-project-root`` marker or ancestor (or its sub-roots) above ``start``,
    up to ``stop``. Raises :class:`CKRootNotFound` listing every folder it checked."""
    searched: List[str] = []
    if path is not None:
        try:
            given = Path(path).expanduser().resolve()
        except (RuntimeError, OSError) as error:  # a symlink loop (RuntimeError < 3.13)
            raise CKRootNotFound(f"{path} cannot be followed: {error}", [str(path)]) from None
        if not given.exists():
            raise CKRootNotFound(f"{given} does not exist", [str(given)])
        if not given.is_dir():
            raise CKRootNotFound(f"{given} is not a folder", [str(given)])
        # the 01_fmha folder itself (or the codegen folder below it)
        for inner in (given, *list(given.parents)[:2]):
            if inner.name == "01_fmha" and (inner / "codegen" / "ops").is_dir():
                root = inner.parent.parent.parent
                if is_ck_root(root):
                    return root
        found = _search([given], searched)
        if found is not None:
            return found
        raise CKRootNotFound(f"{given} is not a Composable Kernel tree and holds none "
                             f"(looked for {_OPS_SUBDIR}/)", searched)

    origin = Path(start if start is not None else os.getcwd()).expanduser().resolve()
    last = Path(stop).expanduser().resolve() if stop is not None else None
    ancestors = [origin, *origin.parents]
    if last in ancestors:
        ancestors = ancestors[:ancestors.index(last) + 1]
    for ancestor in ancestors:
        marker = ancestor / MARKER_FILE
        searched.append(str(marker))
        if marker.is_file():
            found = _search([ancestor], searched)
            if found is not None:
                return found
            raise CKRootNotFound(f"found the marker {marker} but no Composable Kernel tree "
                                 f"(looked for {_OPS_SUBDIR}/) there", searched)
    found = _search(ancestors, searched)
    if found is not None:
        return found
    raise CKRootNotFound(f"no Composable Kernel tree found from {origin} upwards "
                         f"(no {MARKER_FILE} marker and no {_OPS_SUBDIR}/)", searched)


_LOCK = threading.Lock()
_FOUND: Dict[Tuple[str, str], Union[Path, CKRootNotFound]] = {}


def find_ck_root(given: Optional[PathLike], start: PathLike) -> Path:
    """The CK root ``given`` names, else the one found upward from ``start``; remembered,
    failures too (every directive of a page asks), until :func:`forget_roots`."""
    key = (str(given or ""), str(start))
    with _LOCK:
        if key not in _FOUND:
            try:
                _FOUND[key] = locate_ck_root(given) if given else locate_ck_root(start=start)
            except CKRootNotFound as error:
                _FOUND[key] = error
        known = _FOUND[key]
    if isinstance(known, CKRootNotFound):
        raise known
    return known


def forget_roots(*_args: object) -> None:
    """Look for the CK roots again (each Sphinx build: a tree may have appeared)."""
    with _LOCK:
        _FOUND.clear()
