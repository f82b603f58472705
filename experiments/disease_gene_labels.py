"""Should a recognised disease that no look-up links as a disease, and whose text names a
protein-coding gene, be a gene? (docs/experiments/entity-rules.md, "Unlinked diseases that name
genes").

    .venv/bin/python experiments/disease_gene_labels.py        # about a minute

``extract.gene_name_labels`` makes recognised chemicals that name genes genes. The held-out errors
show diseases doing the same ("PYGM", "GPIX", "Dicer" recognised as diseases, unlinked). This scores,
on the 82 held-out BioRED-train documents from raw text as ``experiments/raw_entities.py`` does (its
shipped row, the saved recognizer ``build/rec/shipped``), the same rule for diseases, after the
shipped ``gene_name_labels``: a disease mention the linker does not link as a disease, whose key
the training documents never annotate as a disease and the reference vocabularies name as a
protein-coding gene (:meth:`~graphmert.ner.vocabularies.genes.GeneVocabulary.names_gene`), is a
gene; in the ``caps`` row only when written in capitals. It prints the relabelled mentions.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import raw_entities  # noqa: E402

import pipelines.stages.extract_parts as extract_parts  # noqa: E402
from graphmert.ner.linking import surface_key  # noqa: E402

SHIPPED = extract_parts.gene_name_labels
RULE = {"on": False, "caps": False}
RELABELLED: list[tuple[str, str]] = []


def _names_gene(m, linker) -> bool:
    key = surface_key(m.text)
    return ("biolink:Disease" not in linker.dictionary_categories(key) and linker._genes is not None
            and linker._genes.names_gene(key) and not linker.link(m.text, "Disease").ids
            and (not RULE["caps"] or m.text.upper() == m.text))


def gene_name_labels(doc, linker, chemical="Chemical", gene="Gene"):
    """The shipped rule, then (when on) the disease rule of the module docstring."""
    doc = SHIPPED(doc, linker, chemical, gene)
    if not RULE["on"]:
        return doc
    mentions = []
    for m in doc.mentions:
        if m.type == "Disease" and not m.ids and _names_gene(m, linker):
            RELABELLED.append((doc.id, m.text))
            m = replace(m, type=gene)
        mentions.append(m)
    return replace(doc, mentions=mentions) if mentions != doc.mentions else doc


def main() -> None:
    extract_parts.gene_name_labels = gene_name_labels
    states = iter([(False, False), (True, False), (True, True)])        # the three variants, in order
    real = raw_entities.extraction_linker

    def extraction_linker(linker, ex):                 # called once at the start of each variant's run
        RULE["on"], RULE["caps"] = next(states)
        return real(linker, ex)

    raw_entities.extraction_linker = extraction_linker
    sys.argv = [sys.argv[0], "--recognizer", "build/rec/shipped", "--variant", "shipped",
                "--variant", "diseases naming genes", "--variant", "caps"]
    raw_entities.main()
    print("relabelled (document, text):", sorted(set(RELABELLED)))


if __name__ == "__main__":
    main()
