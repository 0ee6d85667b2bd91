"""The fault matrix: broken trees and bad inputs, tried as a user and a hostile author would.

Every broken tree is a synthetic tree (``tests/synthetic.py``) written in tmp, with a
fault prepended to its generate.py.  Each case runs the real command line (or
sphinx-build) in its own process and checks: the message, the exit status, the time it
took, that no child of ours is left running, and that the CK tree is unchanged.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from launch_twin import interrupt_once_started, run_child
from launched import run_reporting
from synthetic import make_tree

#: Appended to by the fault code: the pids of the children generate.py starts.
PIDS_VAR = "FMHA_FAULT_PIDS"

FAULTS: Dict[str, str] = {
    # a child that keeps stdout/stderr open and outlives generate.py's own timeout
    "hang_with_grandchild": """
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(os.environ["FMHA_FAULT_PIDS"], "a") as pids:
            pids.write("%d\\n%d\\n" % (os.getpid(), child.pid))
        time.sleep(600)
    """,
    # the same, with a grandchild that leaves our process group (setsid)
    "hang_with_detached_grandchild": """
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                 start_new_session=True)
        with open(os.environ["FMHA_FAULT_PIDS"], "a") as pids:
            pids.write("%d\\n%d\\n" % (os.getpid(), child.pid))
        time.sleep(600)
    """,
    # a daemon that leaves our process group and outlives generate.py, which goes on
    "leaves_a_detached_daemon": """
        import os, subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                 start_new_session=True)
        with open(os.environ["FMHA_FAULT_PIDS"], "a") as pids:
            pids.write("%d\\n" % child.pid)
    """,
    # blocks forever unless stdin is /dev/null
    "reads_stdin": """
        import sys
        sys.stdin.read()
    """,
    "fails_with_message": """
        import sys
        sys.stderr.write("noise line\\n" * 50)
        sys.stderr.write("codegen: F_bogus is not a known field\\n")
        sys.exit(3)
    """,
    "syntax_error": """
        def (:
    """,
    "huge_stderr": """
        import sys
        sys.stderr.write(("x" * 1023 + "\\n") * 14 * 1024)
        sys.stderr.write("the real reason is at the end\\n")
        sys.exit(1)
    """,
}


def broken_tree(tmp_path: Path, fault: str) -> Path:
    root = make_tree(tmp_path, "base")
    generate = root / "example" / "ck_tile" / "01_fmha" / "generate.py"
    text = generate.read_text(encoding="utf-8")
    generate.write_text(textwrap.dedent(FAULTS[fault]) + "\n" + text, encoding="utf-8")
    return root


def snapshot(root: Path) -> Dict[str, str]:
    """Every file of the tree and its hash (the tree must never change)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def alive(pid: int) -> bool:
    try:
        with open("/proc/%d/stat" % pid) as stat:
            return stat.read().split(") ")[-1][:1] not in ("Z", "X")
    except OSError:
        return False


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

    def assert_clean(self, wait: float = 2) -> None:
        """No child of the run left (after ``wait`` seconds at most), the tree as it was,
        no scratch folder left."""
        started = [int(p) for p in self.pids.read_text().split()]
        deadline = time.monotonic() + wait
        while any(alive(p) for p in started) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [p for p in started if alive(p)], "children left running"
        if self.root is not None:
            assert snapshot(self.root) == self.before, "the CK tree changed"
        assert not list(self.tmpdir.glob("fmha-*")), "temporary folders left behind"


def one_error(ran, code: int, *needles: str, seconds: float = 30) -> str:
    """An error as the matrix wants it: its exit status, one line (plus generate.py's
    stderr tail), no traceback, in bounded time (the synthetic trees run in ~1 s)."""
    assert ran.returncode == code, (ran.returncode, ran.stderr[-2000:])
    assert ran.seconds < seconds, ran.seconds
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
    one_error(ran, 1, "timed out after 3 s")
    assert ran.seconds < 3 + 6  # interpreter start-up + the timeout + a little
    case.assert_clean()


def test_a_generate_py_that_reads_stdin_does_not_block(tmp_path):
    case = Case(tmp_path, broken_tree(tmp_path, "reads_stdin"))
    ran = case.cli("check", "--api", "toy", "--filter", "*_nlse*", "--timeout", "60")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.seconds < 30
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
    returncode, seconds = interrupt_once_started(
        argv, cwd=tmp_path, env=case.env, pids=case.pids, started=1, signum=signum,
        stderr=tmp_path / "err", wait=10)
    assert seconds < 3
    assert returncode == code
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
        stderr=tmp_path / "err", wait=10)
    assert returncode == -signal.SIGKILL
    # generous: the point is "not left running", and the machine may be loaded
    case.assert_clean(wait=30)


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
    assert ran.seconds < 30
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
    assert ran.returncode == 0 and ran.seconds < 30, ran.stderr
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
        stderr=tmp_path / "err", wait=10)
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
    start = time.monotonic()
    with scratch("fmha-test-") as workdir:
        outcome = run([sys.executable, "-c", code, str(pids)], cwd=tmp_path, workdir=workdir,
                      timeout=1.5)
        kept = workdir
    assert outcome.timed_out and time.monotonic() - start < 1.5 + 2
    assert not kept.exists() and not live_children()
    grandchild = int(pids.read_text())
    deadline = time.monotonic() + 2
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild)


def test_children_run_below_the_reader_s_cpu_priority(tmp_path):
    """A child and its own children run at a lower CPU priority than the process that
    reads the pages, so on a busy 2-core machine the reader keeps its core, where the
    scheduler ranks processes by nice value (with Linux autogroups it does not: see
    ``launch._lower_priority``)."""
    code = ("import os, subprocess, sys\n"
            "grandchild = subprocess.run([sys.executable, '-c', 'import os; print(os.nice(0))'],"
            " capture_output=True, text=True).stdout.strip()\n"
            "open(sys.argv[1], 'w').write('%d %s' % (os.nice(0), grandchild))\n")
    returncode, report, _ = run_reporting(code, tmp_path, timeout=30)
    assert returncode == 0
    ours = os.nice(0)
    expected = min(ours + 10, 19)
    assert expected > ours or ours == 19
    assert report.split() == [str(expected), str(expected)]


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
