"""The relation schema: which (subject category, object category) pairs each relation admits.

Learned from the seed KG (every category pair a relation's triples use) and/or given in config
(``kg.relation_schema: {relation: [[subject category, object category], ...]}``, which replaces the
learned pairs of the relations it lists). Extraction uses it twice: candidate relations for a head are
those whose domain admits the head's category, and a predicted tail must fit the range.

Corpus mention types (BioRED, BC5CDR, PubTator, NCBI disease) are mapped to the same Biolink
categories by :func:`mention_category`, so annotated heads can be matched against the schema.
"""

from __future__ import annotations

from pathlib import Path

from graphmert.io import atomic_write_json, read_json
from graphmert.kg.graph import KGError, SeedKG

__all__ = ["RelationSchema", "MENTION_TYPE_CATEGORIES", "mention_category", "ENTITY_TYPES",
           "entity_type_id"]

MENTION_TYPE_CATEGORIES: dict[str, str] = {
    "gene": "biolink:Gene", "geneorgeneproduct": "biolink:Gene", "protein": "biolink:Gene",
    "chemical": "biolink:ChemicalEntity", "chemicalentity": "biolink:ChemicalEntity",
    "disease": "biolink:Disease", "diseaseorphenotypicfeature": "biolink:Disease",
    "specificdisease": "biolink:Disease", "diseaseclass": "biolink:Disease",
    "modifier": "biolink:Disease", "compositemention": "biolink:Disease",
    "species": "biolink:OrganismTaxon", "organismtaxon": "biolink:OrganismTaxon",
    "sequencevariant": "biolink:SequenceVariant", "dnamutation": "biolink:SequenceVariant",
    "proteinmutation": "biolink:SequenceVariant", "snp": "biolink:SequenceVariant",
    "cellline": "biolink:CellLine",
}


# Rows of the model's entity-type embedding (model.entity_type_embedding): 0 = not an entity mention,
# one row per category corpus mentions map to, and a last row for any other category. A fixed table,
# so a checkpoint needs no category map of its own.
ENTITY_TYPES: tuple[str, ...] = ("", *sorted(set(MENTION_TYPE_CATEGORIES.values())), "other")


def entity_type_id(category: str) -> int:
    """Row of ``category`` in :data:`ENTITY_TYPES` ("other" for categories not listed there, 0 for
    no category)."""
    if not category:
        return 0
    try:
        return ENTITY_TYPES.index(category)
    except ValueError:
        return len(ENTITY_TYPES) - 1


def mention_category(mention_type: str) -> str:
    """A corpus mention type → Biolink category (a type already in CURIE form is kept; unknown → '')."""
    if ":" in mention_type:
        return mention_type
    key = mention_type.replace("_", "").replace(" ", "").replace("-", "").lower()
    return MENTION_TYPE_CATEGORIES.get(key, "")


class RelationSchema:
    """relation → set of allowed (subject category, object category) pairs."""

    def __init__(self, pairs: dict[str, set[tuple[str, str]]]) -> None:
        self.pairs = {r: set(p) for r, p in sorted(pairs.items())}

    @classmethod
    def from_kg(cls, kg: SeedKG, overrides: dict[str, list[list[str]]] | None = None) -> "RelationSchema":
        """Pairs seen in the KG's triples; relations in ``overrides`` (config) take the given pairs."""
        pairs: dict[str, set[tuple[str, str]]] = {r: set() for r in kg.relations}
        for e in kg.edges:
            pairs[e.predicate].add((kg.category(e.subject), kg.category(e.object)))
        for rel, given in (overrides or {}).items():
            pairs[rel] = cls._check_pairs(f"kg.relation_schema.{rel}", given)
        return cls(pairs)

    @staticmethod
    def _check_pairs(where: str, given: list) -> set[tuple[str, str]]:
        out = set()
        for i, p in enumerate(given):
            if not isinstance(p, (list, tuple)) or len(p) != 2 or not all(isinstance(x, str) for x in p):
                raise KGError(f"{where}[{i}]: expected [subject category, object category], got {p!r}")
            out.add((p[0], p[1]))
        return out

    @property
    def relations(self) -> list[str]:
        return list(self.pairs)

    def allows(self, relation: str, subject_category: str, object_category: str) -> bool:
        return (subject_category, object_category) in self.pairs.get(relation, ())

    def domain(self, relation: str) -> set[str]:
        return {s for s, _ in self.pairs.get(relation, ())}

    def range(self, relation: str) -> set[str]:
        return {o for _, o in self.pairs.get(relation, ())}

    def categories(self) -> set[str]:
        """Every category some relation admits as subject or object."""
        return {c for p in self.pairs.values() for pair in p for c in pair}

    def relations_for_subject(self, category: str) -> list[str]:
        """Relations whose domain admits ``category`` (sorted)."""
        return [r for r, p in self.pairs.items() if any(s == category for s, _ in p)]

    def to_dict(self) -> dict[str, list[list[str]]]:
        return {r: [list(p) for p in sorted(ps)] for r, ps in self.pairs.items()}

    @classmethod
    def from_dict(cls, data: dict, where: str = "relation schema") -> "RelationSchema":
        if not isinstance(data, dict):
            raise KGError(f"{where}: expected an object of relation → [[subject, object], ...]")
        return cls({r: cls._check_pairs(f"{where}: {r}", v) for r, v in data.items()})

    def save(self, path: str | Path) -> Path:
        return atomic_write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | Path) -> "RelationSchema":
        return cls.from_dict(read_json(path), where=str(path))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RelationSchema) and self.pairs == other.pairs
