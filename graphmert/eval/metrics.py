"""Document-level pair metrics, the seed-known / novel split, and schema validity (DESIGN §9).

Predictions and gold are sets of document-level pairs (:mod:`graphmert.eval.gold`)::

    untyped   (doc_id, {a, b})            typed   (doc_id, {a, b}, type)

For a predicted set P and a gold set G (predictions for documents outside the gold are not scored)::

    TP        = |P ∩ G|
    precision = TP / |P|                  (0 when |P| = 0)
    recall    = TP / |G|                  (0 when |G| = 0)
    F1        = 2 · precision · recall / (precision + recall)     (0 when both are 0)

Every triple a user receives counts: a triple with an end that has no id the gold could share (a text
node, whose id is empty) gives a pair keyed by that end's name, ``unlinked:<name>``, which no gold pair
holds, so it counts against precision. The "linked ends only" figure (``linked_only``) leaves such
triples out, as the scores did before every triple was counted.

Seed-known / novel: a pair (doc, {a, b}) is *seed-known* when the seed KG has an edge between a and b
in either direction ({a, b} ∈ ``seed_pairs``), else *novel*. Predicted and gold sets are split by the
same rule, so each part is scored against its own part of the gold, and TP(all) = TP(known) + TP(novel).

Validity = (triples whose (head category, tail category) the relation schema allows for the triple's
relation) / (all triples); ``None`` when there are no triples.
"""

from __future__ import annotations

from typing import Iterable, Mapping, TypeVar

from graphmert.eval.gold import GoldSet, Pair, TypedPair
from graphmert.extract.triples import Triple
from graphmert.kg.graph import SeedKG
from graphmert.kg.schema import RelationSchema

__all__ = ["UNLINKED", "end_keys", "pair_keys", "pair_sets", "triple_documents", "seed_pairs", "prf", "split_seed", "evaluate_system",
           "validity"]

P = TypeVar("P", Pair, TypedPair)


def triple_documents(t: Triple) -> list[str]:
    """The documents a triple is evidenced in: its Evidence doc ids (``documents`` if it has none)."""
    docs = {e.doc_id for e in t.evidence} if t.evidence else set(t.documents)
    return sorted(d for d in docs if d)


UNLINKED = "unlinked:"          # the key prefix of an end without an id (module docstring)


def end_keys(t: Triple) -> tuple[str, str]:
    """A triple's (head, tail) as scored: each end's id, or ``unlinked:<name>`` when it has none."""
    return t.head_id or UNLINKED + t.head_name, t.tail_id or UNLINKED + t.tail_name


def pair_keys(t: Triple) -> frozenset[str] | None:
    """The unordered ends of a triple as scored (:func:`end_keys`; module docstring); None for a
    self-pair."""
    head, tail = end_keys(t)
    return None if head == tail else frozenset((head, tail))


def pair_sets(triples: Iterable[Triple], relation_map: Mapping[str, str] | None = None,
              linked_only: bool = False) -> tuple[set[Pair], set[TypedPair]]:
    """Predicted pairs of extracted triples: one pair per (triple, evidence document).

    A triple contributes ``(doc, {head, tail})`` and ``(doc, {head, tail}, type)`` for each document
    of its evidence, with ``type = relation_map.get(relation, relation)`` (a model relation the map
    does not name keeps its name). An end is its id, or ``unlinked:<name>`` when it has none (a text
    node, a phrase or token tail): a pair no gold holds, a false positive (module docstring). With
    ``linked_only`` such triples give no pair. Self-pairs give none either.
    """
    relation_map = relation_map or {}
    untyped: set[Pair] = set()
    typed: set[TypedPair] = set()
    for t in triples:
        if linked_only and not (t.head_id and t.tail_id):
            continue
        pair = pair_keys(t)
        if pair is None:
            continue
        rtype = relation_map.get(t.relation, t.relation)
        for doc in triple_documents(t):
            untyped.add((doc, pair))
            typed.add((doc, pair, rtype))
    return untyped, typed


def seed_pairs(kg: SeedKG) -> set[frozenset[str]]:
    """Unordered id pairs the seed KG links by an edge (either direction; self-loops left out)."""
    return {frozenset((e.subject, e.object)) for e in kg.edges if e.subject != e.object}


def prf(pred: set, gold: set) -> dict[str, float | int]:
    """Precision, recall, F1 of ``pred`` against ``gold`` (see the module docstring), with the counts.

    Returns ``{"precision", "recall", "f1", "tp", "predicted", "gold"}``.
    """
    tp = len(pred & gold)
    p = tp / len(pred) if pred else 0.0
    r = tp / len(gold) if gold else 0.0
    f1 = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return {"precision": p, "recall": r, "f1": f1, "tp": tp, "predicted": len(pred), "gold": len(gold)}


def split_seed(pairs: Iterable[P], seed: set[frozenset[str]]) -> tuple[set[P], set[P]]:
    """(seed-known, novel) parts of a pair set; the id pair is element 1 of every pair tuple."""
    known: set[P] = set()
    novel: set[P] = set()
    for p in pairs:
        (known if p[1] in seed else novel).add(p)
    return known, novel


def _scores(pred: set, gold: set, seed: set[frozenset[str]]) -> dict[str, dict]:
    pk, pn = split_seed(pred, seed)
    gk, gn = split_seed(gold, seed)
    return {"all": prf(pred, gold), "seed_known": prf(pk, gk), "novel": prf(pn, gn)}


def evaluate_system(pred_untyped: Iterable[Pair], pred_typed: Iterable[TypedPair], gold: GoldSet,
                    seed_pairs: set[frozenset[str]] | None = None) -> dict[str, dict[str, dict]]:
    """Score one system's pairs against the gold.

    Predicted pairs of documents that are not in the gold are left out (count them with
    :meth:`GoldSet.outside`). Returns ``{"untyped": {"all", "seed_known", "novel"}, "typed": {...}}``,
    each value a :func:`prf` dict.
    """
    seed = seed_pairs or set()
    pu = {p for p in pred_untyped if p[0] in gold.documents}
    pt = {p for p in pred_typed if p[0] in gold.documents}
    return {"untyped": _scores(pu, gold.untyped, seed), "typed": _scores(pt, gold.typed, seed)}


def validity(triples: Iterable[Triple], schema: RelationSchema) -> float | None:
    """Share of triples whose (head_category, tail_category) ``schema`` allows for their relation.

    Every triple counts, with or without ids: a tail without a category (a phrase or token tail)
    or a relation the schema does not know makes the triple invalid. ``None`` without triples.
    """
    n = ok = 0
    for t in triples:
        n += 1
        ok += schema.allows(t.relation, t.head_category, t.tail_category)
    return ok / n if n else None
