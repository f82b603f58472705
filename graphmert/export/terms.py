"""Export terms: Biolink + PROV-O terms, CURIE expansion, minted IRIs, safe text.

Every IRI the exporter writes comes from one :class:`ExportTerms` (built from ``export.*`` config):

======================  ============================================================================
entity with a CURIE     ``prefix base + percent-encoded local part`` — the base from
                        :data:`graphmert.prefixes.BUILTIN_PREFIXES`, unless ``export.prefix_map``
                        overrides that prefix (``MESH:D003924`` →
                        ``http://id.nlm.nih.gov/mesh/D003924``, ``NCBIGene:3630`` →
                        ``http://identifiers.org/ncbigene/3630``)
other non-empty id      ``NS entity/<percent-encoded id>`` (unknown prefix, composite ``a|b`` ids,
                        ids with spaces, ``<>``, quotes or ``../``)
no id                   ``NS entity/name-<sha256(normalised name)[:16]>``
document (PMID)         ``export.pmid_base + digits`` (``http://www.ncbi.nlm.nih.gov/pubmed/123``)
document (other)        ``NS document/<percent-encoded id>``
association             ``NS association/<sha256(run, head key, relation, tail key)[:20]>``
run activity / graph    ``NS run/<run id>`` / ``NS graph/<run id>``
======================  ============================================================================

``NS`` is ``export.namespace``. Percent-encoding leaves only ``A-Z a-z 0-9 - . _ ~`` and a local part
made only of dots is encoded too, so no IRI carries spaces, quotes, angle brackets, braces, ``|``,
``^``, backslashes, backticks, control characters or a ``..`` path segment.

Biolink terms live in :class:`BIOLINK`, a closed rdflib ``DefinedNamespace``: an unknown term raises,
so a typo in ``export.predicate_map`` is an error naming the key, not a silently invented IRI.
GraphMERT's own terms are in :class:`GRAPHMERT` (a fixed namespace, so queries do not depend on
``export.namespace``).

``export.predicate_qualifiers`` (relation → qualifier slot → value) is checked against
:data:`QUALIFIERS`, a closed table of Biolink qualifier slots and their allowed values, and
``export.knowledge_source`` must be an ``infores:`` CURIE (:data:`INFORES`); either mistake is a
:class:`~graphmert.config.ConfigError` naming the key.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import Iterable
from urllib.parse import quote

from rdflib import URIRef
from rdflib.namespace import DefinedNamespace, Namespace

from graphmert.config import ConfigError, ExportConfig
from graphmert.prefixes import BUILTIN_PREFIXES, MINTED_PREFIX, prefix_converter

__all__ = ["BIOLINK", "GRAPHMERT", "CATEGORIES", "PREDICATES", "QUALIFIERS", "INFORES", "FORMATS",
           "ExportTerms",
           "check_formats", "clean_text", "encode_local", "is_safe_iri", "is_pmid", "name_key"]


class BIOLINK(DefinedNamespace):
    """The Biolink Model terms the exporter may write (https://biolink.github.io/biolink-model/)."""

    _NS = Namespace("https://w3id.org/biolink/vocab/")
    _fail = True

    # classes: the association and the entity categories
    Association: URIRef
    NamedThing: URIRef
    Gene: URIRef
    Protein: URIRef
    GeneFamily: URIRef
    ChemicalEntity: URIRef
    SmallMolecule: URIRef
    Drug: URIRef
    ChemicalRole: URIRef
    MolecularMixture: URIRef
    Disease: URIRef
    PhenotypicFeature: URIRef
    DiseaseOrPhenotypicFeature: URIRef
    SequenceVariant: URIRef
    OrganismTaxon: URIRef
    CellLine: URIRef
    Cell: URIRef
    AnatomicalEntity: URIRef
    BiologicalProcess: URIRef
    MolecularActivity: URIRef
    CellularComponent: URIRef
    Pathway: URIRef
    Procedure: URIRef
    # association slots
    subject: URIRef
    predicate: URIRef
    object: URIRef
    has_confidence_score: URIRef
    supporting_text: URIRef
    publications: URIRef
    evidence_count: URIRef
    knowledge_level: URIRef
    agent_type: URIRef
    primary_knowledge_source: URIRef
    # entity slots
    xref: URIRef
    # association qualifier slots (QUALIFIERS)
    qualified_predicate: URIRef
    object_aspect_qualifier: URIRef
    object_direction_qualifier: URIRef
    # predicates
    related_to: URIRef
    associated_with: URIRef
    correlated_with: URIRef
    positively_correlated_with: URIRef
    negatively_correlated_with: URIRef
    gene_associated_with_condition: URIRef
    treats: URIRef
    ameliorates_condition: URIRef
    preventative_for_condition: URIRef
    contraindicated_in: URIRef
    causes: URIRef
    contributes_to: URIRef
    affects: URIRef
    regulates: URIRef
    pharmacologically_interacts_with: URIRef
    physically_interacts_with: URIRef
    directly_physically_interacts_with: URIRef
    has_phenotype: URIRef
    subclass_of: URIRef
    has_member: URIRef
    has_part: URIRef
    part_of: URIRef
    similar_to: URIRef
    coexists_with: URIRef
    expressed_in: URIRef
    located_in: URIRef


_ASSOCIATION_SLOTS = ("subject", "predicate", "object", "has_confidence_score", "supporting_text",
                      "publications", "evidence_count", "knowledge_level", "agent_type",
                      "primary_knowledge_source", "qualified_predicate", "object_aspect_qualifier",
                      "object_direction_qualifier")
_ENTITY_SLOTS = ("xref",)
CATEGORIES: tuple[str, ...] = tuple(n for n in BIOLINK.__annotations__ if n[0].isupper()
                                    and n != "Association")
PREDICATES: tuple[str, ...] = tuple(n for n in BIOLINK.__annotations__ if n[0].islower()
                                    and n not in _ASSOCIATION_SLOTS + _ENTITY_SLOTS)


# The qualifier slots ``export.predicate_qualifiers`` may set, in KGX column order, with their allowed
# values: a closed subset of the pinned Biolink model's enums (``qualified_predicate``: a predicate of
# BIOLINK; ``object_aspect_qualifier``: GeneOrGeneProductOrChemicalEntityAspectEnum;
# ``object_direction_qualifier``: DirectionQualifierEnum). tests/export/test_kgx_biolink.py checks
# every value against the model.
QUALIFIERS: dict[str, tuple[str, ...]] = {
    "qualified_predicate": tuple("biolink:" + p for p in PREDICATES),
    "object_aspect_qualifier": ("activity_or_abundance", "activity", "abundance", "expression",
                                "synthesis", "degradation", "localization", "transport",
                                "secretion", "uptake"),
    "object_direction_qualifier": ("increased", "decreased", "upregulated", "downregulated"),
}
# an Information Resource Registry id (https://biolink.github.io/information-resource-registry/)
INFORES = re.compile(r"^infores:[a-z0-9][a-z0-9._-]*$")


class GRAPHMERT(DefinedNamespace):
    """GraphMERT's own terms: the seed-KG relation name of an association and the run record."""

    _NS = Namespace("https://w3id.org/graphmert/vocab/")
    _fail = True

    relation: URIRef          # association → the model's relation name (literal)
    tailSource: URIRef        # association → how the tail was found (literal: mention, lexicon, …)
    checkpoint: URIRef        # run → model checkpoint id (literal)
    configHash: URIRef        # run → config hash of the extraction (literal)
    softwareVersion: URIRef   # run → graphmert.__version__ (literal)


FORMATS = ("ttl", "nt", "jsonld", "kgx", "trig", "nq", "store")   # store: graphmert.export.store

# C0/C1 controls except tab, newline, carriage return; lone surrogates; the two non-characters.
_UNSAFE_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
# an absolute IRI: a scheme, then no character that RFC 3987 / N-Triples IRIREF forbids
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_SAFE_IRI = re.compile(r'[A-Za-z][A-Za-z0-9+.\-]*:[^\x00-\x20<>"{}|\\^`\x7f-\x9f]*')
_PREFIX = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
_PMID = re.compile(r"^(?:pmid:\s*)?(\d{1,12})$", re.IGNORECASE)


def clean_text(text: str) -> str:
    """Text safe for every output format: control characters (other than tab, newline, carriage
    return), lone surrogates and U+FFFE/U+FFFF are removed; everything else is kept verbatim."""
    return _UNSAFE_TEXT.sub("", text)


def encode_local(text: str) -> str:
    """Percent-encode all but ``A-Z a-z 0-9 - . _ ~`` (UTF-8); a dots-only result is encoded too."""
    out = quote(text, safe="")
    if out and set(out) == {"."}:
        out = out.replace(".", "%2E")
    return out


def is_safe_iri(iri: str) -> bool:
    """An absolute IRI without characters that N-Triples / Turtle forbid inside ``<...>``."""
    return _SAFE_IRI.fullmatch(iri) is not None


def is_pmid(doc_id: str) -> str | None:
    """The digits of a PubMed id (``"123"``, ``"PMID:123"``), or None."""
    m = _PMID.match(doc_id.strip())
    return m.group(1) if m else None


def name_key(name: str) -> str:
    """The normalised name that identifies an entity without an id (as in ``triple_key``)."""
    return " ".join(name.lower().split())


def _digest(*parts: str, n: int) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:n]


