"""The ``fmha_*`` configuration: one typed object, validated once at ``config-inited``.

As MyST-Parser's ``MdParserConfig``: each field of :class:`FmhaConfig` is one
``fmha_<field>`` value (default, rebuild mode, types, validator). A bad value is one
``fmha.config`` warning (``fmha.cache`` for the cache folder) and its default is used;
paths are made absolute here only. Checks that need the CK tree happen at first use,
located at the directive.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields
from pathlib import Path, PurePath
from typing import Any, Callable, Dict, Optional, Tuple

from sphinx.util import logging

from ..errors import WarningType
from ..options import GENERATE_OPTIONS, OptionError, Options, parse_options
from ..process.cache import cache_dir_problem

__all__ = ["FmhaConfig", "ConfigProblem", "add_config_values", "fmha_config", "read_config"]

logger = logging.getLogger("sphinxext_fmha")

_PATH_TYPES = (str, type(Path()), PurePath, type(None))


class ConfigProblem(ValueError):
    """A configuration value that cannot be used; ``kind`` is its warning subtype."""

    def __init__(self, message: str, kind: WarningType = WarningType.CONFIG) -> None:
        super().__init__(message)
        self.kind = kind


def _spec(default: Any, rebuild: str, types: Tuple[type, ...]) -> Any:
    return field(default=default, metadata={"rebuild": rebuild, "types": types})


@dataclass(frozen=True)
class FmhaConfig:
    """The validated ``fmha_*`` values (the field name without ``fmha_``)."""

    ck_root: Optional[str] = _spec(None, "env", _PATH_TYPES)
    targets: Optional[str] = _spec(None, "env", (str, list, tuple, type(None)))
    mask: Optional[str] = _spec(None, "env", (str, type(None)))
    receipt: Optional[int] = _spec(None, "env", (int, str, type(None)))
    optdim: Optional[str] = _spec(None, "env", (str, int, list, tuple, type(None)))
    cache_dir: Optional[str] = _spec(None, "", _PATH_TYPES)  # (another cache: no rebuild)
    python: Optional[str] = _spec(None, "env", (str, type(None)))
    timeout: float = _spec(900, "env", (int, float))
    strict: bool = _spec(False, "env", (bool,))

    def options(self) -> Options:
        """The generate.py options every directive starts from."""
        return Options(targets=self.targets, mask=self.mask, receipt=self.receipt,
                       optdim=self.optdim)


def _path(value: Any, confdir: Path) -> Optional[str]:
    if value is None or str(value).strip() == "":
        return None
    path = Path(os.path.expanduser(str(value)))
    return str(path if path.is_absolute() else Path(confdir) / path)


def _cache_dir(value: Any, confdir: Path) -> Optional[str]:
    path = _path(value, confdir)
    problem = cache_dir_problem(Path(path)) if path is not None else None
    if problem:
        raise ConfigProblem("fmha_cache_dir: %s; the default cache is used instead" % problem,
                            WarningType.CACHE)
    return path


def _timeout(value: Any, confdir: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigProblem("fmha_timeout: %r is not a number of seconds" % (value,))
    if not value > 0 or math.isinf(value):
        raise ConfigProblem("fmha_timeout: %r must be a number of seconds greater than 0"
                            % (value,))
    return float(value)


def _strict(value: Any, confdir: Path) -> bool:
    if not isinstance(value, bool):
        raise ConfigProblem("fmha_strict: %r is not True or False" % (value,))
    return value


def _generate_option(name: str) -> Callable[[Any, Path], Any]:
    def validate(value: Any, confdir: Path) -> Any:
        try:
            options = parse_options(**{name: value}, origins={name: "fmha_" + name})
        except OptionError as error:
            raise ConfigProblem("%s; the tree's default is used instead" % error) from None
        return getattr(options, name)

    return validate


_VALIDATORS: Dict[str, Callable[[Any, Path], Any]] = {
    "ck_root": _path, "cache_dir": _cache_dir, "timeout": _timeout, "strict": _strict,
    # (an interpreter's name is looked up on PATH: never made absolute)
    "python": lambda value, _confdir: str(value) if str(value or "").strip() else None,
    **{spec.dest: _generate_option(spec.dest) for spec in GENERATE_OPTIONS},
}


def add_config_values(app: Any) -> None:
    """Register every ``fmha_*`` value with Sphinx."""
    for item in fields(FmhaConfig):
        app.add_config_value("fmha_" + item.name, item.default, item.metadata["rebuild"],
                             types=item.metadata["types"])


def read_config(config: Any, confdir: Path) -> Tuple[FmhaConfig, Dict[str, ConfigProblem]]:
    """Validate every ``fmha_*`` value; return the config and the problems (by name)."""
    values: Dict[str, Any] = {}
    problems: Dict[str, ConfigProblem] = {}
    for item in fields(FmhaConfig):
        raw = getattr(config, "fmha_" + item.name, item.default)
        try:
            values[item.name] = _VALIDATORS[item.name](raw, Path(confdir))
        except ConfigProblem as problem:
            problems["fmha_" + item.name] = problem
            values[item.name] = item.default
    return FmhaConfig(**values), problems


def validate_config(app: Any, config: Any) -> None:
    """``config-inited``: validate once, warn about each bad value, keep the result."""
    result, problems = read_config(config, Path(app.confdir))
    log = logger.error if result.strict else logger.warning
    for problem in problems.values():
        log("%s", problem, type="fmha", subtype=problem.kind.value)
    # the normalised values (absolute paths...) are what Sphinx compares across builds
    for item in fields(FmhaConfig):
        setattr(config, "fmha_" + item.name, getattr(result, item.name))
    config.__dict__["_fmha_config"] = result
    config.__dict__["_fmha_config_problems"] = list(problems.values())


def fmha_config(config: Any) -> FmhaConfig:
    """The validated configuration (validated on first use when ``config-inited`` did not
    run, as in tests that build a config by hand)."""
    cached = config.__dict__.get("_fmha_config") if hasattr(config, "__dict__") else None
    if cached is None:
        cached, _problems = read_config(config, Path(getattr(config, "confdir", ".") or "."))
    return cached
