"""Snapshot comparison shared by the rendering and directive tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"


def check_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("FMHA_UPDATE_SNAPSHOTS") or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if not os.environ.get("FMHA_UPDATE_SNAPSHOTS"):
            pytest.fail("snapshot %s was missing and has been written; check it in" % name)
    assert text == path.read_text(encoding="utf-8"), (
        "output differs from tests/snapshots/%s (FMHA_UPDATE_SNAPSHOTS=1 rewrites it)" % name)
