"""Synthetic trees whose kernels are generated or written in pairs (issue 40).

Rewrites of the trees of ``synthetic.py`` (written from scratch, no CK code), each the
shape a CK generation has:

``twins``              a kernel of a small tile gets a ``_wide`` twin, made and
                       registered right after it passed ``-f``; the twin's own name is
                       never tested (newer batch_prefill's ``_64bit`` kernels)
``independent_parts``  ``MAIN@CONVERT``: each part filters its own kernels, an empty or
                       missing part filters nothing (2.8.0-era bwd, every split-KV)
``convert_first``      the same with the parts swapped, ``CONVERT@MAIN``: a single
                       pattern filters only the convert kernels (2.8.0-era bwd's
                       ``-f '*_d128*'`` filters only its dot_do_o kernels)
``one_pattern``        no ``@``: the one pattern filters main and convert kernels alike,
                       each on its own (2.7.4's split-KV; after independent_parts)
``launched_together``  one dispatch call launches a main kernel and its convert kernel;
                       write mode writes whatever was selected (the dispatch file may
                       then name convert kernels that were not generated: no link)
``unfiltered_lse_convert``  (after launched_together) the convert kernels carry the
                       lse token and are generated whatever ``-f`` says (ck-2024-10 bwd's
                       convert_dq kernels)
``lse_without_convert``  (after launched_together) lse traits have no convert kernel and
                       launch ``void`` in its place (newer CK bwd's ``_maxq`` traits)
``both_lse_converts``  (after launched_together) each dispatch branch names an ``_lse``
                       and an ``_nlse`` convert kernel, ``t.has_lse`` picks one per call
                       (newer CK's split-KV combine kernels)
``write_asserts``      write mode asserts that each main kernel's convert kernel was
                       generated (newer CK's split-KV ``write_blobs``); list mode does not
``arch_targets``       generate.py takes ``--targets`` (default ``gfx9,gfx950``) and hands
                       them to the blob functions; file names end in ``_gfx9``; the codegen
                       names ``gfx9`` and ``gfx12`` but has kernels for gfx9 targets only
                       (newer batch_prefill); with ``targets_in_generate`` for generate.py
``any_other_target_empties``  (after arch_targets) a target not of gfx9 empties the
                       whole listing, gfx9's kernels too (newer batch_prefill)
``appending_listing``  generate.py's ``-l`` appends to its file (older CK)

``make_coupled(tmp_path, "at_split", independent_parts, ...)`` writes the tree
(``generate=[...]``: rewrites of its generate.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence, Set

from helpers import synthetic
from helpers.independent import Ran, run_generate

FMHA = "example/ck_tile/01_fmha"

Rewrite = Callable[[str], str]


def _replace(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


def twins(text: str) -> str:
    """Every d64 batch kernel gets a ``_wide`` twin (its own trait, its own dispatch
    branch, ``a.wide`` chooses), generated after it passed ``-f`` and never tested."""
    text = _replace(text, "    mask_impl  : str  # simplified/generic\n",
                    "    mask_impl  : str  # simplified/generic\n"
                    "    F_wide     : bool = False  # 64-bit addressing for large caches\n")
    text = _replace(text, 'return f"fmha_toy_d{self.F_hdim}_{self.F_dtype}_{self.F_mode}_" + ',
                    'return f"fmha_toy_d{self.F_hdim}_{self.F_dtype}_{self.F_mode}_" + '
                    '("wide_" if self.F_wide else "") + ')
    # the twin is its own specialisation: one more template argument, one more term
    text = text.replace("{F_mask}, {F_lse}>;", "{F_mask}, {F_lse}, {F_wide}>;")
    text = _replace(text, "            F_lse       = BOOL_MAP[self.F_pipeline.F_lse])",
                    "            F_lse       = BOOL_MAP[self.F_pipeline.F_lse],\n"
                    "            F_wide      = BOOL_MAP['t' if self.F_wide else 'f'])")
    text = _replace(text, "                        F_lse=BOOL_MAP[k.F_pipeline.F_lse],",
                    "                        F_lse=BOOL_MAP[k.F_pipeline.F_lse],\n"
                    "                        F_wide=BOOL_MAP['t' if k.F_wide else 'f'],")
    text = _replace(text, "(t.has_lse == {F_lse})", "(t.has_lse == {F_lse}) && (a.wide == {F_wide})")
    return _replace(text, "                gen.append(k)\n", (
        "                gen.append(k)\n"
        "                if mode == 'batch' and hdim == 64:\n"
        "                    # large caches need 64-bit addressing: a twin of the kernel\n"
        "                    twin = ToyKernel(F_hdim=hdim, F_dtype=dtype, F_mode=mode, F_tile=tile,\n"
        "                                     F_pipeline=pipeline, mask_impl=mask_impl, F_wide=True)\n"
        "                    api_pool.register_traits(twin)\n"
        "                    gen.append(twin)\n"))


def independent_parts(text: str) -> str:
    """``MAIN@CONVERT`` with each part filtering its own kernels (empty part: no filter)."""
    text = _replace(text, (
        "                if not fnmatch.fnmatch(k.name, filter_main):\n"
        "                    continue\n"
        "                if not fnmatch.fnmatch(cvt.name, filter_convert):\n"
        "                    continue"), (
        "                candidates[cvt.name] = cvt\n"
        "                if filter_main != '' and not fnmatch.fnmatch(k.name, filter_main):\n"
        "                    continue"))
    # The convert kernels are filtered in a pass of their own, like CK's combine kernels.
    text = _replace(text, "    convert = dict()  # one convert kernel may serve many traits",
                    "    candidates = dict()  # every trait's convert kernel")
    text = _replace(text, "                convert[cvt.name] = cvt\n    return", (
        "    convert = {n: c for n, c in candidates.items()\n"
        "               if filter_convert == '' or fnmatch.fnmatch(n, filter_convert)}\n"
        "    return"))
    text = _replace(text, "filter_list.extend(['*'] * (2 - len(filter_list)))",
                    "filter_list.extend([''] * (2 - len(filter_list)))")
    return _replace(text, "        kernel_filter = '*@*'", "        kernel_filter = '@'")


def convert_first(text: str) -> str:
    """``CONVERT@MAIN``: the convert kernels' pattern first (after independent_parts)."""
    text = _replace(text, "    filter_main = filter_list[0]\n    filter_convert = filter_list[1]",
                    "    filter_convert = filter_list[0]\n    filter_main = filter_list[1]")
    return text.replace("-f 'MAIN@CONVERT'", "-f 'CONVERT@MAIN'")


