"""A small reading of kernel file names, written for the tests (never the package's
grammar): head dimension, data type, mode, arch suffix, the sub-type prefix, and
whether a name carries a token."""

from __future__ import annotations

import re
from typing import Tuple

HDIM = re.compile(r"_d(\d+)(?=_)")
DTYPE = re.compile(r"_(fp16|bf16|fp8\w*?|bf8|fp32)(?=_)")
MODE = re.compile(r"_(batch|group)(?=_)")
ARCH = re.compile(r"_(gfx\w+)\.cpp$")
PREFIX = re.compile(r"^(.*?)_d\d+_")


def prefix(filename: str) -> str:
    """The sub-type part of a name: everything before the head dimension."""
    match = PREFIX.match(filename)
    return match.group(1) if match else filename


def problem(filename: str) -> Tuple[str, ...]:
    """Head dimension, data type, mode and arch suffix of a kernel file name."""
    found = []
    for pattern in (HDIM, DTYPE, MODE, ARCH):
        match = pattern.search(filename)
        found.append(match.group(1) if match else "")
    return tuple(found)


def carries(filename: str, token: str) -> bool:
    """``token`` is a whole segment of the name after its sub-type prefix: followed by
    '_' or the end (``_ps`` is not carried by ``_psddv``)."""
    stem = filename[:-len(".cpp")] if filename.endswith(".cpp") else filename
    stem = stem[len(prefix(filename)):]
    return re.search(re.escape(token) + r"(?=_|$)", stem) is not None
