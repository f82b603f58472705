"""Where a raw-text extraction loses its pairs: recognition, linking or the model.

On recognised documents (the ``ner`` and ``link`` stages) a gold pair can be lost before the model
ranks anything. An entity of a document is *found* when some recognised mention carries its gold id
(:func:`~graphmert.eval.gold.mention_entity_ids`: composites included); a gold entity not found is
*mislinked* when a recognised mention overlaps one of its gold mentions (that mention carries other
ids, or none), and *unrecognised* otherwise. An entity's status is its best over its mentions.

Every gold pair then falls in exactly one row (:func:`pair_losses`): both ends found and the pair
extracted (a true positive), both found but not extracted (the model's or the selection's miss), or
not found, by its worse end (unrecognised before mislinked), with that end's category (the first by
name when both are as bad). Every extracted pair that is not gold falls in one row too: an end with
no id (a text node, ``unlinked:<name>`` in :func:`~graphmert.eval.metrics.pair_keys`), both ends gold
entities of the document (the model paired the wrong ones), or one or both ends ids the gold document
does not have (a wrong link, or a mention of something the gold does not annotate).

On gold mentions every entity is found, and the table is the model's share alone. Written for
``metrics.md`` (the evaluate stage adds it on recognised documents) and for
``experiments/raw_pairs.py``, which adds finer tables (gene species, reachable ids, text nodes).
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping

from graphmert.corpus.document import Document
from graphmert.eval.gold import GoldSet, Pair, mention_entity_ids
from graphmert.eval.metrics import UNLINKED

__all__ = ["entity_status", "pair_losses", "loss_table", "EXTRACTED", "NOT_EXTRACTED"]

ORDER = ("unrecognised", "mislinked", "found")            # an end's status, worst first
EXTRACTED = "both ends found: extracted (true positive)"
NOT_EXTRACTED = "both ends found: not extracted"
_FALSE_ROWS = ("an end unlinked (a text node)", "both ends gold entities: the wrong pair",
               "one end not a gold entity", "neither end a gold entity")


def entity_status(gold_doc: Document, found_doc: Document | None) -> dict[str, str]:
    """Gold entity id → ``found``, ``mislinked`` or ``unrecognised`` (module docstring)."""
    mentions = found_doc.mentions if found_doc else []
    found_ids = {eid for m in mentions for eid in mention_entity_ids(m)}
    status: dict[str, str] = {}
    for m in gold_doc.mentions:
        overlaps = any(f.start < m.end and m.start < f.end for f in mentions)
        for eid in mention_entity_ids(m):
            now = "found" if eid in found_ids else "mislinked" if overlaps else "unrecognised"
            if eid not in status or ORDER.index(now) > ORDER.index(status[eid]):
                status[eid] = now
    return status


def pair_losses(gold: GoldSet, found: Mapping[str, Document], predicted: set[Pair]) -> dict:
    """``{"gold_pairs": {row: n}, "false_pairs": {row: n}, "extracted_pairs": n}`` over the gold's
    documents (module docstring): ``found`` maps a document id to the document with the mentions
    extraction read (recognised and linked; a gold document absent from it had none); ``predicted``:
    a system's untyped pairs, every triple counted (:func:`~graphmert.eval.metrics.pair_sets`). Rows
    in a fixed order: the found rows, then mislinked and unrecognised ends by category; rows with no
    pair left out."""
    status = {d: entity_status(doc, found.get(d)) for d, doc in gold.documents.items()}
    lost: Counter = Counter()
    for doc, pair in gold.untyped:
        ends = [status[doc].get(e, "unrecognised") for e in pair]
        if all(s == "found" for s in ends):
            lost[EXTRACTED if (doc, pair) in predicted else NOT_EXTRACTED] += 1
        else:
            worst = min(ends, key=ORDER.index)
            bad = sorted(gold.category(doc, e).replace("biolink:", "") or "?"
                         for e, s in zip(pair, ends) if s == worst)
            lost[f"an end {worst}: {bad[0]}"] += 1
    wrong: Counter = Counter()
    for doc, pair in predicted - gold.untyped:
        if doc not in status:                                   # evidence outside the gold documents
            continue
        if any(e.startswith(UNLINKED) for e in pair):
            wrong[_FALSE_ROWS[0]] += 1
        else:
            known = sum(e in status[doc] for e in pair)
            wrong[_FALSE_ROWS[{2: 1, 1: 2, 0: 3}[known]]] += 1
    order = [EXTRACTED, NOT_EXTRACTED] + sorted(k for k in lost if "mislinked" in k) \
        + sorted(k for k in lost if "unrecognised" in k)
    return {"gold_pairs": {k: lost[k] for k in order if lost[k]},
            "false_pairs": {k: wrong[k] for k in _FALSE_ROWS if wrong[k]},
            "extracted_pairs": sum(doc in status for doc, _ in predicted)}


def loss_table(losses: dict, system: str = "graphmert") -> str:
    """Markdown tables of :func:`pair_losses`: each gold pair's row with its count and share of the
    gold pairs, then each false extracted pair's with its share of the extracted pairs."""
    gold, false, n_pred = losses["gold_pairs"], losses["false_pairs"], losses["extracted_pairs"]
    n_gold = sum(gold.values())
    rows = [f"Where {system} loses the {n_gold} gold pairs (graphmert.eval.losses):", "",
            "| gold pairs | count | share |", "|---|---|---|"]
    rows += [f"| {k} | {n} | {n / max(1, n_gold):.3f} |" for k, n in gold.items()]
    rows += ["", f"| the {sum(false.values())} false of {n_pred} extracted pairs | count | share |",
             "|---|---|---|"]
    rows += [f"| {k} | {n} | {n / max(1, n_pred):.3f} |" for k, n in false.items()]
    return "\n".join(rows) + "\n"
