"""The one document model every reader produces, and its Parquet shard format.

A :class:`Document`'s ``text`` is what every offset indexes into. For sources with a title and an
abstract it is ``title + " " + abstract`` (the PubTator convention), so offsets read from PubTator,
BioC and the shared JSONL corpus apply unchanged.

Entity ids are normalised CURIEs (:func:`normalize_id`): ``MESH:D003924``, ``NCBIGene:3630``,
``NCBITaxon:9606``, ``dbSNP:rs123``, ``tmVar:c|SUB|G|1234|A``, ``Cellosaurus:CVCL_0030``, ``OMIM:123``.
A mention may carry several ids (kept as a list); an unlinked mention (``-1``) has none.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import pyarrow as pa

from graphmert.io import read_parquet, write_parquet_stream

__all__ = [
    "Mention",
    "Relation",
    "Abbreviation",
    "Document",
    "normalize_id",
    "normalize_ids",
    "split_ids",
    "write_documents",
    "read_documents",
    "entity_xrefs",
]


@dataclass
class Mention:
    start: int                      # character offset into Document.text (inclusive)
    end: int                        # exclusive
    text: str
    type: str                       # the source's entity type, e.g. "GeneOrGeneProduct", "Chemical"
    ids: list[str] = field(default_factory=list)  # normalised CURIEs; empty when unlinked
    # other ids of the mention's one entity (a linked mention's cross-references, e.g. the DrugBank id
    # of a MeSH-linked drug); unlike ``ids``, never entities of their own
    xrefs: list[str] = field(default_factory=list)


@dataclass
class Relation:
    """A document-level relation between entity ids, as given by the source (e.g. BioRED, BC5CDR)."""

    type: str
    head: str                       # normalised CURIE
    tail: str
    novel: str | None = None        # BioRED's Novel/No flag where present


@dataclass
class Abbreviation:
    """A short form linked to its long form by scispaCy's abbreviation detector (char offsets)."""

    short_start: int
    short_end: int
    long_start: int
    long_end: int


@dataclass
class Document:
    id: str
    text: str
    title: str = ""
    mentions: list[Mention] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    sentences: list[tuple[int, int]] = field(default_factory=list)   # char spans
    abbreviations: list[Abbreviation] = field(default_factory=list)
    source: str = ""                # file the document came from
    metadata: dict[str, Any] = field(default_factory=dict)          # JSON-serialisable extras

    def mention_text_mismatches(self) -> list[Mention]:
        """Mentions whose ``text`` differs from ``self.text[start:end]``."""
        return [m for m in self.mentions if self.text[m.start:m.end] != m.text]


# --------------------------------------------------------------------------------------------------
# Identifiers
# --------------------------------------------------------------------------------------------------

_MESH = re.compile(r"^[CD]\d{6,9}$")
_OMIM = re.compile(r"^OMIM:\d+$")
_GENE_TYPES = {"gene", "geneorgeneproduct", "protein", "dnamutation", "genes"}
_TAXON_TYPES = {"species", "organismtaxon", "organism"}
_ID_PIECE = re.compile(r"^(MESH:)?[CD]\d{6,9}$|^OMIM:\d+$|^\d+$")


def normalize_id(raw: str, entity_type: str = "") -> str | None:
    """Raw source id → CURIE, or ``None`` for "unlinked" markers (``-1``, ``-``, empty).

    Numeric ids are interpreted by entity type: genes → ``NCBIGene:``, species → ``NCBITaxon:``.
    Ids that already carry a prefix are kept (with ``MeSH:``/``mesh:`` spelled ``MESH:``, PubTator's
    ``CVCL:0594`` spelled ``Cellosaurus:CVCL_0594``). A composite of MeSH/OMIM/numeric ids joined by
    ``|`` or ``+`` (BioRED's ``D017180|D014693``, one entity in its relations) becomes the ``|``-joined
    normalised ids; only other ``|``-containing ids are tmVar variant keys.
    """
    s = raw.strip()
    if s in ("", "-", "-1", "None", "null"):
        return None
    pieces = re.split(r"[|+]", s)
    if len(pieces) > 1 and all(_ID_PIECE.match(p.strip()) or p.strip() == "-1" for p in pieces):
        # a composite of MeSH/OMIM/numeric ids (BioRED "D017180|D014693"), not a tmVar variant key
        ids = [normalize_id(p, entity_type) for p in pieces]
        return "|".join(i for i in ids if i) or None
    if ":" in s and not s.startswith(("c|", "p|", "g|", "r|")):
        prefix, _, local = s.partition(":")
        if prefix.upper() == "MESH":
            return f"MESH:{local}"
        if prefix.upper() == "CVCL":                    # PubTator's "CVCL:0594" = "CVCL_0594"
            return f"Cellosaurus:CVCL_{local}"
        if prefix.upper() in ("NCBIGENE", "GENE"):
            return f"NCBIGene:{local}"
        if prefix.upper() in ("NCBITAXON", "TAXON"):
            return f"NCBITaxon:{local}"
        return s
    if _MESH.match(s):
        return f"MESH:{s}"
    t = entity_type.replace("_", "").replace(" ", "").lower()
    if s.isdigit():
        if t in _TAXON_TYPES:
            return f"NCBITaxon:{s}"
        if t in _GENE_TYPES or t.startswith("gene"):
            return f"NCBIGene:{s}"
        return s
    if s.startswith("rs") and s[2:].isdigit():
        return f"dbSNP:{s}"
    if s.startswith("CVCL_"):
        return f"Cellosaurus:{s}"
    if "|" in s:
        return f"tmVar:{s}"
    return s


