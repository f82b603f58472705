"""Section ``export``: RDF / KGX export and the HTML report (docs/EXPORT.md)."""

from __future__ import annotations

from dataclasses import dataclass

from graphmert.config.options import opt


@dataclass
class ExportConfig:
    """RDF / KGX export and the HTML report (docs/EXPORT.md). Names are checked by graphmert.export."""

    formats: list[str] = opt(factory=lambda: ["ttl", "nt", "jsonld", "kgx", "store"],
                             help="files to write: ttl, nt, jsonld, kgx (TSV + JSON Lines), trig, nq "
                                  "(trig / nq: one named graph per run), store (an Oxigraph SPARQL "
                                  "database in export/store, loaded from nq or nt)")
    namespace: str = opt("https://w3id.org/graphmert/", help="IRI base of minted IRIs (entities "
                         "without an id, associations, runs, documents that are not PMIDs)")
    predicate_map: dict[str, str] = opt(
        factory=lambda: {
            "associated_with": "biolink:associated_with", "associates": "biolink:associated_with",
            "Association": "biolink:associated_with", "treats": "biolink:treats",
            "palliates": "biolink:ameliorates_condition", "causes": "biolink:causes",
            "binds": "biolink:directly_physically_interacts_with",
            "Bind": "biolink:directly_physically_interacts_with",
            "upregulates": "biolink:affects", "downregulates": "biolink:affects",
            "presents": "biolink:has_phenotype", "isa": "biolink:subclass_of",
            "includes": "biolink:has_member", "resembles": "biolink:similar_to",
            "Positive_Correlation": "biolink:positively_correlated_with",
            "Negative_Correlation": "biolink:negatively_correlated_with",
            "Drug_Interaction": "biolink:pharmacologically_interacts_with",
            "Cotreatment": "biolink:related_to",
            "Comparison": "biolink:related_to", "Conversion": "biolink:related_to"},
        help="seed-KG relation → Biolink predicate CURIE (a YAML value replaces the whole table)")
    predicate_qualifiers: dict[str, dict[str, str]] = opt(
        factory=lambda: {
            "upregulates": {"qualified_predicate": "biolink:causes",
                            "object_aspect_qualifier": "activity_or_abundance",
                            "object_direction_qualifier": "increased"},
            "downregulates": {"qualified_predicate": "biolink:causes",
                              "object_aspect_qualifier": "activity_or_abundance",
                              "object_direction_qualifier": "decreased"}},
        help="relation → {Biolink qualifier slot: value} written on its association and KGX edge, "
             "whatever predicate it maps to (the Biolink 4 qualifier pattern keeps a direction: "
             "'affects' + 'causes' increased activity_or_abundance); slots and values from "
             "graphmert/export/terms.py QUALIFIERS; a YAML value replaces the whole table")
    default_predicate: str = opt("biolink:related_to", help="Biolink predicate of relations "
                                 "missing from export.predicate_map (counted in the manifest)")
    category_map: dict[str, str] = opt(factory=dict, help="category as found in triples → Biolink "
                                       "category CURIE; Biolink CURIEs and corpus mention types "
                                       "(Gene, Chemical, ...) need no entry; unknown → NamedThing")
    prefix_map: dict[str, str] = opt(
        factory=dict,
        help="CURIE prefix → IRI base, overriding the built-in map (graphmert/prefixes.py, the one "
             "the seed-KG RDF reader uses too) per prefix; empty: the built-in map as it is")
    pmid_base: str = opt("http://www.ncbi.nlm.nih.gov/pubmed/",
                         help="IRI base of PubMed ids (all-digit document ids)")
    max_supporting_text: int = opt(5, min=0, help="distinct evidence sentences kept per association")
    knowledge_source: str = opt("infores:graphmert", help="primary_knowledge_source of every edge "
                                "(KGX column and RDF association): an infores: CURIE, lower case")
    report_samples: int = opt(50, min=0, help="sample triples (with evidence) in the HTML report")
    report_top_entities: int = opt(20, min=1, help="entities in the report's top-entities plot")
