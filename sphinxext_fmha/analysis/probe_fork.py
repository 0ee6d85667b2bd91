"""Work forked to a child of the probe or batch interpreter, its result sent back as
JSON through a pipe.

Loaded by ``probe_script.py`` (by its path): standard library only.
"""

import json
import os

#: Below this many kernel texts a second process costs more than it saves.
PARALLEL_TEXTS = 400


def keys_of(trait_key, texts):
    """``trait_key`` of every text, on two cores when there are many: a forked child
    reads the second half from memory it shares with this process and sends its keys
    back through a pipe. Whatever goes wrong there, this process computes them itself."""
    half = len(texts) // 2
    forked = None
    if len(texts) >= PARALLEL_TEXTS:
        forked = fork_json(lambda: [trait_key(text) for text in texts[half:]])
    if forked is None:
        return [trait_key(text) for text in texts]
    first = [trait_key(text) for text in texts[:half]]
    second = collect_json(forked)
    if not isinstance(second, list) or len(second) != len(texts) - half:
        second = [trait_key(text) for text in texts[half:]]
    return first + second


def fork_json(compute):
    """Fork a child that sends ``compute()`` as JSON through a pipe and leaves without
    running any exit handler; (pid, read end), or None where this system cannot fork."""
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
