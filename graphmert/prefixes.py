"""CURIE prefixes: the one prefix map, and the converter built from it.

:data:`BUILTIN_PREFIXES` is the single source of truth for CURIE ↔ IRI. It is used in both directions:
the exporter (:mod:`graphmert.export.terms`) expands entity CURIEs to IRIs with it, and the seed-KG RDF
reader (:mod:`graphmert.kg.rdf`) compacts IRIs back to CURIEs with it, so an exported graph read back
as a seed KG gives the same CURIEs. The bases follow the Biolink Model's JSON-LD context (the
vocabulary the export speaks): ``NCBIGene`` is ``http://identifiers.org/ncbigene/``, ``MESH``
``http://id.nlm.nih.gov/mesh/``.

Config maps only add to or override it per prefix (``export.prefix_map`` for the export,
``kg.prefix_map`` for reading); both default to empty.

``graphmert:`` (:data:`MINTED_PREFIX`) is the exporter's own namespace (``export.namespace``, whose
default is the base listed here): the IRIs it mints for entities without a usable CURIE. Its CURIEs
(the KGX ids ``graphmert:entity/…``) carry the IRI's path as it is, already percent-encoded, so that
prefix alone is neither encoded on export nor decoded on reading.

Conversion is done by a :class:`curies.Converter` (:func:`prefix_converter`): longest matching IRI base
wins, and when two sources disagree the higher-priority one keeps the primary spelling while the
other becomes a synonym (so both IRI bases still compact to one CURIE prefix).
"""

from __future__ import annotations

from typing import Mapping
from urllib.parse import unquote

import curies

__all__ = ["BUILTIN_PREFIXES", "MINTED_PREFIX", "prefix_converter", "compact_iri"]

MINTED_PREFIX = "graphmert"

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
    MINTED_PREFIX: "https://w3id.org/graphmert/",       # = ExportConfig.namespace's default (tested)
}


def prefix_converter(overrides: Mapping[str, str] | None = None,
                     fallback: Mapping[str, str] | None = None) -> curies.Converter:
    """A converter over ``overrides`` > :data:`BUILTIN_PREFIXES` > ``fallback`` (prefix → IRI base).

    ``overrides`` is a config map (``export.prefix_map`` / ``kg.prefix_map``), ``fallback`` the
    prefixes an RDF file binds. A lower-priority entry that shares a prefix or a base with a
    higher-priority one is merged into it as a synonym (it still compacts, to the higher-priority
    prefix, but never changes an expansion); one that would tie two existing entries together is
    dropped. Empty prefixes or bases (Turtle's ``@prefix :``) are ignored.
    """
    converter = curies.Converter([])
    for source in (overrides or {}, BUILTIN_PREFIXES, fallback or {}):
        for prefix, base in source.items():
            if not prefix or not base:
                continue
            record = curies.Record(prefix=str(prefix), uri_prefix=str(base))
            try:
                converter.add_record(record, merge=True)
            except ValueError:   # matches two different entries already there: the earlier win
                continue
    return converter


def compact_iri(converter: curies.Converter, iri: str) -> str:
    """``prefix:local`` for an IRI under a known base, else the IRI itself.

    The local part is percent-decoded, undoing the exporter's encoding (``MESH:a b`` is exported as
    ``…/mesh/a%20b`` and reads back as ``MESH:a b``), except under :data:`MINTED_PREFIX`, whose
    CURIEs keep the encoded path (module docstring). An IRI that is exactly a base stays an IRI.
    """
    ref = converter.parse_uri(iri)
    if ref is None or not ref.identifier:
        return iri
    local = ref.identifier if ref.prefix == MINTED_PREFIX else unquote(ref.identifier)
    return f"{ref.prefix}:{local}"
