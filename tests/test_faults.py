"""The fault matrix: broken trees and bad inputs, tried as a user and a hostile author would.

Every broken tree is a synthetic tree (``tests/helpers/synthetic.py``) written in tmp, with a
fault prepended to its generate.py.  Each case runs the real command line (or
sphinx-build) in its own process and checks: the message, the exit status, the time it
took, that no child of ours is left running, and that the CK tree is unchanged.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import pytest

from helpers.faults import PIDS_VAR, broken_tree, left_running, snapshot
from helpers.launch_twin import interrupt_once_started, run_child
from helpers.synthetic import make_tree


class Case:
    """One command-line run against a tree, with everything the matrix checks."""

    def __init__(self, tmp_path: Path, root: Optional[Path]):
        self.tmp = tmp_path
        self.root = root
        self.before = snapshot(root) if root else {}
        self.pids = tmp_path / "pids.txt"
        self.pids.touch()
        self.tmpdir = tmp_path / "tmpdir"
        self.tmpdir.mkdir()
        self.env = dict(os.environ, **{PIDS_VAR: str(self.pids), "TMPDIR": str(self.tmpdir),
                                       "PYTHONDONTWRITEBYTECODE": "1"})
        self.env.pop("FMHA_TRACE_RUNS", None)

    def cli(self, *args: str, timeout: float = 120):
        argv = [sys.executable, "-m", "sphinxext_fmha", *args]
        if self.root is not None and "--ck-root" not in args:
            argv[4:4] = ["--ck-root", str(self.root), "--cache-dir", str(self.tmp / "cache")]
        return run_child(argv, cwd=self.tmp, timeout=timeout, env=self.env)

    def sphinx_argv(self, page: str = ".. fmha-kernel-guide:: toy\n") -> List[str]:
        """A project whose index holds ``page``, and the sphinx-build command for it."""
        src = self.tmp / "src"
        src.mkdir()
        (src / "conf.py").write_text('extensions = ["sphinxext_fmha"]\nfmha_ck_root = %r\n'
                                     'fmha_cache_dir = %r\n' % (str(self.root), str(self.tmp / "c")))
        (src / "index.rst").write_text("Index\n=====\n\n" + page)
        return [sys.executable, "-m", "sphinx", "-q", "-b", "text", str(src), str(self.tmp / "out")]

    def assert_clean(self) -> None:
        """No child of the run left (each awaited: a leak, not a slow machine, fails), the
        tree as it was, no scratch folder left."""
        started = [int(p) for p in self.pids.read_text().split()]
        assert not left_running(started), "children left running"
        deadline = time.monotonic() + 60  # a killed parent's watchdog may still be at it
        while list(self.tmpdir.glob("fmha-*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.root is not None:
            assert snapshot(self.root) == self.before, "the CK tree changed"
        assert not list(self.tmpdir.glob("fmha-*")), "temporary folders left behind"


def one_error(ran, code: int, *needles: str) -> str:
    """An error as the matrix wants it: its exit status, one line (plus generate.py's
    stderr tail), no traceback; the command ended by itself (the run's own timeout only
    bounds a hang: no claim about a busy machine's speed)."""
    assert not ran.timed_out, ran.stderr[-2000:]
    assert ran.returncode == code, (ran.returncode, ran.stderr[-2000:])
    assert "Traceback" not in ran.stderr, ran.stderr[-3000:]
    assert ran.stderr.startswith("sphinxext-fmha: "), ran.stderr[:500]
    for needle in needles:
        assert needle in ran.stderr, (needle, ran.stderr[-2000:])
    return ran.stderr


# --------------------------------------------------------------------------- broken trees


@pytest.mark.parametrize("fault", ["hang_with_grandchild", "hang_with_detached_grandchild"])
def test_timeout_holds_when_a_grandchild_keeps_the_pipes(tmp_path, fault):
    case = Case(tmp_path, broken_tree(tmp_path, fault))
    ran = case.cli("analyze", "--api", "toy", "--timeout", "3", timeout=60)
    one_error(ran, 1, "timed out after 3 s")  # ended by the 3 s timeout, not by ours
    case.assert_clean()


def test_a_generate_py_that_reads_stdin_does_not_block(tmp_path):
    case = Case(tmp_path, broken_tree(tmp_path, "reads_stdin"))
    ran = case.cli("check", "--api", "toy", "--filter", "*_nlse*", "--timeout", "60")
    assert not ran.timed_out and ran.returncode == 0, ran.stderr[-2000:]
    case.assert_clean()


def test_generate_py_own_words_reach_the_user(tmp_path):
    case = Case(tmp_path, broken_tree(tmp_path, "fails_with_message"))
    err = one_error(case.cli("analyze", "--api", "toy"), 1,
                    "codegen: F_bogus is not a known field", "exited with 3")
    # the tail is bounded: the last lines, not all 50 lines of noise
    assert err.count("noise line") < 25
    case.assert_clean()


def test_a_huge_stderr_is_cut_to_its_tail(tmp_path):
    case = Case(tmp_path, broken_tree(tmp_path, "huge_stderr"))
    err = one_error(case.cli("analyze", "--api", "toy"), 1, "the real reason is at the end")
    assert len(err) < 16 * 1024
    case.assert_clean()


def test_a_generate_py_that_does_not_parse(tmp_path):
    case = Case(tmp_path, broken_tree(tmp_path, "syntax_error"))
    one_error(case.cli("analyze", "--api", "toy"), 1,
              "cannot read the CK tree's Python source: SyntaxError")
    ran = sphinx_build(tmp_path, case, "", ".. fmha-kernel-guide:: toy\n")
    assert ran.returncode == 0 and "Traceback" not in ran.stderr
    assert re.search(r"index\.rst:4: WARNING: .*Python source: invalid syntax.*"
                     r"\[fmha\.analysis\]", ran.stderr), ran.stderr
    case.assert_clean()


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, -signal.SIGTERM)])
def test_signals_end_the_command_and_its_children(tmp_path, signum, code):
    case = Case(tmp_path, broken_tree(tmp_path, "hang_with_grandchild"))
    argv = [sys.executable, "-m", "sphinxext_fmha", "analyze", "--ck-root", str(case.root),
            "--cache-dir", str(tmp_path / "cache"), "--api", "toy", "--timeout", "300"]
    returncode, _ = interrupt_once_started(
        argv, cwd=tmp_path, env=case.env, pids=case.pids, started=1, signum=signum,
        stderr=tmp_path / "err", wait=60)
    assert returncode == code  # it ended on the signal (the wait only bounds a hang)
    stderr = (tmp_path / "err").read_text()
    assert "Traceback" not in stderr, stderr
    if signum == signal.SIGINT:
        assert stderr.strip() == "sphinxext-fmha: interrupted"
    case.assert_clean()


