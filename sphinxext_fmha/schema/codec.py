"""The JSON form of the dataclasses (``to_json``/``from_json``)."""

from __future__ import annotations

import dataclasses
import json
import sys
import typing
from typing import Any, Dict, List, Optional, Union

# JSON: the public key for KernelType.class_name is "class".
_RENAMES = {"class_name": "class"}
_RENAMES_BACK = {v: k for k, v in _RENAMES.items()}


def to_dict(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            _RENAMES.get(f.name, f.name): to_dict(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
        }
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    return obj


def _build(tp: Any, data: Any) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if data is None:
        return None
    if origin is Union:
        non_none = [a for a in args if a is not type(None)]
        return _build(non_none[0], data) if len(non_none) == 1 else data
    if origin in (list, List):
        return [_build(args[0], v) for v in data] if args else list(data)
    if origin in (dict, Dict):
        return {k: _build(args[1], v) for k, v in data.items()} if args else dict(data)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return from_dict(tp, data)
    return data


def from_dict(cls: type, data: Dict[str, Any]) -> Any:
    hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    kwargs = {}
    for key, value in data.items():
        name = _RENAMES_BACK.get(key, key)
        if name in hints:
            kwargs[name] = _build(hints[name], value)
    return cls(**kwargs)


def to_json(obj: Any, indent: Optional[int] = 2) -> str:
    return json.dumps(to_dict(obj), indent=indent, sort_keys=False, ensure_ascii=False)


def from_json(cls: type, text: str) -> Any:
    return from_dict(cls, json.loads(text))
