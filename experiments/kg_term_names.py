"""A name table giving the seed KG's MeSH descriptor nodes every name MeSH 2024 gives them (issue #49).

    .venv/bin/python experiments/kg_term_names.py --out build/kg_term_names.tsv
    .venv/bin/python experiments/raw_entities.py --recognizer build/rec/shipped --variant "term names" \\
        --linker 'ner.name_tables=[../shared/datasets/seed_kg_hetionet_disgenet_mesh/upstream/disgenet_v3.0_curated_gene_disease_associations.txt.gz, build/kg_term_names.tsv]'

The seed KG names its 9,352 MeSH chemical and 4,320 MeSH disease descriptors by their MeSH 2015
preferred names only. ``ner.vocabularies``' MeSH 2024 terms already answer a mention that no other
table knows (the linker's ``terms`` step), but they are no *KG names*: ``extract.name_mentions``
makes mentions of KG names only. Written as an ``ner.name_tables`` table (``id``, ``synonyms``), the
descriptors' entry terms become synonyms of their KG nodes, so that rule may find them in raw text.
docs/experiments/entity-rules.md, "Chosen on the raw slice: seed-KG nodes mapped to MeSH 2024 by
name", gives the result.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _study import require_shared  # noqa: E402

from graphmert.ner.vocabularies.terms import _term_rows  # noqa: E402

KINDS = ("MeSH Chemical descriptor", "MeSH Disease descriptor")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="the name table to write (TSV)")
    a = ap.parse_args()
    mesh = require_shared("reference_vocabularies", "mesh", "mesh_descriptors_2024.tsv.gz")
    terms = {ident: [name, *entry] for ident, name, entry in _term_rows(mesh, "MESH:")}  # the linker's reader
    with gzip.open(require_shared("seed_kg_hetionet_disgenet_mesh", "nodes.tsv.gz"), "rt") as f:
        nodes = [r["id"] for r in csv.DictReader(f, delimiter="\t") if r["kind"] in KINDS and r["id"] in terms]
    a.out.parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "w", encoding="utf-8") as f:
        f.write("id\tsynonyms\n")
        f.writelines(f"{i}\t{'|'.join(terms[i])}\n" for i in nodes)
    print(f"{a.out}: {len(nodes)} seed-KG MeSH descriptors with their MeSH 2024 names")


if __name__ == "__main__":
    main()
