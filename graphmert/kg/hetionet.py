"""The shared open seed KG's folder layout (format name ``hetionet_disgenet_mesh``).

``../shared/datasets/seed_kg_hetionet_disgenet_mesh/`` (Hetionet v1.0 core + DisGeNET v3.0 curated +
MeSH 2015 hierarchy) holds:

* ``nodes.tsv.gz`` — ``id, name, kind, source, xref_mesh``; ``kind`` is mapped to a Biolink category
  by :data:`KIND_CATEGORIES` (a kind not listed is kept verbatim);
* ``edges_hetionet_mesh_harmonized.tsv.gz`` and ``edges_disgenet_curated.tsv.gz`` — always read; they
  use the MeSH / NCBI Gene id space of BioRED and BC5CDR;
* ``edges_mesh_isa.tsv.gz`` — the MeSH tree (``isa``), read only with ``kg.include_isa``.

Edge columns other than subject/predicate/object (``metaedge``, ``source``, ``license``, ``pmids``)
are kept as provenance. The dataset has nodes without a name (52 MeSH "other tree" descriptors, the
objects of 153 DisGeNET edges): a nameless node cannot become a tail or a lexicon entry, so these
nodes and their edges are always skipped and counted (``SeedKG.skipped``) rather than treated as
errors.
"""

from __future__ import annotations

from pathlib import Path

from graphmert.kg.graph import KGError, Node, SeedKG
from graphmert.kg.records import BadRecords, keep_known_edges
from graphmert.kg.tsv import read_edge_table, read_table

__all__ = ["KIND_CATEGORIES", "NODES_FILE", "EDGE_FILES", "ISA_FILE", "is_hetionet_folder",
           "read_hetionet_disgenet_mesh"]

NODES_FILE = "nodes.tsv.gz"
EDGE_FILES = ("edges_hetionet_mesh_harmonized.tsv.gz", "edges_disgenet_curated.tsv.gz")
ISA_FILE = "edges_mesh_isa.tsv.gz"

KIND_CATEGORIES: dict[str, str] = {
    "Gene": "biolink:Gene",
    "Compound": "biolink:ChemicalEntity",
    "MeSH Chemical descriptor": "biolink:ChemicalEntity",
    "Pharmacologic Class": "biolink:ChemicalRole",
    "Disease": "biolink:Disease",
    "MeSH Disease descriptor": "biolink:Disease",
    "Disease (UMLS CUI, no MeSH mapping)": "biolink:Disease",
    "Symptom": "biolink:PhenotypicFeature",
    "MeSH descriptor (other tree)": "biolink:NamedThing",
    "MeSH SCR/other (from Disease Ontology xref)": "biolink:NamedThing",
}


def is_hetionet_folder(path: str | Path) -> bool:
    p = Path(path)
    return p.is_dir() and (p / NODES_FILE).is_file() and all((p / f).is_file() for f in EDGE_FILES)


def read_hetionet_disgenet_mesh(folder: str | Path, include_isa: bool = False,
                                skip_bad_records: bool = False) -> SeedKG:
    """Read the shared seed-KG folder into a :class:`SeedKG` (checked to be non-empty)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise KGError(f"{folder}: seed-KG folder not found (kg.path, format hetionet_disgenet_mesh)")
    files = [folder / NODES_FILE] + [folder / f for f in EDGE_FILES] + ([folder / ISA_FILE] if include_isa else [])
    absent = [str(f) for f in files if not f.is_file()]
    if absent:
        raise KGError(f"{folder}: not a hetionet_disgenet_mesh folder; missing {absent}")
    bad = BadRecords(skip_bad_records)
    nodes: dict[str, Node] = {}
    nameless: set[str] = set()
    for line, row in read_table(files[0], ("id", "name", "kind"), bad):
        if not row["id"]:
            bad.report(f"{files[0]}: line {line}", "node_without_id", "empty node id")
        elif not row["name"]:
            nameless.add(row["id"])       # known gap of the dataset: skipped, counted below
        else:
            nodes.setdefault(row["id"], Node(row["id"], row["name"],
                                             KIND_CATEGORIES.get(row["kind"], row["kind"])))
    nameless -= nodes.keys()
    dropped = {"node_without_name": len(nameless), "edge_to_nameless_node": 0}

    def named(located):
        for where, e in located:
            if e.subject in nameless or e.object in nameless:
                dropped["edge_to_nameless_node"] += 1
            else:
                yield where, e

    located = named(le for f in files[1:] for le in read_edge_table(f, bad))
    edges = list(keep_known_edges(nodes, located, bad))
    skipped = bad.as_dict() | {k: v for k, v in dropped.items() if v}
    return SeedKG(nodes.values(), edges, [str(f) for f in files], skipped).check_not_empty()
