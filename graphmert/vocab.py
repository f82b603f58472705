"""Shared RDF vocabulary: the built-in CURIE prefix map.

One table, used in both directions: the seed-KG RDF reader (:mod:`graphmert.kg.rdf`) compacts IRIs to
CURIEs with it, and the exporter (:mod:`graphmert.export.vocab`) expands CURIEs to IRIs with it (after
``export.prefix_map``, which overrides it per prefix). Config maps (``kg.prefix_map``,
``export.prefix_map``) add to or override it; nothing else defines prefixes.
"""

from __future__ import annotations

__all__ = ["BUILTIN_PREFIXES"]

BUILTIN_PREFIXES: dict[str, str] = {
    "biolink": "https://w3id.org/biolink/vocab/",
    "MESH": "http://id.nlm.nih.gov/mesh/",
    "NCBIGene": "http://identifiers.org/ncbigene/",
    "NCBITaxon": "http://purl.obolibrary.org/obo/NCBITaxon_",
    "DOID": "http://purl.obolibrary.org/obo/DOID_",
    "CHEBI": "http://purl.obolibrary.org/obo/CHEBI_",
    "MONDO": "http://purl.obolibrary.org/obo/MONDO_",
    "HP": "http://purl.obolibrary.org/obo/HP_",
    "GO": "http://purl.obolibrary.org/obo/GO_",
    "DRUGBANK": "http://identifiers.org/drugbank/",
    "UMLS": "http://linkedlifedata.com/resource/umls/id/",
    "OMIM": "http://purl.obolibrary.org/obo/OMIM_",
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "owl": "http://www.w3.org/2002/07/owl#",
    "skos": "http://www.w3.org/2004/02/skos/core#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "dcterms": "http://purl.org/dc/terms/",
    "prov": "http://www.w3.org/ns/prov#",
    "schema": "http://schema.org/",
    "obo": "http://purl.obolibrary.org/obo/",
}
