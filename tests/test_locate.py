from __future__ import annotations

from pathlib import Path

import pytest

from sphinxext_fmha.locate import (
    FMHA_SUBDIR,
    MARKER_FILE,
    CKRootNotFound,
    fmha_dir,
    is_ck_root,
    locate_ck_root,
)

from helpers.synthetic import make_tree


def _ck_at(path: Path) -> Path:
    """A synthetic CK tree moved to ``path``; returns ``path``."""
    built = make_tree(path.parent / ".build", "base")
    path.parent.mkdir(parents=True, exist_ok=True)
    built.rename(path)
    (path.parent / ".build").rmdir()
    return path


def test_fmha_dir_and_is_ck_root(tmp_path):
    root = _ck_at(tmp_path / "ck")
    assert FMHA_SUBDIR == "example/ck_tile/01_fmha"
    assert fmha_dir(root) == root / "example" / "ck_tile" / "01_fmha"
    assert fmha_dir(str(root)) == fmha_dir(root)
    assert is_ck_root(root)
    assert not is_ck_root(tmp_path)


def test_path_is_the_ck_root(tmp_path):
    root = _ck_at(tmp_path / "ck")
    assert locate_ck_root(root) == root.resolve()
    assert locate_ck_root(str(root / FMHA_SUBDIR)) == root.resolve()


@pytest.mark.parametrize(
    "sub",
    [
        "csrc/composable_kernel",
        "3rdparty/composable_kernel",
        "aiter_meta/3rdparty/composable_kernel",
        "projects/composablekernel",
        "external/composable_kernel",
        "vendor/ComposableKernel",
        "Composable-Kernel",
    ],
)
def test_parent_repository_with_ck_as_submodule(tmp_path, sub):
    repo = tmp_path / "repo"
    ck = _ck_at(repo / sub)
    (repo / "docs").mkdir()
    assert locate_ck_root(repo) == ck.resolve()


def test_marker_file_marks_the_ck_root(tmp_path):
    ck = _ck_at(tmp_path / "repo" / "ck")
    (ck / MARKER_FILE).write_text("")
    docs = ck / "docs" / "source"
    docs.mkdir(parents=True)
    assert locate_ck_root(start=docs, stop=tmp_path) == ck.resolve()


def test_marker_file_of_a_project_that_vendors_ck(tmp_path):
    repo = tmp_path / "repo"
    ck = _ck_at(repo / "3rdparty" / "composable_kernel")
    (repo / MARKER_FILE).write_text("")
    # a decoy CK next to the docs must not win over the marked project
    decoy = _ck_at(repo / "docs" / "composable_kernel")
    start = repo / "docs" / "source"
    start.mkdir(parents=True)
    assert locate_ck_root(start=start, stop=tmp_path) == ck.resolve()
    (repo / MARKER_FILE).unlink()
    assert locate_ck_root(start=start, stop=tmp_path) == decoy.resolve()


def test_marker_without_ck_fails_with_the_marker_in_the_message(tmp_path):
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / MARKER_FILE).write_text("")
    with pytest.raises(CKRootNotFound) as info:
        locate_ck_root(start=project / "docs", stop=tmp_path)
    assert str(project / MARKER_FILE) in str(info.value)


def test_search_upward_from_nested_docs_folder(tmp_path):
    repo = tmp_path / "flash-attention"
    ck = _ck_at(repo / "csrc" / "composable_kernel")
    nested = repo / "docs" / "source" / "api"
    nested.mkdir(parents=True)
    assert locate_ck_root(start=nested, stop=tmp_path) == ck.resolve()


def test_search_upward_defaults_to_cwd(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    ck = _ck_at(repo / "3rdparty" / "composable_kernel")
    nested = repo / "docs"
    nested.mkdir()
    monkeypatch.chdir(nested)
    assert locate_ck_root() == ck.resolve()


def test_inside_the_ck_tree_finds_its_root(tmp_path):
    ck = _ck_at(tmp_path / "ck")
    start = ck / FMHA_SUBDIR / "codegen" / "ops"
    assert locate_ck_root(start=start, stop=tmp_path) == ck.resolve()


def test_not_found_lists_the_places_searched(tmp_path):
    start = tmp_path / "a" / "b"
    start.mkdir(parents=True)
    (tmp_path / "a" / "csrc").mkdir()  # a near miss: no composable_kernel inside
    with pytest.raises(CKRootNotFound) as info:
        locate_ck_root(start=start, stop=tmp_path)
    error = info.value
    expected = [
        str(start.resolve() / MARKER_FILE),
        str(tmp_path.resolve() / MARKER_FILE),
        str(start.resolve()),
        str(start.resolve() / "csrc" / "composable_kernel"),
        str((tmp_path / "a").resolve() / "csrc" / "composable_kernel"),
        str(tmp_path.resolve() / "3rdparty" / "composable_kernel"),
    ]
    for place in expected:
        assert place in error.searched
        assert place in str(error)
    assert str(tmp_path.parent.resolve()) not in error.searched  # stop is honoured
    assert "example/ck_tile/01_fmha/codegen/ops" in str(error)


def test_path_without_ck_fails(tmp_path):
    (tmp_path / "repo" / "csrc").mkdir(parents=True)
    with pytest.raises(CKRootNotFound) as info:
        locate_ck_root(tmp_path / "repo")
    assert str((tmp_path / "repo" / "csrc" / "composable_kernel").resolve()) in info.value.searched
    with pytest.raises(CKRootNotFound, match="does not exist"):
        locate_ck_root(tmp_path / "missing")


@pytest.mark.corpus
def test_real_trees_are_found_from_their_parent_repository(corpus_tree):
    tree, root = corpus_tree
    # the sdist's top folder is the parent repository (flash-attention / aiter)
    top = root
    for _ in tree.ck_prefix.split("/")[1:]:
        top = top.parent
    assert locate_ck_root(top) == root.resolve()
    assert locate_ck_root(start=root / FMHA_SUBDIR / "codegen") == root.resolve()
