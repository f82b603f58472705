"""Entity-level metrics: mention recognition (strict spans) and normalisation (document id sets).

Mentions are scored by Biolink category (:func:`~graphmert.kg.schema.mention_category` of each
mention's source type, on both sides), over ``categories`` (default :data:`ENTITY_CATEGORIES`);
mentions of other categories are left out on both sides. Only documents of the gold are scored: a
predicted document the gold lacks is ignored, a gold document with no prediction has all of its
gold items missed.

Recognition (strict span match) — per document d, the items are sets of spans::

    predicted  P = {(d, category, start, end) for each predicted mention}
    gold       G = {(d, category, start, end) for each gold mention}

so a prediction is a true positive only when a gold mention of the same document has the same
start, end *and* category; an off-by-one span or a wrong category is one FP and one FN.

Normalisation (document-level id sets) — per document d::

    predicted  P = {(d, category, i) for each linked predicted mention, i ∈ parts(id), id ∈ ids}
    gold       G = {(d, category, i) for each gold mention, i ∈ parts(id), id ∈ ids}

Every id of a mention counts, on both sides: BioRED lists several for a composite mention
("Smad2/3"), the linker gives a composite or a range every member's id (a cross-reference goes to
``Mention.xrefs``, never to ``ids``), and extraction makes each id an entity of the KG
(:func:`~graphmert.graph.distant.chunk_entities`), so each is a claim the user receives. An
unlinked mention (no ids) adds nothing. ``parts`` splits a composite id that
:func:`~graphmert.corpus.document.normalize_id` joined with ``|`` (``MESH:D1|MESH:D2`` → both) and
keeps any other id whole (tmVar variant keys such as ``tmVar:c|SUB|G|1234|A`` contain ``|``).

Scores, for a category c (items whose category is c) and ``micro`` (the union over categories)::

    TP = |P ∩ G|        FP = |P| − TP        FN = |G| − TP
    precision = TP / |P|       recall = TP / |G|       (0 when the set is empty)
    F1 = 2 · precision · recall / (precision + recall)        (0 when both are 0)

Items are sets, so a duplicate mention (same span and category twice) counts once on either side.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

from graphmert.corpus.document import Document
from graphmert.eval.metrics import prf
from graphmert.kg.schema import mention_category

__all__ = ["ENTITY_CATEGORIES", "MICRO", "recognition_scores", "normalisation_scores", "id_parts"]

ENTITY_CATEGORIES: tuple[str, ...] = ("biolink:Gene", "biolink:Disease", "biolink:ChemicalEntity")
MICRO = "micro"

# A piece of a composite id as normalize_id writes it (it only joins MeSH / OMIM / numeric ids).
_COMPOSITE_PIECE = re.compile(r"^(MESH:[A-Z]?\d+|OMIM:\d+|NCBIGene:\d+|NCBITaxon:\d+|\d+)$")

Item = tuple  # (doc_id, category, ...) — the category is always element 1


def id_parts(cid: str) -> list[str]:
    """The ids of a normalised id: the pieces of a ``|``-joined MeSH/OMIM/numeric composite, else
    ``[cid]`` (a tmVar key or any other id with ``|`` stays whole)."""
    pieces = cid.split("|")
    if len(pieces) > 1 and all(_COMPOSITE_PIECE.match(p) for p in pieces):
        return pieces
    return [cid]


def _check_categories(categories: Iterable[str]) -> tuple[str, ...]:
    cats = tuple(categories)
    if not cats:
        raise ValueError("entity metrics: no categories to score")
    if MICRO in cats or len(set(cats)) != len(cats):
        raise ValueError(f"entity metrics: categories must be distinct and not {MICRO!r}; got "
                         f"{list(cats)}")
    return cats


def _spans(doc: Document, categories: tuple[str, ...]) -> set[Item]:
    out = set()
    for m in doc.mentions:
        cat = mention_category(m.type)
        if cat in categories:
            out.add((doc.id, cat, m.start, m.end))
    return out


def _ids(doc: Document, categories: tuple[str, ...]) -> set[Item]:
    out = set()
    for m in doc.mentions:
        cat = mention_category(m.type)
        if cat in categories:
            out.update((doc.id, cat, part) for cid in m.ids for part in id_parts(cid))
    return out


def _gather(predicted: Iterable[Document], gold: Iterable[Document],
            pred_items: Callable[[Document], set[Item]],
            gold_items: Callable[[Document], set[Item]]) -> tuple[set[Item], set[Item]]:
    """(P, G) over the documents of the gold; each iterable is read once (gold first)."""
    g: set[Item] = set()
    docs: set[str] = set()
    for d in gold:
        docs.add(d.id)
        g |= gold_items(d)
    p: set[Item] = set()
    for d in predicted:
        if d.id in docs:
            p |= pred_items(d)
    return p, g


def _score(pred: set[Item], gold: set[Item]) -> dict[str, float | int]:
    s = prf(pred, gold)
    return {**s, "fp": s["predicted"] - s["tp"], "fn": s["gold"] - s["tp"]}


def _by_category(pred: set[Item], gold: set[Item], categories: tuple[str, ...]) -> dict[str, dict]:
    out = {c: _score({i for i in pred if i[1] == c}, {i for i in gold if i[1] == c})
           for c in categories}
    out[MICRO] = _score(pred, gold)
    return out


def recognition_scores(predicted: Iterable[Document], gold: Iterable[Document],
                       categories: Iterable[str] = ENTITY_CATEGORIES) -> dict[str, dict]:
    """Strict-span mention recognition scores (see the module docstring).

    Returns ``{category: S for each category, "micro": S}`` (categories in the order given), where
    S = ``{"precision", "recall", "f1", "tp", "fp", "fn", "predicted", "gold"}`` — a
    :func:`~graphmert.eval.metrics.prf` dict plus FP and FN; ``predicted`` / ``gold`` count spans.
    """
    cats = _check_categories(categories)
    p, g = _gather(predicted, gold, lambda d: _spans(d, cats), lambda d: _spans(d, cats))
    return _by_category(p, g, cats)


def normalisation_scores(predicted: Iterable[Document], gold: Iterable[Document],
                         categories: Iterable[str] = ENTITY_CATEGORIES) -> dict[str, dict]:
    """Document-level normalisation scores over (category, id) sets (see the module docstring).

    Same shape as :func:`recognition_scores`; ``predicted`` / ``gold`` count (document, category,
    id) items.
    """
    cats = _check_categories(categories)
    p, g = _gather(predicted, gold, lambda d: _ids(d, cats), lambda d: _ids(d, cats))
    return _by_category(p, g, cats)
