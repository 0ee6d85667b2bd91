"""Release-ready as documented (docs/install.md): ``python -m build`` makes an sdist and a
wheel that ``twine check`` accepts, carrying the README as their description, the
licence, the changelog and every data file; each installs in a fresh virtual
environment, where the command line and a Sphinx build with the extension work."""

from __future__ import annotations

import email.parser
import re
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from helpers.release import REPO

pytestmark = pytest.mark.xdist_group("release")

DATA = ["sphinxext_fmha/static/fmha.css", "sphinxext_fmha/static/fmha-playground.js",
        "sphinxext_fmha/data/ck-corpus.toml"]


def test_twine_accepts_both_and_they_carry_what_a_release_needs(built_dists):
    proc = subprocess.run([sys.executable, "-m", "twine", "check", "--strict",
                           str(built_dists.sdist), str(built_dists.wheel)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with zipfile.ZipFile(built_dists.wheel) as wheel:
        names = wheel.namelist()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = email.parser.Parser().parsestr(wheel.read(metadata).decode())
    assert all(name in names for name in DATA), names
    assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE")
               for n in names), names
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert meta.get_payload().strip() == readme.strip()
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta["Version"] == _project_version()
    assert "License :: OSI Approved :: MIT License" in meta.get_all("Classifier")
    with tarfile.open(built_dists.sdist) as sdist:
        shipped = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {"README.md", "CHANGELOG.md", "LICENSE", "pyproject.toml"} <= shipped
    assert all(name in shipped for name in DATA)
    assert "## %s" % _project_version() in (REPO / "CHANGELOG.md").read_text(encoding="utf-8")


def _project_version() -> str:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'^version = "([^"]+)"', text, re.M)
    assert found
    return found.group(1)


def _smoke(python: Path, bin_dir: Path, root: Path, work: Path) -> None:
    """The command line, and a Sphinx build of a filter check, from the installed copy
    (run outside the checkout, so nothing is imported from it)."""
    run = dict(capture_output=True, text=True, timeout=600, cwd=work)
    proc = subprocess.run([str(bin_dir / "sphinxext-fmha"), "apis", "--ck-root", str(root)], **run)
    assert proc.returncode == 0 and "toy" in proc.stdout, proc.stderr
    proc = subprocess.run([str(python), "-c", "import sphinxext_fmha; print(sphinxext_fmha.__file__)"],
                          **run)
    assert proc.returncode == 0 and str(REPO) not in proc.stdout, proc.stdout + proc.stderr
    src = work / "src"
    src.mkdir(exist_ok=True)
    (src / "conf.py").write_text('extensions = ["sphinxext_fmha"]\nfmha_ck_root = %r\n'
                                 % str(root), encoding="utf-8")
    (src / "index.rst").write_text("Check\n=====\n\n.. fmha-filter-check::\n   :api: toy\n"
                                   "   :filter: *_nlse*\n", encoding="utf-8")
    out = work / "html"
    proc = subprocess.run([str(python), "-m", "sphinx", "-W", "-q", "-b", "html", str(src), str(out)],
                          **run)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "generate.py selects" in (out / "index.html").read_text(encoding="utf-8")
    assert (out / "_static" / "fmha.css").is_file()


def test_sdist_and_wheel_install_and_work_in_a_fresh_venv(built_dists, synthetic_tree, tmp_path):
    root = synthetic_tree("base")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / ("Scripts" if sys.platform == "win32" else "bin")
    python = bin_dir / ("python.exe" if sys.platform == "win32" else "python")
    for dist, extra in ((built_dists.wheel, []), (built_dists.sdist, ["--force-reinstall", "--no-deps"])):
        proc = subprocess.run([str(python), "-m", "pip", "install", "-q", *extra, str(dist)],
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        work = tmp_path / dist.name
        work.mkdir()
        _smoke(python, bin_dir, root, work)
