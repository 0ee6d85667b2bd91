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


def _then(fn, after):
    """``fn`` (a property getter or ``__init__``) with ``after(obj, its result)`` called."""
    @functools.wraps(fn)
    def wrapped(obj, *args, **kwargs):
        value = fn(obj, *args, **kwargs)
        after(obj, value)
        return value

    wrapped._fmha_probe = True
    return wrapped


def _hooked(fn):
    return getattr(getattr(fn, "fget", fn), "_fmha_probe", False)


class Recorder:
    """What the hooks see while generate.py runs in this process; ``run``: runs it
    (``probe_script.run_generate``), ``calls``: the factories' ``probe_calls.CallLog``."""

    def __init__(self, fmha_dir, run, calls):
        self.fmha_dir = os.path.realpath(fmha_dir)
        self.codegen = os.path.join(self.fmha_dir, "codegen")
        self.run, self.calls = run, calls
        self.objects, self.seen_ids, self.kernel_classes, self.pools = [], set(), {}, []
        self.fnmatch_calls = []
        # None: the real fnmatch, every call recorded; N: the first N recorded and True,
        # then False
        self.pass_first = None
        self.stop_after = None  # N: the call after the first N ends the run (marker runs)
        self.stop = None  # the ObservedEnough raised in this run, if any
        # the last kernel object named, and each kernel class's filename getter: an
        # fnmatch call on that name is tied to its file (names repeat across archs)
        self.last_named, self.filename_getters = None, {}
        # None, or the run's kernel objects made and fnmatch calls (indexes), in order
        self.events = None

    def patch_module(self, module):
        path = getattr(module, "__file__", None) or ""
        if not os.path.realpath(path).startswith(self.codegen):
            return
        self.calls.wrap_module(module)
        for cls in list(vars(module).values()):
            if not isinstance(cls, type) or cls.__module__ != module.__name__:
                continue
            if isinstance(cls.__dict__.get("api"), property) and not _hooked(cls.__init__):
                # its instances are the API pools write mode renders into the dispatch file
                cls.__init__ = _then(cls.__init__, lambda obj, _: self.pools.append(obj))
            prop = cls.__dict__.get("filename")
            if not isinstance(prop, property) or _hooked(prop):
                continue
            self.filename_getters[cls] = prop.fget
            hooks = {"filename": self._seen, "__init__": self._made, "name": self._named}
            for attr, after in hooks.items():
                own = cls.__dict__.get(attr)
                if own is not None and (attr == "__init__" or isinstance(own, property)) \
                        and not _hooked(own):
                    setattr(cls, attr, _then(own, after) if attr == "__init__" else property(
                        _then(own.fget, after), own.fset, own.fdel, own.__doc__))
            line, doc = _class_place(cls, path)
            self.kernel_classes["%s.%s" % (module.__name__, cls.__name__)] = {
                "class": cls.__name__, "line": line, "doc": doc,
                "file": os.path.relpath(os.path.realpath(path), self.fmha_dir).replace(os.sep, "/")}

    def listed_kernels(self, listing):
        """(file, object) of the kernel objects whose file is listed, by file."""
        by_filename = {}
        for obj in self.objects:
            try:
                by_filename.setdefault(obj.filename, obj)
            except Exception:  # noqa: BLE001 - a broken object is reported as missing
                continue
        listed = set(listing)
        return sorted((item for item in by_filename.items() if item[0] in listed),
                      key=lambda item: item[0])

    def codegen_modules(self):
        """The modules imported from the tree's ``codegen/``."""
        return [m for m in list(sys.modules.values())
                if os.path.realpath(getattr(m, "__file__", "") or "").startswith(self.codegen)]

    def _seen(self, obj, _filename):
        if id(obj) not in self.seen_ids:
            self.seen_ids.add(id(obj))
            self.objects.append(obj)

    def _named(self, obj, name):
        self.last_named = (name, obj)

    def _made(self, obj, _none):
        """A kernel object made while :attr:`events` are recorded is one event."""
        if self.events is not None:
            self.events.append(obj)

    def file_of(self, obj):
        """The file of a kernel object, read with its class's own getter (None: none)."""
        getter = self.filename_getters.get(type(obj))
        try:
            return getter(obj) if getter is not None else None
        except Exception:  # noqa: BLE001 - a broken object has no file
            return None

    def fnmatch_hook(self, name, pattern):
        calls = len(self.fnmatch_calls)
        if self.stop_after is not None and calls >= self.stop_after:
            self.stop = ObservedEnough()
            raise self.stop
        if self.pass_first is None or calls < self.pass_first:
            # tied to the file of the kernel object whose name was just computed
            last = self.last_named
            self.fnmatch_calls.append((str(pattern), str(name), self.file_of(last[1])
                                       if last is not None and last[0] == name else None))
            if self.events is not None:
                self.events.append(calls)
        if self.pass_first is None:
            return ORIGINAL_FNMATCH(name, pattern)
        # Let the first calls pass so every filter part is seen once per trait, then
        # refuse everything: nothing more is registered and slow APIs end early.
        return calls < self.pass_first

    def untested(self, obj, listed, tested):
        """Whether a kernel object's file is listed and ``tested`` has neither it nor the
        object's name."""
        filename = self.file_of(obj)
        if filename not in listed or filename in tested:
            return False
        try:
            return str(obj.name) not in tested
        except Exception:  # noqa: BLE001 - no name: the file alone identifies it
            return True


