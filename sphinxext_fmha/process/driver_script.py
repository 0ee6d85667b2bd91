"""Run a tree's generate.py once for the union of several ``-f`` filters.

Executed as a script by the interpreter that runs generate.py (standard library only).
generate.py takes one filter and rewrites the API dispatch file on every run; here it
runs once, with the first filter on its command line and ``fnmatch.fnmatch`` widened so
that a name passes when it matches the same part of ANY of the filters. One run, one
consistent dispatch file for everything selected.

The batch (``batch_script.py``) loads this file by path and runs the same widening as
one of its jobs: :func:`widened` and :func:`generate_argv` are what both share.

A name is not matched against each filter in turn: generate.py asks once per kernel,
and thousands of filters (every kernel of a deployment, by name) made that the number
of kernels times the number of filters in Python calls, with ``fnmatch``'s cache of
compiled patterns (32,768) thrashing beyond that. The filters' parts are sorted once
(:func:`any_of`): names without wildcards into a set, ``PREFIX*`` by their prefixes,
the rest into a few regular expressions of many alternatives each, so the work grows
with the number of filters only where they have wildcards, and then in C.

usage: driver_script.py FMHA_DIR SEPARATOR FILTER [FILTER ...] -- GENERATE_ARGS...
"""

import fnmatch
import os
import re
import runpy
import sys

#: fnmatch as this interpreter has it before anything replaces it: the matchers of
#: :func:`any_of` give its answers
REAL_FNMATCH = fnmatch.fnmatch
_WILDCARD = re.compile(r"[*?\[]")
#: Patterns per regular expression: a name is tried against each alternative in turn
#: either way; fewer, larger expressions only cost more to compile at once.
CHUNK = 256


def widened(filters, separator, original):
    """``fnmatch.fnmatch`` for the union of ``filters``: a pattern that is a part of the
    first filter (the one on the command line) matches when the same part of any
    filter matches; any other pattern is matched by ``original``."""
    split = [f.split(separator) if separator else [f] for f in filters]
    first = split[0]
    unions = {}

    def match(name, pattern):
        for position, part in enumerate(first):
            if pattern == part:
                if position not in unions:
                    unions[position] = any_of([parts[position] for parts in split
                                               if position < len(parts)], original)
                return unions[position](name)
        return original(name, pattern)

    return match


def any_of(patterns, original):
    """A function of a name: whether ``original(name, pattern)`` holds for any of
    ``patterns`` (in their order: a pattern fnmatch cannot compile raises as it would
    there). Sorted as the module docstring says when ``original`` is fnmatch itself."""
    patterns = list(dict.fromkeys(patterns))
    if original is not REAL_FNMATCH:
        return lambda name: any(original(name, pattern) for pattern in patterns)
    normcase = os.path.normcase
    exact, prefixes, rest = set(), set(), []
    for pattern in map(normcase, patterns):
        if not _WILDCARD.search(pattern):
            exact.add(pattern)
        elif pattern.endswith("*") and not _WILDCARD.search(pattern[:-1]):
            prefixes.add(pattern[:-1])
        else:
            rest.append(pattern)
    lengths = sorted({len(prefix) for prefix in prefixes})
    try:
        regexes = [re.compile("|".join(fnmatch.translate(p) for p in rest[i:i + CHUNK]))
                   for i in range(0, len(rest), CHUNK)]
    except re.error:  # one of them is not a pattern: fnmatch raises at it, in order
        return lambda name: any(original(name, pattern) for pattern in patterns)

    def matches(name):
        name = normcase(name)
        return (name in exact or any(name[:n] in prefixes for n in lengths)
                or any(regex.match(name) for regex in regexes))

    return matches


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
