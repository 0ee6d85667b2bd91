"""GenerateRunner / DiskCache / tree_digest against the real CK trees and fakes."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict

import pytest

from sphinxext_fmha.analysis.offer import tree_offer
from sphinxext_fmha.corpus import tree_by_name
from sphinxext_fmha.locate import fmha_dir
from sphinxext_fmha.process.cache import DiskCache, default_runs_dir, tree_digest
from sphinxext_fmha.process.runner import (
    ApiFileResult,
    GenerateError,
    GenerateRequest,
    GenerateRunner,
    ListingResult,
    total_processes_started,
)

from helpers.faults import left_running
from helpers.independent import independent_listing

OLD = "flash-attn-2.7.4.post1"
NEW = "amd-aiter-0.1.7.post2.dev18"
ALL_TREES = ["flash-attn-2.7.4.post1", "flash-attn-2.8.1", "flash-attn-2.8.3", NEW]


@pytest.fixture(scope="session")
def shared_cache() -> DiskCache:
    """The default run cache: warm runs of this file cost no generate.py process."""
    return DiskCache(default_runs_dir())


@pytest.fixture
def fmha(corpus_root):
    def get(name: str) -> Path:
        return fmha_dir(corpus_root(name))

    return get


def _snapshot(folder: Path) -> Dict[str, str]:
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_dir():
            out[rel + "/"] = "dir"
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _copy_tree(src: Path, dest: Path) -> Path:
    """Copy generate.py + codegen/ of a (read-only) tree into a writable folder."""
    dest.mkdir(parents=True)
    shutil.copy2(src / "generate.py", dest / "generate.py")
    shutil.copytree(src / "codegen", dest / "codegen", ignore=shutil.ignore_patterns("__pycache__"))
    for path in [dest, *dest.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return dest


def _fake_tree(folder: Path, body: str) -> Path:
    """A 01_fmha-like folder whose generate.py runs ``body``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "codegen").mkdir(exist_ok=True)
    (folder / "codegen" / "__init__.py").write_text("")
    script = textwrap.dedent(
        """\
        import argparse, os, sys, time
        p = argparse.ArgumentParser()
        p.add_argument("-a", "--api", default="fwd")
        p.add_argument("-l", "--list_blobs")
        p.add_argument("-o", "--output_dir")
        p.add_argument("-f", "--filter", default="")
        args = p.parse_args()
        """
    ) + textwrap.dedent(body)
    (folder / "generate.py").write_text(script)
    return folder


# --------------------------------------------------------------------------- requests


def test_argv_emits_only_requested_options():
    everything = {"filter", "targets", "mask", "receipt", "optdim"}
    assert GenerateRequest("fwd").argv(everything) == ["-a", "fwd"]
    req = GenerateRequest("bwd", filter="*d64*", targets="gfx950", mask="generic", receipt=0, optdim="64")
    assert req.argv(everything) == [
        "-a", "bwd", "-f", "*d64*", "--targets", "gfx950", "-m", "generic", "-r", "0", "--optdim", "64",
    ]
    # without a set no check is made
    assert req.argv() == req.argv(everything)


def test_unsupported_option_raises():
    old = {"filter", "mask", "receipt", "direction", "list_blobs", "output_dir"}
    with pytest.raises(GenerateError, match="--targets"):
        GenerateRequest("fwd", targets="gfx950").argv(old)
    with pytest.raises(GenerateError, match="--optdim"):
        GenerateRequest("fwd", optdim="128").argv(old)
    with pytest.raises(GenerateError):
        GenerateRequest("fwd,bwd").argv(old)


def test_runner_refuses_unsupported_option_without_running(fmha, corpus_root, tmp_path):
    runner = GenerateRunner(fmha(OLD), cache=DiskCache(tmp_path / "c"),
                            options={o.dest for o in tree_offer(corpus_root(OLD), sys.executable)[1]})
    with pytest.raises(GenerateError, match="no option --optdim"):
        runner.list_kernels(GenerateRequest("fwd_appendkv", optdim="64"))
    with pytest.raises(GenerateError, match="--targets"):
        runner.generate_api_file(GenerateRequest("fwd_appendkv", targets="gfx950"))
    assert runner.processes_started == 0


# --------------------------------------------------------------------------- listing


