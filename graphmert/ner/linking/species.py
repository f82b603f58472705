"""Species: a document's dominant species, and gene orthologs learnt from the names that genes of two
species share (:mod:`graphmert.ner.linking`, "Orthologs")."""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from graphmert.ner.linking.common import _GENE, _TAXON, NAMESPACES, Votes, _winner

_KG_SOURCE = "kg"             # the seed KG's names, as a source of gene orthologs (_gene_orthologs)


def _dominant_species(ids: Iterable[str]) -> str | None:
    """The most frequent taxon id (ties: the smallest), or None."""
    counts = Counter(i for i in ids if i.startswith(NAMESPACES[_TAXON]))
    return _winner(counts) if counts else None


def _gene_orthologs(species: dict[str, Votes], kg: dict[str, dict[str, str]]
                    ) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """(gene id → its taxon, gene id → taxon → that taxon's gene of the same name), learnt from the
    surface forms (:mod:`graphmert.ner.linking`, "Orthologs").

    A gene id's taxon is the species of the training documents that annotate it most. Two genes are
    taken for the same gene in two species when a surface key's winning id in one species' votes (or
    in the seed KG's names: source :data:`_KG_SOURCE`) and its winning id in the other's differ;
    each key is one vote, and a gene's ortholog in a taxon is its most voted id whose own taxon that
    is (the KG's genes are targets of the source :data:`_KG_SOURCE`).

    Written here because the shared data carries no orthology table (NCBI's gene_orthologs is not
    among it), and the training documents name the same genes in human, mouse and rat papers."""
    taxon_votes: dict[str, Counter] = {}
    by_key: dict[str, dict[str, str]] = {}                   # key → source → its winning gene id
    for sp, votes in species.items():
        for key, counts in votes.get(_GENE, {}).items():
            for ids, n in counts.items():
                taxon_votes.setdefault(ids[0], Counter())[sp] += n
            by_key.setdefault(key, {})[sp] = _winner(counts)[0]
    for key, primary in kg.get(_GENE, {}).items():
        by_key.setdefault(key, {})[_KG_SOURCE] = primary
    taxa = {gene: _winner(c) for gene, c in taxon_votes.items()}
    support: dict[str, dict[str, Counter]] = {}              # gene → target source → Counter(genes)
    for winners in by_key.values():
        for a in set(winners.values()):
            for source, b in winners.items():
                if b != a and (source == _KG_SOURCE or taxa.get(b) == source):
                    support.setdefault(a, {}).setdefault(source, Counter())[b] += 1
    return taxa, {a: {t: _winner(c) for t, c in by_t.items()} for a, by_t in support.items()}
