"""Triple records: what extraction produces and export / evaluation consume.

One :class:`Triple` is a (head, relation, tail) with a confidence and its evidence::

    head_id, head_name, head_category      the head entity ("" id when it has no seed-KG / corpus id)
    relation                               a relation name of the model's relation map
    tail_id, tail_name, tail_category      the tail ("" id when the tail is a phrase or a token)
    tail_source                            how the tail was found: mention | lexicon | phrase | token | llm
                                           (lexicon and token tails are spelled from the leaf tokens,
                                           not found in the text: *predicted*, not stated)
    confidence                             max over the evidence of the model's confidence
    confidence_mean                        mean over the evidence
    evidence_count                         number of (document, chunk, head mention) supporting it
    documents                              sorted distinct supporting document ids
    evidence                               list of :class:`Evidence` (one per supporting head mention)
    checkpoint_id, run_id                  which model and which run produced it

An :class:`Evidence` is one extraction event: the document and chunk, the sentence around the head
(text and its character start in the document), the head's and (when the tail is a mention of the
same document) the tail's character spans in the document text, the confidence of that event, and
the extraction ``activity`` that found it: ``""`` for the run's extract stage, ``update-N`` for the
N-th ``graphmert update`` that added documents to the run's knowledge graph.

:func:`merge_triples` folds per-chunk triples that name the same (head, relation, tail) — by id when
there is one, else by the normalised name — into one record; merging merged records again with new
ones gives the same records as merging everything at once. :func:`drop_documents` takes the evidence
of some documents out again. Records are written as Parquet shards
(``triples-00000.parquet``) and one JSON Lines file, both atomically. A shard task that decides one
model pass in several ways writes the systems side by side in one file (:func:`write_systems`,
:func:`read_system`), which :func:`read_triples` refuses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

import pyarrow as pa

from graphmert.io import atomic_path, read_parquet, write_parquet, write_parquet_stream

__all__ = ["Evidence", "Triple", "NAME_KEY", "entity_key", "triple_key", "merge_triples", "drop_documents", "with_run",
           "write_triples", "read_triples", "write_systems", "read_system", "write_triples_jsonl", "json_line",
           "read_triples_jsonl", "TAIL_SOURCES", "PREDICTED_TAIL_SOURCES", "is_stated", "KNOWLEDGE_LEVEL", "sentence_spans"]

TAIL_SOURCES = ("mention", "lexicon", "phrase", "token", "llm")
#: tails that the text does not state: KG names or tokens spelled from the model's top-k leaf tokens
PREDICTED_TAIL_SOURCES = ("lexicon", "token")


@dataclass(kw_only=True)
class Evidence:
    doc_id: str
    chunk_id: str
    sentence: str                    # the sentence that holds the head mention, through the tail's when
                                     # the tail is in another (graphmert.extract.heads.evidence_passage)
    sentence_start: int              # its character offset in the document text
    head_start: int                  # head mention, document character offsets [start, end)
    head_end: int
    tail_start: int = -1             # tail mention in the same document, −1 when none
    tail_end: int = -1
    confidence: float = 0.0
    activity: str = ""               # "" = the run's extract stage, "update-N" = a later addition
    tail_source: str = ""            # how this event found the tail ("" in records from before it had one)


@dataclass(kw_only=True)
class Triple:
    head_id: str
    head_name: str
    head_category: str
    relation: str
    tail_id: str
    tail_name: str
    tail_category: str
    tail_source: str
    confidence: float
    confidence_mean: float = 0.0
    evidence_count: int = 1
    documents: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    checkpoint_id: str = ""
    run_id: str = ""

    def to_dict(self) -> dict:
        """The record as plain data, equal to ``dataclasses.asdict(self)``, with lists of its own.
        Written out because ``asdict`` deep-copies every value recursively, where every field but the
        two lists is immutable: on BioRED dev's 13,382 extracted records it took 1.09 s, this 0.14 s
        (docs/experiments/extract-host-work.md, with the command)."""
        d = {name: getattr(self, name) for name in _TRIPLE_FIELDS}
        d["documents"] = list(self.documents)
        d["evidence"] = [{name: getattr(e, name) for name in _EVIDENCE_FIELDS} for e in self.evidence]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Triple":
        d = dict(d)
        # files written before evidence had an activity read it as null: the run's extract stage
        d["evidence"] = [Evidence(**{**e, "activity": e.get("activity") or "",
                                     "tail_source": e.get("tail_source") or ""})
                         for e in d.get("evidence") or []]
        d["documents"] = list(d.get("documents") or [])
        return cls(**d)


_TRIPLE_FIELDS = tuple(f.name for f in fields(Triple))
_EVIDENCE_FIELDS = tuple(f.name for f in fields(Evidence))


def sentence_spans(e: Evidence) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """The head and tail spans of ``e`` as offsets within ``e.sentence``: evidence spans are
    document offsets and ``e.sentence_start`` is the sentence's document offset. A span that is
    absent (−1), empty, outside the sentence, or (the tail) overlapping the head is None. The HTML
    report and the explorer both mark these spans."""
    n = len(e.sentence)
    head = tail = None
    if e.head_start >= 0 and e.head_end >= 0:
        a, b = e.head_start - e.sentence_start, e.head_end - e.sentence_start
        head = (a, b) if 0 <= a < b <= n else None
    if e.tail_start >= 0 and e.tail_end >= 0:
        a, b = e.tail_start - e.sentence_start, e.tail_end - e.sentence_start
        if 0 <= a < b <= n and (head is None or b <= head[0] or a >= head[1]):
            tail = (a, b)
    return head, tail


def is_stated(tail_source: str) -> bool:
    """Whether a tail of this source is found in the text (mention, phrase, llm span), rather than
    spelled from the model's leaf tokens (:data:`PREDICTED_TAIL_SOURCES`)."""
    return tail_source not in PREDICTED_TAIL_SOURCES


