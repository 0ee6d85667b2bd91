"""Small synthetic CK FMHA codegen trees for tests (written from scratch, no CK code).

``make_tree(tmp_path, variant)`` writes ``example/ck_tile/01_fmha/`` with a
``generate.py`` and a ``codegen/`` package shaped like the real ones (argparse
options, pkgutil discovery of ``codegen.ops`` with the ``fmha_`` prefix stripped,
tile / pipeline / kernel dataclasses, an itertools.product enumeration with skip
rules, receipts, an fnmatch filter, ``list_blobs``/``write_blobs`` and an
if/else-if dispatcher) and returns the CK root.  Every variant's generate.py runs:

    python -B <root>/example/ck_tile/01_fmha/generate.py -a toy -l FILE

Variants ("mutants"), each a small rewrite of ``base``:

``renamed_field``   the pad field ``F_spad`` is called ``F_seqpad`` everywhere
``new_flag``        a boolean ``F_sink`` feature (tokens ``_sink``/``_nsink``)
``pad_numbers``     ``F_dpad`` is an int alignment (``_pd8``, ``_psd8``; 0 adds nothing)
``new_api``         a second API, ``codegen/ops/fmha_toy2.py`` with its own kernel class
``absent_when_off`` no ``_nbias`` token: bias 'no' leaves no trace in the name
``at_split``        a main and a ``convert`` kernel per trait; ``-f`` is split on '@'
                    into ``main@convert`` (missing part -> '*'), and a trait is
                    dropped unless both of its kernels match
``v2_v3``           two dispatch functions ``fmha_toy_v2``/``fmha_toy_v3`` and an entry
                    ``fmha_toy()`` that calls v3 only ``if (false and can_dispatch_v3)``
                    (newer CK's disabled v3 path): the d128 no-bias batch kernels
                    without lse are generated but unreachable
``v3_first``        ``v2_v3`` with 2026 CK's entry: ``fmha_toy()`` tries ``fmha_toy_v3``
                    first when ``a.max_seqlen_q > 1`` and calls ``fmha_toy_v2`` when
                    v3 declines (returns a negative time): both paths reachable
``rule_receipts``   receipts as rule objects: ``get_product(receipt)`` returns a
                    ``Product(name=..., rule=fit)`` per receipt (newer CK's shape)
``rule_functions``  the two skip rules of the loop as rule functions: rule classes whose
                    ``get_rules`` returns nested functions (extending the base class's
                    list by ``append`` or ``[*super().get_rules(), ...]``), all applied to
                    each kernel; a third rule drops the wide bf16 group-mode kernels

The templates are plain strings with ``@@NAME@@`` slots filled per variant.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Dict, List, Union

__all__ = ["VARIANTS", "VARIANT_APIS", "EXPECTED_COUNTS", "make_tree", "tree_files"]

VARIANTS = (
    "base",
    "renamed_field",
    "new_flag",
    "pad_numbers",
    "new_api",
    "absent_when_off",
    "at_split",
    "v2_v3",
    "v3_first",
    "rule_receipts",
    "rule_functions",
)

#: The APIs (generate.py ``-a`` values) of each variant.
VARIANT_APIS: Dict[str, List[str]] = {v: ["toy"] for v in VARIANTS}
VARIANT_APIS["new_api"] = ["toy", "toy2"]

#: Lines of ``generate.py -a API -l FILE`` (default options), API .cpp included.
EXPECTED_COUNTS: Dict[str, Dict[str, int]] = {
    "base": {"toy": 55},
    "renamed_field": {"toy": 55},
    "new_flag": {"toy": 82},
    "pad_numbers": {"toy": 73},
    "new_api": {"toy": 55, "toy2": 21},
    "absent_when_off": {"toy": 55},
    "at_split": {"toy": 67},
    "v2_v3": {"toy": 55},
    "v3_first": {"toy": 55},
    "rule_receipts": {"toy": 55},
    "rule_functions": {"toy": 53},
}

# --------------------------------------------------------------------------- generate.py

_GENERATE_PY = r'''# Synthetic FMHA kernel generator for the sphinxext-fmha tests (not CK code).
# Same command line as Composable Kernel's example/ck_tile/01_fmha/generate.py:
# every module of codegen/ops is an API, named after the module minus 'fmha_'.

import argparse
from enum import IntEnum
from pathlib import Path
import pkgutil
from typing import List, Optional

import codegen.ops
from codegen.cmake_config import GEN_DIR


class HandlerId(IntEnum):
    LIST_BLOBS = 0
    WRITE_BLOBS = 1


# load every module below codegen/ops; each one provides list_blobs/write_blobs
ops = []
for importer, module_name, _ in pkgutil.iter_modules(codegen.ops.__path__):
    ops.append(importer.find_spec(module_name).loader.load_module(module_name))
unwanted_prefix = 'fmha_'
handlers = {
    (op.__name__[len(unwanted_prefix):] if op.__name__.startswith(unwanted_prefix) else op.__name__):
        (op.list_blobs, op.write_blobs)
    for op in ops
}
assert len(handlers) > 0


def write_blobs(output_dir: Optional[str], api_list: List[str], filter_list: List[str],
                optdim_list: List[int], receipt, mask_impl) -> None:
    if output_dir is None:
        output_dir = Path(__file__).parent
    else:
        output_dir = Path(output_dir) / GEN_DIR
    output_dir.mkdir(parents=True, exist_ok=True)
    for api, kernel_filter in zip(api_list, filter_list):
        handlers[api][HandlerId.WRITE_BLOBS](output_dir, kernel_filter, receipt, optdim_list, mask_impl)


def list_blobs(output_file: Optional[str], api_list: List[str], filter_list: List[str],
               optdim_list: List[int], receipt, mask_impl) -> None:
    assert output_file is not None
    file_path = Path(output_file)
    open(file_path, 'w').close()  # start from an empty listing
    for api, kernel_filter in zip(api_list, filter_list):
        handlers[api][HandlerId.LIST_BLOBS](file_path, kernel_filter, receipt, optdim_list, mask_impl)


if __name__ == '__main__':
    parser = argparse.ArgumentParser(prog='generate', description='toy FMHA kernel generator')
    parser.add_argument(
        '-a',
        '--api',
        default='toy',
        required=False,
        help='API(s) to generate, separated by comma (default: toy).'
    )
    parser.add_argument(
        '-o',
        '--output_dir',
        required=False,
        help='write all the blobs into a directory'
    )
    parser.add_argument(
        '-l',
        '--list_blobs',
        required=False,
        help='list all the kernels to a file'
    )
    parser.add_argument(
        '-f',
        '--filter',
        default='',
        required=False,
        help='fnmatch pattern(s) for kernel names, ' +
             'one per API, separated by comma'
    )
    parser.add_argument(
        '-m',
        '--mask',
        default='simplified',
        required=False,
        help='mask implementation, simplified/generic'
    )
    parser.add_argument(
        '-r',
        '--receipt',
        default=0,
        required=False,
        help='codegen receipt. 0: everything\n' +
             '  2: a small set for integration tests\n' +
             '  3: inference only (no lse)'
    )
    parser.add_argument(
        '--optdim',
        default='-1',
        required=False,
        help='only generate these head dims, separated by comma; -1 means all'
    )

    args = parser.parse_args()
    api_list = args.api.split(',')
    filter_list = args.filter.split(',')
    filter_list.extend([''] * (len(api_list) - len(filter_list)))
    optdim_list = [int(hdim) for hdim in args.optdim.split(',')]

    if args.list_blobs is not None:
        list_blobs(args.list_blobs, api_list, filter_list, optdim_list, int(args.receipt), mask_impl=args.mask)
    else:
        write_blobs(args.output_dir, api_list, filter_list, optdim_list, int(args.receipt), mask_impl=args.mask)
'''

_PKG_INIT = "# synthetic codegen package (sphinxext-fmha tests)\n"

_CMAKE_CONFIG = r'''# synthetic build settings (sphinxext-fmha tests)

GEN_DIR = ""    # generated files go straight into the output folder
'''

_CPP_SYMBOL_MAP = r'''# Python values -> C++ spellings for the synthetic toy APIs (sphinxext-fmha tests)

DTYPE_MAP = {
    "fp16": "ToyFp16",
    "bf16": "ToyBf16",
    "fp8": "ToyFp8",
}

MODE_MAP = {
    "batch": "false",
    "group": "true",
}

BOOL_MAP = {
    "t": "true",
    "f": "false",
}

BIAS_MAP = {
    "no": "tile::ToyBiasEnum::NO_BIAS",
    "bias": "tile::ToyBiasEnum::ELEMENTWISE_BIAS",
}

BIAS_CHECK_MAP = {
    "no": "bias_enum::no_bias",
    "bias": "bias_enum::elementwise_bias",
}

ROPE_MAP = {
    "no": "tile::ToyRope::NONE",
    "inter": "tile::ToyRope::INTERLEAVED",
    "half": "tile::ToyRope::HALF_ROTATED",
}

_SIMPLIFIED_MASK_MAP = {
    "s_no": "tile::ToyMask<false>",
    "s_mask": "tile::ToyMask<true>",
}

_GENERIC_MASK_MAP = {
    "no": "ToyMasks::NoMask",
    "causal": "ToyMasks::CausalMask",
    "generic": "ToyMasks::GenericMask",
}

_SIMPLIFIED_MASK_CHECK_MAP = {
    "s_no": "t.mask_type == mask_enum::no_mask",
    "s_mask": "t.mask_type != mask_enum::no_mask",
}

_GENERIC_MASK_CHECK_MAP = {
    "no": "t.mask_type == mask_enum::no_mask",
    "causal": "t.mask_type == mask_enum::mask_top_left || t.mask_type == mask_enum::mask_bottom_right",
    "generic": "t.mask_type == mask_enum::window_generic",
}


def get_mask_map(impl: str):
    if impl == "simplified":
        return _SIMPLIFIED_MASK_MAP
    elif impl == "generic":
        return _GENERIC_MASK_MAP
    assert False, f"unknown mask implementation {impl}"


def get_mask_check_map(impl: str):
    if impl == "simplified":
        return _SIMPLIFIED_MASK_CHECK_MAP
    elif impl == "generic":
        return _GENERIC_MASK_CHECK_MAP
    assert False, f"unknown mask implementation {impl}"
'''

# --------------------------------------------------------------------------- fmha_toy.py

_TOY_MODULE = r'''# Synthetic "toy" FMHA API for the sphinxext-fmha tests (this is not CK code).
# Laid out like a ck_tile FMHA codegen module: tile, pipeline and kernel dataclasses,
# an itertools.product enumeration with skip rules, receipts, an fnmatch filter,
# list_blobs/write_blobs, and an if/else-if dispatcher written to fmha_toy_api.cpp.

import fnmatch
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from codegen.cmake_config import GEN_DIR
from codegen.cpp_symbol_map import (BIAS_CHECK_MAP, BIAS_MAP, BOOL_MAP, DTYPE_MAP, MODE_MAP,
                                    get_mask_check_map, get_mask_map)

TOY_API_FILENAME = "fmha_toy_api.cpp"

TOY_KERNEL_HEADER = """// SPDX-License-Identifier: MIT
// Synthetic toy kernel instance, generated by generate.py (sphinxext-fmha test tree).
#include "fmha_toy.hpp"
"""

TOY_KERNEL_BODY = """
using toy_dtype = {F_dtype};
using toy_block_tile = tile::sequence<{F_bm0}, {F_bn0}, {F_bk0}>;
using toy_traits = tile::ToyTraits<{F_spad}, {F_dpad}, {F_bias}, {F_lse}@@SINK_TPL@@, {F_occupancy}>;
using toy_kernel = tile::ToyKernel<{F_hdim}, toy_dtype, {F_mode}, toy_block_tile, toy_traits, {F_mask}>;