def test_a_detached_daemon_ends_with_the_run(tmp_path):
    """generate.py starts a process that leaves its process group (``setsid()``) and
    exits: the daemon's parent is gone, no group kill reaches it, and it still ends."""
    case = Case(tmp_path, broken_tree(tmp_path, "leaves_a_detached_daemon"))
    ran = case.cli("check", "--api", "toy", "--filter", "*_d64_*")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert case.pids.read_text().split(), "the daemon never started"
    case.assert_clean()
    ran = sphinx_build(tmp_path, case, "", ".. fmha-filter-check::\n   :api: toy\n"
                                           "   :filter: *_d128_*\n")
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stderr
    case.assert_clean()


@pytest.mark.parametrize("program", ["cli", "sphinx"])
def test_a_killed_parent_leaves_no_child(tmp_path, program):
    """SIGKILL of the CLI or of sphinx-build (an OOM kill, a CI runner's hard timeout)
    while generate.py runs with a child in its group and one that left it: none of
    them stays, nor the scratch folders. Only the parent is killed, not its group."""
    case = Case(tmp_path, broken_tree(tmp_path, "hang_with_detached_grandchild"))
    if program == "cli":
        argv = [sys.executable, "-m", "sphinxext_fmha", "analyze", "--ck-root", str(case.root),
                "--cache-dir", str(tmp_path / "cache"), "--api", "toy", "--timeout", "300"]
    else:
        argv = case.sphinx_argv()
    returncode, _ = interrupt_once_started(
        argv, cwd=tmp_path, env=case.env, pids=case.pids, started=2, signum=signal.SIGKILL,
        stderr=tmp_path / "err", wait=60)
    assert returncode == -signal.SIGKILL
    # generous: the point is "not left running", and the machine may be loaded
    case.assert_clean()