def check_formats(formats: Iterable[str]) -> list[str]:
    """Validate ``export.formats`` (order kept, repeats dropped)."""
    out = []
    for i, f in enumerate(formats):
        if f not in FORMATS:
            raise ConfigError(f"export.formats[{i}]: {f!r} is not allowed; choose from {list(FORMATS)}")
        if f not in out:
            out.append(f)
    return out


def _biolink_term(key: str, curie: str, allowed: tuple[str, ...], kind: str) -> URIRef:
    prefix, sep, name = curie.partition(":")
    if not sep or prefix != "biolink" or name not in allowed:
        raise ConfigError(f"{key}: {curie!r} is not a known Biolink {kind}; use one of "
                          f"{['biolink:' + a for a in allowed]}")
    return getattr(BIOLINK, name)


def _check_qualifiers(table: dict[str, dict[str, str]]) -> dict[str, tuple[tuple[str, str], ...]]:
    """``export.predicate_qualifiers`` checked against :data:`QUALIFIERS`: relation → ((slot, value),
    …) in :data:`QUALIFIERS` order. ``qualified_predicate`` must name a predicate of :class:`BIOLINK`."""
    out = {}
    for rel, quals in table.items():
        for slot, value in quals.items():
            key = f"export.predicate_qualifiers.{rel}.{slot}"
            if slot not in QUALIFIERS:
                raise ConfigError(f"{key}: not an allowed Biolink qualifier; use one of {list(QUALIFIERS)}")
            if slot == "qualified_predicate":
                _biolink_term(key, value, PREDICATES, "predicate")
            elif value not in QUALIFIERS[slot]:
                raise ConfigError(f"{key}: {value!r} is not allowed; choose from {list(QUALIFIERS[slot])}")
        out[rel] = tuple((slot, quals[slot]) for slot in QUALIFIERS if slot in quals)
    return out


