"""Gold document-level relations (BioRED, BC5CDR) as the sets every metric compares against.

A gold corpus is read with the corpus readers (PubTator or BioC, :func:`read_corpus`) and split into
sentences (:class:`TextAnalyzer`, needed by the co-occurrence baseline). Its relations become::

    untyped gold pairs   G  = { (doc_id, {a, b}) }          for each relation (type, a, b) of doc_id
    typed gold pairs     Gₜ = { (doc_id, {a, b}, type) }

Pairs are unordered (BioRED scores (ID1, ID2) as unordered; a ``frozenset`` of the two ids) and ids
are compared as exact strings, as normalised by the readers: a composite id such as
``MESH:D017180|MESH:D014693`` (BioRED's ``D017180|D014693``) is one entity. A relation of an id with
itself is dropped and counted (``self_pairs``). A relation id that no mention of its document
carries — neither one of a mention's ids nor a mention's ``|``-joined ids — is counted
(``unknown_relation_ids``, one per relation end) and the relation kept: it is gold all the same.

The category of an entity is per (document, id): the Biolink category (:func:`mention_category`) of
the mentions that carry the id, the most frequent one if they disagree (ties: the smallest name).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from graphmert.config import CorpusConfig, EvaluateConfig
from graphmert.corpus.document import Document, Mention
from graphmert.corpus.nlp import TextAnalyzer
from graphmert.corpus.readers import CorpusError, read_corpus
from graphmert.kg.schema import mention_category

__all__ = ["Pair", "TypedPair", "GoldSet", "load_gold", "mention_entity_ids"]

Pair = tuple[str, frozenset[str]]                   # (doc_id, {id_a, id_b})
TypedPair = tuple[str, frozenset[str], str]         # (doc_id, {id_a, id_b}, relation type)


def mention_entity_ids(m: Mention) -> list[str]:
    """The entity ids a mention stands for: each of its ids, and with several also their ``|``-joined
    composite (BioRED relates ``D017180|D014693`` as one entity)."""
    return list(m.ids) + (["|".join(m.ids)] if len(m.ids) > 1 else [])


@dataclass
class GoldSet:
    """Gold documents (by id) and their relations as untyped / typed pair sets.

    Attributes:
        documents: doc id → Document (with ``sentences`` filled by :func:`load_gold`).
        untyped: G, the set of ``(doc_id, frozenset({a, b}))``.
        typed: Gₜ, the set of ``(doc_id, frozenset({a, b}), type)``.
        categories: (doc id, entity id) → Biolink category ('' when the mention type is unknown).
        relations: relation records read (before self-pairs are dropped and duplicates merged).
        self_pairs: relations of an id with itself (dropped).
        unknown_relation_ids: relation ends whose id no mention of the document carries.
        sources: the gold files.
        skipped_records: bad records the reader skipped (``skip_bad_records``).
    """

    documents: dict[str, Document]
    untyped: set[Pair] = field(default_factory=set)
    typed: set[TypedPair] = field(default_factory=set)
    categories: dict[tuple[str, str], str] = field(default_factory=dict)
    relations: int = 0
    self_pairs: int = 0
    unknown_relation_ids: int = 0
    sources: list[str] = field(default_factory=list)
    skipped_records: int = 0

    @classmethod
    def from_documents(cls, docs: Iterable[Document], sources: Sequence[str] = (),
                       skipped_records: int = 0) -> "GoldSet":
        """Build the pair sets and categories from documents that carry mentions and relations."""
        gold = cls(documents={}, sources=[str(s) for s in sources], skipped_records=skipped_records)
        for doc in docs:
            if doc.id in gold.documents:
                raise ValueError(f"gold document id {doc.id!r} occurs twice")
            gold.documents[doc.id] = doc
            votes: dict[str, Counter[str]] = {}
            known: set[str] = set()
            for m in doc.mentions:
                if not m.ids:
                    continue
                cat = mention_category(m.type)
                for eid in mention_entity_ids(m):
                    votes.setdefault(eid, Counter())[cat] += 1
                    known.add(eid)
            for eid, counts in votes.items():
                best = max(counts.values())
                gold.categories[(doc.id, eid)] = min(c for c, n in counts.items() if n == best)
            for rel in doc.relations:
                gold.relations += 1
                gold.unknown_relation_ids += (rel.head not in known) + (rel.tail not in known)
                if rel.head == rel.tail:
                    gold.self_pairs += 1
                    continue
                pair = frozenset((rel.head, rel.tail))
                gold.untyped.add((doc.id, pair))
                gold.typed.add((doc.id, pair, rel.type))
        return gold

    def subset(self, doc_ids: Iterable[str]) -> "GoldSet":
        """The gold of the documents in ``doc_ids`` only (e.g. those extraction read)."""
        keep = set(doc_ids)
        return GoldSet.from_documents([d for i, d in self.documents.items() if i in keep],
                                      self.sources, self.skipped_records)

    # ------------------------------------------------------------------ queries
    def entity_ids(self, doc_id: str) -> list[str]:
        """The distinct ids the document's mentions carry (sorted; composites not joined)."""
        return sorted({i for m in self.documents[doc_id].mentions for i in m.ids})

    def category(self, doc_id: str, entity_id: str) -> str:
        """The entity's Biolink category in that document ('' when unknown)."""
        return self.categories.get((doc_id, entity_id), "")

    def type_counts(self) -> dict[str, int]:
        """Typed gold pairs per relation type, most frequent first (ties by name)."""
        c = Counter(t for _, _, t in self.typed)
        return dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))

    def majority_type(self) -> str | None:
        """The most frequent gold relation type (ties: the smallest name); ``None`` without relations."""
        counts = self.type_counts()
        return next(iter(counts)) if counts else None

    def outside(self, pairs: Iterable[Pair | TypedPair]) -> int:
        """How many of ``pairs`` name a document that is not in the gold (these are not scored)."""
        return sum(1 for p in pairs if p[0] not in self.documents)

    def counts(self) -> dict[str, int]:
        """Plain integer counts for metrics.json."""
        return {
            "documents": len(self.documents),
            "gold_relations": self.relations,
            "gold_pairs": len(self.untyped),
            "gold_typed_pairs": len(self.typed),
            "gold_self_pairs": self.self_pairs,
            "unknown_relation_ids": self.unknown_relation_ids,
            "gold_skipped_records": self.skipped_records,
        }


