from __future__ import annotations

import functools
import hashlib
import http.server
import io
import json
import os
import re
import stat
import tarfile
import threading
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from sphinxext_fmha import corpus, package_index
from sphinxext_fmha.corpus import (
    STAMP_NAME,
    CorpusError,
    CorpusTree,
    cache_root,
    fetch_tree,
    load_corpus,
    tree_by_name,
)
from sphinxext_fmha.locate import FMHA_SUBDIR

EXPECTED_NAMES = [
    "flash-attn-2.7.4.post1",
    "flash-attn-2.8.1",
    "flash-attn-2.8.3",
    "amd-aiter-0.1.7.post2.dev18",
]

PREFIX = "fake_pkg-1.0/sub/composable_kernel"
FMHA_FILES = {
    f"{PREFIX}/{FMHA_SUBDIR}/generate.py": b"print('fake generate')\n",
    f"{PREFIX}/{FMHA_SUBDIR}/codegen/__init__.py": b"",
    f"{PREFIX}/{FMHA_SUBDIR}/codegen/ops/__init__.py": b"",
    f"{PREFIX}/{FMHA_SUBDIR}/codegen/ops/fmha_fake.py": b"def list_blobs(*a):\n    pass\n",
}
OTHER_FILES = {
    "fake_pkg-1.0/setup.py": b"raise SystemExit('never extracted')\n",
    f"{PREFIX}/include/ck.hpp": b"// not part of 01_fmha\n",
    f"{PREFIX}/example/ck_tile/02_other/generate.py": b"# another example\n",
}


def _make_archive(path: Path, members: Dict[str, bytes], extra: List[Tuple[str, bytes]] = ()) -> str:
    """Write a .tar.gz with ``members`` (plus raw ``extra`` members); return its sha256."""
    with tarfile.open(path, "w:gz") as tf:
        for name, data in list(members.items()) + list(extra):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755 if name.endswith("generate.py") else 0o644
            tf.addfile(info, io.BytesIO(data))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _fake_tree(sha256: str, sdist: str = "fake_pkg-1.0.tar.gz") -> CorpusTree:
    return CorpusTree(
        name="fake-1.0", package="Fake_Pkg", version="1.0", sdist=sdist,
        sha256=sha256, ck_prefix=PREFIX, apis={"fake": 1},
    )


@pytest.fixture
def fake_archive(tmp_path) -> Tuple[Path, str]:
    src = tmp_path / "upstream"
    src.mkdir()
    archive = src / "fake_pkg-1.0.tar.gz"
    sha = _make_archive(archive, {**FMHA_FILES, **OTHER_FILES})
    return archive, sha


@pytest.fixture
def served(monkeypatch):
    """Serve archives through file:// URLs instead of PyPI; count the look-ups."""
    calls: List[str] = []

    def serve(archive: Path) -> None:
        def resolve(tree: CorpusTree) -> str:
            calls.append(tree.sdist)
            return archive.as_uri()

        monkeypatch.setattr(corpus, "_resolve_url", resolve)

    serve.calls = calls  # type: ignore[attr-defined]
    return serve


def _no_network(monkeypatch) -> None:
    def refuse(tree):
        raise AssertionError(f"unexpected download of {tree.sdist}")

    monkeypatch.setattr(corpus, "_resolve_url", refuse)


# --------------------------------------------------------------------------- loading


def test_packaged_corpus_lists_the_four_trees():
    trees = load_corpus()
    assert [t.name for t in trees] == EXPECTED_NAMES
    old = trees[0]
    assert old.package == "flash-attn" and old.version == "2.7.4.post1"
    assert old.sdist_stem == "flash_attn-2.7.4.post1"
    assert old.ck_prefix == "flash_attn-2.7.4.post1/csrc/composable_kernel"
    assert old.apis == {"fwd": 1170, "bwd": 7824, "fwd_splitkv": 693, "fwd_appendkv": 195}
    assert "no --optdim" in old.notes
    aiter = trees[-1]
    assert aiter.ck_prefix.endswith("aiter_meta/3rdparty/composable_kernel")
    assert aiter.seconds == {"fwd": 3.0, "bwd": 52.0}
    assert aiter.uploaded == "2025-11-18"
    assert all(len(t.sha256) == 64 for t in trees)


