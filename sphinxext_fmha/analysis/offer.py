"""The APIs and options ``01_fmha/generate.py`` offers, observed: ``offer_script.py``
runs it in a child process up to its ``parse_args`` (where its handler table is built
and its parser complete), once per tree content and interpreter (kept in the store)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import List, Optional, Tuple

from ..locate import FMHA_SUBDIR, fmha_dir
from ..model import ApiInfo, Gap, GenerateOption, natural
from ..process.cache import DiskCache, TreeState, tree_state
from ..process.launch import GenerateError, run, scratch
from ..process.runner import check_generate_py, interpreter_id

__all__ = ["Offer", "tree_offer"]

#: an AMD GPU target or target family (``gfx9``, ``gfx950``, ``gfx1201``)
_TARGET = re.compile(r"gfx[0-9a-z]+")
#: APIs, options, gaps, and the GPU target families the codegen's ``ArchTrait`` objects
#: name (natural order: what ``--targets`` each gives is measured, never assumed)
Offer = Tuple[List[ApiInfo], List[GenerateOption], List[Gap], List[str]]

OFFER_SCRIPT = Path(__file__).with_name("offer_script.py")
_SHOWN = "python generate.py"


def _observe(fmha: Path, python: str, cache: Optional[DiskCache], timeout: float,
             inputs: TreeState) -> dict:
    """What the script found (kept in ``cache``); a :class:`GenerateError` with the end
    of its stderr when generate.py fails before it parses its arguments, SyntaxError
    when the tree's Python source does not compile."""
    key = DiskCache.key_for("offer", inputs.digest, OFFER_SCRIPT.read_bytes(),
                            interpreter_id(python, fmha, timeout))
    found = cache.get(key) if cache is not None else None
    if found is not None:
        return found
    with scratch("fmha-offer-") as workdir:
        out = workdir / "offer.json"
        outcome = run([python, "-B", str(OFFER_SCRIPT), str(fmha), str(out)], cwd=fmha,
                      workdir=workdir, timeout=timeout,
                      display=_SHOWN + "  # up to parse_args: its APIs and options")
        if not outcome.ok or not out.is_file():
            code = outcome.returncode
            raise outcome.error("%s failed before parsing its arguments: %s" % (
                _SHOWN, "exited with %d" % code if not outcome.timed_out and code and code > 0
                else outcome.status()))
        found = json.loads(out.read_text(encoding="utf-8"))
    if "syntax_error" in found:
        msg, (filename, *where) = found["syntax_error"]
        raise SyntaxError(msg, (os.path.basename(filename or ""), *where))
    if found["options"] is None:
        raise GenerateError("%s ran to its end without parsing arguments with argparse: "
                            "its options and APIs are unknown\n  in %s" % (_SHOWN, fmha))
    if cache is not None:
        cache.put(key, found, inputs)
    return found


def tree_offer(ck_root: Path, python: str, cache: Optional[DiskCache] = None,
               timeout: float = 900, inputs: Optional[TreeState] = None) -> Offer:
    """The APIs (one per ``codegen/ops/*.py`` module, sorted, then table entries of no
    such module), generate.py's options in the order it adds them, and the gaps: a
    module generate.py does not offer, an API of no ops module, no handler table."""
    fmha = fmha_dir(ck_root).resolve()  # the child runs in it: a relative path would not hold
    check_generate_py(fmha)
    found = _observe(fmha, python, cache, timeout, inputs or tree_state(fmha))
    options = [GenerateOption(**option) for option in found["options"]]
    arch_names = sorted((n for n in found["arch_names"] if _TARGET.fullmatch(n)), key=natural)
    stems = sorted(p.stem for p in (fmha / "codegen" / "ops").glob("*.py") if p.stem != "__init__")
    table = found["table"]
    apis: List[ApiInfo] = []
    gaps: List[Gap] = [] if table is not None else [Gap(
        what="API names", where=FMHA_SUBDIR + "/generate.py",
        why="no handler table of codegen/ops functions among generate.py's names when it "
            "parses its arguments; using the module names")]
    for stem in stems:
        in_fmha = f"codegen/ops/{stem}.py"  # as offer_script keeps files
        source = f"{FMHA_SUBDIR}/{in_fmha}"
        names = [stem] if table is None else [n for n, e in table.items() if e["file"] == in_fmha]
        apis.extend(ApiInfo(name=name, module=stem, source=source) for name in names)
        if not names:
            apis.append(ApiInfo(name=stem, module=stem, source=source, in_generate=False))
            gaps.append(Gap(what=f"{stem} is not in generate.py's handler table", where=source,
                            why="generate.py cannot run this module; its name is used as the "
                                "API name"))
    for name, entry in (table or {}).items():
        if entry["file"] not in [f"codegen/ops/{stem}.py" for stem in stems]:
            apis.append(ApiInfo(name=name, module=entry["module"].rsplit(".", 1)[-1], source=""))
            gaps.append(Gap(what=f"generate.py's API {name!r} runs {', '.join(entry['functions'])}"
                                 f" of {entry['file']}, not of a codegen/ops/*.py module",
                            where=FMHA_SUBDIR + "/generate.py", why="the API cannot be analysed"))
    return apis, options, gaps, arch_names
