"""Section ``kg``: the seed knowledge graph and the injection of its triples (DESIGN §7)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from graphmert.config.options import opt


@dataclass
class KGConfig:
    """Seed knowledge graph and the injection algorithm (DESIGN §7)."""

    nodes: list[str] = opt(factory=list, help="node tables (KGX TSV, .gz allowed) or RDF files")
    edges: list[str] = opt(factory=list, help="edge tables (KGX TSV, .gz allowed) or RDF files")
    path: Optional[str] = opt(None, help="a seed-KG folder in a named layout "
                              "(e.g. format 'hetionet_disgenet_mesh'); used instead of nodes/edges")
    format: str = opt("auto", help="seed-KG reader name ('kgx_tsv', 'rdf', 'hetionet_disgenet_mesh'), "
                      "or 'auto' by suffix / folder layout")
    include_isa: bool = opt(False, help="hetionet_disgenet_mesh: also load the MeSH 'isa' edges")
    relation_files: list[str] = opt(factory=list, help="corpus files with document-level relations "
                                    "(PubTator / BioC, e.g. BioRED train) added as seed triples in "
                                    "both directions; names and categories come from their mentions")
    relation_files_format: str = opt("auto", help="reader name for kg.relation_files, or 'auto'")
    relation_map: dict[str, str] = opt(factory=dict, help="seed relation → the relation it is "
                                       "trained as (CID: Positive_Correlation), for the seed KG's "
                                       "edges and the relation corpora's annotated types alike; "
                                       "relations not listed keep their names")
    prefix_map: dict[str, str] = opt(factory=dict, help="extra CURIE prefix → IRI base used to "
                                     "compact RDF IRIs (added to the built-in map)")
    relation_schema: dict[str, list[list[str]]] = opt(
        factory=dict, help="relation → allowed [subject category, object category] pairs; "
        "relations not listed are learned from the KG")
    skip_bad_records: bool = opt(False, help="count and skip bad KG rows instead of failing")
    injection: str = opt("paper", choices=("paper", "cooccurrence"),
                         help="which seed triples become leaves where: 'paper' (each triple once, in "
                              "its most similar chunk; DESIGN §7) or 'cooccurrence' (a triple in "
                              "every chunk that mentions its head and its tail, plus 'no tail' "
                              "questions in relation-annotated documents; graphmert.graph.distant)")
    negative_queries: bool = opt(True, help="cooccurrence: ask the relation-annotated documents' "
                                 "questions that have no tail in the chunk (known negatives)")
    candidate_scope: str = opt("chunk", choices=("sentence", "title", "chunk"),
                               help="cooccurrence: the entities a training question chooses among: "
                                    "its chunk's, or those in the head's sentence (or that sentence "
                                    "and the title), as extract.tail_scope asks; a question whose "
                                    "tails all lie outside becomes a 'none' question in "
                                    "relation-annotated documents and asks the candidate head "
                                    "nothing elsewhere (graphmert.graph.scope)")
    candidate_scope_by_category: dict[str, str] = opt(
        factory=dict, help="candidate_scope per unordered category pair, as "
                           "extract.tail_scope_by_category; other pairs get candidate_scope")
    scorer: str = opt("tfidf", help="triple-to-chunk similarity scorer (registry name)")
    alpha: float = opt(0.55, min=0.0, max=1.0, help="keep candidate injections scoring above alpha")
    min_relation_count: int = opt(100, min=0, help="drop relations with fewer kept triples "
                                  "(cooccurrence: with fewer seed triples)")
    score_band: float = opt(0.01, min=0.0, max=1.0, min_exclusive=True,
                            help="band width for 'best score first, rarer relation first'")
    lexicon_matching: bool = opt(True, help="link unannotated text to KG nodes by name")
    lexicon_min_chars: int = opt(3, min=1, help="ignore KG names/synonyms shorter than this "
                                 "when matching text (all-uppercase names match case-sensitively)")
    max_unknown_tail_fraction: float = opt(
        0.5, min=0.0, max=1.0, help="fail when more than this share of candidate tail names "
        "tokenise entirely to [UNK] (tokenizer/KG mismatch); below it such tails are skipped")