#: An owner that starts the package's watchdog, registers a scratch folder with it and is
#: killed at once: gone before the watchdog's interpreter has read a line.
SHORT_LIVED_OWNER = r"""
import json, os, signal, subprocess, sys
script, token, folder = sys.argv[1:]
dog = subprocess.Popen([sys.executable, "-I", "-S", script, token, str(os.getpid())],
                       stdin=subprocess.PIPE, start_new_session=True)
os.write(dog.stdin.fileno(), json.dumps(["folder", folder]).encode() + b"\n")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_an_owner_killed_before_its_watchdog_reads_leaves_no_folder(tmp_path):
    """The first scratch folder of a build is registered as the watchdog starts; an owner
    killed then (a loaded machine) left it behind: the watchdog stopped at its owner's
    death without reading what the owner had written."""
    from sphinxext_fmha.process import watchdog_script

    folder = tmp_path / "fmha-scratch"
    folder.mkdir()
    (folder / "partial.json").write_text("{")
    owner = subprocess.run([sys.executable, "-c", SHORT_LIVED_OWNER, watchdog_script.__file__,
                            "t0ken", str(folder)], timeout=60)
    assert owner.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 60  # the watchdog's own start, on a loaded machine
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not folder.exists(), "the killed owner's folder was left behind"


# --------------------------------------------------------------------------- edits during a run

#: The codegen file the edit tests change: a second d64 tile doubles the d64 kernels.
TOY_OPS = "example/ck_tile/01_fmha/codegen/ops/fmha_toy.py"
D64_TILES = "64  : [ToyTileSize(128, 64,  32, -1)]"


def edited(text: str) -> str:
    assert D64_TILES in text
    return text.replace(D64_TILES, D64_TILES[:-1] + ", ToyTileSize(64, 64, 32, -1)]")


def edit_once_waiting(case: Case, gate: Path) -> threading.Thread:
    """A thread that waits until generate.py waits at the gate, edits the codegen and
    opens the gate."""
    ops = case.root / TOY_OPS
    original = ops.read_text(encoding="utf-8")

    def edit() -> None:
        deadline = time.monotonic() + 120
        while not case.pids.read_text().split() and time.monotonic() < deadline:
            time.sleep(0.02)
        ops.write_text(edited(original), encoding="utf-8")
        gate.touch()

    thread = threading.Thread(target=edit, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("during", ["the_probe", "a_filtered_run"])
def test_an_edit_undone_after_a_run_leaves_no_stale_answer(tmp_path, during):
    """The tree is edited while generate.py runs (the probe, or the filtered run of a
    check) and put back afterwards: the check of the tree as it is again reads what a
    fresh cache gives, not the edited tree's answer kept under the restored tree's key;
    the run that saw the edit says which file changed."""
    case = Case(tmp_path, broken_tree(tmp_path, "waits_for_an_edit_in_" + during))
    ops = case.root / TOY_OPS
    original = ops.read_bytes()
    gate = tmp_path / "gate"
    case.env["FMHA_FAULT_GATE"] = str(gate)
    args = ("check", "--api", "toy", "--filter", "*_d64_*")
    editor = edit_once_waiting(case, gate)
    ran = case.cli(*args)
    editor.join()
    assert "Traceback" not in ran.stderr, ran.stderr
    assert re.search(r"warning: the CK tree changed while .*codegen/ops/fmha_toy\.py",
                     ran.stderr), ran.stderr
    ops.write_bytes(original)  # the edit undone
    # what the tree as it is again gives (its 54 kernels, 36 of them d64)
    again = case.cli("analyze", "--api", "toy")
    assert "ToyKernel: 54 kernels" in again.stdout and "baseline: 54 listed" in again.stdout, \
        again.stdout
    again = case.cli(*args)
    assert again.returncode == 0 and "changed while" not in again.stderr, again.stderr
    assert "selected 36 of 54 kernels (model predicts 36): verified" in again.stdout, again.stdout
    case.before = snapshot(case.root)  # (the test changed the tree, not the runs)
    case.assert_clean()


def test_an_edit_undone_between_builds_of_one_process(tmp_path, monkeypatch):
    """What ``sphinx-autobuild`` does: one process builds again and again. The tree is
    edited while a build's probe runs and put back before the next build: that build
    shows what a fresh build shows, not what the first one computed meanwhile (the
    first one says that the tree changed)."""
    from helpers.project import build, write_project

    case = Case(tmp_path, broken_tree(tmp_path, "waits_for_an_edit_in_the_probe"))
    gate = tmp_path / "gate"
    monkeypatch.setenv(PIDS_VAR, str(case.pids))
    monkeypatch.setenv("FMHA_FAULT_GATE", str(gate))
    ops = case.root / TOY_OPS
    original = ops.read_bytes()
    pages = {"index.rst": "Index\n=====\n\n.. fmha-kernel-guide:: toy\n   :sections: types\n"}

    src = write_project(tmp_path / "src", pages, ck_root=case.root,
                        conf="fmha_cache_dir = %r" % str(tmp_path / "cache"))

    def built() -> Tuple[str, str]:
        app, _status, warnings = build(src, "text")
        return (Path(app.outdir) / "index.txt").read_text(encoding="utf-8"), warnings

    editor = edit_once_waiting(case, gate)
    text, warnings = built()
    editor.join()
    assert re.search(r"changed while .*fmha_toy\.py.*\[fmha\.suspicious\]", warnings), warnings
    assert "lists 90 kernel files" in text  # the edited tree's (a second d64 tile)
    ops.write_bytes(original)  # the edit undone
    text, warnings = built()
    assert "changed while" not in warnings
    assert "lists 54 kernel files" in text, text  # the tree's own, as a fresh build shows


# --------------------------------------------------------------------------- full and unusable folders


def _mounts_of_our_own() -> bool:
    """Whether this machine lets a test mount small file systems in a mount namespace
    of its own (``unshare -rm``: a user namespace, root inside it only)."""
    try:
        return subprocess.run(["unshare", "-rm", "true"], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


needs_mounts = pytest.mark.skipif(not _mounts_of_our_own(),
                                  reason="no mount namespaces here (unshare -rm)")


def with_folders(argv: List[str], full: Sequence[Path] = (),
                 read_only: Sequence[Path] = (), left: int = 0) -> List[str]:
    """``argv`` run in a mount namespace of its own, where each of ``full`` is a 1 MB
    file system filled up to ``left`` KB (a multiple of 4) and each of ``read_only`` one
    mounted read-only."""
    script = ["set -e"]
    for folder in full:
        script.append("mount -t tmpfs -o size=1m tmpfs %s" % shlex.quote(str(folder)))
        script.append("dd if=/dev/zero of=%s/fill bs=4k count=%d 2>/dev/null || true"
                      % (shlex.quote(str(folder)), (1024 - left) // 4))
    for folder in read_only:
        script.append("mount -t tmpfs -o ro tmpfs %s" % shlex.quote(str(folder)))
    script.append('exec "$@"')
    return ["unshare", "-rm", "sh", "-c", "\n".join(script), "sh", *argv]


def one_warning(ran, *needles: str) -> None:
    """A command that went on: exit 0, no traceback, each needle in one warning line."""
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "Traceback" not in ran.stderr, ran.stderr[-3000:]
    lines = ran.stderr.splitlines()
    for needle in needles:
        found = [line for line in lines if needle in line]
        assert len(found) == 1 and found[0].startswith("sphinxext-fmha: warning: "), (
            needle, ran.stderr[-2000:])


@needs_mounts
@pytest.mark.parametrize("how", ["full", "read-only"])
def test_a_cache_that_cannot_be_written_does_not_fail_the_run(tmp_path, good_root, how):
    """A cache folder that fills up (``--cache-dir``), or one on a read-only file system
    (``FMHA_CACHE_DIR``; a ``--cache-dir`` that cannot be written is refused before
    any work, exit 2): one warning naming the entry and why, and the right answer."""
    case = Case(tmp_path, good_root)
    cache = tmp_path / "cache"
    cache.mkdir()
    args = ["check", "--ck-root", str(good_root), "--api", "toy", "--filter", "*_d64_*"]
    if how == "full":
        argv = with_folders([sys.executable, "-m", "sphinxext_fmha", *args, "--cache-dir",
                             str(cache)], full=[cache])
    else:
        case.env["FMHA_CACHE_DIR"] = str(cache)
        argv = with_folders([sys.executable, "-m", "sphinxext_fmha", *args], read_only=[cache])
    ran = run_child(argv, cwd=tmp_path, env=case.env, timeout=120)
    why = "No space left on device" if how == "full" else "Read-only file system"
    one_warning(ran, "cannot write the cache entry %s/" % cache)
    assert why in ran.stderr and "not kept" in ran.stderr
    # the answer itself: the base tree has 54 kernels, 36 of them d64
    assert "selected 36 of 54 kernels (model predicts 36): verified" in ran.stdout, ran.stdout
    case.assert_clean()


@pytest.mark.parametrize("variable", ["FMHA_CACHE_DIR", "HOME"])
def test_a_cache_folder_that_is_a_file_does_not_fail_the_run(tmp_path, good_root, variable):
    """FMHA_CACHE_DIR that is a file, or a HOME that is a file (the default cache is
    below it): one warning, and the answer computed without a cache."""
    case = Case(tmp_path, good_root)
    (tmp_path / "a-file").write_text("x")
    case.env.pop("FMHA_CACHE_DIR", None)
    case.env[variable] = str(tmp_path / "a-file")
    ran = run_child([sys.executable, "-m", "sphinxext_fmha", "analyze", "--ck-root",
                     str(good_root), "--api", "toy"], cwd=tmp_path, env=case.env, timeout=120)
    one_warning(ran, "cannot write the cache entry %s/" % (tmp_path / "a-file"))
    assert "Not a directory" in ran.stderr and "54 kernels" in ran.stdout
    case.assert_clean()


@needs_mounts
def test_a_full_cache_in_sphinx_is_one_warning(tmp_path, good_root):
    case = Case(tmp_path, good_root)
    argv = case.sphinx_argv(".. fmha-kernel-guide:: toy\n   :sections: types\n")
    (tmp_path / "c").mkdir()
    ran = run_child(with_folders(argv, full=[tmp_path / "c"]), cwd=tmp_path, env=case.env,
                    timeout=300)
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stderr
    warnings = [line for line in ran.stderr.splitlines() if "WARNING" in line]
    assert len(warnings) == 1, ran.stderr
    assert re.search(r"cannot write the cache entry %s/.*No space left.*\[fmha\.cache\]"
                     % re.escape(str(tmp_path / "c")), warnings[0]), warnings
    assert "54 kernel files" in (tmp_path / "out" / "index.txt").read_text()
    case.assert_clean()


@needs_mounts
def test_a_full_tmpdir_is_passed_over(tmp_path, good_root):
    """TMPDIR on a full file system: one warning naming it and its free space, and the
    scratch folders go where there is room."""
    case = Case(tmp_path, good_root)
    argv = [sys.executable, "-m", "sphinxext_fmha", "analyze", "--ck-root", str(good_root),
            "--cache-dir", str(tmp_path / "cache"), "--api", "toy"]
    ran = run_child(with_folders(argv, full=[case.tmpdir]), cwd=tmp_path, env=case.env,
                    timeout=120)
    one_warning(ran, "the temporary folder %s (TMPDIR) has 0 bytes free: scratch folders go "
                "to " % case.tmpdir)
    assert "54 kernels" in ran.stdout
    case.assert_clean()


@needs_mounts
def test_no_temporary_folder_with_room_is_named_in_the_error(tmp_path, good_root):
    """TMPDIR nearly full and no other temporary folder with room: the run fails (exit
    1), and the message says where and how much room was left, not only that
    generate.py failed."""
    case = Case(tmp_path, good_root)
    # (the other folders cannot be filled here: the tree is below /tmp)
    code = ("import sys\nfrom sphinxext_fmha.process import scratch_place as place\n"
            "place._USUAL, place.MEMORY_FOLDER = (), '/nonexistent'\n"
            "from sphinxext_fmha.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    argv = [sys.executable, "-c", code, "analyze", "--ck-root", str(good_root),
            "--cache-dir", str(tmp_path / "cache"), "--api", "toy"]
    # some room left, too little for the run: tempfile takes it (a folder with none it
    # passes over itself)
    ran = run_child(with_folders(argv, full=[case.tmpdir], left=16), cwd=tmp_path,
                    env=case.env, timeout=120)
    err = one_error(ran, 1, "has only", "KB free", str(case.tmpdir))
    assert "no other temporary folder has room" in err


@pytest.mark.parametrize("how", ["missing", "a folder", "a symlink loop"])
def test_a_tree_without_a_usable_generate_py_is_an_input_error(tmp_path, how):
    root = make_tree(tmp_path, "base")
    generate = root / "example" / "ck_tile" / "01_fmha" / "generate.py"
    generate.unlink()
    if how == "a folder":
        generate.mkdir()
    elif how == "a symlink loop":
        generate.symlink_to(generate.name)
    case = Case(tmp_path, root)
    needle = {"missing": "there is no generate.py in", "a folder": "generate.py is a folder",
              "a symlink loop": "it is a symlink loop"}[how]
    one_error(case.cli("apis"), 2, needle)
    if how == "a folder":  # (the same check: once is enough)
        ran = sphinx_build(tmp_path, case, "", ".. fmha-kernel-guide:: toy\n")
        assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stderr
        assert re.search(r"index\.rst:4: WARNING: .*%s.*\[fmha\.ck-root\]" % re.escape(needle),
                         ran.stderr), ran.stderr
    case.assert_clean()


def test_a_ck_root_that_is_a_symlink_loop(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop.name)
    case = Case(tmp_path, None)
    one_error(case.cli("apis", "--ck-root", str(loop)), 2, "cannot be followed", str(loop))


@pytest.mark.parametrize("fault", ["lists_nothing", "writes_no_listing"])
def test_a_baseline_with_no_kernel_verifies_nothing(tmp_path, fault):
    """generate.py exits 0 but lists no kernel: a check has nothing it could have
    verified (exit 1, said in one line)."""
    case = Case(tmp_path, broken_tree(tmp_path, fault))
    one_error(case.cli("check", "--api", "toy", "--filter", "*_d64_*"), 1,
              "listed no kernel", "nothing was verified")
    case.assert_clean()


def test_a_listing_line_that_is_not_utf8(tmp_path):
    """generate.py succeeds and lists a name with bytes that are not UTF-8: read with
    U+FFFD in their place (never a UnicodeDecodeError), reported as a file without a
    kernel object; a check counts it as generate.py listed it (and is not verified)."""
    case = Case(tmp_path, broken_tree(tmp_path, "lists_a_name_that_is_not_utf8"))
    ran = case.cli("analyze", "--api", "toy")
    assert "Traceback" not in ran.stderr and "UnicodeDecodeError" not in ran.stderr + ran.stdout
    assert ran.returncode == 0, ran.stderr
    assert "listed files without a kernel object: fmha_toy_api.cpp, fmha_toy_d64_\ufffd\ufffd.cpp" \
        in ran.stdout, ran.stdout
    assert "warning: toy: generate.py's listing and the kernel objects observed" in ran.stderr
    ran = case.cli("check", "--api", "toy", "--filter", "*_d64_*")
    assert "Traceback" not in ran.stderr and ran.returncode == 1, ran.stderr
    assert "selected 37 of 55 kernels (model predicts 36): NOT verified" in ran.stdout, ran.stdout
    case.assert_clean()


def closed_stderr(argv: List[str]) -> List[str]:
    return ["sh", "-c", 'exec "$@" 2>&-', "sh", *argv]


def test_a_closed_stderr_is_no_error(tmp_path, good_root):
    """``2>&-``: what the command would have said is lost, nothing else; its output and
    its exit status are as with a stderr."""
    case = Case(tmp_path, good_root)
    cli = [sys.executable, "-m", "sphinxext_fmha"]
    where = ["--ck-root", str(good_root), "--cache-dir", str(tmp_path / "cache")]
    ran = run_child(closed_stderr(cli + ["apis", *where]), cwd=tmp_path, env=case.env,
                    timeout=120)
    assert ran.returncode == 0 and ran.stdout.startswith("toy "), ran.stdout
    ran = run_child(closed_stderr(cli + ["analyze", *where, "--api", "nope"]), cwd=tmp_path,
                    env=case.env, timeout=120)
    assert (ran.returncode, ran.stdout) == (2, "")
    case.assert_clean()


def test_a_broken_stderr_is_no_error(tmp_path, good_root):
    """stderr a pipe whose reader has gone (``2>&1 | head`` once head ended): the step
    lines that cannot be written do not end the command, nor change its exit status."""
    case = Case(tmp_path, good_root)
    argv = [sys.executable, "-m", "sphinxext_fmha", "prepare", "--ck-root", str(good_root),
            "--cache-dir", str(tmp_path / "cache"), "--progress", "always", "toy"]
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to stderr fails (EPIPE)
    try:
        proc = subprocess.run(argv, cwd=tmp_path, env=case.env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=write_end, timeout=300,
                              start_new_session=True)
    finally:
        os.close(write_end)
    assert proc.returncode == 0 and proc.stdout.decode().startswith("toy: prepared"), proc.stdout
    case.assert_clean()


def test_generate_says_it_is_still_running(tmp_path):
    """A ``generate`` run that takes a while says so (``--progress always``; by default
    when stderr is a terminal). The filtered run waits at a gate the test opens once the
    line is there: the run lasts as long as the check needs, never a guessed time."""
    case = Case(tmp_path, broken_tree(tmp_path, "waits_for_an_edit_in_a_filtered_run"))
    gate = tmp_path / "gate"
    case.env["FMHA_FAULT_GATE"] = str(gate)
    argv = [sys.executable, "-m", "sphinxext_fmha", "generate", "--ck-root", str(case.root),
            "--cache-dir", str(tmp_path / "cache"), "--api", "toy", "-f", "*_d64_*",
            "-f", "*_d128_*", "-l", str(tmp_path / "kernels.txt"), "--progress", "always"]
    err = tmp_path / "stderr.txt"
    with open(err, "wb") as sink:  # a file, not a pipe: the package's watchdog holds its
        proc = subprocess.Popen(argv, cwd=tmp_path, env=case.env,  # stderr after the run
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=sink, start_new_session=True)
    deadline = time.monotonic() + 300  # bounds a run that never says it: no hang
    while proc.poll() is None and "still running" not in err.read_text() \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    gate.touch()
    returncode = proc.wait(timeout=300)
    stderr = err.read_text()
    assert returncode == 0, stderr
    said = re.findall(r"^generate\.py -a toy with 2 filters: still running \((\d+) s\)$",
                      stderr, re.M)
    assert said and int(said[0]) >= 5, stderr  # the first line after PROGRESS_EVERY (5 s)
    assert len((tmp_path / "kernels.txt").read_text().split()) > 0
    case.assert_clean()


# --------------------------------------------------------------------------- many filters


def _glob(rng) -> str:
    """A random glob over the names' alphabet: stars, '?', classes (negated, ranges)."""
    parts = []
    for _ in range(rng.randint(1, 5)):
        kind = rng.randrange(6)
        if kind == 0:
            parts.append("*")
        elif kind == 1:
            parts.append("?")
        elif kind == 2:
            parts.append("[%s%s]" % (rng.choice(["", "!"]), rng.choice(["0-9", "a-f", "_d", "x4"])))
        else:
            parts.append(rng.choice(["_d64", "_d128", "_fp16", "_bf16", "_b", "x", "fmha", "_"]))
    return "".join(parts)