def _check_base(key: str, base: str) -> str:
    if not is_safe_iri(base):
        raise ConfigError(f"{key}: {base!r} is not an absolute IRI without spaces, quotes or <>")
    return base


class ExportTerms:
    """IRIs, predicates and categories for one export (see the module docstring).

    Also counts what fell back to a default: ``unmapped_relations`` (relation → triples exported with
    ``export.default_predicate``) and ``unknown_categories`` (category → entities typed NamedThing).
    """

    def __init__(self, cfg: ExportConfig) -> None:
        self.cfg = cfg
        self.namespace = _check_base("export.namespace", cfg.namespace)
        if not self.namespace.endswith(("/", "#")):
            raise ConfigError(f"export.namespace: {cfg.namespace!r} must end with '/' or '#'")
        self.pmid_base = _check_base("export.pmid_base", cfg.pmid_base)
        for prefix, base in cfg.prefix_map.items():
            if not _PREFIX.match(prefix):
                raise ConfigError(f"export.prefix_map.{prefix}: not a valid prefix name "
                                  "(letters, digits, '_' and '-', not starting with a digit)")
            _check_base(f"export.prefix_map.{prefix}", base)
        # the built-in map with the config's overrides: the same converter the seed-KG reader uses
        self.converter = prefix_converter({**cfg.prefix_map, MINTED_PREFIX: self.namespace})
        self.predicates = {rel: _biolink_term(f"export.predicate_map.{rel}", c, PREDICATES, "predicate")
                           for rel, c in cfg.predicate_map.items()}
        self.default_predicate = _biolink_term("export.default_predicate", cfg.default_predicate,
                                               PREDICATES, "predicate")
        self.category_map = {raw: _biolink_term(f"export.category_map.{raw}", c, CATEGORIES, "category")
                             for raw, c in cfg.category_map.items()}
        self.qualifier_map = _check_qualifiers(cfg.predicate_qualifiers)
        if not INFORES.match(cfg.knowledge_source):
            raise ConfigError(f"export.knowledge_source: {cfg.knowledge_source!r} is not an infores: "
                              "CURIE (lower-case letters, digits, '.', '_', '-'), e.g. 'infores:graphmert'")
        self.unmapped_relations: Counter[str] = Counter()
        self.unknown_categories: Counter[str] = Counter()
        self.used_prefixes: set[str] = set()
        self._categories: dict[str, URIRef] = {}

    # -- vocabulary -----------------------------------------------------------------------------

    def predicate(self, relation: str) -> URIRef:
        p = self.predicates.get(relation)
        if p is None:
            self.unmapped_relations[relation] += 1
            return self.default_predicate
        return p

    def qualifiers(self, relation: str) -> tuple[tuple[str, str], ...]:
        """The (Biolink qualifier slot, value) pairs of a relation's edges (``qualified_predicate`` as
        a ``biolink:`` CURIE); empty for relations without ``export.predicate_qualifiers``."""
        return self.qualifier_map.get(relation, ())

    def category(self, raw: str) -> URIRef:
        """A triple's category string → a Biolink class (``""`` / unknown → NamedThing)."""
        hit = self._categories.get(raw)
        if hit is not None:
            return hit
        if raw in self.category_map:
            term = self.category_map[raw]
        else:
            from graphmert.kg.schema import mention_category

            curie = mention_category(raw) if raw else ""
            prefix, _, name = curie.partition(":")
            if prefix == "biolink" and name in CATEGORIES:
                term = getattr(BIOLINK, name)
            else:
                if raw:
                    self.unknown_categories[raw] += 1
                term = BIOLINK.NamedThing
        self._categories[raw] = term
        return term

    def is_unknown_category(self, raw: str) -> bool:
        """Whether ``raw`` is typed NamedThing only because it is not recognised."""
        self.category(raw)
        return raw in self.unknown_categories

    def predicate_curie(self, relation: str) -> str:
        """``biolink:<term>``: the CURIE of :meth:`predicate` (KGX, the report, the explorer)."""
        return "biolink:" + str(self.predicate(relation))[len(str(BIOLINK._NS)):]

    def category_curie(self, raw: str) -> str:
        return "biolink:" + str(self.category(raw))[len(str(BIOLINK._NS)):]

    # -- IRIs ------------------------------------------------------------------------------------

    def entity(self, entity_id: str, name: str) -> tuple[str, str]:
        """(IRI, CURIE) of an entity. The CURIE is ``entity_id`` when it expands through a known
        prefix, else ``graphmert:<path>`` under ``export.namespace``."""
        if not entity_id:
            path = "entity/name-" + _digest(name_key(name), n=16)
            return self.namespace + path, "graphmert:" + path
        prefix, sep, local = entity_id.partition(":")
        if prefix == MINTED_PREFIX and local and self._minted_path(local):
            return self.namespace + local, entity_id       # a graphmert:… id read back from an export
        if (sep and local and self.converter.has_prefix(prefix) and "|" not in entity_id
                and entity_id == entity_id.strip()):
            self.used_prefixes.add(prefix)
            return self.converter.expand_pair(prefix, encode_local(local)), entity_id
        if _SCHEME.match(entity_id) and entity_id.startswith(("http://", "https://")) \
                and is_safe_iri(entity_id) and "/../" not in entity_id and not entity_id.endswith("/.."):
            return entity_id, entity_id
        path = "entity/" + encode_local(entity_id)
        return self.namespace + path, "graphmert:" + path

    def _minted_path(self, local: str) -> bool:
        """Whether ``local`` can follow ``export.namespace`` as is: safe characters, no dot segments."""
        return is_safe_iri(self.namespace + local) and not any(
            seg in (".", "..") for seg in local.split("/"))

    def document(self, doc_id: str) -> tuple[str, str]:
        """(IRI, CURIE-or-IRI for KGX ``publications``) of a supporting document."""
        pmid = is_pmid(doc_id)
        if pmid is not None:
            return self.pmid_base + pmid, "PMID:" + pmid
        iri = self.namespace + "document/" + encode_local(doc_id)
        return iri, iri

    def run_key(self, run_id: str, checkpoint_id: str, config_hash: str) -> str:
        return encode_local(run_id) if run_id else "h-" + _digest(checkpoint_id, config_hash, n=16)

    def run(self, run_key: str) -> str:
        return self.namespace + "run/" + run_key

    def graph(self, run_key: str) -> str:
        return self.namespace + "graph/" + run_key

    def association(self, run_key: str, head_key: str, relation: str, tail_key: str) -> str:
        return self.namespace + "association/" + _digest(run_key, head_key, relation, tail_key, n=20)

    def bindings(self) -> dict[str, str]:
        """Prefixes for Turtle / TriG / the JSON-LD ``@context``: the core ones and those used."""
        core = {"rdf": BUILTIN_PREFIXES["rdf"], "rdfs": BUILTIN_PREFIXES["rdfs"],
                "xsd": BUILTIN_PREFIXES["xsd"], "prov": BUILTIN_PREFIXES["prov"],
                "dcterms": BUILTIN_PREFIXES["dcterms"], "biolink": str(BIOLINK._NS),
                "gm": str(GRAPHMERT._NS), "graphmert": self.namespace}
        bases = self.converter.prefix_map                    # prefix (or synonym) → its base
        used = {p: bases[p] for p in sorted(self.used_prefixes)}
        return {**used, **core}
