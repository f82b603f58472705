"""What the parts of the entity linker share: each category's id namespace, a look-up's result,
the linker's error, and the counting of votes (:mod:`graphmert.ner.linking`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from graphmert.ner.vocabularies.errors import VocabularyError

NAMESPACES: dict[str, str] = {
    "biolink:Gene": "NCBIGene:",
    "biolink:Disease": "MESH:",
    "biolink:ChemicalEntity": "MESH:",
    "biolink:OrganismTaxon": "NCBITaxon:",
    "biolink:CellLine": "Cellosaurus:",
}
KG_CATEGORY_ALIASES: dict[str, str] = {"biolink:PhenotypicFeature": "biolink:Disease"}
# categories whose ids are species-specific: the dictionary also keeps votes per document species
SPECIES_CATEGORIES = frozenset({"biolink:Gene"})
_GENE = "biolink:Gene"
_DISEASE = "biolink:Disease"
_TAXON = "biolink:OrganismTaxon"
Votes = dict[str, dict[str, Counter]]          # category → key → Counter(ids tuple)


#: a bad entity-linker file, vocabulary or cross-reference table (the message names the file)
LinkerError = VocabularyError


@dataclass(frozen=True)
class LinkResult:
    ids: tuple[str, ...]     # the entities named (primary namespace first; usually one); () unlinked
    score: float             # 1.0 for exact/dictionary hits, cosine for fuzzy, 0.0 unlinked
    how: str                 # "dictionary" | "kg" | "reference" | "terms" | "abbreviation" | "composite"
    #                          | "fuzzy" | "none": the step that linked it
    xrefs: tuple[str, ...] = ()  # other ids of ids[0] (cross-reference tables), not entities


UNLINKED = LinkResult((), 0.0, "none")


def _winner(counts: Counter) -> Any:
    """The most frequent entry (ties: the smallest)."""
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
