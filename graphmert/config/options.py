"""One configuration option: its declaration (:func:`opt`: default, range, choices, help), and the
checks of a value against its annotation and range; :func:`build_section` applies them to a section
(:mod:`graphmert.config`)."""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from dataclasses import field
from typing import Any, Literal

from graphmert.errors import GraphmertError


class ConfigError(GraphmertError, ValueError):
    """A configuration value is unknown, mistyped or out of range. The message names the key."""


def opt(default: Any = dataclasses.MISSING, *, factory: Any = None, min: float | None = None,
        max: float | None = None, min_exclusive: bool = False, choices: tuple | None = None,
        help: str = "") -> Any:
    """A dataclass field with validation metadata (range, choices) and a help text."""
    meta = {"min": min, "max": max, "min_exclusive": min_exclusive, "choices": choices, "help": help}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def _type_name(tp: Any) -> str:
    """An annotation as error messages name it."""
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _coerce(key: str, value: Any, tp: Any) -> Any:
    """Check ``value`` against the annotation ``tp``; allow int→float. Raise ConfigError naming key."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _coerce(key, value, a)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(f"{key}: expected {' or '.join(_type_name(a) for a in args)}, got {value!r}")
    if tp is Any:
        return value
    if dataclasses.is_dataclass(tp):              # a typed block inside a list (ner.vocabularies)
        return build_section(tp, value, key)
    if origin is list:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{key}: expected a list, got {type(value).__name__} {value!r}")
        return [_coerce(f"{key}[{i}]", v, args[0] if args else Any) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping, got {type(value).__name__} {value!r}")
        vt = args[1] if len(args) == 2 else Any
        return {str(k): _coerce(f"{key}.{k}", v, vt) for k, v in value.items()}
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{key}: {value!r} is not allowed; choose from {list(args)}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true/false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
        return value
    raise ConfigError(f"{key}: unsupported type {tp!r}")  # pragma: no cover - programming error


def _check_range(key: str, value: Any, meta: dict) -> None:
    """Check ``value`` against the choices and range :func:`opt` recorded in ``meta``."""
    if value is None:
        return
    choices = meta.get("choices")
    if choices is not None and value not in choices:
        raise ConfigError(f"{key}: {value!r} is not allowed; choose from {list(choices)}")
    lo, hi = meta.get("min"), meta.get("max")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if lo is not None and (value < lo or (meta.get("min_exclusive") and value == lo)):
            op = ">" if meta.get("min_exclusive") else ">="
            raise ConfigError(f"{key}: {value!r} is out of range; must be {op} {lo}"
                              + (f" and <= {hi}" if hi is not None else ""))
        if hi is not None and value > hi:
            raise ConfigError(f"{key}: {value!r} is out of range; must be <= {hi}")


def did_you_mean(name: object, allowed) -> str:
    """"did you mean 'x'? " for the allowed name closest to a mistyped ``name`` (difflib), or ""."""
    close = difflib.get_close_matches(str(name), list(allowed), n=1)
    return f"did you mean '{close[0]}'? " if close else ""


def build_section(cls: type, data: dict, prefix: str) -> Any:
    """Validate ``data`` against the dataclass ``cls`` (keys named ``prefix.key`` in errors).

    Used for the top-level sections and for nested typed option blocks (e.g. a backbone's options).
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix}: expected a mapping of keys, got {data!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for k in data:
        if k not in fields:
            raise ConfigError(f"{prefix}.{k}: unknown key; {did_you_mean(k, fields)}"
                              f"allowed keys of '{prefix}': {sorted(fields)}")
    kwargs = {}
    for name, f in fields.items():
        key = f"{prefix}.{name}"
        if name in data:
            value = _coerce(key, data[name], hints[name])
        elif f.default is not dataclasses.MISSING:
            value = f.default
        else:
            value = f.default_factory()  # type: ignore[misc]
        _check_range(key, value, dict(f.metadata))
        kwargs[name] = value
    return cls(**kwargs)


def field_choices(cls: type, name: str) -> tuple:
    """The allowed values of option ``name`` of the config section ``cls`` (defined once, in its
    ``opt(choices=...)``)."""
    return next(f for f in dataclasses.fields(cls) if f.name == name).metadata["choices"]