using trait_ = toy_traits_<{F_hdim}, toy_dtype, {F_mode}, {F_bm0}, {F_bn0}, {F_spad}, {F_dpad}, {F_bias}, {F_mask}, {F_lse}@@SINK_TPL@@>;

template <>
float fmha_toy_<trait_>(const tile::stream_config& s, fmha_toy_args a)
{{
    return tile::launch_kernel(s, tile::make_kernel<toy_kernel>(a));
}}
"""
@@CONVERT_TPL@@
TOY_API_HEADER = """// SPDX-License-Identifier: MIT
// Synthetic toy dispatcher, generated by generate.py (sphinxext-fmha test tree).
#include "fmha_toy.hpp"

float fmha_toy(fmha_toy_traits t, fmha_toy_args a, const tile::stream_config& s)
{{
    float r = -1;
{F_dispatch}
    return r;
}}
"""

TOY_API_PER_DTYPE = """    {F_if} (t.data_type.compare("{F_dtype}") == 0) {{
{F_hdim_case}
    }}
"""

TOY_API_PER_HDIM = """        {F_if} (t.hdim_q <= {F_hdim}) {{
{F_inner}
        }}
"""

TOY_API_INNER = """            {F_if} ((t.is_group_mode == {F_mode}) && ({F_mask_check}) && (t.bias_type == {F_bias_check}) &&
                (t.has_lse == {F_lse})@@SINK_CHECK@@ && ({F_scheck}) && ({F_dcheck})) {{
                using trait_ = toy_traits_<{F_hdim}, {F_dtype}, {F_mode}, {F_bm0}, {F_bn0}, {F_spad}, {F_dpad}, {F_bias}, {F_mask}, {F_lse}@@SINK_TPL@@>;
                return fmha_toy_<trait_>(s, a);
            }}
