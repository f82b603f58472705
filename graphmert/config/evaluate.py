"""Section ``evaluate``: evaluation against gold document-level relations (DESIGN §9)."""

from __future__ import annotations

from dataclasses import dataclass

from graphmert.config.options import opt


@dataclass
class EvaluateConfig:
    """Evaluation against gold document-level relations (DESIGN §9)."""

    gold: list[str] = opt(factory=list, help="gold files (PubTator or BioC) with entities and "
                          "relations; empty: no evaluation. Only the documents extraction read "
                          "are scored (extract.document_fraction slices both)")
    format: str = opt("auto", help="reader name for evaluate.gold, or 'auto' by suffix")
    relation_map: dict[str, str] = opt(factory=dict, help="model relation → gold relation type "
                                       "(unmapped relations keep their name)")
    baselines: list[str] = opt(factory=lambda: ["cooccurrence", "seed_kg"],
                               help="baseline systems run on the same documents (registry names)")
    bootstrap_resamples: int = opt(1000, min=0, help="paired bootstrap resamples of the scored documents "
                                   "for the interval of graphmert's F1 minus each other system's "
                                   "(graphmert.eval.bootstrap; seed 0); 0: no intervals")