def filter_runs(recorder, fmha_dir, argv, parts, next_api, listing, records, cap):
    """How ``-f`` travels: ``parts`` joined by ``@`` and another API's part (``next_api``)
    show which part each kernel class is matched against, a single part what missing
    parts become, ``@@@`` and an empty filter what reaches fnmatch. The first ``cap``
    calls of each run ({result key: calls}), and the other result entries."""
    marker_filter = "@".join(parts) + "," + next_api
    calls = {"unfiltered_calls": recorder.fnmatch_calls}
    recorder.pass_first = cap
    ends, errors, untested, listed = [], [], [], set(listing)
    recorder.events = []  # kernels made in the window: does one come without its own test?
    for key, pattern in (("fnmatch_calls", marker_filter), ("single_part_calls", parts[0]),
                         ("empty_parts_calls", "@" * (len(parts) - 1)),
                         ("empty_filter_calls", "")):
        # each run ends stopped at the call after the cap, complete with fewer calls, or,
        # the codegen having caught the stop, run again to its end
        run_argv = list(argv) + ["-f", pattern]
        recorder.fnmatch_calls, recorder.stop, recorder.stop_after = [], None, cap
        _, error = recorder.run(fmha_dir, run_argv)
        recorder.stop_after = None
        if recorder.stop is not None and not recorder.stop.reached:
            recorder.fnmatch_calls, recorder.stop = [], None
            recorder.events = None if recorder.events is None else []
            _, error = recorder.run(fmha_dir, run_argv)
            ends.append("ran again")
        else:
            ends.append("complete" if recorder.stop is None else "stopped")
        calls[key] = recorder.fnmatch_calls
        errors.append(error)
        if recorder.events is not None:
            # made between the run's first and last call, tested by none (a ``_64bit``
            # twin made after its kernel passed; after the last, the next may test it)
            events, tested = recorder.events, _tested(recorder.fnmatch_calls)
            positions = [i for i, e in enumerate(events) if isinstance(e, int)] or [0, 0]
            untested = [recorder.file_of(e) for e in events[positions[0]:positions[-1]]
                        if not isinstance(e, int) and recorder.untested(e, listed, tested)]
            recorder.events = None
    found = {"marker_filter": marker_filter, "marker_errors": [e for e in errors if e],
             "marker_runs": ends}
    if untested:
        started = time.time()
        found["followers"] = observe_followers(
            recorder, fmha_dir, list(argv) + ["-f", marker_filter], listing, records)
        found["seconds"] = {"followers": round(time.time() - started, 3)}
    return calls, found


def _tested(calls):
    return {name for _, name, _ in calls} | {f for _, _, f in calls if f}


def observe_followers(recorder, fmha_dir, argv, listing, records):
    """{listed kernel ``-f`` never tests: the kernel it follows} ({} when a run fails): of
    a run where every call passes, one no call tested and not made when every call fails
    follows the last call's kernel before it (the last runs of the recorder: its state is left)."""
    listed, by_name = set(listing), {}
    for record in records:
        by_name.setdefault(record["name"], set()).add(record["filename"])
    recorder.pass_first, recorder.fnmatch_calls, recorder.events = 1 << 62, [], []
    _, error = recorder.run(fmha_dir, argv)
    events, calls = recorder.events, recorder.fnmatch_calls
    recorder.pass_first, recorder.fnmatch_calls, recorder.events = 0, [], None
    generated_anyway, refused_error = recorder.run(fmha_dir, argv)
    if error or refused_error:
        return {}
    tested, anyway = _tested(calls), set(generated_anyway)
    followers, leader = {}, None
    for event in events:
        if isinstance(event, int):
            _, name, filename = calls[event]
            files = {filename} if filename else by_name.get(name, set())
            leader = next(iter(files)) if len(files) == 1 and files <= listed else None
        elif leader is not None and recorder.file_of(event) not in anyway \
                and recorder.untested(event, listed, tested):
            followers.setdefault(recorder.file_of(event), leader)
    return followers
