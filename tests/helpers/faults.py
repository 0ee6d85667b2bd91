"""The fault catalog: code prepended (or appended) to a synthetic tree's generate.py,
and the checks of what a fault leaves behind (children alive, the tree changed)."""

from __future__ import annotations

import hashlib
import os
import select
import textwrap
import time
from pathlib import Path
from typing import Dict, List, Sequence

from helpers.synthetic import make_tree

#: Appended to by the fault code: the pids of the children generate.py starts.
PIDS_VAR = "FMHA_FAULT_PIDS"

GATE = """
    import os, sys, time
    if %s and not os.path.exists(os.environ["FMHA_FAULT_GATE"]):
        with open(os.environ["FMHA_FAULT_PIDS"], "a") as pids:
            pids.write("%%d\\n" %% os.getpid())
        while not os.path.exists(os.environ["FMHA_FAULT_GATE"]):
            time.sleep(0.02)
"""

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
    # waits for the test to edit the tree (FMHA_FAULT_GATE), in the probe's first run of
    # generate.py (the probe's other runs and the filtered runs do not wait)
    "waits_for_an_edit_in_the_probe": GATE % "'*_d64_*' not in sys.argv",
    # the same in the filtered run of `check --filter *_d64_*`
    "waits_for_an_edit_in_a_filtered_run": GATE % "'*_d64_*' in sys.argv",
    # exits 0 having written an empty listing, or none at all
    "lists_nothing": """
        import sys
        if "-l" in sys.argv:
            open(sys.argv[sys.argv.index("-l") + 1], "w").close()
            sys.exit(0)
    """,
    "writes_no_listing": """
        import sys
        if "-l" in sys.argv:
            sys.exit(0)
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


#: Faults appended to generate.py: they run after its own work.
LAST_FAULTS: Dict[str, str] = {
    # a listing line that is not UTF-8
    "lists_a_name_that_is_not_utf8": """
        import sys as _sys
        if "-l" in _sys.argv:
            with open(_sys.argv[_sys.argv.index("-l") + 1], "ab") as _listing:
                _listing.write(b"fmha_toy_d64_\\xff\\xfe.cpp\\n")
    """,
}


def broken_tree(tmp_path: Path, fault: str) -> Path:
    root = make_tree(tmp_path, "base")
    generate = root / "example" / "ck_tile" / "01_fmha" / "generate.py"
    text = generate.read_text(encoding="utf-8")
    if fault in LAST_FAULTS:
        text += "\n" + textwrap.dedent(LAST_FAULTS[fault])
    else:
        text = textwrap.dedent(FAULTS[fault]) + "\n" + text
    generate.write_text(text, encoding="utf-8")
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


def left_running(pids: Sequence[int], timeout: float = 60.0) -> List[int]:
    """The processes of ``pids`` still running after each was waited for: a process
    that ends is seen when it ends (a pidfd, or a poll of /proc where there is none);
    ``timeout`` only bounds a leak, it is no claim about speed."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue  # already gone
        except (AttributeError, OSError):  # no pidfd (old kernel or Python)
            while alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            continue
        try:
            while alive(pid) and time.monotonic() < deadline:
                select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        finally:
            os.close(fd)
    return [pid for pid in pids if alive(pid)]