def split_ids(raw: str) -> list[str]:
    """Split a multi-id field. ``,`` and ``;`` always separate ids (BioRED); ``|`` and ``+`` separate
    ids only when every piece looks like a MeSH/OMIM/numeric id (BC5CDR, NCBI disease), because tmVar
    variant keys such as ``c|SUB|G|1234|A`` contain ``|`` themselves."""
    out: list[str] = []
    for part in re.split(r"[,;]", raw):
        part = part.strip()
        if not part:
            continue
        pieces = [p.strip() for p in re.split(r"[|+]", part)]
        if len(pieces) > 1 and all(_ID_PIECE.match(p) or p == "-1" for p in pieces):
            out.extend(pieces)
        else:
            out.append(part)
    return out


def entity_xrefs(docs: Iterable[Document]) -> dict[str, tuple[str, ...]]:
    """Entity id → the cross-references its linked mentions carry (``Mention.xrefs`` of the mentions
    whose first id it is), in the order first seen, sorted by id."""
    out: dict[str, dict[str, None]] = {}
    for d in docs:
        for m in d.mentions:
            others = [x for x in m.xrefs if m.ids and x != m.ids[0]]
            if others:
                out.setdefault(m.ids[0], {}).update(dict.fromkeys(others))
    return {i: tuple(x) for i, x in sorted(out.items())}


def normalize_ids(raw: str, entity_type: str = "") -> list[str]:
    """``split_ids`` then ``normalize_id``, dropping unlinked markers and duplicates (order kept)."""
    seen: dict[str, None] = {}
    for piece in split_ids(raw):
        cid = normalize_id(piece, entity_type)
        if cid is not None:
            seen.setdefault(cid, None)
    return list(seen)


# --------------------------------------------------------------------------------------------------
# Parquet shards
# --------------------------------------------------------------------------------------------------

_MENTION = pa.struct([("start", pa.int32()), ("end", pa.int32()), ("text", pa.string()),
                      ("type", pa.string()), ("ids", pa.list_(pa.string())),
                      ("xrefs", pa.list_(pa.string()))])
_RELATION = pa.struct([("type", pa.string()), ("head", pa.string()), ("tail", pa.string()),
                       ("novel", pa.string())])
_ABBREV = pa.struct([("short_start", pa.int32()), ("short_end", pa.int32()),
                     ("long_start", pa.int32()), ("long_end", pa.int32())])
SCHEMA = pa.schema([
    ("id", pa.string()),
    ("title", pa.string()),
    ("text", pa.string()),
    ("mentions", pa.list_(_MENTION)),
    ("relations", pa.list_(_RELATION)),
    ("sentences", pa.list_(pa.list_(pa.int32(), 2))),
    ("abbreviations", pa.list_(_ABBREV)),
    ("source", pa.string()),
    ("metadata", pa.string()),          # JSON
])


def _to_row(d: Document) -> dict:
    row = asdict(d)
    row["sentences"] = [list(s) for s in d.sentences]
    row["metadata"] = json.dumps(d.metadata, sort_keys=True, ensure_ascii=False)
    return row


def _from_row(row: dict) -> Document:
    return Document(
        id=row["id"], title=row["title"], text=row["text"],
        # shards written before Mention.xrefs have none
        mentions=[Mention(**{**m, "xrefs": m.get("xrefs") or []}) for m in row["mentions"]],
        relations=[Relation(**r) for r in row["relations"]],
        sentences=[(int(a), int(b)) for a, b in row["sentences"]],
        abbreviations=[Abbreviation(**a) for a in row["abbreviations"]],
        source=row["source"], metadata=json.loads(row["metadata"] or "{}"),
    )


def write_documents(docs: Iterable[Document], path: str | Path) -> int:
    """Write one Parquet shard atomically (temp name, then rename) from a stream of documents (a row
    group per 4,096). Returns the number written."""
    return write_parquet_stream((_to_row(d) for d in docs), SCHEMA, path)


def read_documents(paths: str | Path | Iterable[str | Path]) -> Iterator[Document]:
    """Documents from one shard or several, in order (256 at a time: their texts can be long)."""
    for row in read_parquet(paths, SCHEMA, what="document", batch_size=256):
        yield _from_row(row)