#: The Biolink ``knowledge_level`` of every GraphMERT edge. Biolink's KnowledgeLevelEnum defines
#: ``prediction`` as "a statement of a possible fact based on probabilistic forms of reasoning", and
#: ``knowledge_assertion`` as a fact "put forth by an agent as true, based on assessment of direct
#: evidence". GraphMERT never assesses whether the authors assert a relation: it ranks tails for a
#: (head, relation) by a trained model's likelihood, with relations from the seed KG, so even a tail
#: the sentence names (:func:`is_stated`) is the model's reading of the text, and a tail spelled from
#: leaf tokens is a prediction outright. ``statistical_association`` (variables correlated in a
#: dataset) fits neither. The stated / predicted distinction is kept where it cannot be mistaken for
#: a knowledge level: ``tail_source`` itself (RDF ``gm:tailSource``) and the lower confidence band of
#: predicted tails (``extract.predicted_tail_scale``); docs/EXPORT.md gives the full rule.
KNOWLEDGE_LEVEL = "prediction"


NAME_KEY = "name:"          # the key of an entity without an id: NAME_KEY + its normalised name


def entity_key(entity_id: str, name: str) -> str:
    """The id when there is one, else ``name:<normalised name>`` (lower case, single spaces)."""
    return entity_id if entity_id else NAME_KEY + " ".join(name.lower().split())


def triple_key(t: Triple) -> tuple[str, str, str]:
    """(head key, relation, tail key) by :func:`entity_key`."""
    return (entity_key(t.head_id, t.head_name), t.relation, entity_key(t.tail_id, t.tail_name))


def merge_triples(triples: Iterable[Triple]) -> list[Triple]:
    """Merge triples with the same :func:`triple_key` (order: by key, so the output is deterministic).

    The merged record keeps the first head/tail names and categories met in input order, the
    evidence of all (sorted by document, chunk, head offset; each event stamped with its triple's
    ``tail_source``), the tail source of the first event that found the tail in the text (else of
    the first event), ``evidence_count`` = len(evidence), ``confidence`` = max and
    ``confidence_mean`` = mean of the evidence confidences. So a triple's tail source follows its
    evidence when :func:`drop_documents` takes some out.
    """
    groups: dict[tuple[str, str, str], list[Triple]] = {}
    for t in triples:
        groups.setdefault(triple_key(t), []).append(t)
    out = []
    for key in sorted(groups):
        ts = groups[key]
        first = ts[0]
        ev = sorted((e if e.tail_source else replace(e, tail_source=t.tail_source)
                     for t in ts for e in t.evidence),
                    key=lambda e: (e.doc_id, e.chunk_id, e.head_start, e.head_end, e.tail_start))
        sources = [e.tail_source for e in ev] or [t.tail_source for t in ts]
        source = next((s for s in sources if is_stated(s)), sources[0])
        confs = [e.confidence for e in ev] or [t.confidence for t in ts]
        out.append(Triple(
            head_id=first.head_id, head_name=first.head_name, head_category=first.head_category,
            relation=first.relation, tail_id=first.tail_id, tail_name=first.tail_name,
            tail_category=first.tail_category, tail_source=source,
            confidence=max(confs), confidence_mean=sum(confs) / len(confs),
            evidence_count=len(ev) if ev else sum(t.evidence_count for t in ts),
            documents=sorted({e.doc_id for e in ev} | {d for t in ts for d in t.documents}),
            evidence=ev, checkpoint_id=first.checkpoint_id, run_id=first.run_id))
    return out


def with_run(triples: Iterable[Triple], run_id: str) -> Iterator[Triple]:
    """The triples, each naming ``run_id`` as the run that wrote it: the run being written, whatever
    run an earlier copy of the same output named (``pipelines.stages.extract``); a stream."""
    for t in triples:
        yield t if t.run_id == run_id else replace(t, run_id=run_id)