"""


@dataclass(frozen=True)
class ToyTileSize:
    F_bm0       : int  # tile size along seqlen_q (rows handled by one block)
    F_bn0       : int  # tile size along seqlen_k
    F_bk0       : int  # unroll of the q*k gemm along the head dim
    F_occupancy : int  # blocks per CU; -1 lets the pipeline decide

    @property
    def name(self) -> str:
        return f"b{self.F_bm0}x{self.F_bn0}" + ("" if self.F_occupancy == -1 else f"_o{self.F_occupancy}")


@dataclass(frozen=True)
class ToyPipeline:
    tag    : str  # pipeline family ('qr': q kept in registers)
    F_spad : str  # t/f: pad along seqlen_q
@@DPAD_DECL@@
    F_bias : str  # key of BIAS_MAP
    F_mask : str  # key of get_mask_map(mask_impl)
    F_lse  : str  # t/f: also store the log-sum-exp
@@SINK_DECL@@

    @property
    def name(self) -> str:
        def pad_name() -> str:
            n = ''
            if self.F_spad == 't': n += 's'
@@DPAD_NAME@@
            if n != '': n = 'p' + n
            return n
        pn = pad_name()
        n = self.tag
        if pn != '': n += f'_{pn}'
        else: n += '_npad'

        if self.F_bias != 'no': n += f'_{self.F_bias}'
@@BIAS_OFF@@

        if self.F_mask[0:2] == 's_':
            if self.F_mask == 's_mask': n += '_mask'
            else: n += '_nmask'
        else:
            if self.F_mask != 'no': n += f'_m{self.F_mask[0]}'
            else: n += '_nmask'

        if self.F_lse == 't': n += '_lse'
        else: n += '_nlse'
@@SINK_NAME@@
        return n


@dataclass(frozen=True)
class ToyKernel:
    F_hdim     : int  # head dim of q, k and v
    F_dtype    : str  # key of DTYPE_MAP
    F_mode     : str  # key of MODE_MAP: batch or group
    F_tile     : ToyTileSize
    F_pipeline : ToyPipeline
    mask_impl  : str  # simplified/generic

    @property
    def name(self) -> str:
        return f"fmha_toy_d{self.F_hdim}_{self.F_dtype}_{self.F_mode}_" + self.F_tile.name + "_" + self.F_pipeline.name

    @property
    def filename(self) -> str:
        return self.name + ".cpp"

    @property
    def scheck(self) -> str:
        if self.F_pipeline.F_spad == 't': return f'true /*a.seqlen_q % {self.F_tile.F_bm0} != 0*/'
        return f'a.seqlen_q % {self.F_tile.F_bm0} == 0'

    @property
    def dcheck(self) -> str:
@@DCHECK@@

    @property
    def template(self) -> str:
        return TOY_KERNEL_HEADER + TOY_KERNEL_BODY.format(
            F_hdim      = self.F_hdim,
            F_dtype     = DTYPE_MAP[self.F_dtype],
            F_mode      = MODE_MAP[self.F_mode],
            F_bm0       = self.F_tile.F_bm0,
            F_bn0       = self.F_tile.F_bn0,
            F_bk0       = self.F_tile.F_bk0,
            F_occupancy = self.F_tile.F_occupancy,
            F_spad      = BOOL_MAP[self.F_pipeline.F_spad],
            F_dpad      = @@DPAD_CPP_SELF@@,
            F_bias      = BIAS_MAP[self.F_pipeline.F_bias],
            F_mask      = get_mask_map(self.mask_impl)[self.F_pipeline.F_mask],@@SINK_ARG_SELF@@
            F_lse       = BOOL_MAP[self.F_pipeline.F_lse])
@@CONVERT_CLASS@@

class ToyApiPool:
    def __init__(self, mask_impl):
        self.pool = dict()
        self.mask_impl = mask_impl

    def register_traits(self, kernel: ToyKernel) -> None:
        self.pool.setdefault(kernel.F_dtype, dict()).setdefault(kernel.F_hdim, list()).append(kernel)

    @property
    def api(self) -> str:
        per_dtypes = str()
        for i, dtype in enumerate(self.pool.keys()):
            per_hdim_case = str()
            for j, hdim in enumerate(sorted(self.pool[dtype].keys())):
                inners = str()
                for n, k in enumerate(self.pool[dtype][hdim]):
                    inners = inners + TOY_API_INNER.format(
                        F_if='if' if n == 0 else 'else if',
                        F_mode=MODE_MAP[k.F_mode],
                        F_mask=get_mask_map(self.mask_impl)[k.F_pipeline.F_mask],
                        F_mask_check=get_mask_check_map(self.mask_impl)[k.F_pipeline.F_mask],
                        F_bias=BIAS_MAP[k.F_pipeline.F_bias],
                        F_bias_check=BIAS_CHECK_MAP[k.F_pipeline.F_bias],
                        F_lse=BOOL_MAP[k.F_pipeline.F_lse],@@SINK_ARG_K@@
                        F_spad=BOOL_MAP[k.F_pipeline.F_spad],
                        F_dpad=@@DPAD_CPP_K@@,
                        F_scheck=k.scheck,
                        F_dcheck=k.dcheck,
                        F_hdim=hdim,
                        F_dtype=DTYPE_MAP[dtype],
                        F_bm0=k.F_tile.F_bm0,
                        F_bn0=k.F_tile.F_bn0)
                if_j = 'if' if j == 0 else 'else if'
                per_hdim_case = per_hdim_case + TOY_API_PER_HDIM.format(F_if=if_j, F_hdim=hdim, F_inner=inners)
            if_i = 'if' if i == 0 else 'else if'
            per_dtypes = per_dtypes + TOY_API_PER_DTYPE.format(F_if=if_i, F_dtype=dtype, F_hdim_case=per_hdim_case)
        if not per_dtypes:
            # nothing generated: keep the dispatcher compilable
            per_dtypes = '    (void)t; (void)s; (void)a;'
        return TOY_API_HEADER.format(F_dispatch=per_dtypes)


def get_hdim_tile_size_dict(dtype: str) -> Optional[Dict[int, List[ToyTileSize]]]:
    if dtype in ('fp16', 'bf16'):
        return {
            #       bm0  bn0  bk0  occupancy
            64  : [ToyTileSize(128, 64,  32, -1)],
            128 : [ToyTileSize(128, 128, 32,  2)],
        }
    # fp8: no toy kernels yet
    return None


def get_pipelines(dtype: str, hdim: int, receipt, mask_impl) -> List[ToyPipeline]:
    # the order matters: the dispatcher tries the pipelines in this order
    pipelines = []
    for (spad, dpad), bias, mask, lse@@SINK_VAR@@ in itertools.product(@@PAD_COMBOS@@, BIAS_MAP.keys(),
                                                      get_mask_map(mask_impl).keys(), ['t', 'f']@@SINK_VALUES@@):
        if dtype == 'bf16' and bias != 'no':
            # the toy has no bf16 kernels with an elementwise bias
            continue
@@SINK_SKIP@@
        pipelines.append(ToyPipeline('qr', spad, dpad, bias, mask, lse@@SINK_VAR@@))
    return pipelines


def get_toy_blobs(kernel_filter: Optional[str], receipt, optdim_list, mask_impl) -> Tuple[ToyApiPool, List[ToyKernel]@@CONVERT_RET_T@@]:
@@FILTER_SETUP@@
    api_pool = ToyApiPool(mask_impl)
    gen = list()
@@CONVERT_INIT@@
    for dtype in DTYPE_MAP.keys():
        d = get_hdim_tile_size_dict(dtype)
        if d is None:
            continue
        for (hdim, tiles), mode in itertools.product(d.items(), MODE_MAP.keys()):
            for tile, pipeline in itertools.product(tiles, get_pipelines(dtype, hdim, receipt, mask_impl)):
                if mode == 'group' and pipeline.F_spad != 't':
                    # group mode: every batch has its own seqlen, so seqlen_q is always padded
                    continue
                if tile.F_occupancy != -1 and pipeline.F_lse == 't':
                    # tiles with a forced occupancy are for inference only
                    continue
                k = ToyKernel(F_hdim=hdim, F_dtype=dtype, F_mode=mode, F_tile=tile,
                              F_pipeline=pipeline, mask_impl=mask_impl)
@@FILTER_CHECK@@
                if optdim_list != [-1]:
                    if hdim not in optdim_list:
                        continue
                # 2: a small set for integration tests
                if receipt == 2:
                    cond = dtype == 'fp16'
                    cond &= mode == 'batch'
                    cond &= pipeline.F_bias == 'no'
                    if not cond:
                        continue
                # 3: inference only
                elif receipt == 3:
                    if pipeline.F_lse == 't':
                        continue
                api_pool.register_traits(k)
                gen.append(k)
@@CONVERT_ADD@@
    return (api_pool, gen@@CONVERT_RET@@)


def write_blobs(output_dir: Path, kernel_filter: str, receipt, optdim_list, mask_impl) -> None:
    api_pool, kernels@@CONVERT_UNPACK@@ = get_toy_blobs(kernel_filter, receipt, optdim_list, mask_impl)
    for kernel in kernels@@CONVERT_CHAIN@@:
        (output_dir / kernel.filename).write_text(kernel.template)
    (output_dir / TOY_API_FILENAME).write_text(api_pool.api)


def list_blobs(file_path: Path, kernel_filter: str, receipt, optdim_list, mask_impl) -> None:
    _, kernels@@CONVERT_UNPACK@@ = get_toy_blobs(kernel_filter, receipt, optdim_list, mask_impl)
    with file_path.open('a') as f:
        for kernel in kernels@@CONVERT_CHAIN@@:
            f.write(str(file_path.parent / GEN_DIR / kernel.filename) + '\n')
        f.write(str(file_path.parent / GEN_DIR / TOY_API_FILENAME) + '\n')
'''

_BASE_SLOTS: Dict[str, str] = {
    "SINK_TPL": "",
    "SINK_CHECK": "",
    "SINK_DECL": "",
    "SINK_NAME": "",
    "SINK_ARG_SELF": "",
    "SINK_ARG_K": "",
    "SINK_VAR": "",
    "SINK_VALUES": "",
    "SINK_SKIP": "",
    "DPAD_DECL": "    F_dpad : str  # t/f: pad along the head dim",
    "DPAD_NAME": "            if self.F_dpad == 't': n += 'd'",
    "DCHECK": (
        "        if self.F_pipeline.F_dpad == 't': return f'true /*a.hdim_q % {self.F_tile.F_bk0} != 0*/'\n"
        "        return f'a.hdim_q % {self.F_tile.F_bk0} == 0'"
    ),
    "DPAD_CPP_SELF": "BOOL_MAP[self.F_pipeline.F_dpad]",
    "DPAD_CPP_K": "BOOL_MAP[k.F_pipeline.F_dpad]",
    "PAD_COMBOS": "[('f', 'f'), ('t', 't')]",
    "BIAS_OFF": "        else: n += '_nbias'",
    "CONVERT_TPL": "",
    "CONVERT_CLASS": "",
    "CONVERT_RET_T": "",
    "CONVERT_INIT": "",
    "CONVERT_ADD": "",
    "CONVERT_RET": "",
    "CONVERT_UNPACK": "",
    "CONVERT_CHAIN": "",
    "FILTER_SETUP": "",
    "FILTER_CHECK": (
        "                if kernel_filter:\n"
        "                    if not fnmatch.fnmatch(k.name, kernel_filter):\n"
        "                        continue"
    ),
}

_NEW_FLAG_SLOTS: Dict[str, str] = {
    "SINK_TPL": ", {F_sink}",
    "SINK_CHECK": " && (t.has_sink == {F_sink})",
    "SINK_DECL": "    F_sink : str  # t/f: keep attention-sink tokens in the softmax",
    "SINK_NAME": "        if self.F_sink == 't': n += '_sink'\n        else: n += '_nsink'",
    "SINK_ARG_SELF": "\n            F_sink      = BOOL_MAP[self.F_pipeline.F_sink],",
    "SINK_ARG_K": "\n                        F_sink=BOOL_MAP[k.F_pipeline.F_sink],",
    "SINK_VAR": ", sink",
    "SINK_VALUES": ", ['t', 'f']",
    "SINK_SKIP": (
        "        if sink == 't' and mask in ('s_no', 'no'):\n"
        "            # sink tokens are only kept together with a mask\n"
        "            continue"
    ),
}

_PAD_NUMBERS_SLOTS: Dict[str, str] = {
    "DPAD_DECL": "    F_dpad : int  # head-dim padding: 0 = none, else the vector alignment kept while padding",
    "DPAD_NAME": "            if self.F_dpad: n += f'd{self.F_dpad}'",
    "DCHECK": (
        "        if self.F_pipeline.F_dpad: return f'a.hdim_q % {self.F_pipeline.F_dpad} == 0'\n"
        "        return f'a.hdim_q % {self.F_tile.F_bk0} == 0'"
    ),
    "DPAD_CPP_SELF": "self.F_pipeline.F_dpad",
    "DPAD_CPP_K": "k.F_pipeline.F_dpad",
    "PAD_COMBOS": "[('f', 0), ('f', 8), ('t', 8)]",
}

_ABSENT_WHEN_OFF_SLOTS: Dict[str, str] = {"BIAS_OFF": ""}

_AT_SPLIT_SLOTS: Dict[str, str] = {
    "CONVERT_TPL": r'''
TOY_CONVERT_BODY = """
using toy_convert_kernel = tile::ToyConvertKernel<{F_hdim}, {F_dtype}, {F_mode}, {F_bm0}, {F_spad}, {F_dpad}>;