def test_shared_copy_matches_packaged_copy():
    shared = Path("/work/shared/ck-corpus.toml")
    if not shared.is_file():
        pytest.skip("no shared/ck-corpus.toml on this machine")
    assert load_corpus(shared) == load_corpus()


def test_tree_by_name_unknown_lists_known_names():
    assert tree_by_name("flash-attn-2.8.3").version == "2.8.3"
    with pytest.raises(CorpusError) as info:
        tree_by_name("flash-attn-9.9")
    assert "flash-attn-9.9" in str(info.value)
    assert "amd-aiter-0.1.7.post2.dev18" in str(info.value)


@pytest.mark.parametrize(
    "text, message",
    [
        ('[[tree]]\nname = "x"\npackage = "p"\n', "lacks version, sdist, sha256, ck_prefix"),
        ('[[tree]]\nname = "x"\npackage = "p"\nversion = "1"\nsdist = "p-1.tar.gz"\n'
         'sha256 = "abc"\nck_prefix = "p-1"\n', "malformed sha256"),
        ("[[tree]\n", "not valid TOML"),
    ],
)
def test_load_corpus_rejects_bad_files(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(CorpusError, match=message):
        load_corpus(path)


def test_load_corpus_missing_file(tmp_path):
    with pytest.raises(CorpusError, match="cannot read"):
        load_corpus(tmp_path / "absent.toml")


def test_cache_root_honours_env(monkeypatch, tmp_path):
    monkeypatch.setenv("FMHA_CACHE_DIR", str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c"
    monkeypatch.delenv("FMHA_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "sphinxext-fmha"


# --------------------------------------------------------------------------- package index


@pytest.fixture
def pip_index(monkeypatch):
    """A clean slate for pip's index settings: no PIP_INDEX_URL, no cached answer."""
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    package_index._index_url_cached.cache_clear()
    yield monkeypatch
    package_index._index_url_cached.cache_clear()


def test_index_comes_from_pip_index_url(pip_index):
    pip_index.setenv("PIP_INDEX_URL", "https://mirror.example/pypi/simple")
    assert package_index.project_url("Fake_Pkg") == "https://mirror.example/pypi/simple/fake-pkg/"


def test_index_comes_from_pip_configuration_file(pip_index, tmp_path):
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = http://conf.example/simple\n")
    pip_index.setenv("PIP_CONFIG_FILE", str(conf))
    assert package_index.index_url() == "http://conf.example/simple/"


def test_index_falls_back_to_pips_own_default(pip_index):
    # pip documents that PIP_CONFIG_FILE=os.devnull loads no configuration file at all
    pip_index.setenv("PIP_CONFIG_FILE", os.devnull)
    assert package_index.index_url() == "https://pypi.org/simple/"


class _Index(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def http_index(tmp_path, pip_index):
    """A real HTTP server over ``tmp_path/www``; PIP_INDEX_URL points at its /simple/."""
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(_Index, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    pip_index.setenv("PIP_INDEX_URL", f"{base}/simple/")
    yield root, base
    server.shutdown()
    server.server_close()


def _html_page(root: Path, href: str) -> None:
    page = root / "simple" / "fake-pkg"
    page.mkdir(parents=True)
    (page / "index.html").write_text(
        "<!DOCTYPE html><html><body>"
        '<a href="../../files/fake_pkg-0.9.tar.gz">fake_pkg-0.9.tar.gz</a><br>'
        f'<a href="{href}">fake_pkg-1.0.tar.gz</a><br>'
        "</body></html>"
    )


def test_fetch_through_a_pep503_html_mirror(http_index, fake_archive, tmp_path, monkeypatch):
    root, base = http_index
    archive, sha = fake_archive
    (root / "files").mkdir()
    (root / "files" / archive.name).write_bytes(archive.read_bytes())
    _html_page(root, f"../../files/{archive.name}#sha256={sha}")
    monkeypatch.delenv("FMHA_OFFLINE", raising=False)
    ck_root = fetch_tree(_fake_tree(sha), cache_dir=tmp_path / "cache")
    assert (ck_root / FMHA_SUBDIR / "generate.py").read_bytes() == FMHA_FILES[
        f"{PREFIX}/{FMHA_SUBDIR}/generate.py"
    ]
    assert corpus._resolve_url(_fake_tree(sha)) == f"{base}/files/{archive.name}"


def test_html_mirror_listing_another_hash_is_refused(http_index):
    root, _base = http_index
    _html_page(root, "../../files/fake_pkg-1.0.tar.gz#sha256=" + "b" * 64)
    with pytest.raises(CorpusError, match="refusing to download"):
        corpus._resolve_url(_fake_tree("a" * 64))
    with pytest.raises(CorpusError, match="does not list fake_pkg-2.0.tar.gz"):
        corpus._resolve_url(_fake_tree("a" * 64, sdist="fake_pkg-2.0.tar.gz"))


def test_json_index_is_read_as_pep691(http_index, fake_archive):
    root, base = http_index
    _archive, sha = fake_archive
    page = root / "simple" / "fake-pkg"
    page.mkdir(parents=True)
    (page / "index.json").write_text(json.dumps({
        "meta": {"api-version": "1.0"}, "name": "fake-pkg", "files": [
            {"filename": "fake_pkg-1.0.tar.gz", "url": "https://files.example/f/fake_pkg-1.0.tar.gz",
             "hashes": {"sha256": sha}},
        ]}))
    # SimpleHTTPRequestHandler serves index.html only; a JSON body at the page's own URL
    (page / "index.html").write_text((page / "index.json").read_text())
    assert corpus._resolve_url(_fake_tree(sha)) == "https://files.example/f/fake_pkg-1.0.tar.gz"


def test_network_failure_names_the_url(pip_index, tmp_path):
    # port 9 (discard) on the loopback address: nothing listens, the connection is refused
    pip_index.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple/")
    pip_index.delenv("FMHA_OFFLINE", raising=False)
    with pytest.raises(CorpusError, match=r"http://127\.0\.0\.1:9/simple/fake-pkg/"):
        fetch_tree(_fake_tree("0" * 64), cache_dir=tmp_path / "cache")


def test_offline_refuses_to_download(monkeypatch, tmp_path):
    monkeypatch.setenv("FMHA_OFFLINE", "1")
    _no_network(monkeypatch)
    with pytest.raises(CorpusError, match="FMHA_OFFLINE=1"):
        fetch_tree(_fake_tree("0" * 64), cache_dir=tmp_path / "cache")


# --------------------------------------------------------------------------- fetch_tree


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_fetch_extracts_only_01_fmha_read_only(tmp_path, fake_archive, served, monkeypatch):
    monkeypatch.delenv("FMHA_OFFLINE", raising=False)
    archive, sha = fake_archive
    served(archive)
    cache = tmp_path / "cache"
    messages: List[str] = []
    root = fetch_tree(_fake_tree(sha), cache_dir=cache, progress=messages.append)

    assert root == cache / "trees" / "fake_pkg-1.0" / PREFIX
    for name, data in FMHA_FILES.items():
        extracted = cache / "trees" / "fake_pkg-1.0" / name
        assert extracted.read_bytes() == data
        assert _mode(extracted) & 0o222 == 0, f"{name} is writable"
    assert _mode(root / FMHA_SUBDIR / "generate.py") & 0o111  # exec bit kept
    assert _mode(root / FMHA_SUBDIR / "codegen") & 0o222 == 0
    for name in OTHER_FILES:
        assert not (cache / "trees" / "fake_pkg-1.0" / name).exists()
    stamp = json.loads((cache / "trees" / "fake_pkg-1.0" / STAMP_NAME).read_text())
    assert stamp["sha256"] == sha and stamp["files"] == len(FMHA_FILES)
    assert hashlib.sha256((cache / "sdists" / archive.name).read_bytes()).hexdigest() == sha
    assert served.calls == [archive.name]
    # the finished steps, one build-log line each: what, how big, how long
    steps = [m for m in messages if isinstance(m, corpus.Step)]
    size = archive.stat().st_size / 1e6
    assert len(steps) == 2, messages
    assert re.fullmatch(r"fmha: fetching Fake_Pkg 1\.0 from the package index \(%.1f MB\)"
                        r"\.\.\. \d+\.\d s" % size, steps[0]), steps
    assert re.fullmatch(r"fmha: extracting %s of Fake_Pkg 1\.0 \(%d files\)\.\.\. \d+\.\d s"
                        % (FMHA_SUBDIR, len(FMHA_FILES)), steps[1]), steps
    assert not [p for p in (cache / "trees").iterdir() if p.name.startswith(".")]

    _no_network(monkeypatch)  # a second call reuses the stamped extraction
    assert fetch_tree(_fake_tree(sha), cache_dir=cache) == root


def test_sha256_mismatch_deletes_the_download(tmp_path, fake_archive, served, monkeypatch):
    monkeypatch.delenv("FMHA_OFFLINE", raising=False)
    archive, sha = fake_archive
    served(archive)
    cache = tmp_path / "cache"
    wrong = "f" * 64
    with pytest.raises(CorpusError) as info:
        fetch_tree(_fake_tree(wrong), cache_dir=cache)
    message = str(info.value)
    assert "sha256 mismatch" in message and wrong in message and sha in message
    assert archive.as_uri() in message
    assert list((cache / "sdists").iterdir()) == []
    assert not (cache / "trees" / "fake_pkg-1.0").exists()


def test_corrupt_cached_archive_is_downloaded_again(tmp_path, fake_archive, served, monkeypatch):
    monkeypatch.delenv("FMHA_OFFLINE", raising=False)
    archive, sha = fake_archive
    served(archive)
    cache = tmp_path / "cache"
    (cache / "sdists").mkdir(parents=True)
    (cache / "sdists" / archive.name).write_bytes(b"truncated")
    root = fetch_tree(_fake_tree(sha), cache_dir=cache)
    assert (root / FMHA_SUBDIR / "generate.py").is_file()
    assert (cache / "sdists" / archive.name).read_bytes() == archive.read_bytes()
    assert served.calls == [archive.name]


def test_unstamped_extraction_is_extracted_again(tmp_path, fake_archive, served, monkeypatch):
    """An extraction without a stamp (unfinished, or an older cache) is not trusted."""
    monkeypatch.delenv("FMHA_OFFLINE", raising=False)
    archive, sha = fake_archive
    cache = tmp_path / "cache"
    (cache / "sdists").mkdir(parents=True)
    (cache / "sdists" / archive.name).write_bytes(archive.read_bytes())
    tree_dir = cache / "trees" / "fake_pkg-1.0"
    for name, data in FMHA_FILES.items():
        (tree_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (tree_dir / name).write_bytes(data)
    _no_network(monkeypatch)
    root = fetch_tree(_fake_tree(sha), cache_dir=cache)
    assert root == tree_dir / PREFIX
    assert (tree_dir / STAMP_NAME).is_file()
    assert _mode(root / FMHA_SUBDIR / "generate.py") & 0o222 == 0


def test_unstamped_extraction_that_differs_is_replaced(tmp_path, fake_archive, served, monkeypatch):
    monkeypatch.delenv("FMHA_OFFLINE", raising=False)
    archive, sha = fake_archive
    served(archive)
    cache = tmp_path / "cache"
    tree_dir = cache / "trees" / "fake_pkg-1.0"
    for name, data in FMHA_FILES.items():
        (tree_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (tree_dir / name).write_bytes(data)
    stray = tree_dir / PREFIX / FMHA_SUBDIR / "codegen" / "ops" / "__pycache__" / "x.pyc"
    stray.parent.mkdir()
    stray.write_bytes(b"junk")
    (tree_dir / PREFIX / FMHA_SUBDIR / "generate.py").write_bytes(b"edited by someone\n")
    root = fetch_tree(_fake_tree(sha), cache_dir=cache)
    expected = FMHA_FILES[f"{PREFIX}/{FMHA_SUBDIR}/generate.py"]
    assert (root / FMHA_SUBDIR / "generate.py").read_bytes() == expected
    assert not stray.parent.exists()
    assert not [p for p in (cache / "trees").iterdir() if p.name.startswith(".")]


def test_zip_sdists_are_supported(tmp_path, served, monkeypatch):
    import zipfile

    monkeypatch.delenv("FMHA_OFFLINE", raising=False)
    archive = tmp_path / "fake_pkg-1.0.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for name, data in {**FMHA_FILES, **OTHER_FILES}.items():
            zf.writestr(name, data)
    sha = hashlib.sha256(archive.read_bytes()).hexdigest()
    served(archive)
    root = fetch_tree(_fake_tree(sha, sdist=archive.name), cache_dir=tmp_path / "cache")
    assert root == tmp_path / "cache" / "trees" / "fake_pkg-1.0" / PREFIX
    ops = root / FMHA_SUBDIR / "codegen" / "ops"
    expected = FMHA_FILES[f"{PREFIX}/{FMHA_SUBDIR}/codegen/ops/fmha_fake.py"]
    assert (ops / "fmha_fake.py").read_bytes() == expected
    assert not (tmp_path / "cache" / "trees" / "fake_pkg-1.0" / "fake_pkg-1.0" / "setup.py").exists()


@pytest.mark.parametrize(
    "bad_name",
    [
        f"{PREFIX}/{FMHA_SUBDIR}/../../../../../escaped.txt",
        f"/{PREFIX}/{FMHA_SUBDIR}/absolute.txt",
    ],
)
def test_unsafe_members_are_refused(tmp_path, served, monkeypatch, bad_name):
    monkeypatch.delenv("FMHA_OFFLINE", raising=False)
    archive = tmp_path / "fake_pkg-1.0.tar.gz"
    sha = _make_archive(archive, FMHA_FILES, extra=[(bad_name, b"evil\n")])
    served(archive)
    cache = tmp_path / "cache"
    with pytest.raises(CorpusError, match="unsafe archive member"):
        fetch_tree(_fake_tree(sha), cache_dir=cache)
    assert not (cache / "trees" / "fake_pkg-1.0").exists()
    assert not [p for p in (cache / "trees").iterdir() if p.name.startswith(".tmp")]
    assert not list(tmp_path.rglob("escaped.txt"))
    assert not list(tmp_path.rglob("absolute.txt"))


def test_wrong_ck_prefix_is_reported(tmp_path, fake_archive, served, monkeypatch):
    monkeypatch.delenv("FMHA_OFFLINE", raising=False)
    archive, sha = fake_archive
    served(archive)
    tree = CorpusTree(name="x", package="fake-pkg", version="1.0", sdist=archive.name,
                      sha256=sha, ck_prefix="fake_pkg-1.0/elsewhere")
    with pytest.raises(CorpusError, match="check the tree's ck_prefix"):
        fetch_tree(tree, cache_dir=tmp_path / "cache")


def test_parallel_fetches_extract_once(tmp_path, fake_archive, served, monkeypatch):
    monkeypatch.delenv("FMHA_OFFLINE", raising=False)
    archive, sha = fake_archive
    served(archive)
    cache = tmp_path / "cache"
    results: List[object] = []

    def worker():
        try:
            results.append(fetch_tree(_fake_tree(sha), cache_dir=cache))
        except Exception as exc:  # pragma: no cover - reported by the assert below
            results.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 6 and len(set(map(str, results))) == 1, results
    assert isinstance(results[0], Path)
    assert served.calls == [archive.name]  # downloaded once, under the lock


# --------------------------------------------------------------------------- real trees


@pytest.mark.corpus
def test_real_tree_is_cached_stamped_and_read_only(corpus_tree):
    tree, root = corpus_tree
    tree_dir = root
    for _ in tree.ck_prefix.split("/"):
        tree_dir = tree_dir.parent
    assert tree_dir.name == tree.sdist_stem
    assert tree_dir.parent.name == "trees"
    assert root == tree_dir.joinpath(*tree.ck_prefix.split("/"))
    stamp = json.loads((tree_dir / STAMP_NAME).read_text())
    assert stamp["sha256"] == tree.sha256 and stamp["ck_prefix"] == tree.ck_prefix
    generate = root / FMHA_SUBDIR / "generate.py"
    assert generate.is_file()
    assert _mode(generate) & 0o222 == 0
    assert _mode(root / FMHA_SUBDIR / "codegen" / "ops") & 0o222 == 0
    assert not list((root / FMHA_SUBDIR).rglob("__pycache__"))
    archive = tree_dir.parent.parent / "sdists" / tree.sdist
    assert hashlib.sha256(archive.read_bytes()).hexdigest() == tree.sha256


@pytest.mark.corpus
def test_corpus_roots_fixture_covers_every_tree(corpus_roots, corpus_root):
    assert sorted(corpus_roots) == sorted(EXPECTED_NAMES)
    assert corpus_root("flash-attn-2.8.3") == corpus_roots["flash-attn-2.8.3"]
    for root in corpus_roots.values():
        assert (root / FMHA_SUBDIR / "codegen" / "ops").is_dir()
