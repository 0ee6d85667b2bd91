"""The probe's hooks (:class:`Recorder`: the kernel objects whose file name is asked for,
the fnmatch calls), and the runs that watch generate.py through them."""

import dataclasses
import fnmatch
import functools
import inspect
import linecache
import os
import re
import sys
import time

ORIGINAL_FNMATCH = fnmatch.fnmatch


def _class_place(cls, path):
    """(line of the ``class`` statement in ``path`` or 0, the class's own docstring)."""
    doc = cls.__dict__.get("__doc__") or ""
    if dataclasses.is_dataclass(cls) and doc.startswith(cls.__name__ + "("):
        doc = ""  # the signature @dataclass writes where the class has no docstring
    statement = re.compile(r"\s*class\s+%s\b" % re.escape(cls.__name__))
    line = next((number for number, text in enumerate(linecache.getlines(path), 1)
                 if statement.match(text)), 0)
    return line, inspect.cleandoc(doc).strip()


class ObservedEnough(BaseException):
    """Raised by the fnmatch hook in a marker run once the calls it observes are made (no
    ``except Exception`` of the codegen takes it; ``reached``: run_generate got it)."""

    def __init__(self):
        super().__init__("the observed fnmatch calls are complete")
        self.reached = False


class Recorder:
    """What the hooks see while generate.py runs in this process; ``run``: runs it
    (``probe_script.run_generate``), ``call_log``: makes a ``probe_calls.CallLog``."""

    def __init__(self, fmha_dir, run, call_log):
        self.fmha_dir = os.path.realpath(fmha_dir)
        self.run = run
        self.calls = call_log(self.fmha_dir)  # the factories' calls (probe_calls.py)
        self.objects = []
        self.seen_ids = set()
        self.kernel_classes = {}
        self.pools = []
        self.fnmatch_calls = []
        self.pass_first = None  # None: the real fnmatch; N: True for N calls, then False
        self.max_calls = None
        self.stop_after = None  # N: the call after the first N ends the run (marker runs)
        self.stop = None  # the ObservedEnough raised in this run, if any
        # the last kernel object named, and each kernel class's filename getter: an
        # fnmatch call on that name is tied to its file (names repeat across archs)
        self.last_named = None
        self.filename_getters = {}
        # None, or the run's kernel objects made and fnmatch calls (indexes), in order
        self.events = None

    def patch_module(self, module):
        path = getattr(module, "__file__", None) or ""
        if not os.path.realpath(path).startswith(os.path.join(self.fmha_dir, "codegen")):
            return
        self.calls.wrap_module(module)
        for value in list(vars(module).values()):
            if not isinstance(value, type) or value.__module__ != module.__name__:
                continue
            if isinstance(value.__dict__.get("api"), property) and \
                    not getattr(value.__init__, "_fmha_probe", False):
                # its instances are the API pools write mode renders into the dispatch file
                value.__init__ = _after_init(value.__init__, self.pools.append)
            prop = value.__dict__.get("filename")
            if isinstance(prop, property) and not getattr(prop.fget, "_fmha_probe", False):
                self.filename_getters[value] = prop.fget
                value.filename = _watched(prop, self._seen)
                init = value.__dict__.get("__init__")
                if init is not None and not getattr(init, "_fmha_probe", False):
                    value.__init__ = _after_init(init, self._made)
                name_prop = value.__dict__.get("name")
                if isinstance(name_prop, property) and not getattr(name_prop.fget, "_fmha_probe", False):
                    value.name = _watched(name_prop, self._named)
                rel = os.path.relpath(os.path.realpath(path), self.fmha_dir).replace(os.sep, "/")
                key = "%s.%s" % (module.__name__, value.__name__)
                line, doc = _class_place(value, path)
                self.kernel_classes[key] = {"class": value.__name__, "file": rel,
                                            "line": line, "doc": doc}

    def listed_kernels(self, listing):
        """(file, object) of the kernel objects whose file is listed, by file."""
        by_filename = {}
        for obj in self.objects:
            try:
                filename = obj.filename
            except Exception:  # noqa: BLE001 - a broken object is reported as missing
                continue
            by_filename.setdefault(filename, obj)
        listed = set(listing)
        return sorted(((fn, obj) for fn, obj in by_filename.items() if fn in listed),
                      key=lambda item: item[0])

    def codegen_modules(self):
        """The modules imported from the tree's ``codegen/``."""
        return [m for m in list(sys.modules.values())
                if os.path.realpath(getattr(m, "__file__", "") or "").startswith(
                    os.path.join(self.fmha_dir, "codegen"))]

    def _seen(self, obj, _filename):
        if id(obj) not in self.seen_ids:
            self.seen_ids.add(id(obj))
            self.objects.append(obj)

    def _named(self, obj, name):
        self.last_named = (name, obj)

    def file_of(self, name):
        """The file of the kernel object whose name was just computed, if it is ``name``."""
        last = self.last_named
        return kernel_file(self, last[1]) if last is not None and last[0] == name else None

    def _made(self, obj):
        """A kernel object made while :attr:`events` are recorded is one event."""
        if self.events is not None:
            self.events.append(obj)

    def fnmatch_hook(self, name, pattern):
        calls = len(self.fnmatch_calls)
        if self.stop_after is not None and calls >= self.stop_after:
            self.stop = ObservedEnough()
            raise self.stop
        if self.max_calls is None or calls < self.max_calls:
            self.fnmatch_calls.append((str(pattern), str(name), self.file_of(name)))
            if self.events is not None:
                self.events.append(calls)
        if self.pass_first is None:
            return ORIGINAL_FNMATCH(name, pattern)
        # Let the first calls pass so every filter part is seen once per trait, then
        # refuse everything: nothing more is registered and slow APIs end early.
        return calls < self.pass_first


