"""Baseline systems scored by the same metrics as GraphMERT (DESIGN §9), chosen by name.

A baseline is a function ``(gold, kg, schema, relation_map) -> (untyped pairs, typed pairs)`` over
the gold documents, registered in :data:`BASELINES` (config key ``evaluate.baselines``):

``cooccurrence``
    Every pair of distinct entity ids whose mentions occur in one sentence. A mention belongs to the
    sentence that starts at or before its first character (the last such). Each of a mention's ids
    counts (a mention carrying ids a, b pairs them with each other, too). With a schema, a pair is
    kept only if its two categories (:meth:`GoldSet.category`) can take part in some relation:
    (cat_a, cat_b) or (cat_b, cat_a) is allowed by any relation of the schema; without one, every
    pair is kept. Typed pairs carry the majority class: the most frequent relation type of the gold
    itself (:meth:`GoldSet.majority_type`, ties by name) — the usual majority-class baseline, which
    reads the gold's label distribution and nothing else.

``seed_kg``
    Pairs of ids mentioned in the same document that the seed KG links by an edge (either
    direction), typed by ``relation_map.get(predicate, predicate)``, one typed pair per linking edge.
    Needs a seed KG.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import combinations
from typing import Callable, Mapping

from graphmert.config import ConfigError
from graphmert.eval.gold import GoldSet, Pair, TypedPair
from graphmert.kg.graph import SeedKG
from graphmert.kg.schema import RelationSchema
from graphmert.registry import Registry

__all__ = ["Baseline", "BASELINES", "allowed_category_pairs", "sentence_entity_ids", "cooccurrence",
           "seed_kg"]

Baseline = Callable[[GoldSet, SeedKG | None, RelationSchema | None, Mapping[str, str]],
                    tuple[set[Pair], set[TypedPair]]]
BASELINES: Registry[Baseline] = Registry("evaluation baseline", key="evaluate.baselines")


def allowed_category_pairs(schema: RelationSchema) -> set[frozenset[str]]:
    """Unordered category pairs {c1, c2} that some relation of the schema admits in either order."""
    return {frozenset(p) for pairs in schema.pairs.values() for p in pairs}


def sentence_entity_ids(gold: GoldSet, doc_id: str) -> list[set[str]]:
    """Per sentence of the document, the ids of the mentions in it (see the module docstring)."""
    doc = gold.documents[doc_id]
    if not doc.sentences:
        if not doc.mentions:
            return []
        raise ValueError(f"gold document {doc_id!r} has mentions but no sentence spans; read the gold "
                         f"with load_gold, which splits sentences")
    starts = [s for s, _ in doc.sentences]
    out: list[set[str]] = [set() for _ in doc.sentences]
    for m in doc.mentions:
        i = max(bisect_right(starts, m.start) - 1, 0)
        out[i].update(m.ids)
    return out


@BASELINES.register("cooccurrence")
def cooccurrence(gold: GoldSet, kg: SeedKG | None = None, schema: RelationSchema | None = None,
                 relation_map: Mapping[str, str] | None = None) -> tuple[set[Pair], set[TypedPair]]:
    """Sentence co-occurrence pairs, filtered by schema categories, typed by the gold majority type."""
    allowed = allowed_category_pairs(schema) if schema is not None else None
    untyped: set[Pair] = set()
    for doc_id in sorted(gold.documents):
        for ids in sentence_entity_ids(gold, doc_id):
            for a, b in combinations(sorted(ids), 2):
                if allowed is not None and frozenset((gold.category(doc_id, a),
                                                      gold.category(doc_id, b))) not in allowed:
                    continue
                untyped.add((doc_id, frozenset((a, b))))
    majority = gold.majority_type()
    typed: set[TypedPair] = {(d, p, majority) for d, p in untyped} if majority is not None else set()
    return untyped, typed


@BASELINES.register("seed_kg")
def seed_kg(gold: GoldSet, kg: SeedKG | None, schema: RelationSchema | None = None,
            relation_map: Mapping[str, str] | None = None) -> tuple[set[Pair], set[TypedPair]]:
    """Seed-KG lookup: same-document id pairs linked by a seed edge, typed by its mapped predicate."""
    if kg is None:
        raise ConfigError("evaluate.baselines: the 'seed_kg' baseline needs a seed KG (kg.nodes / "
                         "kg.edges); none was given")
    relation_map = relation_map or {}
    untyped: set[Pair] = set()
    typed: set[TypedPair] = set()
    for doc_id in sorted(gold.documents):
        ids = set(gold.entity_ids(doc_id))
        for a in sorted(ids):
            for j in kg.edges_from(a):
                e = kg.edges[j]
                if e.object == a or e.object not in ids:
                    continue
                pair = frozenset((a, e.object))
                untyped.add((doc_id, pair))
                typed.add((doc_id, pair, relation_map.get(e.predicate, e.predicate)))
    return untyped, typed