def _counting(function, calls: list):
    def counted(*args):
        calls.append(args)
        return function(*args)

    counted.__wrapped__ = function  # type: ignore[attr-defined]
    return counted


def test_many_filters_match_as_fnmatch_does_in_linear_time():
    """``generate`` with tens of thousands of filters: the driver's union of them gives
    fnmatch's answers (exact names, ``PREFIX*`` and any other glob), each name asked
    about once in about the time of a few regular expressions, not once per filter.
    The oracle is fnmatch itself, filter by filter."""
    import fnmatch
    import random

    from sphinxext_fmha.process import batch_script as driver_script

    rng = random.Random(41)
    tokens = [["_d64", "_d128", "_d256"], ["_fp16", "_bf16", "_fp8"], ["_batch", "_group"],
              ["_b128x64", "_b64x64", "_b128x128"], ["_npad", "_psd", "_pd"], ["_lse", "_nlse"]]
    def name(numbers: range) -> str:
        return "fmha_fwd" + "".join(rng.choice(t) for t in tokens) + "_%d" % rng.choice(numbers)

    names = sorted({name(range(50)) for _ in range(6000)})
    # (most of them name no kernel of this listing: a deployment's list for another)
    filters = [name(range(50, 5000)) for _ in range(30000)] + rng.sample(names, 500)
    filters += [n[: len(n) - rng.randint(1, 3)] + "*" for n in rng.sample(names, 1000)]
    filters += [_glob(rng) + rng.choice(["_1", "_2", "_77"]) for _ in range(300)]
    rng.shuffle(filters)
    # Not once per filter: while the names are asked about, fnmatch compiles no pattern
    # (filter by filter it would, 31,800 times, and take minutes); counted, not timed.
    compiled = []
    counting = _counting(fnmatch._compile_pattern, compiled)
    union = driver_script.any_of(filters, fnmatch.fnmatch)
    fnmatch._compile_pattern = counting
    try:
        answers = [union(name) for name in names]
    finally:
        fnmatch._compile_pattern = counting.__wrapped__
    assert compiled == []
    assert 0 < sum(answers) < len(names)
    # the answers, against fnmatch filter by filter (a tenth of them: each is compiled)
    some = filters[::10]
    union = driver_script.any_of(some, fnmatch.fnmatch)
    for name in rng.sample(names, 40) + [f for f in some if f in names][:10]:
        assert union(name) is any(fnmatch.fnmatch(name, f) for f in some), name
    # a matcher other than fnmatch's own (a hook) is asked filter by filter
    asked = []
    hooked = driver_script.any_of(["a*", "b*"], lambda n, p: asked.append(p) or p == "b*")
    assert hooked("x") is True and asked == ["a*", "b*"]


