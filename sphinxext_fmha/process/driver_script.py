"""Run a tree's generate.py once for the union of several ``-f`` filters.

Executed as a script by the interpreter that runs generate.py (standard library only).
generate.py takes one filter and rewrites the API dispatch file on every run; here it
runs once, with the first filter on its command line and ``fnmatch.fnmatch`` widened so
that a name passes when it matches the same part of ANY of the filters. One run, one
consistent dispatch file for everything selected.

usage: driver_script.py FMHA_DIR SEPARATOR FILTER [FILTER ...] -- GENERATE_ARGS...
"""

import fnmatch
import os
import runpy
import sys

ORIGINAL = fnmatch.fnmatch


def main():
    fmha_dir, separator = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    cut = rest.index("--")
    filters, generate_args = rest[:cut], rest[cut + 1:]
    split = [f.split(separator) if separator else [f] for f in filters]
    first = split[0]

    def widened(name, pattern):
        for position, part in enumerate(first):
            if pattern == part:
                return any(position < len(parts) and ORIGINAL(name, parts[position])
                           for parts in split)
        return ORIGINAL(name, pattern)

    fnmatch.fnmatch = widened
    sys.dont_write_bytecode = True
    sys.path.insert(0, fmha_dir)
    os.chdir(fmha_dir)
    sys.argv = ["generate.py"] + generate_args + ["-f", filters[0]]
    runpy.run_path(os.path.join(fmha_dir, "generate.py"), run_name="__main__")


if __name__ == "__main__":
    main()