template <>
void fmha_toy_convert_<toy_convert_traits_<{F_hdim}, {F_dtype}, {F_mode}, {F_spad}, {F_dpad}>>(const tile::stream_config& s, fmha_toy_args a)
{{
    tile::launch_kernel(s, tile::make_kernel<toy_convert_kernel>(a));
}}
"""
''',
    "CONVERT_CLASS": r'''

@dataclass(frozen=True)
class ToyConvertKernel:
    F_hdim  : int  # head dim
    F_dtype : str  # key of DTYPE_MAP
    F_mode  : str  # key of MODE_MAP
    F_bm0   : int  # rows converted by one block
    F_spad  : str  # t/f: pad along seqlen_q
    F_dpad  : str  # t/f: pad along the head dim

    @property
    def name(self) -> str:
        pn = ''
        if self.F_spad == 't': pn += 's'
        if self.F_dpad == 't': pn += 'd'
        n = f"fmha_toy_convert_d{self.F_hdim}_{self.F_dtype}_{self.F_mode}_b{self.F_bm0}"
        if pn != '': n += f'_p{pn}'
        else: n += '_npad'
        return n

    @property
    def filename(self) -> str:
        return self.name + ".cpp"

    @property
    def template(self) -> str:
        return TOY_KERNEL_HEADER + TOY_CONVERT_BODY.format(
            F_hdim  = self.F_hdim,
            F_dtype = DTYPE_MAP[self.F_dtype],
            F_mode  = MODE_MAP[self.F_mode],
            F_bm0   = self.F_bm0,
            F_spad  = BOOL_MAP[self.F_spad],
            F_dpad  = BOOL_MAP[self.F_dpad])''',
    "CONVERT_RET_T": ", List[ToyConvertKernel]",
    "CONVERT_INIT": "    convert = dict()  # one convert kernel may serve many traits",
    "CONVERT_ADD": "                convert[cvt.name] = cvt",
    "CONVERT_RET": ", list(convert.values())",
    "CONVERT_UNPACK": ", convert_kernels",
    "CONVERT_CHAIN": " + convert_kernels",
    "FILTER_SETUP": (
        "    # -f 'MAIN@CONVERT': one fnmatch pattern per kernel class, a missing part matches all\n"
        "    if not kernel_filter:\n"
        "        kernel_filter = '*@*'\n"
        "    filter_list = kernel_filter.split('@')\n"
        "    filter_list.extend(['*'] * (2 - len(filter_list)))\n"
        "    filter_main = filter_list[0]\n"
        "    filter_convert = filter_list[1]"
    ),
    "FILTER_CHECK": (
        "                cvt = ToyConvertKernel(F_hdim=hdim, F_dtype=dtype, F_mode=mode, F_bm0=tile.F_bm0,\n"
        "                                       F_spad=pipeline.F_spad, F_dpad=pipeline.F_dpad)\n"
        "                # a trait is kept only if both of its kernels pass their pattern\n"
        "                if not fnmatch.fnmatch(k.name, filter_main):\n"
        "                    continue\n"
        "                if not fnmatch.fnmatch(cvt.name, filter_convert):\n"
        "                    continue"
    ),
}

# --------------------------------------------------------------------------- fmha_toy2.py

_TOY2_MODULE = r'''# Synthetic second API, "toy2" (append-kv like), for the sphinxext-fmha tests (not CK code).

import fnmatch
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

from codegen.cmake_config import GEN_DIR
from codegen.cpp_symbol_map import BOOL_MAP, DTYPE_MAP, ROPE_MAP

TOY2_API_FILENAME = "fmha_toy2_api.cpp"

TOY2_KERNEL = """// SPDX-License-Identifier: MIT
// Synthetic toy2 kernel instance, generated by generate.py (sphinxext-fmha test tree).
#include "fmha_toy2.hpp"