def test_the_driver_widens_each_part_of_the_filters():
    """With a separator, a name matched against a part of the first filter matches when
    the same part of any filter matches it (a missing part does not count); any other
    pattern is fnmatch's own. The oracle: the same rule written here, with fnmatch."""
    import fnmatch
    import random

    from sphinxext_fmha.process import batch_script as driver_script

    rng = random.Random(7)
    filters = ["@".join(_glob(rng) for _ in range(rng.randint(1, 3))) for _ in range(400)]
    filters = [f for f in filters if "[z-a]" not in f] or ["*"]
    match = driver_script.widened(filters, "@", fnmatch.fnmatch)
    split = [f.split("@") for f in filters]
    names = ["fmha_fwd_d64_fp16", "fmha_bwd_d128_bf16_x4", "fmha__b", "_d64", "x"]
    for position, part in enumerate(split[0]):
        for name in names:
            expected = any(position < len(parts) and fnmatch.fnmatch(name, parts[position])
                           for parts in split)
            assert match(name, part) is expected
    assert match("fmha_x", "fmha_?") is True and match("fmha_xy", "not-a-part-*") is False


# --------------------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def good_root(tmp_path_factory) -> Path:
    return make_tree(tmp_path_factory.mktemp("faults_good"), "base")


BAD_INPUTS: List = [
    # (args, exit code, text the one-line message must contain)
    (["analyze", "--api", "toy", "--optdim", "garbage"], 2, "--optdim: 'garbage'"),
    (["analyze", "--api", "toy", "--receipt", "99999"], 2, "--receipt: 99999 is not a receipt"),
    (["analyze", "--api", "toy", "--mask", "bogus"], 2, "--mask: 'bogus' is not one of"),
    (["analyze", "--api", "nope"], 2, "unknown FMHA API 'nope'"),
    (["check", "--api", "toy", "--filter", "*_d64_*,*_lse"], 2, "one filter per API"),
    (["check", "--api", "toy", "--filter", "*_d64_*@*"], 2, "does not split"),
    (["generate", "--api", "toy", "-f", "a@b", "-l", "out.txt"], 2, "does not split"),
    (["analyze", "--api", "toy", "--python", "/bin/echo"], 2, "is not a Python"),
]