@pytest.mark.parametrize(
    "name, api",
    [
        (OLD, "fwd_appendkv"),
        (OLD, "fwd_splitkv"),
        ("flash-attn-2.8.3", "fwd"),
        (NEW, "fwd_appendkv"),
        (NEW, "pagedkv_prefill"),
    ],
)
def test_listing_counts_match_corpus(fmha, shared_cache, name, api):
    expected = tree_by_name(name).apis[api]
    runner = GenerateRunner(fmha(name), cache=shared_cache)
    result = runner.list_kernels(GenerateRequest(api, receipt=0))
    assert isinstance(result, ListingResult)
    assert result.count == expected == len(result.files)
    assert result.files == sorted(result.files)
    assert all(f.endswith(".cpp") and "/" not in f for f in result.files)
    assert result.api_file is not None and result.api_file.endswith("_api.cpp")
    assert result.api_file not in result.files


def test_command_string_is_relative(fmha, tmp_path):
    tree = fmha(OLD)
    runner = GenerateRunner(tree, cache=DiskCache(tmp_path / "c"))
    req = GenerateRequest("fwd_appendkv", filter="*_nbias_*")
    listing = runner.list_kernels(req)
    assert listing.command == "python generate.py -a fwd_appendkv -f '*_nbias_*' -l kernels.txt"
    api = runner.generate_api_file(GenerateRequest("fwd_appendkv", filter="*d64*"))
    assert api.command == "python generate.py -a fwd_appendkv -f '*d64*' -o generated"
    for command in (listing.command, api.command):
        words = shlex.split(command)
        assert not any(os.path.isabs(w) for w in words)
        assert str(tree) not in command and str(tmp_path) not in command


def test_cache_hit_starts_no_process(fmha, tmp_path, monkeypatch):
    trace = tmp_path / "trace.txt"
    monkeypatch.setenv("FMHA_TRACE_RUNS", str(trace))
    cache = DiskCache(tmp_path / "cache")
    req = GenerateRequest("fwd_appendkv")
    runner = GenerateRunner(fmha(OLD), cache=cache)
    before_total = total_processes_started()
    first = runner.list_kernels(req)
    assert not first.from_cache
    assert runner.processes_started == 1
    second = runner.list_kernels(req)
    assert second.from_cache
    assert runner.processes_started == 1
    assert (second.files, second.count, second.command) == (first.files, first.count, first.command)

    fresh = GenerateRunner(fmha(OLD), cache=cache)
    again = fresh.list_kernels(req)
    assert again.from_cache and fresh.processes_started == 0

    api1 = fresh.generate_api_file(req)
    api2 = fresh.generate_api_file(req)
    assert not api1.from_cache and api2.from_cache
    assert fresh.processes_started == 1
    assert api2.text == api1.text and api2.kernel_traits == api1.kernel_traits
    assert total_processes_started() - before_total == 2

    lines = trace.read_text().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("python generate.py -a fwd_appendkv -l kernels.txt")
    assert lines[1].startswith("python generate.py -a fwd_appendkv -o generated")


def test_no_cache_always_runs(fmha):
    runner = GenerateRunner(fmha(OLD), cache=None)
    req = GenerateRequest("fwd_appendkv", filter="*d128*")
    a = runner.list_kernels(req)
    b = runner.list_kernels(req)
    assert not a.from_cache and not b.from_cache and a.files == b.files
    assert runner.processes_started == 2


def test_api_file_matches_listing_and_is_stored_compressed(fmha, tmp_path):
    cache = DiskCache(tmp_path / "cache")
    runner = GenerateRunner(fmha(NEW), cache=cache)
    req = GenerateRequest("fwd_appendkv")
    listing = runner.list_kernels(req)
    api = runner.generate_api_file(req)
    assert isinstance(api, ApiFileResult)
    assert api.api_file == listing.api_file == "fmha_fwd_appendkv_api.cpp"
    assert api.kernel_files == listing.files
    assert api.count == listing.count == tree_by_name(NEW).apis["fwd_appendkv"]
    assert set(api.kernel_traits) == set(api.kernel_files)
    assert all(v.startswith("fmha_fwd_appendkv_traits_<") for v in api.kernel_traits.values())
    assert "fmha_fwd_appendkv(" in api.text
    # the cache keeps the text compressed: the entry is much smaller than the text
    entries = list(cache.root.rglob("*.pickle"))
    sizes = sorted(p.stat().st_size for p in entries)
    assert len(entries) == 2
    assert sizes[-1] < len(api.text) / 3
    assert b"fmha_fwd_appendkv(" not in max(entries, key=lambda p: p.stat().st_size).read_bytes()