using toy2_trait_ = toy2_traits_<{F_hdim}, {F_dtype}, {F_bs}, {F_rope}, {F_pagedkv}>;

template <>
float fmha_toy2_<toy2_trait_>(const tile::stream_config& s, fmha_toy2_args a)
{{
    return tile::launch_kernel(s, tile::make_kernel<tile::Toy2Kernel<toy2_trait_>>(a));
}}
"""

TOY2_API = """// SPDX-License-Identifier: MIT
// Synthetic toy2 dispatcher, generated by generate.py (sphinxext-fmha test tree).
#include "fmha_toy2.hpp"

float fmha_toy2(fmha_toy2_traits t, fmha_toy2_args a, const tile::stream_config& s)
{{
{F_dispatch}
    return -1;
}}
"""

TOY2_API_INNER = """    {F_if} ((t.data_type.compare("{F_dtype_name}") == 0) && (t.hdim_q == {F_hdim}) &&
        (t.rope_type == {F_rope}) && (t.is_paged_kv == {F_pagedkv})) {{
        return fmha_toy2_<toy2_traits_<{F_hdim}, {F_dtype}, {F_bs}, {F_rope}, {F_pagedkv}>>(s, a);
    }}
"""


@dataclass(frozen=True)
class Toy2Kernel:
    F_hdim    : int  # head dim of the appended k/v
    F_dtype   : str  # key of DTYPE_MAP
    F_bs      : int  # tile size along the appended tokens
    F_rope    : str  # key of ROPE_MAP
    F_pagedkv : str  # t/f: the k/v cache is paged

    @property
    def name(self) -> str:
        n = f"fmha_toy2_d{self.F_hdim}_{self.F_dtype}_b{self.F_bs}"
        if self.F_rope != 'no': n += f'_r{self.F_rope}'
        else: n += '_nrope'
        if self.F_pagedkv == 't': n += '_pagedkv'
        else: n += '_npagedkv'
        return n

    @property
    def filename(self) -> str:
        return self.name + ".cpp"

    @property
    def template(self) -> str:
        return TOY2_KERNEL.format(F_hdim=self.F_hdim, F_dtype=DTYPE_MAP[self.F_dtype], F_bs=self.F_bs,
                                  F_rope=ROPE_MAP[self.F_rope], F_pagedkv=BOOL_MAP[self.F_pagedkv])


def get_toy2_blobs(kernel_filter: Optional[str], receipt, optdim_list) -> Tuple[str, List[Toy2Kernel]]:
    gen = list()
    inners = str()
    for dtype, hdim, rope, pagedkv in itertools.product(['fp16', 'bf16'], [64, 128], ROPE_MAP.keys(), ['t', 'f']):
        if hdim == 64 and rope == 'half':
            # half-rotated rope needs at least 128 channels in the toy
            continue
        k = Toy2Kernel(F_hdim=hdim, F_dtype=dtype, F_bs=64 if hdim == 64 else 32, F_rope=rope, F_pagedkv=pagedkv)
        if kernel_filter:
            if not fnmatch.fnmatch(k.name, kernel_filter):
                continue
        if optdim_list != [-1] and hdim not in optdim_list:
            continue
        if receipt == 2 and rope != 'no':
            continue
        inners = inners + TOY2_API_INNER.format(F_if='if' if not gen else 'else if', F_dtype_name=dtype,
                                                F_hdim=hdim, F_dtype=DTYPE_MAP[dtype], F_bs=k.F_bs,
                                                F_rope=ROPE_MAP[rope], F_pagedkv=BOOL_MAP[pagedkv])
        gen.append(k)
    return TOY2_API.format(F_dispatch=inners), gen


def write_blobs(output_dir: Path, kernel_filter: str, receipt, optdim_list, mask_impl) -> None:
    api, kernels = get_toy2_blobs(kernel_filter, receipt, optdim_list)
    for kernel in kernels:
        (output_dir / kernel.filename).write_text(kernel.template)
    (output_dir / TOY2_API_FILENAME).write_text(api)


def list_blobs(file_path: Path, kernel_filter: str, receipt, optdim_list, mask_impl) -> None:
    _, kernels = get_toy2_blobs(kernel_filter, receipt, optdim_list)
    with file_path.open('a') as f:
        for kernel in kernels:
            f.write(str(file_path.parent / GEN_DIR / kernel.filename) + '\n')
        f.write(str(file_path.parent / GEN_DIR / TOY2_API_FILENAME) + '\n')
'''

_SLOT = re.compile(r"@@([A-Z0-9_]+)@@")


def _fill(template: str, slots: Dict[str, str]) -> str:
    """Fill ``@@NAME@@`` slots; a line holding only an empty slot disappears."""
    lines = []
    for line in template.splitlines(keepends=True):
        stripped = line.strip()
        match = _SLOT.fullmatch(stripped)
        if match and slots[match.group(1)] == "":
            continue
        lines.append(line)
    text = "".join(lines)
    text = _SLOT.sub(lambda m: slots[m.group(1)], text)
    leftover = _SLOT.search(text)
    assert leftover is None, f"unfilled slot {leftover.group(0)}"
    return text


# ----------------------------------------------------------- dispatch and receipt mutants

_V2_V3_FOOTER = r"""
TOY_API_FOOTER = \"\"\"
float fmha_toy(fmha_toy_traits t, fmha_toy_args a, const tile::stream_config& s)
{{
    const bool can_dispatch_v3 = (t.hdim_q == 128) and (t.bias_type == bias_enum::no_bias) and (not t.has_lse);
    if ({F_is_v3_enabled} and can_dispatch_v3) {{
        return fmha_toy_v3(t, a, s);
    }} else {{
        return fmha_toy_v2(t, a, s);
    }}
}}
\"\"\"