@pytest.mark.parametrize("args, code, needle", BAD_INPUTS, ids=[" ".join(a[:4]) for a, _, _ in BAD_INPUTS])
def test_bad_input_is_one_line_and_exit_2(tmp_path, good_root, args, code, needle):
    case = Case(tmp_path, good_root)
    one_error(case.cli(*args), code, needle)
    case.assert_clean()


def test_timeout_must_be_positive(tmp_path, good_root):
    case = Case(tmp_path, good_root)
    ran = case.cli("analyze", "--api", "toy", "--timeout", "0")
    assert ran.returncode == 2 and "greater than 0" in ran.stderr and "Traceback" not in ran.stderr
    case.assert_clean()


def test_cache_dir_that_is_a_file(tmp_path, good_root):
    case = Case(tmp_path, good_root)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    ran = case.cli("apis", "--ck-root", str(good_root), "--cache-dir", str(a_file))
    one_error(ran, 2, "--cache-dir", "not a folder")
    case.assert_clean()


@pytest.mark.parametrize("where", ["existing-folder", "under-a-file"])
def test_guide_output_that_cannot_be_written(tmp_path, good_root, where):
    case = Case(tmp_path, good_root)
    (tmp_path / "existing-folder").mkdir()
    (tmp_path / "a-file").write_text("x")
    target = tmp_path / ("existing-folder" if where == "existing-folder" else "a-file/guide.md")
    one_error(case.cli("guide", "toy", "-o", str(target)), 2, str(target.parent if
                                                                   where != "existing-folder"
                                                                   else target))
    case.assert_clean()


