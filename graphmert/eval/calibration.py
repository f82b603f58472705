"""Does a triple's confidence say how often it holds? Reliability of extracted pairs by confidence.

A user keeps the triples above some confidence and wants to know what share of them hold. Each
scored document-level pair of a system (:func:`graphmert.eval.metrics.pair_sets`: one per triple and
evidence document, an unlinked end counting as a false pair) gets a confidence

    c(d, {a, b}) = max over the pair's triples t and their evidence events e in document d of e.confidence

(a triple without evidence records lends its own ``confidence`` to each of its documents). With the
pairs binned by confidence into B bins of equal width over [0, 1],

    precision_b  = |{pairs in b that the gold holds}| / n_b                  (untyped)
    typed_b      = |{pairs in b whose (pair, type) the gold holds, for some type given}| / n_b
    ECE          = Σ_b (n_b / N) · |precision_b − mean confidence_b|        (expected calibration error)

and for each bin's lower edge c the pairs at confidence ≥ c as a system of their own: its precision
and its recall of the gold (the choice a user makes with a confidence threshold). ECE is 0 when every
bin's precision equals its mean confidence; a confidence that only ranks (not a probability) shows up
as a large ECE, with the ≥ c rows still valid.

Hand-written: a reliability table is a few counts (scikit-learn's ``calibration_curve`` bins the same
way but drops the counts and the cumulative rows a threshold choice needs).
"""

from __future__ import annotations

from typing import Iterable, Mapping

from graphmert.eval.gold import GoldSet, Pair
from graphmert.eval.metrics import pair_keys
from graphmert.extract.triples import Triple

__all__ = ["pair_confidences", "reliability", "calibration_table"]

BINS = 10


def pair_confidences(triples: Iterable[Triple], relation_map: Mapping[str, str] | None = None
                     ) -> dict[Pair, tuple[float, frozenset[str]]]:
    """(doc, {a, b}) → (confidence, the relation types given to the pair there) over ``triples``
    (module docstring; types mapped by ``relation_map`` as :func:`~graphmert.eval.metrics.pair_sets`)."""
    relation_map = relation_map or {}
    out: dict[Pair, tuple[float, frozenset[str]]] = {}
    for t in triples:
        pair = pair_keys(t)
        if pair is None:
            continue
        per_doc: dict[str, float] = {}
        for e in t.evidence:
            if e.doc_id:
                per_doc[e.doc_id] = max(per_doc.get(e.doc_id, e.confidence), e.confidence)
        if not t.evidence:
            per_doc = {d: t.confidence for d in t.documents if d}
        rtype = relation_map.get(t.relation, t.relation)
        for doc, conf in per_doc.items():
            best, types = out.get((doc, pair), (conf, frozenset()))
            out[(doc, pair)] = (max(best, conf), types | {rtype})
    return out


def reliability(confidences: Mapping[Pair, tuple[float, frozenset[str]]], gold: GoldSet,
                bins: int = BINS) -> dict:
    """The reliability of ``confidences`` (:func:`pair_confidences`) against ``gold`` (module
    docstring). Pairs of documents outside the gold are not scored. Returns ``{"pairs", "ece",
    "bins": [{"low", "high", "pairs", "mean_confidence", "precision", "typed_precision",
    "at_least": {"pairs", "precision", "recall"}}, …]}``, bins without pairs left out, lowest first."""
    if bins < 1:
        raise ValueError(f"reliability: bins must be ≥ 1, got {bins}")
    rows: list[list[tuple[float, bool, bool]]] = [[] for _ in range(bins)]
    for (doc, pair), (conf, types) in confidences.items():
        if doc not in gold.documents:
            continue
        right = (doc, pair) in gold.untyped
        typed = any((doc, pair, r) in gold.typed for r in types)
        rows[min(int(min(max(conf, 0.0), 1.0) * bins), bins - 1)].append((conf, right, typed))
    n = sum(len(r) for r in rows)
    out, ece = [], 0.0
    above_n, above_right = n, sum(right for r in rows for _, right, _ in r)
    for b, members in enumerate(rows):
        if members:
            k = len(members)
            mean = sum(c for c, _, _ in members) / k
            precision = sum(r for _, r, _ in members) / k
            ece += k / n * abs(precision - mean)
            out.append({"low": b / bins, "high": (b + 1) / bins, "pairs": k, "mean_confidence": mean,
                        "precision": precision, "typed_precision": sum(t for _, _, t in members) / k,
                        "at_least": {"pairs": above_n, "precision": above_right / above_n,
                                     "recall": above_right / len(gold.untyped) if gold.untyped else 0.0}})
        above_n -= len(members)
        above_right -= sum(r for _, r, _ in members)
    return {"pairs": n, "ece": ece if n else None, "bins": out}


def calibration_table(name: str, rel: dict) -> str:
    """Markdown: one system's :func:`reliability`, a row per bin, under a line with its ECE."""
    if not rel["pairs"]:
        return f"Confidence of {name}'s pairs: no scored pairs.\n"
    rows = [f"Confidence of {name}'s pairs ({rel['pairs']} scored; expected calibration error "
            f"{rel['ece']:.3f}; graphmert.eval.calibration):", "",
            "| confidence | pairs | mean confidence | precision | typed precision "
            "| pairs ≥ low | precision ≥ low | recall ≥ low |", "|" + "---|" * 8]
    for b in reversed(rel["bins"]):
        a = b["at_least"]
        rows.append(f"| {b['low']:.1f}–{b['high']:.1f} | {b['pairs']} | {b['mean_confidence']:.3f} | "
                    f"{b['precision']:.3f} | {b['typed_precision']:.3f} | {a['pairs']} | "
                    f"{a['precision']:.3f} | {a['recall']:.3f} |")
    return "\n".join(rows) + "\n"