# NOTE: enable the v3 path when ready
V3_ENABLED = False


def is_v3(k) -> bool:
    return k.F_hdim == 128 and k.F_pipeline.F_bias == 'no' and k.F_pipeline.F_lse == 'f' and k.F_mode == 'batch'
"""


_V3_FIRST_ENTRY = r"""
float fmha_toy(fmha_toy_traits t, fmha_toy_args a, const tile::stream_config& s)
{{
    if (a.max_seqlen_q > 1) {{
        float r = fmha_toy_v3(t, a, s);
        if (r >= 0) return r;
    }}
    return fmha_toy_v2(t, a, s);
}}
"""


def _v3_first(text: str) -> str:
    """``v2_v3`` whose entry tries v3 first for ``a.max_seqlen_q > 1`` (2026 CK)."""
    text = _v2_v3(text)
    start = text.index("float fmha_toy(fmha_toy_traits t", text.index("TOY_API_FOOTER"))
    end = text.index('"""', start)
    return text[:start] + _V3_FIRST_ENTRY.lstrip("\n") + text[end:]


def _v2_v3(text: str) -> str:
    """Two dispatch functions and an entry that calls v3 under a disabled condition."""
    old_head = "    @property\n    def api(self) -> str:\n        per_dtypes = str()"
    new_head = ("    @property\n    def api(self) -> str:\n"
                "        return (self.render('fmha_toy_v2', lambda k: not is_v3(k))\n"
                "                + self.render('fmha_toy_v3', is_v3)\n"
                "                + TOY_API_FOOTER.format(F_is_v3_enabled=BOOL_MAP['t' if V3_ENABLED else 'f']))\n\n"
                "    def render(self, func_name, accept) -> str:\n        per_dtypes = str()")
    old_loop = "for n, k in enumerate(self.pool[dtype][hdim]):"
    new_loop = "for n, k in enumerate([k for k in self.pool[dtype][hdim] if accept(k)]):"
    old_ret = "return TOY_API_HEADER.format(F_dispatch=per_dtypes)"
    new_ret = ("return TOY_API_HEADER.replace('float fmha_toy(', 'static float ' + func_name + '(')"
               ".format(F_dispatch=per_dtypes)")
    for old, new in ((old_head, new_head), (old_loop, new_loop), (old_ret, new_ret)):
        assert old in text, old
        text = text.replace(old, new)
    anchor = 'TOY_API_FILENAME = "fmha_toy_api.cpp"'
    return text.replace(anchor, anchor + "\n" + _V2_V3_FOOTER.replace('\\"', '"'))


