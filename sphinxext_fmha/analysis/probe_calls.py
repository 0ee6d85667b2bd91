"""What the codegen's factories return while generate.py runs: each call of a codegen
function or plain class's static/class method whose result holds dataclass objects (a
tile table), or nothing, kept with its arguments and the class it was made through; the
result copied at once (callers change it afterwards: a subclass adds to its base's table)."""

import dataclasses
import enum
import functools
import itertools
import os
import types

_SKIP = object()
_KINDS = {staticmethod: "static", classmethod: "class"}


class CallLog:
    def __init__(self, fmha_dir, scalars, is_object):
        """``scalars``, ``is_object``: probe_perturb's plain values and dataclass check."""
        self.fmha_dir, self.scalars, self.is_object = fmha_dir, scalars, is_object
        self.calls, self.watching, self.modules = [], False, set()
        self.classes = []  # the plain classes wrapped, in the order their modules ran

    def _kept(self, result):
        """A copy of a result worth keeping (None, empty, or holding dataclass objects);
        _SKIP for anything else."""
        is_object = self.is_object
        if result is None:
            return None
        if type(result) is dict:
            if result and not any(is_object(v[0] if v else None) if isinstance(v, (list, tuple))
                                  else is_object(v) for v in itertools.islice(result.values(), 4)):
                return _SKIP
            return {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in result.items()}
        if type(result) in (list, tuple) and not (result and not is_object(result[0])):
            return list(result)
        return _SKIP

    def wrap_module(self, module):
        """Wrap one codegen module's functions and its plain classes' static and class
        methods (while :attr:`watching`: the run being observed)."""
        if not self.watching:
            return
        name, classes = module.__name__, []
        self.modules.add(name)
        for attr, value in list(vars(module).items()):
            if isinstance(value, types.FunctionType) and value.__module__ == name \
                    and not hasattr(value, "_fmha_original"):
                setattr(module, attr, self._wrap(value, None, attr, "function"))
            elif isinstance(value, type) and value.__module__ == name \
                    and not dataclasses.is_dataclass(value) and not issubclass(value, enum.Enum):
                classes.append(value)
                for method, raw in list(vars(value).items()):  # its own (inherited: below)
                    kind = _KINDS.get(type(raw))
                    if kind and not method.startswith("__") \
                            and not hasattr(raw.__func__, "_fmha_original"):
                        setattr(value, method, type(raw)(self._wrap(raw.__func__, value, method,
                                                                    kind)))
        self.classes.extend(classes)
        self._wrap_inherited_statics(classes)

    def _wrap_inherited_statics(self, classes):
        """An inherited static method is known by the class it is called through only if
        that class has its own wrapper: set one where no subclass then inherits otherwise."""
        for cls in classes:
            subs = [c for c in classes if c is not cls and cls in c.__mro__]
            for attr in dir(cls):
                definer = _definer(cls, attr)
                if definer is None or definer is cls or definer.__module__ not in self.modules \
                        or not isinstance(vars(definer)[attr], staticmethod) \
                        or any(_shadows(sub, cls, attr, definer) for sub in subs):
                    continue
                fn = vars(definer)[attr].__func__
                fn = getattr(fn, "_fmha_original", fn)
                setattr(cls, attr, staticmethod(self._wrap(fn, cls, attr, "static")))

    def _wrap(self, fn, cls, attr, kind):
        log = self

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            result = fn(*args, **kwargs)
            if log.watching:
                kept = log._kept(result)
                if kept is not _SKIP:
                    if kind == "class":
                        # kept as the call of the class it was made through, unless that
                        # class has its own method (a super() call inside it)
                        through = args[0] if args and isinstance(args[0], type) else None
                        raw = _raw(through, attr) if through is not None else None
                        if getattr(raw, "__func__", raw) is not wrapped:
                            return result
                        args = args[1:]
                    else:
                        through = cls
                    log.calls.append((through.__name__ if through is not None else "", attr,
                                      fn, kind, args, kwargs, kept))
            return result

        wrapped._fmha_original = fn
        return wrapped

    def ask_the_others(self, part_types):
        """Call each tile method the run called (its result held ``part_types``) through
        every other wrapped class that has it, with the run's arguments: kept as asked."""
        asked = {}  # method -> the argument sets the run used
        through = {}  # method -> the classes the run called it through
        for name, attr, _, kind, args, kwargs, kept in list(self.calls):
            values = kept.values() if isinstance(kept, dict) else [kept] if kept is not None else []
            if kind == "function" or not any(type(o) in part_types for v in values
                                             for o in (v if isinstance(v, list) else [v])):
                continue
            if (args, kwargs) not in asked.setdefault(attr, []):
                asked[attr].append((args, kwargs))
            through.setdefault(attr, set()).add(name)
        for attr, argument_sets in asked.items():
            for cls in self.classes:
                method = getattr(cls, attr, None)
                original = getattr(getattr(method, "__func__", method), "_fmha_original", None)
                if original is None or cls.__name__ in through[attr]:
                    continue
                kind = _KINDS.get(type(_raw(cls, attr)), "static")
                for args, kwargs in argument_sets:
                    try:
                        kept = self._kept(method(*args, **kwargs))
                    except (Exception, SystemExit):  # noqa: BLE001 - a table it does not have
                        continue
                    if kept is not _SKIP:
                        self.calls.append((cls.__name__, attr, original, kind, args, kwargs,
                                           kept, True))

    def summary(self, part_types):
        """{"calls": [...], "objects": [[class, name, scalar fields, notes]]} of the calls
        whose result is empty or holds objects of ``part_types``."""
        objects, index = [], {}

        def ref(obj):
            # an object is known by its class and own name (its fields are read once)
            try:
                name = obj.name
            except Exception:  # noqa: BLE001 - an object that cannot name itself
                name = None
            name = name if isinstance(name, str) else None
            key = (type(obj).__name__, name) if name is not None else id(obj)
            found = index.get(key)
            if found is None:
                fields, notes = {}, {}
                for f in dataclasses.fields(obj):
                    value = getattr(obj, f.name, None)
                    if isinstance(value, self.scalars):
                        fields[f.name] = value
                    elif _not_default(f, value):
                        notes[f.name] = str(value)
                found = index[key] = len(objects)
                objects.append([type(obj).__name__, name, fields, notes])
            return found

        calls, seen = [], set()
        for through, attr, fn, kind, args, kwargs, kept, *asked in self.calls:
            if isinstance(kept, dict):
                items = [(k, v if isinstance(v, list) else [v]) for k, v in kept.items()]
            else:
                items = [(None, kept)] if kept is not None else []
            # the parts of the listed kernels only (a table may list pipeline names
            # beside its tiles); a result that holds other objects only is no table
            found = any(self.is_object(o) for _, objs in items for o in objs)
            items = [(k, [o for o in objs if type(o) in part_types]) for k, objs in items]
            if found and not any(objs for _, objs in items):
                continue
            code = fn.__code__
            names = code.co_varnames[kind == "class":code.co_argcount]
            params = {k: v for k, v in {**dict(zip(names, args)), **kwargs}.items()
                      if isinstance(v, self.scalars)}
            result = None if kept is None else (
                {"keys": [[_key_text(k), [ref(o) for o in objs]] for k, objs in items]}
                if isinstance(kept, dict) else {"items": [ref(o) for _, objs in items for o in objs]})
            entry = {"through": through, "kind": kind, "method": attr, "params": params,
                     "result": result, "asked": bool(asked),
                     "where": "%s:%d" % (os.path.relpath(code.co_filename, self.fmha_dir)
                                         .replace(os.sep, "/"), code.co_firstlineno)}
            text = repr(sorted(entry.items()))
            if text not in seen:
                seen.add(text)
                calls.append(entry)
        return {"calls": calls, "objects": objects}


def _definer(cls, attr):
    """The class whose own attribute ``cls.attr`` is, or None."""
    return next((base for base in cls.__mro__ if attr in vars(base)), None)


def _raw(cls, attr):
    """``cls.attr`` as its class body holds it (a staticmethod or classmethod object)."""
    definer = _definer(cls, attr)
    return vars(definer)[attr] if definer is not None else None


def _shadows(sub, cls, attr, definer):
    """Whether ``cls.attr`` set would hide from ``sub`` what it inherits from another class
    than ``definer`` (a diamond's other branch)."""
    own = _definer(sub, attr)
    return own is not definer and sub.__mro__.index(own) > sub.__mro__.index(cls)


def _not_default(field, value):
    """Whether a field holds other than its default (a field without one: no)."""
    missing, factory = dataclasses.MISSING, field.default_factory
    try:
        default = factory() if field.default is missing and factory is not missing \
            else field.default
        return default is not missing and value != default
    except Exception:  # noqa: BLE001 - a value that cannot be compared is not noted
        return False


def _key_text(key):
    """A table key as the static reading writes it (tuples without quotes)."""
    if isinstance(key, tuple):
        return "(" + ", ".join(_key_text(k) for k in key) + ")"
    return str(key)