def one_pattern(text: str) -> str:
    """One pattern for both kinds of kernel, each matched on its own name."""
    text = _replace(text, "        kernel_filter = '@'", "        kernel_filter = ''")
    return _replace(text, "    filter_list = kernel_filter.split('@')",
                    "    filter_list = [kernel_filter, kernel_filter]")


def launched_together(text: str) -> str:
    """The dispatcher launches main and convert kernel in one call."""
    text = _replace(text, "                return fmha_toy_<trait_>(s, a);", (
        "                using ctrait_ = toy_convert_traits_<{F_hdim}, {F_dtype}, {F_mode}, "
        "{F_spad}, {F_dpad}>;\n"
        "                return fmha_toy_<trait_, ctrait_>(s, a);"))
    text = _replace(text, ("void fmha_toy_convert_<toy_convert_traits_<{F_hdim}, {F_dtype}, "
                           "{F_mode}, {F_spad}, {F_dpad}>>("), "void fmha_toy_convert_<ctrait_>(")
    return _replace(text, "using toy_convert_kernel =", (
        "using ctrait_ = toy_convert_traits_<{F_hdim}, {F_dtype}, {F_mode}, {F_spad}, {F_dpad}>;\n"
        "using toy_convert_kernel ="))


def unfiltered_lse_convert(text: str) -> str:
    """After launched_together: the convert kernels carry the main kernel's lse (``_lse``)
    and are generated for every trait whatever ``-f`` says, the convert part of the
    pattern being ignored (ck-2024-10 bwd: every convert_dq kernel, ``_deterministic``
    too, is generated, while ``-f`` decides the dq_dk_dv kernels)."""
    text = text.replace("toy_convert_traits_<{F_hdim}, {F_dtype}, {F_mode}, {F_spad}, {F_dpad}>",
                        "toy_convert_traits_<{F_hdim}, {F_dtype}, {F_mode}, {F_spad}, {F_dpad}, "
                        "{F_lse}>")
    text = _replace(text, "    F_dpad  : str  # t/f: pad along the head dim\n",
                    "    F_dpad  : str  # t/f: pad along the head dim\n"
                    "    F_lse   : str  # t/f: the main kernel stores the log-sum-exp\n")
    text = _replace(text, "        else: n += '_npad'\n        return n",
                    "        else: n += '_npad'\n"
                    "        if self.F_lse == 't': n += '_lse'\n        return n")
    text = _replace(text, "            F_dpad  = BOOL_MAP[self.F_dpad])",
                    "            F_dpad  = BOOL_MAP[self.F_dpad],\n"
                    "            F_lse   = BOOL_MAP[self.F_lse])")
    text = _replace(text, (
        "F_spad=pipeline.F_spad, F_dpad=pipeline.F_dpad)\n"), (
        "F_spad=pipeline.F_spad, F_dpad=pipeline.F_dpad,\n"
        "                                       F_lse=pipeline.F_lse)\n"
        "                convert[cvt.name] = cvt  # generated whatever the filter\n"))
    text = _replace(text, (
        "                if not fnmatch.fnmatch(cvt.name, filter_convert):\n"
        "                    continue\n"), "")
    return _replace(text, "                convert[cvt.name] = cvt\n    return", "    return")