def test_targets_option_on_new_tree(fmha, shared_cache):
    runner = GenerateRunner(fmha(NEW), cache=shared_cache)
    both = runner.list_kernels(GenerateRequest("fwd", filter="*d128_fp16_batch*"))
    one = runner.list_kernels(GenerateRequest("fwd", filter="*d128_fp16_batch*", targets="gfx950"))
    assert one.files and all(f.endswith("_gfx950.cpp") for f in one.files)
    assert set(one.files) < set(both.files)
    assert "--targets gfx950" in one.command
    # appendkv has one gfx9 factory that also serves gfx950 (no _gfx950 kernels)
    appendkv = runner.list_kernels(GenerateRequest("fwd_appendkv", targets="gfx950"))
    assert appendkv.count == tree_by_name(NEW).apis["fwd_appendkv"]
    assert all(f.endswith("_gfx9.cpp") for f in appendkv.files)


def test_filtered_listings_and_writes(fmha, corpus_root, tmp_path):
    runner = GenerateRunner(fmha(OLD), cache=DiskCache(tmp_path / "c"))
    reqs = [GenerateRequest("fwd_appendkv", filter=f) for f in ("*d32*", "*d64*", "*d128*")]
    results = [runner.list_kernels(req) for req in reqs]
    assert [r.request for r in results] == reqs
    for index, (result, request) in enumerate(zip(results, reqs)):
        folder = tmp_path / ("independent-%d" % index)
        folder.mkdir()
        expected = independent_listing(corpus_root(OLD), "fwd_appendkv", folder, "-f", request.filter)
        assert result.files == sorted(expected) and result.count == len(expected) > 0
    assert runner.processes_started == 3
    again = [runner.list_kernels(req) for req in reqs]
    assert all(r.from_cache for r in again) and runner.processes_started == 3
    apis = [runner.generate_api_file(req) for req in reqs[:2]]
    assert [a.kernel_files for a in apis] == [r.files for r in results[:2]]


# --------------------------------------------------------------------------- digest + cache


def test_tree_digest_changes_with_codegen_and_misses_cache(fmha, tmp_path):
    src = fmha(OLD)
    copy = _copy_tree(src, tmp_path / "01_fmha")
    assert tree_digest(copy) == tree_digest(src)  # content hash, not location
    cache = DiskCache(tmp_path / "cache")
    runner = GenerateRunner(copy, cache=cache)
    req = GenerateRequest("fwd_appendkv")
    first = runner.list_kernels(req)
    assert runner.list_kernels(req).from_cache and runner.processes_started == 1

    target = copy / "codegen" / "ops" / "fmha_fwd_appendkv.py"
    target.write_text(target.read_text() + "\n# edited by test\n")
    assert tree_digest(copy) != tree_digest(src)
    after = runner.list_kernels(req)
    assert not after.from_cache and runner.processes_started == 2
    assert after.files == first.files

    # non-.py files and __pycache__ do not count
    (copy / "README.md").write_text("x")
    (copy / "codegen" / "__pycache__").mkdir()
    (copy / "codegen" / "__pycache__" / "x.py").write_text("y")
    digest = tree_digest(copy)
    assert runner.list_kernels(req).from_cache and tree_digest(copy) == digest


def test_tree_digest_is_memoised(fmha, monkeypatch):
    tree = fmha(OLD)
    first = tree_digest(tree)
    calls = []
    real = Path.read_bytes

    def spy(self):
        calls.append(self)
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", spy)
    assert tree_digest(tree) == first
    assert calls == []


