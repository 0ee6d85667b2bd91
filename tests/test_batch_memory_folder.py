"""The batch's write-mode folders: in the shared-memory folder where there is one, on
disk when ``TMPDIR`` chooses a folder, and again on disk when the memory is full."""

from __future__ import annotations

import importlib.util
import tempfile

from sphinxext_fmha.process.batch import BATCH_SCRIPT


def _script():
    spec = importlib.util.spec_from_file_location("fmha_batch_script_under_test", BATCH_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Probe:
    """Write mode that reports where it wrote, and fails as a full disk does first."""

    def __init__(self, failures):
        self.failures, self.folders = failures, []

    def render_dispatch(self, fmha_dir, argv, listing, kernels, pools, trait_key, write):
        self.folders.append(tempfile.gettempdir())
        if self.failures:
            self.failures -= 1
            return {"error": "OSError: [Errno 28] No space left on device: 'x.cpp'"}
        return {"how": "write", "api_file": "a_api.cpp", "text": "", "kernel_traits": {}}


def _runs(script, probe):
    return script.Runs(probe, "/nowhere", ["-a", "toy"], None, lambda text: text)


def test_write_mode_writes_in_memory_and_again_on_disk_when_it_is_full(tmp_path, monkeypatch):
    script = _script()
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.setattr(script, "MEMORY_FOLDER", str(tmp_path))
    disk = tempfile.gettempdir()
    probe = _Probe(failures=1)
    found = _runs(script, probe).write({"filter": "*"})
    assert found["how"] == "write"
    assert probe.folders == [str(tmp_path), disk]
    assert tempfile.gettempdir() == disk  # the batch's own temporary folder is back


def test_write_mode_keeps_a_chosen_temporary_folder(tmp_path, monkeypatch):
    script = _script()
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(script, "MEMORY_FOLDER", str(tmp_path / "memory"))
    assert script.memory_folder() is None
    probe = _Probe(failures=1)
    found = _runs(script, probe).write({"filter": "*"})
    assert "error" in found and len(probe.folders) == 1  # a real failure, not retried