_RULE_RECEIPTS = r"""

@dataclass(frozen=True)
class Product:
    name: str
    rule: Callable

    def __call__(self, dtype, mode, pipeline) -> bool:
        return self.rule(dtype, mode, pipeline)


def get_product(receipt: int) -> Product:
    # a small set for integration tests
    if receipt == 2:
        def fit(dtype, mode, pipeline) -> bool:
            cond = dtype == 'fp16'
            cond &= mode == 'batch'
            cond &= pipeline.F_bias == 'no'
            return cond
        return Product(name="integration tests", rule=fit)
    # inference only
    elif receipt == 3:
        def fit(dtype, mode, pipeline) -> bool:
            return pipeline.F_lse == 'f'
        return Product(name="inference only", rule=fit)
    else:
        def fit(dtype, mode, pipeline) -> bool:
            return True
        return Product(name="Default", rule=fit)
"""


def _rule_receipts(text: str) -> str:
    """Receipt rules as objects returned per receipt instead of ``if receipt`` blocks."""
    start = text.index("                # 2: a small set for integration tests")
    end = text.index("                api_pool.register_traits(k)")
    text = (text[:start] + "                if not get_product(receipt)(dtype, mode, pipeline):\n"
            "                    continue\n" + text[end:])
    text = text.replace("from typing import Dict, List, Optional, Tuple",
                        "from typing import Callable, Dict, List, Optional, Tuple")
    anchor = "def get_toy_blobs("
    return text.replace(anchor, _RULE_RECEIPTS.lstrip("\n") + "\n\n" + anchor, 1)