def _watched(prop, after):
    """``prop`` with ``after(obj, value)`` called after each read of it."""
    @functools.wraps(prop.fget)
    def fget(obj):
        value = prop.fget(obj)
        after(obj, value)
        return value

    fget._fmha_probe = True
    return property(fget, prop.fset, prop.fdel, prop.__doc__)


def _after_init(init, after):
    """``init`` with ``after(obj)`` called once it has returned."""
    @functools.wraps(init)
    def wrapped(obj, *args, **kwargs):
        init(obj, *args, **kwargs)
        after(obj)

    wrapped._fmha_probe = True
    return wrapped


def filter_runs(recorder, fmha_dir, argv, parts, next_api, listing, records, cap):
    """How ``-f`` travels: ``parts`` joined by ``@`` and another API's part (``next_api``)
    show which part each kernel class is matched against, a single part what missing
    parts become, ``@@@`` and an empty filter what reaches fnmatch. The first ``cap``
    calls of each run ({result key: calls}), and the other result entries."""
    marker_filter = "@".join(parts) + "," + next_api
    calls = {"unfiltered_calls": recorder.fnmatch_calls}
    recorder.pass_first = recorder.max_calls = cap
    ends, errors, untested = [], [], []
    recorder.events = []  # kernels made in the window: does one come without its own test?
    for key, pattern in (("fnmatch_calls", marker_filter), ("single_part_calls", parts[0]),
                         ("empty_parts_calls", "@" * (len(parts) - 1)),
                         ("empty_filter_calls", "")):
        calls[key], error = marker_run(recorder, fmha_dir, list(argv) + ["-f", pattern], ends)
        errors.append(error)
        if recorder.events is not None:
            untested = untested_made(recorder, recorder.events, set(listing))
            recorder.events = None
    found = {"marker_filter": marker_filter, "marker_errors": [e for e in errors if e],
             "marker_runs": ends}
    if untested:
        started = time.time()
        found["followers"], found["followers_error"] = observe_followers(
            recorder, fmha_dir, list(argv) + ["-f", marker_filter], listing, records)
        found["seconds"] = {"followers": round(time.time() - started, 3)}
    return calls, found