def test_listing_into_a_missing_folder_is_created(tmp_path, good_root):
    case = Case(tmp_path, good_root)
    target = tmp_path / "new" / "folder" / "kernels.txt"
    ran = case.cli("generate", "--api", "toy", "-f", "*_d64_*", "-l", str(target))
    assert ran.returncode == 0, ran.stderr
    assert [line for line in target.read_text().splitlines() if "_d64_" in line]
    case.assert_clean()


def test_a_closed_pipe_ends_quietly(tmp_path, good_root):
    case = Case(tmp_path, good_root)
    argv = [sys.executable, "-m", "sphinxext_fmha", "analyze", "--ck-root", str(good_root),
            "--cache-dir", str(tmp_path / "cache"), "--api", "toy", "--format", "json"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=case.env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    head = proc.stdout.read(100)
    proc.stdout.close()  # what `| head -c 100` does
    stderr = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert len(head) == 100 and proc.returncode == 0 and stderr == "", stderr
    case.assert_clean()


# --------------------------------------------------------------------------- sphinx-build


def sphinx_build(tmp_path: Path, case: Case, conf: str, page: str):
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        'extensions = ["sphinxext_fmha"]\nshow_warning_types = True\n'
        'fmha_ck_root = %r\nfmha_cache_dir = %r\n%s\n'
        % (str(case.root), str(tmp_path / "cache"), conf), encoding="utf-8")
    (src / "index.rst").write_text("Index\n=====\n\n" + page, encoding="utf-8")
    return run_child([sys.executable, "-m", "sphinx", "-q", "-b", "text", str(src),
                      str(tmp_path / "out")], cwd=tmp_path, env=case.env, timeout=300)


def test_strict_build_fails_with_located_errors_and_generate_py_words(tmp_path):
    case = Case(tmp_path, broken_tree(tmp_path, "fails_with_message"))
    ran = sphinx_build(tmp_path, case, "fmha_strict = True", ".. fmha-kernel-guide:: toy\n")
    assert ran.returncode == 1, ran.stderr
    assert re.search(r"index\.rst:4: ERROR: .*exit(ed with| code) 3", ran.stderr), ran.stderr
    assert "codegen: F_bogus is not a known field" in ran.stderr
    assert "Traceback" not in ran.stderr and "Extension error" not in ran.stderr
    case.assert_clean()


def test_sphinx_build_timeout_holds(tmp_path):
    case = Case(tmp_path, broken_tree(tmp_path, "hang_with_grandchild"))
    ran = sphinx_build(tmp_path, case, "fmha_timeout = 3", ".. fmha-kernel-guide:: toy\n")
    assert ran.returncode == 0, ran.stderr  # ended by itself: the timeout held
    assert re.search(r"index\.rst:4: WARNING: .*timed out after 3 s.*\[fmha\.generate\]",
                     ran.stderr, re.S), ran.stderr
    case.assert_clean()


def test_bad_configuration_values_are_named(tmp_path, good_root):
    case = Case(tmp_path, good_root)
    (tmp_path / "a-file").write_text("x")
    conf = "fmha_timeout = 0\nfmha_receipt = 99999\nfmha_cache_dir = %r\n" % str(tmp_path / "a-file")
    ran = sphinx_build(tmp_path, case, conf, ".. fmha-kernel-guide:: toy\n")
    assert "fmha_timeout: 0 must be a number of seconds greater than 0" in ran.stderr
    assert re.search(r"fmha_cache_dir: .*a-file is a file, not a folder.*\[fmha\.cache\]",
                     ran.stderr), ran.stderr
    assert re.search(r"index\.rst:4: WARNING: .*fmha_receipt: 99999 is not a receipt",
                     ran.stderr), ran.stderr
    assert "Traceback" not in ran.stderr
    case.assert_clean()


def test_an_empty_listing_is_a_warning_not_a_success(tmp_path, good_root):
    case = Case(tmp_path, good_root)
    ran = case.cli("analyze", "--api", "toy", "--optdim", "999")
    assert ran.returncode == 0 and "Traceback" not in ran.stderr
    assert "warning: toy: generate.py exited with 0 but listed no kernel" in ran.stderr
    page = ".. fmha-kernel-guide:: toy\n   :optdim: 999\n   :sections: types\n"
    ran = sphinx_build(tmp_path, case, "", page)
    assert re.search(r"index\.rst:4: WARNING: .*listed no kernel.*\[fmha\.suspicious\]",
                     ran.stderr), ran.stderr
    case.assert_clean()


def test_filter_separators_the_api_does_not_split_on(tmp_path, good_root):
    case = Case(tmp_path, good_root)
    page = (".. fmha-filter-check::\n   :api: toy\n   :filter: *_d64_*@*\n\n"
            ".. fmha-filter-check::\n   :api: toy\n   :filter: *_d64_*,*_lse\n")
    ran = sphinx_build(tmp_path, case, "", page)
    assert re.search(r"index\.rst:4: WARNING: .*'@'.*does not split.*\[fmha\.filter\]",
                     ran.stderr), ran.stderr
    assert re.search(r"index\.rst:8: WARNING: .*one filter per API.*only '\*_d64_\*' would be "
                     r"used.*\[fmha\.filter\]", ran.stderr), ran.stderr
    case.assert_clean()


