"""The package index pip would use, and the files it lists for a project.

Behind a mirror as ``pip install`` is: ``PIP_INDEX_URL``, else the ``index-url`` of
``pip config list``, else pip's own default. A project page is read as PEP 691 JSON
when offered, else PEP 503 HTML (simple mirrors serve only HTML).
"""

from __future__ import annotations

import functools
import html.parser
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

__all__ = ["PackageIndexError", "ListedFile", "index_url", "project_files", "project_url"]

# the order pip itself prefers; an index that knows neither answers plain HTML
_ACCEPT = ("application/vnd.pypi.simple.v1+json, "
           "application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01")
# a later section wins: pip reads 'global', then the command's own section, then PIP_*
_CONFIG_KEYS = ("global.index-url", "download.index-url", "install.index-url", ":env:.index-url")
_PIP_DEFAULT = "from pip._internal.models.index import PyPI; print(PyPI.simple_url)"


class PackageIndexError(Exception):
    """The index cannot be found or read; the message says which and why."""


@dataclass(frozen=True)
class ListedFile:
    """One file of a project page: its name, absolute URL and listed sha256 (or '')."""

    filename: str
    url: str
    sha256: str


def _pip(*args: str) -> str:
    try:
        done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PackageIndexError(f"cannot ask pip for its package index: {exc}") from exc
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise PackageIndexError(f"cannot ask pip for its package index ({' '.join(args[:3])} "
                                f"failed: {tail}); set PIP_INDEX_URL")
    return done.stdout


def _configured(listing: str) -> Optional[str]:
    """The ``index-url`` that wins in ``pip config list`` output, if any is set."""
    values: Dict[str, str] = {}
    for line in listing.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip().strip("'\"")
    for key in reversed(_CONFIG_KEYS):
        if values.get(key):
            return values[key].split()[0]
    return None


@functools.cache
def _index_url_cached(from_environment: str) -> str:
    base = (from_environment or _configured(_pip("-m", "pip", "config", "list"))
            or _pip("-c", _PIP_DEFAULT).strip())
    return base if base.endswith("/") else base + "/"


def index_url() -> str:
    """The simple index pip would install from, ending in ``/``."""
    return _index_url_cached(os.environ.get("PIP_INDEX_URL", "").strip())


def project_url(package: str) -> str:
    """The project page of ``package`` on :func:`index_url` (PEP 503 normalised name)."""
    return f"{index_url()}{re.sub(r'[-_.]+', '-', package).lower()}/"


class _Anchors(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: List[Tuple[str, str]] = []
        self._href: Optional[str] = None
        self._text: List[str] = []

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href") or ""
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self.found.append(("".join(self._text).strip(), self._href))
            self._href = None


def _from_html(text: str, page: str) -> List[ListedFile]:
    parser = _Anchors()
    parser.feed(text)
    files = []
    for name, href in parser.found:
        url, _, fragment = href.partition("#")
        digest = fragment[len("sha256="):] if fragment.startswith("sha256=") else ""
        filename = name or urllib.parse.unquote(url.rsplit("/", 1)[-1])
        files.append(ListedFile(filename, urllib.parse.urljoin(page, url), digest.lower()))
    return files


def _from_json(payload: dict, page: str) -> List[ListedFile]:
    entries = payload.get("files")
    if not isinstance(entries, list):
        raise PackageIndexError(f"{page} is not a PEP 691 project page (no 'files' list)")
    return [ListedFile(str(entry.get("filename", "")),
                       urllib.parse.urljoin(page, str(entry.get("url", ""))),
                       str((entry.get("hashes") or {}).get("sha256", "")).lower())
            for entry in entries if entry.get("url")]


def project_files(package: str, user_agent: str) -> Tuple[str, List[ListedFile]]:
    """The project page's URL and the files it lists, from JSON or HTML alike."""
    page = project_url(package)
    request = urllib.request.Request(page, headers={"Accept": _ACCEPT, "User-Agent": user_agent})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            headers = getattr(response, "headers", None)
            kind = headers.get_content_type() if headers is not None else ""
            body = response.read().decode("utf-8")
    except (urllib.error.URLError, OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "reason", exc)
        raise PackageIndexError(f"cannot read the package index {page}: {reason}") from exc
    if kind.endswith("json") or body.lstrip().startswith("{"):
        try:
            return page, _from_json(json.loads(body), page)
        except ValueError as exc:
            raise PackageIndexError(f"{page} did not answer valid PEP 691 JSON: {exc}") from exc
    return page, _from_html(body, page)
