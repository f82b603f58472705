"""Evaluation against gold document-level relations: gold sets, pair metrics, baselines, report."""

from graphmert.eval.baselines import BASELINES, allowed_category_pairs, cooccurrence, seed_kg
from graphmert.eval.bootstrap import counts_f1, document_counts, f1_difference
from graphmert.eval.gold import GoldSet, Pair, TypedPair, load_gold
from graphmert.eval.metrics import (
    evaluate_system, pair_sets, prf, seed_pairs, split_seed, triple_documents, validity,
)
from graphmert.eval.report import markdown_table, metrics_payload, write_report

__all__ = [
    "BASELINES", "allowed_category_pairs", "cooccurrence", "seed_kg", "counts_f1", "document_counts", "f1_difference",
    "GoldSet", "Pair", "TypedPair", "load_gold",
    "evaluate_system", "pair_sets", "prf", "seed_pairs", "split_seed", "triple_documents", "validity",
    "markdown_table", "metrics_payload", "write_report",
]