def drop_documents(triples: Iterable[Triple], doc_ids: Iterable[str]) -> list[Triple]:
    """The triples without the evidence of ``doc_ids``: each keeps the evidence of the other
    documents, with ``confidence``, ``confidence_mean``, ``evidence_count`` and ``documents``
    recomputed from it (:func:`merge_triples`); a triple left without evidence disappears."""
    gone = set(doc_ids)
    kept = []
    for t in triples:
        ev = [e for e in t.evidence if e.doc_id not in gone]
        if ev:
            kept.append(replace(t, evidence=ev, documents=[d for d in t.documents if d not in gone]))
    return merge_triples(kept)


# --------------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------------

_EVIDENCE = pa.struct([("doc_id", pa.string()), ("chunk_id", pa.string()), ("sentence", pa.string()),
                       ("sentence_start", pa.int64()), ("head_start", pa.int64()),
                       ("head_end", pa.int64()), ("tail_start", pa.int64()), ("tail_end", pa.int64()),
                       ("confidence", pa.float64()), ("activity", pa.string()),
                       ("tail_source", pa.string())])
SCHEMA = pa.schema([
    ("head_id", pa.string()), ("head_name", pa.string()), ("head_category", pa.string()),
    ("relation", pa.string()),
    ("tail_id", pa.string()), ("tail_name", pa.string()), ("tail_category", pa.string()),
    ("tail_source", pa.string()),
    ("confidence", pa.float64()), ("confidence_mean", pa.float64()), ("evidence_count", pa.int64()),
    ("documents", pa.list_(pa.string())), ("evidence", pa.list_(_EVIDENCE)),
    ("checkpoint_id", pa.string()), ("run_id", pa.string()),
])


def write_triples(triples: Iterable[Triple], path: str | Path) -> int:
    """One Parquet shard, written atomically (Snappy-compressed, as triple shards always were) from a
    stream of triples. Returns the number of triples."""
    return write_parquet_stream((t.to_dict() for t in triples), SCHEMA, path, compression="snappy")


def read_triples(paths: str | Path | Iterable[str | Path], batch_size: int = 512) -> Iterator[Triple]:
    """Triples of one or more Parquet shards, in order, ``batch_size`` rows decoded at a time; a file
    that is not a triple shard is refused."""
    for row in read_parquet(paths, SCHEMA, what="triple", batch_size=batch_size):
        yield Triple.from_dict(row)


def read_entity_ids(paths: str | Path | Iterable[str | Path]) -> Iterator[str]:
    """The head and tail id of every triple of one or more Parquet shards, reading only those two
    columns (an exporter declares the ids' prefixes before its first statement)."""
    ids = pa.schema([SCHEMA.field("head_id"), SCHEMA.field("tail_id")])
    for row in read_parquet(paths, ids, what="triple", batch_size=8192):
        yield row["head_id"]
        yield row["tail_id"]


# several systems' triples in one file (a shard task that decides one model pass more than one way):
# a row per triple, its system's name beside it; nested, so read_triples refuses such a file
SYSTEMS_SCHEMA = pa.schema([("system", pa.string()), ("triple", pa.struct(list(SCHEMA)))])


def write_systems(systems: Mapping[str, Sequence[Triple]], path: str | Path) -> int:
    """One Parquet file holding the triples of several named systems, written atomically; returns
    the number of triples. :func:`read_system` reads one system back."""
    rows = [{"system": name, "triple": t.to_dict()} for name, triples in systems.items() for t in triples]
    return write_parquet(rows, SYSTEMS_SCHEMA, path, compression="snappy")


def read_system(paths: str | Path | Iterable[str | Path], system: str, batch_size: int = 512) -> Iterator[Triple]:
    """The triples of ``system`` in one or more :func:`write_systems` files, in order (none when a
    file holds no such system: a system may have found nothing), ``batch_size`` rows decoded at a time."""
    for row in read_parquet(paths, SYSTEMS_SCHEMA, what="systems", batch_size=batch_size):
        if row["system"] == system:
            yield Triple.from_dict(row["triple"])


def json_line(record: dict) -> str:
    """A triple's ``triples.jsonl`` line from its :meth:`Triple.to_dict`: one JSON object (UTF-8, keys
    in field order) and a newline."""
    return json.dumps(record, ensure_ascii=False) + "\n"


def write_triples_jsonl(triples: Iterable[Triple], path: str | Path) -> int:
    """One :func:`json_line` per triple, written atomically."""
    n = 0
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for t in triples:
            f.write(json_line(t.to_dict()))
            n += 1
    return n


def read_triples_jsonl(path: str | Path) -> Iterator[Triple]:
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield Triple.from_dict(json.loads(line))
                except (json.JSONDecodeError, TypeError) as e:
                    raise ValueError(f"{path}: line {i}: not a triple record ({e})") from None