def write_asserts(text: str) -> str:
    """write_blobs asserts that each main kernel's convert kernel is generated."""
    old_write = "    for kernel in kernels + convert_kernels:\n        (output_dir"
    return _replace(text, old_write, (
        "    have = {c.name for c in convert_kernels}\n"
        "    for k in kernels:\n"
        "        cvt = ToyConvertKernel(F_hdim=k.F_hdim, F_dtype=k.F_dtype, F_mode=k.F_mode,\n"
        "                               F_bm0=k.F_tile.F_bm0, F_spad=k.F_pipeline.F_spad,\n"
        "                               F_dpad=k.F_pipeline.F_dpad)\n"
        "        assert cvt.name in have, f'no convert kernel for {k.name}'\n"
        + old_write))


def both_lse_converts(text: str) -> str:
    """After launched_together: each dispatch branch names two convert kernels, one per
    value of the convert kernel's own lse (``_lse``/``_nlse``), and ``if (t.has_lse)``
    picks one per call; both are compiled with the main kernel. With write_asserts,
    write mode asserts only the ``_nlse`` one (newer CK's split-KV combine kernels)."""
    convert = "using ctrait_ = toy_convert_traits_<{F_hdim}, {F_dtype}, {F_mode}, {F_spad}, {F_dpad}"
    text = _replace(text, convert + ">;\nusing toy_convert_kernel",
                    convert + ", {F_lse}>;\nusing toy_convert_kernel")
    launch = "                return fmha_toy_<trait_, ctrait_>(s, a);"
    text = _replace(text, "                %s>;\n%s" % (convert, launch), (
        "                if (t.has_lse) {{\n"
        "                    %s, true>;\n    %s\n"
        "                }} else {{\n"
        "                    %s, false>;\n    %s\n"
        "                }}") % (convert, launch, convert, launch))
    text = _replace(text, "    F_dpad  : str  # t/f: pad along the head dim\n",
                    "    F_dpad  : str  # t/f: pad along the head dim\n"
                    "    F_lse   : str = 'f'  # t/f: combine the log-sum-exp too\n")
    text = _replace(text, "        else: n += '_npad'\n        return n",
                    "        else: n += '_npad'\n"
                    "        n += '_lse' if self.F_lse == 't' else '_nlse'\n        return n")
    text = _replace(text, "            F_dpad  = BOOL_MAP[self.F_dpad])",
                    "            F_dpad  = BOOL_MAP[self.F_dpad],\n"
                    "            F_lse   = BOOL_MAP[self.F_lse])")
    return _replace(text, "                candidates[cvt.name] = cvt\n", (
        "                candidates[cvt.name] = cvt\n"
        "                cvt_lse = ToyConvertKernel(F_hdim=hdim, F_dtype=dtype, F_mode=mode,\n"
        "                                           F_bm0=tile.F_bm0, F_spad=pipeline.F_spad,\n"
        "                                           F_dpad=pipeline.F_dpad, F_lse='t')\n"
        "                candidates[cvt_lse.name] = cvt_lse\n"))


def partner_first(text: str) -> str:
    """After launched_together: the call names the convert kernel's trait first (bwd
    launches its dot_do_o kernel before the dq_dk_dv kernel it serves)."""
    return text.replace("fmha_toy_<trait_, ctrait_>(s, a);", "fmha_toy_<ctrait_, trait_>(s, a);")


def coupled_in_write_mode(text: str) -> str:
    """Launched together, and write mode refuses a main kernel without its convert kernel."""
    return write_asserts(launched_together(text))


def arch_targets(text: str) -> str:
    """The blob functions take the targets; kernels exist for gfx9 targets only, and
    their files end in the arch's suffix (``_gfx9``)."""
    text = _replace(text, "TOY_API_FILENAME = ", (
        "class ArchTrait:\n"
        "    def __init__(self, name):\n"
        "        self.name = name\n"
        "        self.filename_suffix = '_' + name\n\n\n"
        "# gfx12 is declared, and has no kernels yet\n"
        "ARCHS = {'gfx9': ArchTrait('gfx9'), 'gfx12': ArchTrait('gfx12')}\n\n"
        "TOY_API_FILENAME = "))
    text = _replace(text, '        return self.name + ".cpp"\n',
                    "        return self.name + ARCHS['gfx9'].filename_suffix + '.cpp'\n")
    for kind in ("write_blobs(output_dir", "list_blobs(file_path"):
        text = _replace(text, "def " + kind, "def %s(targets, %s" % tuple(kind.split("(")))
    text = text.replace("= get_toy_blobs(kernel_filter, receipt, optdim_list, mask_impl)",
                        "= get_toy_blobs(kernel_filter, receipt, optdim_list, mask_impl, targets)")
    text = _replace(text, "def get_toy_blobs(kernel_filter: Optional[str], receipt, optdim_list, "
                    "mask_impl)", "def get_toy_blobs(kernel_filter: Optional[str], receipt, "
                    "optdim_list, mask_impl, targets=None)")
    return _replace(text, "    api_pool = ToyApiPool(mask_impl)\n    gen = list()\n", (
        "    api_pool = ToyApiPool(mask_impl)\n    gen = list()\n"
        "    if targets is not None and not any(t.startswith('gfx9') for t in targets):\n"
        "        # only gfx9 kernels so far\n"
        "        return (api_pool, gen)\n"))


