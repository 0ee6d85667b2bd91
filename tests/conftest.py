"""Shared fixtures: the real CK corpus trees and the synthetic trees.

Corpus policy: a test that needs a real tree (marked ``corpus``, or using one of the
corpus fixtures, which marks it automatically) FAILS when the tree cannot be
fetched, so CI never skips silently.  Only ``FMHA_OFFLINE=1`` skips those tests.
Trees are cached (see ``sphinxext_fmha.corpus.cache_root``), so after the first
download the fixtures cost milliseconds; ``fetch_tree`` holds a file lock, so
pytest-xdist workers can start at the same time.

pytest >= 9.2 derives ``item.nodeid`` from ``item._id``, so pytest-xdist 3.8's
``item._nodeid = nodeid + "@group"`` no longer has any effect and ``--dist loadgroup``
silently ignores ``xdist_group``: :func:`_apply_xdist_groups` applies the suffix itself,
so every group (a corpus model, a docs site build, a probe) runs on one worker and its
expensive session fixture is computed once.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable, Dict, NamedTuple, Optional, Tuple

import pytest

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:  # make `import helpers` work in every import mode
    sys.path.insert(0, str(TESTS_DIR))

from sphinxext_fmha.cachedir import cache_root  # noqa: E402
from sphinxext_fmha.corpus import CorpusTree  # noqa: E402

from helpers import synthetic  # noqa: E402
from helpers.project import EPOCH  # noqa: E402
from helpers.trees import CORPUS, CORPUS_NAMES, DOWNLOADS, fetch, offline  # noqa: E402

CORPUS_FIXTURES = frozenset({"corpus_roots", "corpus_root", "corpus_tree"})


def pytest_configure(config):
    """A fresh cache folder for the results of this test session (``FMHA_CACHE_DIR``,
    inherited by the pytest-xdist workers, which share it, and by every child process);
    its download folders are links to the user's, so a corpus tree is downloaded once
    per machine. A warm ``runs/`` cache of the user's would let a test pass on results
    an older version of the code computed."""
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: the controller made it
        return
    shared = cache_root()
    results = Path(tempfile.mkdtemp(prefix="fmha-test-cache-"))
    for name in DOWNLOADS:
        try:
            (shared / name).mkdir(parents=True, exist_ok=True)
        except OSError:  # no user cache to share: the tests that need a download say so
            continue
        (results / name).symlink_to(shared / name, target_is_directory=True)
    config.stash[_RESULTS] = (results, os.environ.get("FMHA_CACHE_DIR"))
    os.environ["FMHA_CACHE_DIR"] = str(results)
    if getattr(config.option, "dist", "") == "loadgroup":
        # the workers' collection order (costliest group first, see _costliest_first),
        # not pytest-xdist's (the group with most tests first)
        config.option.loadscopereorder = False


def pytest_unconfigure(config):
    made = config.stash.get(_RESULTS, None)
    if made is None:
        return
    results, before = made
    if before is None:
        os.environ.pop("FMHA_CACHE_DIR", None)
    else:
        os.environ["FMHA_CACHE_DIR"] = before
    shutil.rmtree(results, ignore_errors=True)  # the links go, not what they point to


_RESULTS = pytest.StashKey[Tuple[Path, Optional[str]]]()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="FMHA_OFFLINE=1: corpus tests need the real CK trees")
    for item in items:
        if CORPUS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.corpus)
        if item.get_closest_marker("corpus") is not None and offline():
            item.add_marker(skip)
    _apply_xdist_groups(config, items)


def _apply_xdist_groups(config, items) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "loadgroup", False):
        return
    items[:] = sorted(items, key=_group_kernels, reverse=True)  # stable: groups stay in order
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if not names:
            continue
        nodeid = item.nodeid
        if nodeid.rfind("@") > nodeid.rfind("]"):
            continue  # pytest-xdist did it (pytest < 9.2)
        grouped = "%s@%s" % (nodeid, "_".join(names))
        if hasattr(item, "_id"):
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(grouped)
        else:  # pragma: no cover - older pytest, where xdist's own suffix works
            item._nodeid = grouped


#: {(corpus tree, API): kernels} of ck-corpus.toml: what a group's generate.py runs cost
_KERNELS = {(tree.name, api): count for tree in CORPUS for api, count in tree.apis.items()}


def _group_kernels(item) -> int:
    """The kernels of the corpus API an item's xdist group works on (``analysis-``,
    ``batch-``, ``probe-<tree>-<api>[-<mask>]``); for a group that builds whole sites or
    checks every API of a tree (``docs-site``, ``release``, ``playground-<tree>``) those
    of the largest API; 0 for an
    item in no group. A group's cost grows with them (aiter's bwd, 15k kernels, is
    minutes of a 2-core machine), and a costly group started last would end the session
    alone on one worker."""
    found = 0
    for mark in item.iter_markers("xdist_group"):
        name = str(mark.args[0] if mark.args else mark.kwargs.get("name", ""))
        kind, _, rest = name.partition("-")
        if kind not in ("analysis", "batch", "probe"):
            found = max(found, *_KERNELS.values())
            continue
        found = max([found] + [count for (tree, api), count in _KERNELS.items()
                               if rest == "%s-%s" % (tree, api)
                               or rest.startswith("%s-%s-" % (tree, api))])
    return found


class CorpusCase(NamedTuple):
    """One corpus tree and its local CK root."""

    tree: CorpusTree
    root: Path


@pytest.fixture(scope="session")
def corpus_roots() -> Dict[str, Path]:
    """{corpus tree name: CK root} for every tree of the packaged ck-corpus.toml."""
    return {name: fetch(name) for name in CORPUS_NAMES}


@pytest.fixture(scope="session")
def corpus_root() -> Callable[[str], Path]:
    """Factory: ``corpus_root("flash-attn-2.8.3")`` -> that tree's CK root."""
    return fetch


@pytest.fixture(params=CORPUS, ids=CORPUS_NAMES)
def corpus_tree(request) -> CorpusCase:
    """Parametrised over the corpus: ``CorpusCase(tree, root)`` for each tree."""
    tree: CorpusTree = request.param
    return CorpusCase(tree, fetch(tree.name))


@pytest.fixture
def synthetic_tree(tmp_path_factory) -> Callable[..., Path]:
    """Factory: ``synthetic_tree("at_split")`` -> CK root of a fresh synthetic tree."""

    def make(variant: str = "base") -> Path:
        return synthetic.make_tree(tmp_path_factory.mktemp(f"synthetic_{variant}"), variant)

    return make


@pytest.fixture
def reproducible_build(monkeypatch):
    """A fixed build date, no run tracing, and fresh sessions before and after (a
    session lives as long as its process: the Sphinx builds of a test share it)."""
    from sphinxext_fmha.directives.sphinx_glue import clear_sessions

    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    monkeypatch.delenv("FMHA_TRACE_RUNS", raising=False)
    clear_sessions()
    yield
    clear_sessions()


@pytest.fixture(scope="session")
def built_dists(tmp_path_factory):
    """This checkout's sdist and wheel (``tests/helpers/release.py``), built once per worker: the
    tests that use them share the xdist group ``release``."""
    if offline():
        pytest.skip("FMHA_OFFLINE=1: building and installing the package needs the package index")
    from helpers.release import build_dists

    return build_dists(tmp_path_factory.mktemp("release"))