def test_a_result_is_kept_only_if_the_tree_is_as_it_was(tmp_path):
    """The tree as it was when the work started is what a result is checked against: a
    file rewritten with the same bytes and its modification time set back (what
    ``cp -p`` or an undo does) still counts as changed, through its change time; a
    file added too."""
    from sphinxext_fmha.process.cache import tree_state
    from sphinxext_fmha.process.notices import said

    from helpers.synthetic import make_tree

    folder = fmha_dir(make_tree(tmp_path, "base"))
    cache = DiskCache(tmp_path / "cache")
    before = tree_state(folder)
    ops = folder / "codegen" / "ops" / "fmha_toy.py"
    st = ops.stat()
    ops.write_bytes(ops.read_bytes())
    os.utime(ops, ns=(st.st_atime_ns, st.st_mtime_ns))
    (folder / "codegen" / "new.py").write_text("")
    assert before.changed() == ["codegen/new.py", "codegen/ops/fmha_toy.py"]
    key = DiskCache.key_for("test", before.digest)
    assert cache.put(key, {"x": 1}, before) is None and not cache.has(key)
    assert any("codegen/new.py, codegen/ops/fmha_toy.py" in message for _, message in said())
    now = tree_state(folder)
    assert now.changed() == [] and now.digest != before.digest  # (a file was added)
    assert cache.put(key, {"x": 1}, now) is not None and cache.get(key) == {"x": 1}


def test_a_cache_that_cannot_be_written_keeps_entries_in_memory(tmp_path):
    from sphinxext_fmha.process.notices import said

    (tmp_path / "a-file").write_text("x")
    cache = DiskCache(tmp_path / "a-file" / "runs")
    key = DiskCache.key_for("test")
    assert cache.get(key) is None and not cache.has(key)
    assert cache.put(key, {"x": 1}) is None
    assert cache.get(key) == {"x": 1} and cache.has(key)
    cache.delete(key)
    assert not cache.has(key)
    assert [m for _, m in said() if m.startswith("cannot write the cache entry %s/"
                                                 % (tmp_path / "a-file"))]


def test_disk_cache_roundtrip_and_corruption(tmp_path):
    cache = DiskCache(tmp_path)
    key = cache.key_for("a", 1, {"b": [1, 2]})
    assert key == DiskCache.key_for("a", 1, {"b": [1, 2]})
    assert key != DiskCache.key_for("a", 1, {"b": [2, 1]})
    assert len(key) == 64
    assert cache.get(key) is None
    cache.put(key, {"x": "ünïcode", "n": [1, 2]})
    assert cache.get(key) == {"x": "ünïcode", "n": [1, 2]}
    path = cache.path_for(key)
    other = DiskCache(tmp_path / "other")
    other.put(other.key_for("b"), {"x": 1})
    entry = other.path_for(other.key_for("b")).read_bytes()
    for garbage in (b"{not json", b"\xff\xfe", b"[1, 2]", b'{"format": 1, "key": "other", "value": {}}',
                    entry[:20], entry[:-3], entry):  # cut short, or another key's entry
        path.write_bytes(garbage)
        assert cache.get(key) is None
        assert not path.exists()  # discarded
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    cache.put(key, [1, 2])  # any picklable value
    assert cache.get(key) == [1, 2]


def test_an_entry_gives_back_exactly_what_was_kept(tmp_path):
    """Tuples, non-string keys, big integers, lone surrogates and dataclasses come back
    as they were kept (JSON would turn the first two into lists and strings)."""
    from sphinxext_fmha.process.runner import ListingResult

    cache = DiskCache(tmp_path)
    values = [
        {"text": "line\n\t\"quoted\" \\ ünïcode €\u2028", "n": [1, 2.5, -3, None, True]},
        {"ints": {1: "a", 2: ("b", "c")}, "nested": [[], {}, [{"x": 0.1}]]},
        {"big": 2 ** 70, "negative": [-(2 ** 64) - 1], "surrogate": "a\ud800b"},
        ListingResult("python generate.py -l x", ["a.cpp"], 1, 0.5),
    ]
    for number, value in enumerate(values):
        key = cache.key_for("entry", number)
        cache.put(key, value)
        got = cache.get(key)
        assert got == value and repr(got) == repr(value) and got is not value


def test_an_entry_naming_a_foreign_class_is_a_miss(tmp_path):
    """The store reads back this package's classes and plain builtins only."""
    import pickle
    import zlib

    from sphinxext_fmha.process.cache import MAGIC

    cache = DiskCache(tmp_path)
    key = cache.key_for("foreign")
    path = cache.path_for(key)
    path.parent.mkdir(parents=True)
    path.write_bytes(MAGIC + zlib.compress(pickle.dumps((key, {"x": subprocess.Popen}))))
    assert cache.get(key) is None and not path.exists()