def test_sphinx_build_interrupted_leaves_no_child(tmp_path):
    case = Case(tmp_path, broken_tree(tmp_path, "hang_with_grandchild"))
    returncode, _ = interrupt_once_started(
        case.sphinx_argv(), cwd=tmp_path, env=case.env, pids=case.pids, started=1, signum=signal.SIGINT,
        stderr=tmp_path / "err", wait=60)
    assert returncode != 0
    case.assert_clean()


# --------------------------------------------------------------------------- the launcher


def test_launcher_kills_the_whole_group_on_timeout(tmp_path):
    from sphinxext_fmha.process.launch import live_children, run, scratch

    pids = tmp_path / "pids"
    code = ("import subprocess, sys, time\n"
            "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
            "open(sys.argv[1], 'w').write('%d' % c.pid)\n"
            "sys.stdin.read()\n"  # EOF at once: stdin is /dev/null
            "time.sleep(600)\n")
    with scratch("fmha-test-") as workdir:
        outcome = run([sys.executable, "-c", code, str(pids)], cwd=tmp_path, workdir=workdir,
                      timeout=1.5)
        kept = workdir
    assert outcome.timed_out  # ended by its timeout (the child sleeps 600 s)
    assert not kept.exists() and not live_children()
    assert not left_running([int(pids.read_text())])


def test_receipts_known_from_the_help_or_the_codegen(tmp_path):
    """A receipt the codegen tests but the -r help does not list is accepted (flash-attn
    2.7.4 tests ``receipt == 3``, aiter 800/801/888); one neither knows is refused."""
    from sphinxext_fmha.analysis.analyze import Tree
    from sphinxext_fmha.options import OptionError, parse_options

    root = make_tree(tmp_path, "base")
    ops = root / "example" / "ck_tile" / "01_fmha" / "codegen" / "ops" / "fmha_toy.py"
    text = ops.read_text(encoding="utf-8")
    assert "elif receipt == 3:" in text  # the help lists 0, 2, 3
    ops.write_text(text.replace("elif receipt == 3:", "elif receipt in (3, 7):"), encoding="utf-8")
    tree = Tree.load(root)
    for receipt in (0, 2, 3, 7):
        assert parse_options(tree, receipt=receipt).receipt == receipt
    with pytest.raises(OptionError, match=r"receipt: 8 is not a receipt .* lists 0, 2, 3; "
                                          r"its codegen also tests 2, 3, 7"):
        parse_options(tree, receipt=8)


def test_an_interpreter_that_is_not_a_python(tmp_path, good_root):
    case = Case(tmp_path, good_root)
    ran = sphinx_build(tmp_path, case, "fmha_python = '/bin/echo'", ".. fmha-kernel-guide:: toy\n")
    assert re.search(r"index\.rst:4: WARNING: .*fmha_python: interpreter '/bin/echo' is not a "
                     r"Python.*\[fmha\.config\]", ran.stderr, re.S), ran.stderr
    assert ran.returncode == 0 and "Traceback" not in ran.stderr
    case.assert_clean()


def a_hanging_interpreter(tmp_path: Path, case: Case) -> Path:
    """An "interpreter" that never answers, and writes its pid for the leftover check."""
    script = tmp_path / "hanging-python"
    script.write_text("#!/bin/sh\necho $$ >> %s\nexec sleep 600\n" % shlex.quote(str(case.pids)))
    script.chmod(0o755)
    return script


def test_an_interpreter_that_hangs_honours_the_timeout(tmp_path, good_root):
    """The interpreter check is a bounded step like the others: ``--timeout`` /
    ``fmha_timeout``, not a minute of its own each time it is asked."""
    case = Case(tmp_path, good_root)
    python = a_hanging_interpreter(tmp_path, case)
    ran = case.cli("analyze", "--api", "toy", "--python", str(python), "--timeout", "2")
    one_error(ran, 2, "--python: cannot run interpreter", "timed out after 2 s")
    pages = "".join(".. fmha-kernel-guide:: toy\n   :sections: types\n\n" for _ in range(3))
    ran = sphinx_build(tmp_path, case, "fmha_python = %r\nfmha_timeout = 2" % str(python), pages)
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stderr
    warnings = ran.stderr.split(" WARNING: ")[1:]
    assert len(warnings) == 3 and all("timed out after 2 s" in w and "[fmha.config]" in w
                                      for w in warnings), ran.stderr
    # each ask ended by fmha_timeout (the warnings say 2 s), not by a minute of its own
    case.assert_clean()


def test_strict_parallel_build_counts_problems_from_every_reader(tmp_path, good_root):
    case = Case(tmp_path, good_root)
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text('extensions = ["sphinxext_fmha"]\nfmha_strict = True\n'
                                 'fmha_ck_root = %r\nfmha_cache_dir = %r\n'
                                 % (str(good_root), str(tmp_path / "cache")))
    pages = ["a", "b", "c", "d", "e", "f", "g", "h"]  # Sphinx reads in parallel above 5
    (src / "index.rst").write_text("Index\n=====\n\n.. toctree::\n\n"
                                   + "".join("   %s\n" % p for p in pages))
    for page in pages:
        (src / (page + ".rst")).write_text("%s\n===\n\n.. fmha-kernel-guide:: no_%s\n"
                                           % (page.upper(), page))
    ran = run_child([sys.executable, "-m", "sphinx", "-q", "-j", "2", "-b", "text", str(src),
                     str(tmp_path / "out")], cwd=tmp_path, env=case.env, timeout=300)
    assert ran.returncode == 1, ran.stderr
    for page in pages:
        assert re.search(r"%s\.rst:4: ERROR: .*no_%s" % (page, page), ran.stderr), ran.stderr
    assert "fmha_strict: 8 problem(s)" in ran.stderr and "Traceback" not in ran.stderr
    case.assert_clean()