def marker_run(recorder, fmha_dir, argv, ends):
    """The first ``recorder.max_calls`` fnmatch calls of ``generate.py argv`` and its error;
    ``ends`` gets how it ended: stopped at the next call ("stopped"), fewer calls
    ("complete"), or, the codegen having caught the stop, run again to its end."""
    recorder.fnmatch_calls, recorder.stop = [], None
    recorder.stop_after = recorder.max_calls
    try:
        _, error = recorder.run(fmha_dir, argv)
    finally:
        recorder.stop_after = None
    if recorder.stop is None:
        ends.append("complete")
    elif recorder.stop.reached:
        ends.append("stopped")
    else:
        recorder.fnmatch_calls, recorder.stop = [], None
        if recorder.events is not None:
            recorder.events = []
        _, error = recorder.run(fmha_dir, argv)
        ends.append("ran again")
    return recorder.fnmatch_calls, error


def kernel_file(recorder, obj):
    """The file of a kernel object, read with its class's own getter (None: none)."""
    getter = recorder.filename_getters.get(type(obj))
    try:
        return getter(obj) if getter is not None else None
    except Exception:  # noqa: BLE001 - a broken object has no file
        return None


def _untested(recorder, obj, listed, tested):
    """Whether a kernel object's file is listed and ``tested`` has neither it nor the
    object's name."""
    filename = kernel_file(recorder, obj)
    if filename not in listed or filename in tested:
        return False
    try:
        return str(obj.name) not in tested
    except Exception:  # noqa: BLE001 - no name: the file alone identifies it
        return True


def _tested(calls):
    return {name for _, name, _ in calls} | {f for _, _, f in calls if f}


def untested_made(recorder, events, listed):
    """Listed kernels made between the run's first and last fnmatch call that no call
    tested (a ``_64bit`` twin made after its kernel passed; after the last call, the next
    one may still test it)."""
    positions = [i for i, e in enumerate(events) if isinstance(e, int)]
    tested = _tested(recorder.fnmatch_calls)
    return [kernel_file(recorder, e) for e in events[positions[0]:positions[-1]]
            if not isinstance(e, int) and _untested(recorder, e, listed, tested)] \
        if positions else []


def observe_followers(recorder, fmha_dir, argv, listing, records):
    """({listed kernel ``-f`` never tests: the kernel it follows}, error): of a run where
    every call passes, one no call tested and not made when every call fails follows the
    last call's kernel before it."""
    listed = set(listing)
    by_name = {}
    for record in records:
        by_name.setdefault(record["name"], set()).add(record["filename"])
    saved = recorder.pass_first, recorder.max_calls
    try:
        recorder.pass_first, recorder.max_calls, recorder.fnmatch_calls = 1 << 62, None, []
        recorder.events = []
        _, error = recorder.run(fmha_dir, argv)
        events, calls = recorder.events, recorder.fnmatch_calls
        recorder.events = None
        recorder.pass_first, recorder.max_calls, recorder.fnmatch_calls = 0, 0, []
        generated_anyway, refused_error = recorder.run(fmha_dir, argv)
    finally:
        recorder.pass_first, recorder.max_calls = saved
        recorder.events, recorder.fnmatch_calls = None, []
    if error or refused_error:
        return {}, error or refused_error
    tested, anyway = _tested(calls), set(generated_anyway)
    followers, leader = {}, None
    for event in events:
        if isinstance(event, int):
            _, name, filename = calls[event]
            files = {filename} if filename else by_name.get(name, set())
            leader = next(iter(files)) if len(files) == 1 and files <= listed else None
        elif leader is not None and kernel_file(recorder, event) not in anyway \
                and _untested(recorder, event, listed, tested):
            followers.setdefault(kernel_file(recorder, event), leader)
    return followers, None