def any_other_target_empties(text: str) -> str:
    """After arch_targets: any target not of gfx9 empties the whole listing, the gfx9
    targets' kernels too (newer batch_prefill's ``has_non_gfx9``)."""
    return _replace(text, "    if targets is not None and not any(t.startswith('gfx9') for t in targets):",
                    "    if targets is not None and any(not t.startswith('gfx9') for t in targets):")


def targets_in_generate(text: str) -> str:
    """generate.py's ``--targets``, handed to every blob function first."""
    text = _replace(text, "    parser.add_argument(\n        '-a',", (
        "    parser.add_argument(\n        '--targets',\n        default='gfx9,gfx950',\n"
        "        required=False,\n        help='list of GPU targets, separated by comma.'\n    )\n"
        "    parser.add_argument(\n        '-a',"))
    for kind in ("write_blobs(output_dir", "list_blobs(output_file"):
        text = _replace(text, "def " + kind, "def %s(targets: List[str], %s" % tuple(kind.split("(")))
    for kind in ("WRITE_BLOBS](output_dir", "LIST_BLOBS](file_path"):
        text = _replace(text, kind, kind.replace("](", "](targets, "))
    for kind in ("list_blobs(args.list_blobs", "write_blobs(args.output_dir"):
        text = _replace(text, "        " + kind, "        " + kind.replace(
            "(args.", "(args.targets.split(','), args."))
    return text


def appending_listing(text: str) -> str:
    """generate.py no longer empties the ``-l`` file first: each listing appends."""
    return _replace(text, "    open(file_path, 'w').close()  # start from an empty listing\n", "")


def make_coupled(tmp_path: Path, variant: str, *rewrites: Rewrite,
                 generate: Sequence[Rewrite] = ()) -> Path:
    """The synthetic tree ``variant`` with ``rewrites`` applied to its toy module and
    ``generate`` to its generate.py."""
    root = synthetic.make_tree(tmp_path, variant)
    for path, changes in ((root / FMHA / "codegen/ops/fmha_toy.py", rewrites),
                          (root / FMHA / "generate.py", generate)):
        text = path.read_text()
        for rewrite in changes:
            text = rewrite(text)
        path.write_text(text)
    return root


def generate(root: Path, *args: str) -> Ran:
    """``python generate.py -a toy ARGS`` in the tree, as a reader runs it."""
    return run_generate(root, "-a", "toy", *args)


def listing(root: Path, tmp: Path, *args: str) -> Set[str]:
    """The kernel files ``generate.py -l`` lists (the API file left out)."""
    out = tmp / "list.txt"
    if out.exists():
        out.unlink()
    proc = generate(root, *args, "-l", str(out))
    assert proc.returncode == 0, proc.stderr
    return {Path(line).name for line in out.read_text().splitlines()
            if line.strip() and not line.endswith("_api.cpp")}


def lse_without_convert(text: str) -> str:
    """After launched_together: a trait that stores the lse has no convert kernel; its
    dispatch call puts ``std::conditional_t<false, ctrait_, void>`` in the convert
    kernel's place, and ``-f``'s convert part is still matched against the name it would
    have (newer CK bwd: the ``_maxq`` trload traits generate no convert_dq kernel)."""
    text = _replace(text, "                return fmha_toy_<trait_, ctrait_>(s, a);",
                    "                return fmha_toy_<trait_, std::conditional_t<{F_convert}, "
                    "ctrait_, void>>(s, a);")
    text = _replace(text, "                        F_dcheck=k.dcheck,\n", (
        "                        F_dcheck=k.dcheck,\n"
        "                        F_convert=BOOL_MAP['f' if k.F_pipeline.F_lse == 't' else 't'],\n"))
    return _replace(text, "                convert[cvt.name] = cvt\n    return",
                    "                if pipeline.F_lse == 'f':\n"
                    "                    convert[cvt.name] = cvt\n    return")
