"""Seed-KG readers, chosen by name (``kg.format``) from a registry.

=========================  ===================================================================
``kgx_tsv``                KGX-style node + edge TSV tables (``kg.nodes``, ``kg.edges``; ``.gz`` ok)
``rdf``                    Turtle / N-Triples / RDF-XML / JSON-LD files (``kg.nodes`` + ``kg.edges``)
``hetionet_disgenet_mesh`` the shared open seed-KG folder (``kg.path``)
``auto``                   ``kg.path`` → the folder layout; else by file suffix (all files must agree)
=========================  ===================================================================

``kg.relation_files`` (annotated corpora with document-level relations) add triples to any of them.

Every reader is a function ``(KGConfig) -> SeedKG``; :func:`load_kg` resolves ``auto`` and calls it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Collection

from graphmert.config import ConfigError, KGConfig
from graphmert.kg.corpus_relations import merge_kgs, read_relation_files, rename_relations
from graphmert.kg.graph import KGError, SeedKG
from graphmert.kg.hetionet import is_hetionet_folder, read_hetionet_disgenet_mesh
from graphmert.kg.rdf import rdf_format, read_rdf
from graphmert.kg.tsv import read_kgx_tsv
from graphmert.registry import Registry

__all__ = ["KG_READERS", "load_kg", "resolve_format"]

KG_READERS: Registry[Callable[[KGConfig], SeedKG]] = Registry("seed-KG reader", key="kg.format")


@KG_READERS.register("kgx_tsv")
def _kgx_tsv(cfg: KGConfig) -> SeedKG:
    return read_kgx_tsv(cfg.nodes, cfg.edges, skip_bad_records=cfg.skip_bad_records)


@KG_READERS.register("rdf")
def _rdf(cfg: KGConfig) -> SeedKG:
    return read_rdf(list(cfg.nodes) + list(cfg.edges), prefix_map=cfg.prefix_map,
                    skip_bad_records=cfg.skip_bad_records)


@KG_READERS.register("hetionet_disgenet_mesh")
def _hetionet(cfg: KGConfig) -> SeedKG:
    if not cfg.path:
        raise ConfigError("kg.path: the hetionet_disgenet_mesh format reads a folder; set kg.path")
    return read_hetionet_disgenet_mesh(cfg.path, include_isa=cfg.include_isa,
                                       skip_bad_records=cfg.skip_bad_records)


def _suffix_kind(path: str) -> str:
    if rdf_format(path) is not None:
        return "rdf"
    name = Path(path).name.lower()
    if name.endswith((".tsv", ".tsv.gz", ".txt", ".txt.gz", ".tab", ".tab.gz")):
        return "kgx_tsv"
    raise ConfigError(f"kg.format: cannot tell the seed-KG format of {path!r} from its suffix; "
                      f"set kg.format to one of {KG_READERS.names()}")


def resolve_format(cfg: KGConfig) -> str:
    """The reader name for ``cfg`` (``auto`` resolved)."""
    if cfg.format != "auto":
        KG_READERS.get(cfg.format)  # unknown names fail here, naming kg.format
        return cfg.format
    if cfg.path:
        if is_hetionet_folder(cfg.path):
            return "hetionet_disgenet_mesh"
        raise ConfigError(f"kg.path: {cfg.path!r} is not a known seed-KG folder layout; "
                          f"set kg.format to one of {KG_READERS.names()}")
    files = list(cfg.nodes) + list(cfg.edges)
    if not files:
        raise ConfigError("kg.nodes / kg.edges / kg.path: no seed KG given")
    kinds = {_suffix_kind(f) for f in files}
    if len(kinds) > 1:
        raise ConfigError(f"kg.format: the seed-KG files mix formats {sorted(kinds)}; set kg.format")
    return kinds.pop()


def load_kg(cfg: KGConfig, held_out: Collection[str] = ()) -> SeedKG:
    """Read the seed KG described by ``cfg`` (reader from ``kg.format``), plus the document-level
    relations of ``kg.relation_files`` (:mod:`graphmert.kg.corpus_relations`) except those of the
    ``held_out`` documents (ids of the documents extraction and evaluation use). With only
    ``kg.relation_files`` set, the KG is those relations alone. ``kg.relation_map`` renames
    relations last (:func:`~graphmert.kg.corpus_relations.rename_relations`)."""
    extra = None
    if cfg.relation_files:
        extra = read_relation_files(cfg.relation_files, cfg.relation_files_format, cfg.skip_bad_records,
                                    held_out)
        if not (cfg.path or cfg.nodes or cfg.edges):
            return rename_relations(extra.check_not_empty(), cfg.relation_map)
    reader = KG_READERS.get(resolve_format(cfg))
    kg = reader(cfg)
    if not isinstance(kg, SeedKG):  # pragma: no cover - a mis-registered reader
        raise KGError(f"kg.format {cfg.format!r}: reader returned {type(kg).__name__}, not SeedKG")
    return rename_relations(merge_kgs(kg, extra) if extra is not None else kg, cfg.relation_map)