def test_an_entry_of_the_first_format_is_a_miss(tmp_path):
    """Format 1 entries were read by ``json`` whoever wrote them: such an entry is not
    read by this code (an integer beyond 64 bits in it would come back as a float)."""
    cache = DiskCache(tmp_path)
    key = cache.key_for("old")
    path = cache.path_for(key)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"format": 1, "key": key, "value": {"big": 2 ** 70}}))
    assert cache.get(key) is None
    assert not path.exists()


def test_objects_a_value_shares_come_back_shared(tmp_path):
    """A dispatch reading holds a few dozen condition terms shared by thousands of
    kernels: kept and read back, each term is one object again, not a copy per kernel."""
    terms = [("f/0/0", "t.a == 1", "a == 1"), ("f/0/1", "t.b", "b"), ("f/1/0", "!t.c", "not c")]
    rows = {"k%d.cpp" % n: {"terms": [terms[n % 3], terms[(n + 1) % 3]], "leaves": n}
            for n in range(400)}
    cache = DiskCache(tmp_path)
    key = cache.key_for("shared")
    cache.put(key, rows)
    back = cache.get(key)
    assert back == rows
    assert back["k0.cpp"]["terms"][0] is back["k3.cpp"]["terms"][0] == terms[0]
    assert len({id(t) for r in back.values() for t in r["terms"]}) == 3
    assert cache.path_for(key).stat().st_size < len(repr(rows)) / 10


def test_a_write_mode_result_is_kept_in_memory_while_its_entry_stands(fmha, tmp_path):
    cache = DiskCache(tmp_path / "cache")
    req = GenerateRequest("fwd_appendkv", filter="*d64*")
    runner = GenerateRunner(fmha(OLD), cache=cache)
    first = runner.generate_api_file(req)
    entry = next(p for p in cache.root.rglob("*.pickle"))
    entry.write_text('{"format": 1, "key": "trunc')  # what is kept does not read it
    kept = runner.generate_api_file(req)
    assert kept.from_cache and runner.processes_started == 1
    assert (kept.text, kept.kernel_traits) == (first.text, first.kernel_traits)
    kept.kernel_traits.clear()
    kept.kernel_files.clear()
    again = runner.generate_api_file(req)
    assert again.kernel_traits == first.kernel_traits and again.kernel_files == first.kernel_files
    entry.unlink()  # the cache's files stay the truth: a removed entry runs again
    rerun = runner.generate_api_file(req)
    assert not rerun.from_cache and runner.processes_started == 2 and rerun.text == first.text


def test_default_cache_root_honours_env(monkeypatch, tmp_path):
    monkeypatch.setenv("FMHA_CACHE_DIR", str(tmp_path / "x"))
    assert default_runs_dir() == tmp_path / "x" / "runs"
    assert DiskCache().root == tmp_path / "x" / "runs"
    monkeypatch.delenv("FMHA_CACHE_DIR")
    assert default_runs_dir() == Path.home() / ".cache" / "sphinxext-fmha" / "runs"


def test_disk_cache_concurrent_processes(tmp_path):
    """Writers in several processes and a reader never see a partial entry."""
    key = DiskCache.key_for("concurrent")
    big = "y" * 200_000
    code = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from sphinxext_fmha.process.cache import DiskCache
        c = DiskCache(Path({str(tmp_path)!r}))
        for i in range(40):
            c.put({key!r}, {{"writer": int(sys.argv[1]), "i": i, "big": "y" * 200_000}})
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(n)]) for n in range(3)]
    reader = DiskCache(tmp_path)
    seen = 0
    while any(p.poll() is None for p in procs):
        value = reader.get(key)
        if value is not None:
            assert value["big"] == big
            seen += 1
    assert all(p.wait() == 0 for p in procs)
    final = reader.get(key)
    assert final is not None and final["i"] == 39
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_corrupt_entry_is_recomputed(fmha, tmp_path):
    cache = DiskCache(tmp_path / "cache")
    req = GenerateRequest("fwd_appendkv", filter="*d64*")
    runner = GenerateRunner(fmha(OLD), cache=cache)
    good = runner.list_kernels(req)
    api = runner.generate_api_file(req)
    entries = list(cache.root.rglob("*.pickle"))
    assert len(entries) == 2
    for entry in entries:
        entry.write_text('{"format": 1, "key": "trunc')
    runner2 = GenerateRunner(fmha(OLD), cache=cache)
    again = runner2.list_kernels(req)
    api2 = runner2.generate_api_file(req)
    assert not again.from_cache and not api2.from_cache
    assert runner2.processes_started == 2
    assert again.files == good.files and api2.text == api.text
    # rewritten, valid again
    runner3 = GenerateRunner(fmha(OLD), cache=cache)
    assert runner3.list_kernels(req).from_cache and runner3.generate_api_file(req).from_cache
    assert runner3.processes_started == 0