def _relations_per_input(inputs: Sequence[Path], per_file: dict[str, int]) -> dict[Path, int]:
    """Relations read from each input (a folder input sums the files under it)."""
    out: dict[Path, int] = {}
    for p in inputs:
        out[p] = sum(n for src, n in per_file.items()
                     if src == str(p) or Path(src).is_relative_to(p))
    return out


def load_gold(paths: str | Path | Iterable[str | Path], format: str = EvaluateConfig.format,
              skip_bad_records: bool = CorpusConfig.skip_bad_records) -> GoldSet:
    """Read gold files (PubTator or BioC; ``format`` a reader name or ``"auto"``) into a GoldSet.

    Documents get sentence spans (scispaCy tokenizer + rule-based sentencizer). Every input must
    hold at least one relation: a file without any is a :class:`CorpusError` naming it (it cannot
    be a gold standard — most likely a plain corpus was given as ``evaluate.gold``).
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    paths = [Path(p) for p in paths]
    if not paths:
        raise CorpusError("evaluate.gold", "no gold files given")
    reader = read_corpus(paths, format=format, skip_bad_records=skip_bad_records)
    docs = list(TextAnalyzer(sentences=True, abbreviations=False).annotate(reader))
    per_file = {src: fs.relations for src, fs in reader.stats.files.items()}
    for p, n in _relations_per_input(paths, per_file).items():
        if n == 0:
            raise CorpusError(str(p), "the gold file has no relations; evaluate.gold needs documents "
                                      "with document-level relations (PubTator relation lines or "
                                      "BioC relations)")
    return GoldSet.from_documents(docs, sources=[str(p) for p in paths],
                                  skipped_records=len(reader.stats.skipped))
