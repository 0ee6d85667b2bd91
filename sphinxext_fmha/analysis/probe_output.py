"""Work forked to a child, sent back as JSON through a pipe; the probe's result as
written: fnmatch logs compressed, record fields shared, JSON written whole."""

import json
import os
import sys
import traceback

#: Below this many kernel texts a second process costs more than it saves.
PARALLEL_TEXTS = 400


def keys_of(trait_key, texts):
    """``trait_key`` of every text, on two cores when there are many: a forked child
    sends the second half's keys (whatever goes wrong there, this process computes them)."""
    half = len(texts) // 2
    forked = fork_json(lambda: [trait_key(text) for text in texts[half:]]) \
        if len(texts) >= PARALLEL_TEXTS else None
    first = [trait_key(text) for text in texts[:half]]
    second = collect_json(forked) if forked is not None else None
    if not isinstance(second, list) or len(second) != len(texts) - half:
        second = [trait_key(text) for text in texts[half:]]
    return first + second


def fork_json(compute):
    """Fork a child that sends ``compute()`` as JSON through a pipe, running no exit
    handler; (pid, read end), or None where this system cannot fork."""
    if not hasattr(os, "fork"):
        return None
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:
        try:
            os.close(read_end)
            data = json.dumps(compute()).encode("utf-8")
            with os.fdopen(write_end, "wb") as out:
                out.write(data)
        finally:
            os._exit(0)
    os.close(write_end)
    return pid, read_end


def collect_json(forked):
    """What the child of :func:`fork_json` sent, once it has ended; None when it sent
    no JSON (it failed)."""
    pid, read_end = forked
    with os.fdopen(read_end, "rb") as handle:
        data = handle.read()
    os.waitpid(pid, 0)
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError:
        return None


def summarise_calls(calls, record_of, raw_up_to):
    """An fnmatch log as trait groups (calls up to a repeated pattern) of [pattern index,
    record index] (``record_of`` the call's file, else name; -2 - k: the k-th name in
    ``unlisted``); up to ``raw_up_to`` calls, the calls too (``raw``)."""
    pattern_index, groups, unlisted = {}, [], {}
    current, current_patterns = [], set()
    for pattern, name, filename in calls:
        index = record_of.get(("file", filename), record_of.get(name, -1))
        if index == -1:
            index = -2 - unlisted.setdefault(name, len(unlisted))
        if pattern in current_patterns:
            groups.append(current)
            current, current_patterns = [], set()
        current.append([pattern_index.setdefault(pattern, len(pattern_index)), index])
        current_patterns.add(pattern)
    if current:
        groups.append(current)
    summary = {"groups": groups, "unlisted": list(unlisted)}
    if len(calls) <= raw_up_to:
        summary["raw"] = [list(call[:2]) for call in calls]
    return summary


#: Record fields a few distinct values fill in thousands of records (share_record_fields)
SHARED_RECORD_FIELDS = ("influence", "parts")


def share_record_fields(result):
    """``result`` as written, changed in place: each distinct value of a
    SHARED_RECORD_FIELDS field written once in ``result["record_tables"][field]``, each
    record holding its index (``observe.read_result`` puts them back). 2.8.3's bwd: 7,824
    records, 8 influence tables, 5 part lists, a third of the result written in full."""
    records = result.get("records") or []
    tables = {}
    for field in SHARED_RECORD_FIELDS:
        if not all(isinstance(record.get(field), dict) for record in records):
            continue  # not filled (no perturbation): nothing to share
        # repr: made in C, equal only for equal JSON data (dicts differing in order only
        # are kept twice)
        index = {}
        for record in records:
            record[field] = index.setdefault(repr(record[field]), (len(index), record[field]))[0]
        tables[field] = [value for _, value in index.values()]
    if records and tables:
        result["record_tables"] = tables
    return result


def write_whole(path, data):
    """``data`` as JSON in ``path``, renamed into place: a reader that sees the file
    sees all of it."""
    part = path + ".part"
    with open(part, "wb") as handle:
        handle.write(json_bytes(data))
    os.replace(part, path)


def json_bytes(data):
    """``data`` as key-sorted JSON: by orjson where generate.py's interpreter has it (2.8.3
    bwd's 34 MB in 0.04 s, not 0.4 s), else by ``json`` behind a blank, telling the reader
    (``cache.load_json``) to use ``json`` too (orjson reads an int beyond 64 bits as a
    float). Imported after the runs: generate.py saw the modules a new process has."""
    try:
        import orjson  # noqa: PLC0415 - optional, and only once the runs are over
        return orjson.dumps(data, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except (ImportError, TypeError, ValueError):  # absent, or a value it refuses
        return b" " + json.dumps(data, sort_keys=True).encode("ascii")


def codegen_traceback(limit=8):
    """The exception being handled, as ``traceback.format_exc(limit=-limit)`` says it but
    without this package's frames (the probe's wrappers around the codegen's calls): a
    failure of generate.py reads as generate.py's own; one raised in this package (a
    fault of ours) keeps every frame."""
    kind, value, tb = sys.exc_info()
    own = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frames = traceback.extract_tb(tb)
    if frames and not os.path.abspath(frames[-1].filename).startswith(own):
        frames = [f for f in frames if not os.path.abspath(f.filename).startswith(own)]
    return "".join(["Traceback (most recent call last):\n", *traceback.format_list(frames[-limit:]),
                    *traceback.format_exception_only(kind, value)])

