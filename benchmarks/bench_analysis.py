"""Cost of a guide relative to running generate.py alone (run by hand, not in CI).

usage: python benchmarks/bench_analysis.py [TREE] [API ...]
Prints, per API, wall seconds for: a plain `generate.py -l`; a cold model (fresh cache:
the probe run with its perturbations); the cold rest of a guide (recommendation, its
verified filter runs and the dispatch file); and a warm model + guide from the on-disk
cache in a new process-level session (what `sphinx-build -E` pays); plus the ratios
against the plain run.
"""

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sphinxext_fmha.corpus import fetch_tree, tree_by_name
from sphinxext_fmha.locate import fmha_dir
from sphinxext_fmha.session import Session


def plain_seconds(root: Path, api: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-B", "generate.py", "-a", api, "-l", str(Path(tmp) / "l.txt")],
                       cwd=fmha_dir(root), check=True, capture_output=True)
        return time.perf_counter() - start


def main() -> None:
    tree = sys.argv[1] if len(sys.argv) > 1 else "flash-attn-2.8.3"
    apis = sys.argv[2:] or ["fwd", "fwd_appendkv", "fwd_splitkv"]
    root = fetch_tree(tree_by_name(tree))
    print("%-14s %7s %7s %7s %7s %8s %8s" % ("api", "plain", "model", "guide", "warm",
                                             "model/x", "warm/x"))
    for api in apis:
        plain = plain_seconds(root, api)
        with tempfile.TemporaryDirectory() as cache:
            start = time.perf_counter()
            session = Session(root, cache_dir=Path(cache))
            session.model(api)
            model = time.perf_counter() - start
            start = time.perf_counter()
            session.recommend(api)
            guide = time.perf_counter() - start
            start = time.perf_counter()
            warm_session = Session(root, cache_dir=Path(cache))
            warm_session.model(api)
            warm_session.recommend(api)
            warm = time.perf_counter() - start
        print("%-14s %7.2f %7.2f %7.2f %7.2f %8.1f %8.1f" % (
            api, plain, model, guide, warm, model / plain, warm / plain))


if __name__ == "__main__":
    main()
