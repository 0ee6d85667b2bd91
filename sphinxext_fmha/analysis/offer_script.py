"""``offer_script.py <01_fmha folder> <result.json>``, run by generate.py's interpreter
(stdlib only): generate.py runs up to ``parse_known_args``, which records the parser's
options and, among the asking frame's names, the handler table (a dict whose values hold
functions of one file, some in ``codegen/ops``); then the ``ArchTrait`` names it holds."""

import argparse
import json
import os
import runpy
import sys


class Seen(BaseException):
    """Stops generate.py once its arguments are asked for (``except Exception`` misses it)."""


def _in_tree(path, fmha_dir):
    """``path`` relative to ``fmha_dir`` if in it, as written or with links resolved (the
    store keys by the tree's content, not its place); else its real path."""
    for base, where in ((fmha_dir, os.path.abspath(path)),
                        (os.path.realpath(fmha_dir), os.path.realpath(path))):
        if where.startswith(base + os.sep):
            return os.path.relpath(where, base).replace(os.sep, "/")
    return os.path.realpath(path)


def _table(value, fmha_dir):
    """``{api: {"file", "module", "functions"}}`` if ``value`` is a handler table."""
    if not isinstance(value, dict) or not value:
        return None
    table = {}
    for key, entry in value.items():
        functions = [f for f in (entry if isinstance(entry, (tuple, list)) else (entry,))
                     if hasattr(f, "__code__")]
        files = {_in_tree(f.__code__.co_filename, fmha_dir) for f in functions}
        if not isinstance(key, str) or len(files) != 1:
            return None
        table[key] = {"file": files.pop(), "module": functions[0].__module__,
                      "functions": [f.__name__ for f in functions]}
    return table if any(e["file"].startswith("codegen/ops/") for e in table.values()) else None


def _arch_names(codegen_dir):
    held = []  # module and class attributes, and the items of those that are containers
    for module in list(sys.modules.values()):
        if os.path.realpath(getattr(module, "__file__", None) or "").startswith(codegen_dir):
            for value in list(vars(module).values()):
                held += [value] + (list(vars(value).values()) if isinstance(value, type) else [])
    held += [item for value in held if isinstance(value, (dict, list, tuple, set, frozenset))
             for item in (value.values() if isinstance(value, dict) else value)]
    return sorted({item.name for item in held if type(item).__name__ == "ArchTrait"
                   and isinstance(getattr(item, "name", None), str)})


def main():
    fmha_dir, out_path = os.path.abspath(sys.argv[1]), sys.argv[2]
    found = {"options": None, "table": None}
    original = argparse.ArgumentParser.parse_known_args

    def parse_known_args(parser, *args, **kwargs):
        frame = sys._getframe(1)
        while frame.f_globals.get("__name__") == "argparse":
            frame = frame.f_back
        found["options"] = [
            {"flags": list(a.option_strings) or [a.dest], "dest": a.dest,
             "default": None if a.default is None else str(a.default),
             "help": a.help if isinstance(a.help, str) else ""}
            for a in parser._actions if not isinstance(a, argparse._HelpAction)]
        for value in list(frame.f_locals.values()) + list(frame.f_globals.values()):
            found["table"] = found["table"] or _table(value, fmha_dir)
        raise Seen

    argparse.ArgumentParser.parse_known_args = parse_known_args
    sys.dont_write_bytecode = True
    sys.path.insert(0, fmha_dir)
    sys.argv = [os.path.join(fmha_dir, "generate.py")]
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except Seen:
        found["arch_names"] = _arch_names(os.path.realpath(os.path.join(fmha_dir, "codegen")) + os.sep)
    except SyntaxError as error:  # the tree's Python source, not its run: said as such
        found = {"syntax_error": [error.msg, [error.filename, error.lineno, error.offset,
                                              error.text]]}
    finally:
        argparse.ArgumentParser.parse_known_args = original
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump(found, handle)


if __name__ == "__main__":
    main()
