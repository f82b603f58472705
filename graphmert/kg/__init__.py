"""Seed knowledge graph: loading (KGX TSV, RDF, the shared Hetionet/DisGeNET/MeSH folder), relation
vocabulary and schema, lexicon and head linking, triple scoring, and the injection algorithm."""

from graphmert.kg.graph import Edge, KGError, Node, SeedKG, load_relation_map, save_relation_map
from graphmert.kg.injection import Candidates, Selection, injection_report, select_injections
from graphmert.kg.lexicon import Lexicon, LexiconMatch, LexiconMatcher, normalize_name
from graphmert.kg.linking import link_heads
from graphmert.kg.loaders import KG_READERS, load_kg, resolve_format
from graphmert.kg.schema import RelationSchema, mention_category
from graphmert.kg.scoring import SCORERS, triple_text

__all__ = [
    "Edge", "KGError", "Node", "SeedKG", "load_relation_map", "save_relation_map",
    "Candidates", "Selection", "injection_report", "select_injections",
    "Lexicon", "LexiconMatch", "LexiconMatcher", "normalize_name", "link_heads",
    "KG_READERS", "load_kg", "resolve_format", "RelationSchema", "mention_category",
    "SCORERS", "triple_text",
]
