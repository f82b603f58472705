"""Name → implementation registries for every swappable part.

Backbones, attention kernels, decay modes, scorers and readers are chosen by name from config.
A lookup of an unknown name raises :class:`RegistryError` naming the config key and the known names.

    BACKBONES = Registry("backbone", key="model.backbone")

    @BACKBONES.register("roberta")
    class RobertaBackbone(...): ...

    BACKBONES.get(cfg.model.backbone)
"""

from __future__ import annotations

from typing import Callable, Generic, Iterator, TypeVar

from graphmert.config import ConfigError

T = TypeVar("T")

__all__ = ["Registry", "RegistryError"]


class RegistryError(ConfigError):
    """An unknown name was looked up (a configuration error)."""


class Registry(Generic[T]):
    def __init__(self, kind: str, key: str = "") -> None:
        self.kind = kind
        self.key = key or kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            if name in self._items and self._items[name] is not obj:
                raise RegistryError(f"{self.kind} {name!r} is registered twice")
            self._items[name] = obj
            return obj

        return deco

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise RegistryError(f"{self.key}: unknown {self.kind} {name!r}; "
                                f"choose from {sorted(self._items)}") from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def __len__(self) -> int:
        return len(self._items)