_RULE_FUNCTIONS = r"""
class ToyRules:
    @staticmethod
    def get_rules() -> List[Callable[[ToyKernel], bool]]:
        # a group has one seqlen per batch, so only seqlen-padded kernels fit it
        def padded_groups(kernel: ToyKernel) -> bool:
            if kernel.F_mode == 'group':
                if kernel.F_pipeline.F_spad != 't':
                    return False
            return True

        return [padded_groups]


class InferenceTileRules(ToyRules):
    @classmethod
    def get_rules(cls) -> List[Callable[[ToyKernel], bool]]:
        rules = ToyRules.get_rules()

        def pinned_without_lse(kernel: ToyKernel) -> bool:
            # a pinned occupancy is tuned for inference, which stores no lse
            pinned = kernel.F_tile.F_occupancy != -1
            if pinned:
                return kernel.F_pipeline.F_lse == 'f'
            else:
                return True

        rules.append(pinned_without_lse)
        return rules


class WideTileRules(InferenceTileRules):
    @classmethod
    def get_rules(cls) -> List[Callable[[ToyKernel], bool]]:
        def wide_groups_fp16_only(kernel: ToyKernel) -> bool:
            if kernel.F_tile.F_bn0 < 128:
                return True
            return kernel.F_dtype == 'fp16' or kernel.F_mode == 'batch'

        return [*super().get_rules(), wide_groups_fp16_only]
"""


def _rule_functions(text: str) -> str:
    """The loop's two skip rules as rule functions handed out by rule classes, plus one."""
    start = text.index("                if mode == 'group' and pipeline.F_spad != 't':")
    end = text.index("                k = ToyKernel(")
    make = text.index("\n", text.index("F_pipeline=pipeline, mask_impl=mask_impl)", end)) + 1
    text = (text[:start] + text[end:make]
            + "                if not all(keep(k) for keep in WideTileRules.get_rules()):\n"
            "                    continue\n" + text[make:])
    text = text.replace("from typing import Dict, List, Optional, Tuple",
                        "from typing import Callable, Dict, List, Optional, Tuple")
    anchor = "class ToyApiPool:"
    return text.replace(anchor, _RULE_FUNCTIONS.lstrip("\n") + "\n\n" + anchor, 1)


_DISPATCH_MUTANTS = {"v2_v3": _v2_v3, "v3_first": _v3_first, "rule_receipts": _rule_receipts,
                     "rule_functions": _rule_functions}


def _toy_module(variant: str) -> str:
    slots = dict(_BASE_SLOTS)
    extra = {
        "new_flag": _NEW_FLAG_SLOTS,
        "pad_numbers": _PAD_NUMBERS_SLOTS,
        "absent_when_off": _ABSENT_WHEN_OFF_SLOTS,
        "at_split": _AT_SPLIT_SLOTS,
    }.get(variant, {})
    slots.update(extra)
    text = _fill(_TOY_MODULE, slots)
    if variant == "renamed_field":
        assert "F_spad" in text
        text = text.replace("F_spad", "F_seqpad")
    if variant in _DISPATCH_MUTANTS:
        text = _DISPATCH_MUTANTS[variant](text)
    return text


def tree_files(variant: str = "base") -> Dict[str, str]:
    """{path relative to the CK root: text} of a synthetic tree."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    fmha = "example/ck_tile/01_fmha"
    files = {
        f"{fmha}/generate.py": _GENERATE_PY,
        f"{fmha}/codegen/__init__.py": _PKG_INIT,
        f"{fmha}/codegen/ops/__init__.py": _PKG_INIT,
        f"{fmha}/codegen/cmake_config.py": _CMAKE_CONFIG,
        f"{fmha}/codegen/cpp_symbol_map.py": _CPP_SYMBOL_MAP,
        f"{fmha}/codegen/ops/fmha_toy.py": _toy_module(variant),
    }
    if variant == "new_api":
        files[f"{fmha}/codegen/ops/fmha_toy2.py"] = _TOY2_MODULE
    return files


def make_tree(tmp_path: Union[str, os.PathLike[str]], variant: str = "base") -> Path:
    """Write the synthetic tree ``variant`` below ``tmp_path``; return its CK root.

    The CK root is ``<tmp_path>/ck_<variant>`` so several variants can share one
    temporary folder.
    """
    files = tree_files(variant)
    root = Path(tmp_path) / f"ck_{variant}"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
