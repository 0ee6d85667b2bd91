"""The driver run for a union of filters, run as a batch job, gives exactly what a
separate driver process (``batch_script.py``) gives; a driver run the batch did not keep runs
as that process.

On every corpus tree (one API, two selective filters) the batch's driver job is
compared with real driver processes (``batch_script.py``) started here: the listing with
``-l``, the dispatch file (name and text) and each written kernel's trait key with
``-o`` into a temporary folder, read by the test's own code. The filter jobs that run
in the same interpreter after the driver job are compared with separate ``-f`` runs
(the widened ``fnmatch`` does not outlive its job).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import pytest

from sphinxext_fmha.corpus import load_corpus
from sphinxext_fmha.locate import fmha_dir
from sphinxext_fmha.options import Options
from sphinxext_fmha.process.batch import DRIVER_SCRIPT, cached_listing, cached_write, prefetch
from sphinxext_fmha.process.cache import DiskCache
from sphinxext_fmha.process.launch import total_processes_started
from sphinxext_fmha.process.runner import DriverRun, GenerateRequest, GenerateRunner
from sphinxext_fmha.session import Session

from helpers.independent import independent_listing, same_pairing, written_folder

CORPUS = load_corpus()
API = "fwd"  # every corpus tree has it, and its runs are among the cheapest


def _driver_process(root: Path, separator: str, filters: Sequence[str], api: str,
                    out_args: List[str]) -> None:
    proc = subprocess.run([sys.executable, "-B", str(DRIVER_SCRIPT), str(fmha_dir(root)),
                           separator, *filters, "--", "-a", api, *out_args],
                          cwd=fmha_dir(root), capture_output=True, text=True,
                          env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    assert proc.returncode == 0, proc.stderr[-3000:]


def _process_listing(root: Path, separator: str, filters: Sequence[str], api: str,
                     tmp: Path) -> List[str]:
    out = tmp / "driven.txt"
    _driver_process(root, separator, filters, api, ["-l", str(out)])
    names = {Path(line.strip()).name for line in out.read_text().splitlines() if line.strip()}
    return sorted(n for n in names if not n.endswith("_api.cpp"))


def _process_write(root: Path, separator: str, filters: Sequence[str], api: str,
                   tmp: Path) -> Tuple[str, str, Dict[str, str]]:
    out = tmp / "driven"
    out.mkdir()
    _driver_process(root, separator, filters, api, ["-o", str(out)])
    return written_folder(out)


def _two_filters(root: Path, api: str, tmp: Path) -> List[str]:
    """Pieces of two kernels' file names from different parts of the listing: few
    kernels each (a file name may end in a part the kernel's name lacks, the arch)."""
    names = sorted(independent_listing(root, api, tmp))
    one = names[len(names) // 3][: -len(".cpp")].rsplit("_", 1)[0]
    pieces = [p for p in names[2 * len(names) // 3][: -len(".cpp")].split("_") if p]
    return [one + "*", "*_%s_*" % "_".join(pieces[2:6])]


@pytest.mark.corpus
@pytest.mark.parametrize("tree", [t.name for t in CORPUS])
def test_the_batched_driver_equals_a_driver_process(corpus_root, tmp_path, tree):
    root = corpus_root(tree)
    filters = _two_filters(root, API, tmp_path)
    runner = GenerateRunner(fmha_dir(root), cache=DiskCache(tmp_path / "cache"))
    requests = [GenerateRequest(api=API, filter=f) for f in filters]
    run = DriverRun(GenerateRequest(api=API), "", tuple(filters))
    # One interpreter: the driver job runs first, the filter jobs after it.
    assert prefetch(runner, requests, dispatch=True, driver=run, parallel=1) == 3
    assert runner.processes_started == 1

    listing = _process_listing(root, "", filters, API, tmp_path)
    first, second = (independent_listing(root, API, tmp_path, "-f", f) for f in filters)
    assert first - second and second - first  # a union that only the widening gives
    assert set(listing) == first | second  # the driver's union, as a process gives it
    assert runner.stored_driver_listing(run) == listing
    name, text, traits = _process_write(root, "", filters, API, tmp_path)
    batched = runner.stored_driver_write(run)
    assert batched is not None
    assert (batched.api_file, batched.text) == (name, text)
    assert same_pairing(batched.kernel_traits, traits)
    for req in requests:  # the widened fnmatch was gone when they ran
        assert set(runner.list_kernels(req).files) == \
            independent_listing(root, API, tmp_path, "-f", req.filter), req.filter

    started = total_processes_started()
    assert cached_listing(runner, run) == listing
    assert cached_write(runner, run).text == text
    assert total_processes_started() == started and runner.processes_started == 1


def test_a_driver_run_the_batch_did_not_keep_runs_as_a_process(synthetic_tree, tmp_path):
    root = synthetic_tree("base")
    runner = GenerateRunner(fmha_dir(root), cache=DiskCache(tmp_path / "cache"))
    filters = ["*_d64_*", "*_lse"]
    requests = [GenerateRequest(api="toy", filter=f) for f in filters]
    prefetch(runner, requests, dispatch=True, parallel=1,
             driver=DriverRun(GenerateRequest(api="toy"), "", tuple(filters)))
    # A recommendation that left the second run out as redundant drives the first only.
    alone = DriverRun(GenerateRequest(api="toy"), "", (filters[0],))
    assert runner.stored_driver_listing(alone) is None
    started = total_processes_started()
    assert cached_listing(runner, alone) == _process_listing(root, "", filters[:1], "toy",
                                                             tmp_path)
    name, text, traits = _process_write(root, "", filters[:1], "toy", tmp_path)
    written = cached_write(runner, alone)
    assert (written.api_file, written.text) == (name, text)
    assert same_pairing(written.kernel_traits, traits)
    assert total_processes_started() == started + 2  # the driver's -l and -o processes


def test_a_recommendation_reads_its_driver_from_the_batch(synthetic_tree, tmp_path):
    """The recommendation's prefetch runs its driver in the batch; a driver for other
    filters (a run left out as redundant) runs as its -l and -o processes."""
    root = synthetic_tree("base")
    session = Session(root, cache_dir=tmp_path / "cache")
    _, runner = session._recommending("toy", Options())  # (its inputs and its runs)
    separator = session.model("toy", Options()).filter.api_split or ""
    filters = ["*_d64_*", "*_lse"]
    started = total_processes_started()
    runner.prefetch(filters, driver=True)  # may start its batch in the background
    listing = runner.driver_listing(filters)
    written = runner.driver_write(filters)
    assert total_processes_started() == started + 1  # both from the one batch process
    assert listing == _process_listing(root, separator, filters, "toy", tmp_path)
    assert written.text == _process_write(root, separator, filters, "toy", tmp_path)[1]
    alone = tmp_path / "alone"
    alone.mkdir()
    assert runner.driver_listing(filters[:1]) == _process_listing(root, separator, filters[:1],
                                                                  "toy", alone)
    assert runner.driver_write(filters[:1]).text == \
        _process_write(root, separator, filters[:1], "toy", alone)[1]
    assert total_processes_started() == started + 3  # the driver's -l and -o processes