# --------------------------------------------------------------------------- failures


def test_timeout_raises_and_kills(tmp_path):
    pid_file = tmp_path / "pid.txt"
    tree = _fake_tree(
        tmp_path / "fake",
        f"""
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        time.sleep(60)
        """,
    )
    messages = []
    runner = GenerateRunner(tree, cache=DiskCache(tmp_path / "c"), timeout=1.5, progress=messages.append)
    runner.progress_interval = 0.4
    with pytest.raises(GenerateError) as info:
        runner.list_kernels(GenerateRequest("fwd"))
    err = info.value  # ended by the 1.5 s timeout (the script sleeps 60 s): it says so
    assert "timed out after 1.5 s" in str(err)
    assert "python generate.py -a fwd -l kernels.txt" in str(err)
    assert err.timed_out and err.returncode is None
    assert messages and all(m.startswith("generate.py -a fwd: still running (") for m in messages)
    assert not left_running([int(pid_file.read_text())]), "the timed-out generate.py runs on"


def test_failing_progress_callback_kills_the_process(tmp_path):
    pid_file = tmp_path / "pid.txt"
    tree = _fake_tree(
        tmp_path / "fake",
        f"""
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        time.sleep(60)
        """,
    )

    def boom(message):
        raise RuntimeError("progress sink broke")

    runner = GenerateRunner(tree, cache=None, timeout=30, progress=boom)
    runner.progress_interval = 0.5
    with pytest.raises(RuntimeError, match="progress sink broke"):
        runner.list_kernels(GenerateRequest("fwd"))
    assert not left_running([int(pid_file.read_text())]), "generate.py is still running"


def test_crash_reports_exit_code_and_stderr_tail(tmp_path):
    tree = _fake_tree(
        tmp_path / "fake",
        """
        for i in range(50):
            print(f"noise line {i}", file=sys.stderr)
        raise SystemExit("fatal: codegen exploded")
        """,
    )
    runner = GenerateRunner(tree, cache=DiskCache(tmp_path / "c"))
    with pytest.raises(GenerateError) as info:
        runner.generate_api_file(GenerateRequest("fwd", filter="*x*"))
    err = info.value
    text = str(err)
    assert "python generate.py -a fwd -f '*x*' -o generated" in text
    assert "exit code 1" in text and err.returncode == 1
    assert "fatal: codegen exploded" in text and "noise line 49" in text
    assert "noise line 10" not in text  # only the tail
    assert len(err.stderr_tail.splitlines()) == 20
    # failures are not cached
    assert not list((tmp_path / "c").rglob("*.pickle"))


def test_missing_api_file_is_an_error(tmp_path):
    tree = _fake_tree(
        tmp_path / "fake",
        """
        if args.output_dir:
            open(os.path.join(args.output_dir, "fmha_fwd_d64.cpp"), "w").write("// nothing")
        """,
    )
    runner = GenerateRunner(tree, cache=None)
    with pytest.raises(GenerateError, match="expected one \\*_api.cpp"):
        runner.generate_api_file(GenerateRequest("fwd"))


def test_not_a_tree(tmp_path):
    with pytest.raises(GenerateError, match="no generate.py"):
        GenerateRunner(tmp_path)


# --------------------------------------------------------------------------- hygiene


@pytest.mark.parametrize("name", ALL_TREES)
def test_analysed_tree_is_untouched(fmha, tmp_path, name):
    tree = fmha(name)
    before = _snapshot(tree)
    runner = GenerateRunner(tree, cache=DiskCache(tmp_path / "c"))
    runner.list_kernels(GenerateRequest("fwd_appendkv", filter="*d64*"))
    runner.generate_api_file(GenerateRequest("fwd_appendkv", filter="*d64*"))
    assert runner.processes_started == 2
    assert _snapshot(tree) == before
    assert not [p for p in tree.rglob("__pycache__")]
    assert not [p for p in tree.rglob("*.pyc")]
