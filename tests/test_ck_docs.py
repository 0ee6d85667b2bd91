"""CK's own documentation, with a page of guides added as docs/ck-docs.md tells CK's
maintainers.

The amd-aiter sdist (a corpus tree) ships CK's ``docs/`` folder: ``conf.py`` with
``ROCmDocs`` and doxygen, ``docs/sphinx/_toc.yml.in`` and ``docs/sphinx/requirements.txt``
(``rocm-docs-core[api_reference]`` pinned). The test extracts it with ``CMakeLists.txt``
(conf.py reads CK's version there) and the part of ``include/`` its Doxyfile reads
that the build needs: ``ck/wrapper`` (CK's wrapper page reads it through breathe) and
``ck_tile/ops/fmha/block`` (all of ``include/`` makes doxygen and doxysphinx write
18,000 pages, 690 MB: longer than the whole suite). It installs CK's pinned
requirements in their own virtual environment (cached outside the repository, keyed by
the requirements file, this project's dependencies and the Python; pip reuses its
wheels), and this project's wheel beside it (``built_dists``), applies the recipe's
files (``tests/ck_docs/``, which docs/ck-docs.md shows), and builds from ``docs/`` in a
git checkout with doxygen, offline: a proxy that refuses every connection.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from hashlib import sha256
from pathlib import Path

import pytest

from sphinxext_fmha.cachedir import cache_root, file_lock
from sphinxext_fmha.corpus import tree_by_name

from helpers.browser import browser_check, reading_problems  # noqa: F401 - the fixture
from helpers.independent import independent_listing

RECIPE = Path(__file__).resolve().parent / "ck_docs"
TREE = "amd-aiter-0.1.7.post2.dev18"
PAGE = "reference/fmha-kernel-selection"
#: What the build needs of the CK tree, relative to its root (see the module docstring).
PARTS = ("docs/", "CMakeLists.txt", "include/ck/wrapper/", "include/ck_tile/ops/fmha/block/",
         "example/ck_tile/01_fmha/")
#: A proxy nobody listens on: every request fails at once instead of reaching a network.
NO_NETWORK = "http://127.0.0.1:9"

# the release group: the wheel it installs is built once for both
pytestmark = [pytest.mark.corpus, pytest.mark.xdist_group("release")]


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _require(missing: str) -> None:
    """In CI (``CI=true``, where ``.ci/run`` installs what the test needs) a missing tool
    fails the test; elsewhere it is skipped with what to do."""
    if _flag("CI"):
        pytest.fail(missing, pytrace=False)
    pytest.skip(missing)


def _extract(archive: Path, prefix: str, dest: Path) -> None:
    with tarfile.open(archive) as tar:
        members = []
        for member in tar.getmembers():
            rel = member.name[len(prefix):] if member.name.startswith(prefix) else None
            if rel and any(rel == part or rel.startswith(part) for part in PARTS) \
                    and (member.isfile() or member.isdir()):
                member.name = rel
                members.append(member)
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(dest, members=members, **safe)
    for path in dest.rglob("*"):
        path.chmod(path.stat().st_mode | 0o200)


def _requirements(wheel: Path) -> list:
    """This project's own dependencies, from its wheel (CK's pins lack some)."""
    with zipfile.ZipFile(wheel) as whl:
        (name,) = [n for n in whl.namelist() if n.endswith(".dist-info/METADATA")]
        lines = whl.read(name).decode().splitlines()
    return [line.split(":", 1)[1].strip() for line in lines
            if line.startswith("Requires-Dist:") and "extra ==" not in line]


def _docs_venv(requirements: Path, extra: list) -> Path:
    """The Python of a virtual environment with CK's pinned docs requirements and
    ``extra``, made once per requirements and Python, under the corpus cache."""
    key = sha256(requirements.read_bytes() + repr((extra, sys.version)).encode()).hexdigest()[:16]
    home = cache_root() / "ck-docs-venvs" / key
    python = home / "bin" / "python"
    with file_lock(home.with_suffix(".lock")):
        if not (home / ".complete").is_file():
            shutil.rmtree(home, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(home)], check=True)
            proc = subprocess.run([str(python), "-m", "pip", "install", "-q", "-r",
                                   str(requirements), *extra],
                                  capture_output=True, text=True, timeout=1800)
            assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
            (home / ".complete").write_text(" ".join(extra) + "\n", encoding="utf-8")
    return python


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def ck_docs(tmp_path_factory, corpus_root, built_dists):
    """(the built HTML folder, the build's log, the CK root) of CK's docs with the
    recipe applied."""
    if sys.version_info < (3, 10):
        pytest.skip("CK's docs pin Sphinx 8.1, which needs Python >= 3.10")
    if shutil.which("doxygen") is None:
        _require("doxygen is missing: `.ci/run` installs it (apt-get install doxygen, as "
                 "root); CK's docs run it")
    tree = tree_by_name(TREE)
    corpus_root(TREE)  # fetched, so its sdist is in the cache
    root = tmp_path_factory.mktemp("ck") / "composable_kernel"
    _extract(cache_root() / "sdists" / tree.sdist, tree.ck_prefix.rstrip("/") + "/", root)
    docs = root / "docs"
    # the recipe (docs/ck-docs.md): the extension in conf.py, a page, its toc entry
    with open(docs / "conf.py", "a", encoding="utf-8") as conf:
        conf.write("\n" + (RECIPE / "conf_fmha.py").read_text(encoding="utf-8"))
    shutil.copy(RECIPE / "rocm_docs_offline.py", docs)
    shutil.copy(RECIPE / "fmha-kernel-selection.rst", docs / "reference")
    with open(docs / "sphinx" / "_toc.yml.in", "a", encoding="utf-8") as toc:
        toc.write((RECIPE / "toc.yml.in").read_text(encoding="utf-8"))
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "CK docs")
    python = _docs_venv(docs / "sphinx" / "requirements.txt", _requirements(built_dists.wheel))
    site = root.parent / "site"
    proc = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--target",
                           str(site), str(built_dists.wheel)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("READTHEDOCS", "ROCM_DOCS_", "PYTHON"))
           and k.lower() not in ("http_proxy", "https_proxy", "no_proxy", "all_proxy")}
    env.update(ROCM_DOCS_OFFLINE="1", HTTP_PROXY=NO_NETWORK, HTTPS_PROXY=NO_NETWORK,
               PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1")
    out = root.parent / "html"
    proc = subprocess.run([str(python), "-m", "sphinx", "-b", "html", ".", str(out)], cwd=docs,
                          env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-4000:])
    return out, proc.stdout + proc.stderr, root


def _text(path: Path) -> str:
    html = path.read_text(encoding="utf-8")
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


def test_ck_docs_build_with_the_guides_and_no_fmha_warning(ck_docs, tmp_path):
    out, log, root = ck_docs
    warnings = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
    assert warnings, "CK's own docs warn (their toc, doxygen): the log is the build's"
    assert not [w for w in warnings if "fmha" in w.lower()], "\n".join(warnings)
    html = (out / (PAGE + ".html")).read_text(encoding="utf-8")
    assert "rocm_header.css" in html and "fmha.css" in html  # the ROCm theme, our styles
    assert "fmha-playground" in html
    page = _text(out / (PAGE + ".html"))
    listed = independent_listing(root, "fwd_appendkv", tmp_path)
    assert re.search(r"generate\.py -a fwd_appendkv lists %d kernel files" % len(listed), page)
    selected = independent_listing(root, "fwd_appendkv", tmp_path, "-f", "*_d128_*")
    assert "generate.py selects %d of %d kernels" % (len(selected), len(listed)) in page
    # doxygen ran: CK's API pages are there
    assert (out / "doxygen" / "html" / "namespaceck__tile.html").is_file()


def test_ck_docs_page_reads_well_in_chromium(ck_docs, browser_check):  # noqa: F811 - fixture
    results = browser_check(ck_docs[0], [PAGE + ".html"])
    for found in results[PAGE + ".html"].values():
        assert found["tables"] and found["diagrams"]
    problems = reading_problems(results)
    assert not problems, "\n".join(problems)


def test_offline_answers_only_rocm_docs_core_files(monkeypatch):
    monkeypatch.syspath_prepend(str(RECIPE))
    import requests
    from requests.adapters import HTTPAdapter

    original = HTTPAdapter.send
    try:
        import rocm_docs_offline

        for branch in ("data", "new_data"):  # CK's pin reads data/, newer ones new_data/
            answer = requests.get(rocm_docs_offline.DATA_URL + branch + "/latest_version.txt")
            assert answer.status_code == 200 and ":" in answer.text
        assert requests.get(rocm_docs_offline.DATA_URL + "data/unknown.txt").text == ""
        with pytest.raises(requests.ConnectionError):  # anything else goes out as usual
            requests.get("http://host.invalid/", timeout=5)
    finally:
        HTTPAdapter.send = original
        sys.modules.pop("rocm_docs_offline", None)
