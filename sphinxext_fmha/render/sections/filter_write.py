"""What a filter's write-mode run says (``fmha-filter-check``): it writes and links,
fails (newer CK asserts in ``write_blobs`` that each split-KV kernel finds its combine
kernel), or writes a dispatch file that names kernels the filter did not generate."""

from __future__ import annotations

from typing import List

from ...model import FilterCheck
from ..ir import Admonition, Block, Code, Inlines, Para, Strong, join, text_of
from .cells import plural

#: The longest error line quoted in full (an assertion may print a whole kernel object).
_ERROR_SHOWN = 160


def error_text(error: str) -> str:
    return error if len(error) <= _ERROR_SHOWN else error[:_ERROR_SHOWN - 1] + "…"


def _left_out(check: FilterCheck) -> Inlines:
    """"36 kernel specialisations (36 `FmhaBwdOGradDotOKernel` kernels of the full
    listing, such as `fmha_bwd_dot_do_o_d64_...`)"."""
    out: Inlines = [plural(len(check.unresolved), "kernel specialisation")]
    if check.unresolved_per_type:
        out.append(" (")
        out += join([[str(n), " ", Code(t)] for t, n in check.unresolved_per_type.items()])
        out += [" kernel%s of the full listing, such as " % (
            "" if sum(check.unresolved_per_type.values()) == 1 else "s"),
            Code(check.unresolved_kernels[0]), ")"]
    return out


def write_blocks(check: FilterCheck) -> List[Block]:
    """The write-mode verdict under a filter check's counts."""
    if not check.count:
        return []
    if check.write_error:
        body: Inlines = [Strong("Write mode fails:"), " ", Code(check.write_command),
                         " stops with ", Code(error_text(check.write_error)),
                         "; the listing (", Code("-l"), ") succeeds, so this set can be listed "
                         "but not written."]
        if check.unresolved:
            body += [" The full listing's dispatch file launches the selected kernels together "
                     "with ", *_left_out(check), " that this filter leaves out."]
        return [Admonition("warning", [Para(body)], classes=["fmha-write"])]
    if check.unresolved:
        return [Admonition("warning", [Para([
            Strong("The build would not link:"), " the dispatch file that ",
            Code(check.write_command), " writes instantiates ", *_left_out(check),
            " that this filter does not generate."])], classes=["fmha-write"])]
    if check.write_verified:
        return [Para(["Write mode (", Code("-o"), ") writes the same %s, and its dispatch "
                      "file links: every kernel specialisation it instantiates is generated."
                      % plural(check.count, "kernel")])]
    return []


def write_warnings(api: str, filter: str, check: FilterCheck) -> List[str]:
    """One warning line when the filter fails in write mode or would not link (the
    build log and ``check`` on stderr)."""
    if check.write_error:
        return ["%s -f %r lists %s but fails in write mode: %s (command: %s)"
                % (api, filter, plural(check.count, "kernel"), error_text(check.write_error),
                   check.write_command)]
    if check.unresolved:
        return ["%s -f %r would not link: the dispatch file %s writes instantiates %s that "
                "the filter does not generate" % (api, filter, check.write_command,
                                                  text_of(_left_out(check)))]
    return []
