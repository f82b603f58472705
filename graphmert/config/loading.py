"""Building a :class:`Config`: defaults ← YAML file (over its ``base:`` chain) ← dotted overrides,
validated; and writing, hashing and describing one."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
from pathlib import Path
from typing import Any

import yaml

from graphmert.config.checks import _check_cross
from graphmert.config.options import ConfigError, build_section, did_you_mean
from graphmert.config.sections import Config


def _layer(base: dict, over: dict) -> dict:
    """A variant config ``over`` laid on its ``base:``: each section it names is merged option by
    option, and each option it names replaces the base's value whole, a mapping as a list does (so
    a variant that runs fewer controls can give ``extract.control_tails_per_query`` without them)."""
    return {**base, **{k: {**base[k], **v} if isinstance(v, dict) and isinstance(base.get(k), dict) else v
                       for k, v in over.items()}}


def _merge(base: dict, over: dict, depth: int = 0) -> dict:
    """``over`` laid on ``base``: nested mappings are merged key by key, other values replaced (the
    dotted command-line overrides: ``extract.control_min_confidence.lexical=0.3`` sets one key). An
    empty mapping given to an option (``ner.part_sources={}``) empties it: merged, it would change
    nothing, silently. A section given ``{}`` (``extract={}``) keeps its options."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict) and (v or depth == 0):
            out[k] = _merge(out[k], v, depth + 1)
        else:
            out[k] = v
    return out


def parse_overrides(overrides: list[str] | tuple[str, ...]) -> dict:
    """Dotlist overrides (``a.b=1``, ``a.c=[x,y]``) → nested dict, via OmegaConf's parser."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    for o in overrides:
        if "=" not in o:
            raise ConfigError(f"override {o!r}: expected KEY=VALUE, e.g. model.hidden_size=256")
    try:
        conf = OmegaConf.from_dotlist(list(overrides))
        return OmegaConf.to_container(conf, resolve=True)  # type: ignore[return-value]
    except OmegaConfBaseException as e:
        raise ConfigError(f"override could not be parsed: {e}") from None


def build(data: dict | None = None) -> Config:
    """Validate a nested mapping of overrides and return the resolved :class:`Config`."""
    data = data or {}
    if not isinstance(data, dict):
        raise ConfigError(f"top level: expected a mapping of sections, got {type(data).__name__}")
    sections = {f.name: f for f in dataclasses.fields(Config)}
    for k in data:
        if k not in sections:
            raise ConfigError(f"{k}: unknown section; {did_you_mean(k, sections)}allowed sections: {sorted(sections)}")
    kwargs = {}
    for name, f in sections.items():
        kwargs[name] = build_section(f.default_factory, data.get(name) or {}, name)  # type: ignore[arg-type]
    cfg = Config(**kwargs)
    _check_cross(cfg)
    return cfg


def read_yaml(path: str | Path) -> dict:
    """The top-level mapping of one YAML config file (``{}`` when empty); errors name the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: invalid YAML: {e}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections at the top level")
    return data


def read_layers(path: str | Path, _seen: tuple[Path, ...] = ()) -> dict:
    """A config file's mapping over its ``base:`` chain: ``base: other.yaml`` (relative to the file)
    is read first and this file's options override it (:func:`_layer`: each option named replaces
    the base's value whole), so a variant config names only what it changes.

    Each file is checked where it is: alone when it has no base, else merged over its base, so an
    error names the file that brings it, and a variant may change one side of a rule that ties two
    keys (``extract.control_tails_per_query`` names controls its base's ``extract.controls`` lists)."""
    path = Path(path)
    data = read_yaml(path)
    base = data.pop("base", None)
    if base is not None:
        if not isinstance(base, str) or not base:
            raise ConfigError(f"{path}: base: expected the path of another config file, got {base!r}")
        parent = (path.parent / base).resolve()
        if parent in _seen or parent == path.resolve():
            raise ConfigError(f"{path}: base: {base} leads back to a config already read (a cycle)")
        if not parent.is_file():
            raise ConfigError(f"{path}: base: {parent} does not exist")
        data = _layer(read_layers(parent, (*_seen, path.resolve())), data)
    try:
        build(data)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None
    return data


def load_config(path: str | Path | None = None, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """Defaults ← YAML file (over its ``base:`` chain) ← dotted overrides, validated. Errors name the
    file and the key."""
    data: dict = {}
    if path is not None:
        data = read_layers(path)
        try:
            build(data)
        except ConfigError as e:
            raise ConfigError(f"{path}: {e}") from None
    if overrides:
        data = _merge(data, parse_overrides(overrides))
    return build(data)


def to_dict(cfg: Any) -> dict:
    """A config or section as plain nested data (what :func:`save_config` writes)."""
    return dataclasses.asdict(cfg)


def from_dict(data: dict) -> Config:
    """Rebuild a Config from :func:`to_dict` output (e.g. a saved ``config.yaml`` / ``config.json``)."""
    return build(data)


def save_config(cfg: Config, path: str | Path) -> Path:
    """Write the resolved config as YAML, atomically."""
    from graphmert.io import atomic_write_text

    return atomic_write_text(path, yaml.safe_dump(to_dict(cfg), sort_keys=False))


def section_hash(*sections: Any) -> str:
    """A stable content hash of one or more config sections (dataclasses or plain data)."""
    payload = [to_dict(s) if dataclasses.is_dataclass(s) else s for s in sections]
    blob = json.dumps(payload, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def describe(cls: type = Config) -> list[tuple[str, str, Any, str]]:
    """(dotted key, type, default, help) for every key — used by ``graphmert info --keys``."""
    rows = []
    for sec in dataclasses.fields(cls):
        hints = typing.get_type_hints(sec.default_factory)  # type: ignore[arg-type]
        inst = sec.default_factory()  # type: ignore[misc]
        for f in dataclasses.fields(inst):
            tp = hints[f.name]       # the full annotation: Optional[str], list[str], not "Optional"
            rows.append((f"{sec.name}.{f.name}",
                         tp.__name__ if isinstance(tp, type) else str(tp).replace("typing.", ""),
                         getattr(inst, f.name), f.metadata.get("help", "")))
    return rows
