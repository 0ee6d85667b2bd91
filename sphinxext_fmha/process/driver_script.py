"""Run a tree's generate.py once for the union of several ``-f`` filters.

Executed as a script by the interpreter that runs generate.py (standard library only).
generate.py takes one filter and rewrites the API dispatch file on every run; here it
runs once, with the first filter on its command line and ``fnmatch.fnmatch`` widened so
that a name passes when it matches the same part of ANY of the filters. One run, one
consistent dispatch file for everything selected.

The batch (``batch_script.py``) loads this file by path and runs the same widening as
one of its jobs: :func:`widened` and :func:`generate_argv` are what both share.

usage: driver_script.py FMHA_DIR SEPARATOR FILTER [FILTER ...] -- GENERATE_ARGS...
"""

import fnmatch
import os
import runpy
import sys


def widened(filters, separator, original):
    """``fnmatch.fnmatch`` for the union of ``filters``: a pattern that is a part of the
    first filter (the one on the command line) matches when the same part of any
    filter matches; any other pattern is matched by ``original``."""
    split = [f.split(separator) if separator else [f] for f in filters]
    first = split[0]

    def match(name, pattern):
        for position, part in enumerate(first):
            if pattern == part:
                return any(position < len(parts) and original(name, parts[position])
                           for parts in split)
        return original(name, pattern)

    return match


def generate_argv(filters, generate_args):
    """generate.py's arguments for the union: the first filter on the command line."""
    return list(generate_args) + ["-f", filters[0]]


def main():
    fmha_dir, separator = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    cut = rest.index("--")
    filters, generate_args = rest[:cut], rest[cut + 1:]
    fnmatch.fnmatch = widened(filters, separator, fnmatch.fnmatch)
    sys.dont_write_bytecode = True
    sys.path.insert(0, fmha_dir)
    os.chdir(fmha_dir)
    sys.argv = ["generate.py"] + generate_argv(filters, generate_args)
    runpy.run_path(os.path.join(fmha_dir, "generate.py"), run_name="__main__")


if __name__ == "__main__":
    main()
