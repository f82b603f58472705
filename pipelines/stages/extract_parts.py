"""The extract stage's documents, cut into parts that its Dask tasks read for themselves.

The driver never holds the corpus: a :class:`Part` names a document shard, the ids of the documents
it extracts from that shard and, where they exist, their chunk shard and recognised documents. The
task reads them (:func:`read_part`). So the driver's memory does not grow with the corpus, and no
part's documents travel through the scheduler.

* **The run's corpus** (``extract.paths`` empty): the ingest stage's document shards, each with the
  chunk shard the chunks stage made from it (``corpus.chunk_mode: document``; in ``concatenate`` mode
  the one chunk shard serves every part, each reading the whole shard).
* **``extract.paths``**: read in the driver (a stream: errors name the file and record), in slice,
  and sentence-split by one ingest task per part (:func:`pipelines.stages.corpus.annotate_shard`);
  the extraction task chunks its part with the run's tokenizer.
* **Recognition.** When the ner stage trained a recognizer, one task per part gives the documents
  without mentions recognised, linked mentions (:func:`recognize_part`, :func:`recognized_entities`)
  and writes the part's documents; the extraction task then chunks those documents again.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from graphmert.config import CorpusConfig, ExtractConfig, GraphConfig
from graphmert.corpus.chunk import read_chunks
from graphmert.corpus.document import Document, read_documents, write_documents
from graphmert.corpus.readers import read_corpus
from graphmert.corpus.windowing import chunk_documents
from graphmert.errors import noting
from graphmert.ner.abbreviations import abbreviation_mentions, abbreviation_veto
from graphmert.ner.gazetteer import (gene_extension, gene_name_labels, greek_suffix, name_extension, name_mentions,
                                     protein_heads, route_trim, symbol_mentions)
from graphmert.ner.linking import EntityLinker
from graphmert.ner.recognizer import LABELS, Recognizer, propagate_document
from graphmert.ner.span_cuts import sentence_cut, slash_split
from graphmert.ner.variants import add_variants, residue_chemicals
from pipelines.holdout import in_slice
from pipelines.scheduler import worker_cache
from pipelines.stage import StageContext, StageError
from pipelines.stages.corpus import annotate_shard, batch_key, batches, document_shards

RECOGNIZER_LABELS = frozenset(LABELS.values())  # the labels an abbreviation's long form lends its short form


@dataclass(frozen=True)
class Part:
    """One extraction task's documents, by reference (paths absolute or relative to the working
    directory, as the stage folders are)."""

    documents: str                    # a document shard
    ids: tuple[str, ...]              # the documents of that shard in this part, in shard order
    chunks: str = ""                  # their chunk shard ("": the task chunks the documents)
    recognized: str = ""              # the part's documents after recognition ("": none ran)


@dataclass(frozen=True)
class Chunking:
    """What a task needs to chunk documents as the chunks stage does."""

    tokenizer: str
    tokenizer_hash: str               # the tokenizer stage's output hash (the worker cache's key)
    corpus: CorpusConfig
    graph: GraphConfig


def plan_parts(ctx: StageContext, skip: frozenset[str]) -> tuple[list[Part], list[str], int]:
    """(parts of ``extract.part_documents`` documents, the ids of every document extracted from in
    order, bad records skipped): the slice ``extract.document_fraction`` of ``extract.paths`` or of
    the run's corpus, without the documents ``skip`` names (those a ``graphmert update`` finds
    already in the KG)."""
    cfg = ctx.cfg
    if cfg.extract.paths:
        return _parts_of_paths(ctx, skip)
    cdir = ctx.stage_dir("chunks")
    chunk_files = [str(cdir / s) for s in ctx.upstream["chunks"]["shards"]]
    doc_files = [str(p) for p in document_shards(ctx)]
    if cfg.corpus.chunk_mode == "document" and len(chunk_files) != len(doc_files):
        raise StageError(f"extract: {len(doc_files)} document shards but {len(chunk_files)} chunk "
                         f"shards in {cdir}; rerun `graphmert chunks`")
    parts, ids = [], []
    for i, path in enumerate(doc_files):
        kept = [d for d in _shard_ids(path) if in_slice(d, cfg.extract.document_fraction) and d not in skip]
        ids += kept
        chunks = chunk_files[i] if cfg.corpus.chunk_mode == "document" else chunk_files[0]
        parts += [Part(documents=path, ids=tuple(kept[j:j + cfg.extract.part_documents]), chunks=chunks)
                  for j in range(0, len(kept), cfg.extract.part_documents)]
    return parts, ids, 0


def _shard_ids(path: str) -> list[str]:
    """The document ids of a document shard, in order (its ``id`` column only)."""
    import pyarrow.parquet as pq

    return pq.read_table(path, columns=["id"]).column("id").to_pylist()


def _parts_of_paths(ctx: StageContext, skip: frozenset[str]) -> tuple[list[Part], list[str], int]:
    """``extract.paths`` in slice, sentence-split into one document shard per part (an ingest task
    each, reused by a rerun when the documents are the same); the task chunks them."""
    cfg = ctx.cfg
    reader = read_corpus(cfg.extract.paths, format=cfg.extract.format,
                         skip_bad_records=cfg.corpus.skip_bad_records)
    picked = (d for d in reader if in_slice(d.id, cfg.extract.document_fraction) and d.id not in skip)
    ids: list[str] = []
    shards = ctx.map_shards(annotate_shard, batches(_noting(picked, ids), cfg.extract.part_documents),
                            name="documents", shared=(True, cfg.corpus.abbreviations), key=batch_key)
    parts, start = [], 0
    for s in shards:
        n = s.counts["documents"]
        parts.append(Part(documents=str(s.path), ids=tuple(ids[start:start + n])))
        start += n
    return parts, ids, reader.stats.to_dict()["skipped_records"]


def _noting(docs: Iterator[Document], ids: list[str]) -> Iterator[Document]:
    for d in docs:
        ids.append(d.id)
        yield d


def read_part(part: Part, chunking: Chunking) -> tuple[list[Document], list]:
    """(documents, their chunks in document order) of ``part``. A recognised document (one without
    mentions in its shard, which the recognition task gave some) and every document of a part
    without a chunk shard is chunked here with the run's tokenizer, as the chunks stage does."""
    from graphmert.corpus.tokenizer import load_tokenizer

    wanted = set(part.ids)
    docs = [d for d in read_documents(part.documents) if d.id in wanted]
    fresh = {d.id for d in docs} if not part.chunks else set()
    if part.recognized:
        found = {d.id: d for d in read_documents(part.recognized)}
        fresh |= {d.id for d in docs if not d.mentions}
        docs = [found.get(d.id, d) for d in docs]
    kept = wanted - fresh
    of: dict[str, list] = {}
    for c in read_chunks(part.chunks) if part.chunks and kept else ():
        if c.doc_id in kept:
            of.setdefault(c.doc_id, []).append(c)
    if fresh:
        tok = worker_cache(("tokenizer", chunking.tokenizer, chunking.tokenizer_hash), lambda: load_tokenizer(chunking.tokenizer))
        for c in chunk_documents([d for d in docs if d.id in fresh], tok, chunking.corpus, chunking.graph):
            of.setdefault(c.doc_id, []).append(c)
    return docs, [c for d in docs for c in of.get(d.id, ())]


# --------------------------------------------------------------------------------------------------
# recognition
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EntityTools:
    """Where the run's recognizer and linker are, for the recognition tasks (loaded once per worker)."""

    recognizer: str
    linker: str
    version: str                      # the ner and link stages' output hashes (the worker cache's key)
    extract: ExtractConfig


def recognize_part(part: Part, tools: EntityTools, path: Path) -> dict:
    """Shard task: the part's documents, those without mentions recognised and linked
    (:func:`recognize_documents`), as one document shard at ``path``; returns the recognition counts."""
    recognizer = worker_cache(("recognizer", tools.recognizer, tools.version), lambda: Recognizer.load(tools.recognizer))
    linker = worker_cache(("linker", tools.linker, tools.version), lambda: EntityLinker.load(tools.linker))
    wanted = set(part.ids)
    docs, found = recognize_documents([d for d in read_documents(part.documents) if d.id in wanted],
                                      recognizer, linker, tools.extract)
    write_documents(docs, path)
    return recognition_counts(list(found.values()))


def recognize_documents(docs: list[Document], recognizer: Recognizer, linker: EntityLinker,
                        ex: ExtractConfig) -> tuple[list[Document], dict[str, Document]]:
    """Documents without mentions get the recognizer's mentions, linked by the linker with
    extraction's settings (:func:`extraction_linker`, :func:`recognized_entities`); the others are
    kept as they are. Returns the
    documents and the recognised ones by id."""
    todo = [d for d in docs if not d.mentions]
    if not todo:
        return docs, {}
    extraction_linker(linker, ex)
    found = {}
    for d in recognizer.recognize(todo, propagate=ex.propagate_mentions):
        with noting(f"document {d.id}"):
            found[d.id] = recognized_entities(d, linker, ex)
    return [found.get(d.id, d) for d in docs], found


def extraction_linker(linker: EntityLinker, ex: ExtractConfig) -> EntityLinker:
    """``linker`` with the settings extraction links with: ``extract.kg_gene_species`` as its
    :attr:`~graphmert.ner.linking.EntityLinker.kg_species`, ``extract.strict_gene_species`` as its
    ``strict_species``, ``extract.default_gene_species`` as its ``default_species``,
    ``extract.known_terms_only`` as its ``known_terms_only``."""
    linker.kg_species, linker.strict_species = ex.kg_gene_species, ex.strict_gene_species
    linker.default_species, linker.known_terms_only = ex.default_gene_species, ex.known_terms_only
    return linker


def recognized_entities(doc: Document, linker: EntityLinker, ex: ExtractConfig) -> Document:
    """What extraction does with a document the recognizer annotated (``extract.propagate_mentions``
    applies in the recognizer): the mentions of :func:`more_mentions`, linked by ``linker``, and with
    ``extract.variant_mentions`` the sequence variants of :func:`add_variants` (with their tmVar keys
    as ids unless ``extract.variant_keys`` is off). Also what
    ``experiments/raw_entities.py`` scores on held-out documents."""
    doc = linker.link_document(more_mentions(doc, linker, ex))
    return add_variants(doc, keys=ex.variant_keys) if ex.variant_mentions else doc


def more_mentions(doc: Document, linker: EntityLinker, ex: ExtractConfig) -> Document:
    """A recognised document whose mentions are cut at the sentence ends inside them
    (``extract.sentence_cut``), whose genes joined by a slash are two (``extract.slash_split``),
    whose mentions then take the longest known name around them (``extract.name_extension``), whose
    chemicals inside a known gene name are that gene (``extract.gene_extension``), less its amino
    acids written as residues of a protein change (``extract.residue_chemicals``), whose chemicals
    start after a route word (``extract.route_trim``),
    with the mentions the seed KG's disease, chemical and gene names add (``extract.name_mentions``),
    whose chemicals that name genes are then genes (``extract.gene_name_labels``: the KG's chemical
    names include MeSH's protein descriptors, "calnexin"), as are its chemicals named as a kind of
    protein ("amylase": ``extract.protein_heads``), whose genes take a Greek letter that
    follows them (``extract.greek_suffix``), with the mentions its abbreviations
    (``extract.abbreviation_mentions``, labelled by their long forms) and the seed KG's gene symbols
    (``extract.symbol_mentions``) add, in that order, with one sense per document again
    (``extract.propagate_mentions``: the rules' mentions' other occurrences), less those of
    short forms it defines as something else (``extract.abbreviation_veto``; a long form the linker
    links exactly in the mention's category keeps them)."""
    if ex.sentence_cut:
        doc = sentence_cut(doc)
    if ex.slash_split:
        gene = LABELS["biolink:Gene"]
        doc = slash_split(doc, lambda text: _exact_ids(linker, text, gene), gene)
    if ex.name_extension:
        doc = name_extension(doc, linker, RECOGNIZER_LABELS)
    if ex.gene_extension:
        doc = gene_extension(doc, linker, LABELS["biolink:ChemicalEntity"], LABELS["biolink:Gene"])
    if ex.residue_chemicals:
        doc = residue_chemicals(doc, LABELS["biolink:ChemicalEntity"])
    if ex.route_trim:
        doc = route_trim(doc, linker, LABELS["biolink:ChemicalEntity"])
    if ex.name_mentions:
        doc = name_mentions(doc, linker, {c: LABELS[c] for c in ex.name_mentions}, ex.name_ratio)
    if ex.gene_name_labels:
        doc = gene_name_labels(doc, linker, LABELS["biolink:ChemicalEntity"], LABELS["biolink:Gene"])
    if ex.protein_heads:
        doc = protein_heads(doc, linker, LABELS["biolink:ChemicalEntity"], LABELS["biolink:Gene"])
    if ex.greek_suffix:
        doc = greek_suffix(doc, LABELS["biolink:Gene"])
    if ex.abbreviation_mentions:
        doc = abbreviation_mentions(doc, RECOGNIZER_LABELS)
    if ex.symbol_mentions:
        doc = symbol_mentions(doc, linker, LABELS["biolink:Gene"])
    if ex.propagate_mentions:
        doc = propagate_document(doc)
    if ex.abbreviation_veto:
        vetoed = frozenset(LABELS[c] for c in ex.abbreviation_veto)
        doc = abbreviation_veto(doc, vetoed, lambda text, label: bool(_exact_ids(linker, text, label)))
    return doc


def _exact_ids(linker: EntityLinker, text: str, label: str) -> tuple[str, ...]:
    """The ids ``linker`` gives ``text`` as a ``label`` mention when it links it exactly, else ()."""
    found = linker.link(text, label)
    return found.ids if found.score >= 1.0 else ()


def recognition_counts(recognized: list[Document]) -> dict:
    """The recognition counts of a part's recognised documents."""
    mentions = [m for d in recognized for m in d.mentions]
    return {"recognized_documents": len(recognized),
            "recognized_mentions": len(mentions), "linked_mentions": sum(bool(m.ids) for m in mentions),
            "recognized_per_type": dict(sorted(Counter(m.type for m in mentions).items()))}


def sum_recognition(counts: list[dict]) -> dict:
    """The run's recognition counts from its parts' (:func:`recognition_counts`); only
    ``recognized_documents: 0`` when nothing was recognised, as before parts counted."""
    total = sum(c["recognized_documents"] for c in counts)
    if not total:
        return {"recognized_documents": 0}
    per_type: Counter = Counter()
    for c in counts:
        per_type.update(c["recognized_per_type"])
    return {"recognized_documents": total,
            "recognized_mentions": sum(c["recognized_mentions"] for c in counts),
            "linked_mentions": sum(c["linked_mentions"] for c in counts),
            "recognized_per_type": dict(sorted(per_type.items()))}


def entity_tools(ctx: StageContext) -> EntityTools | None:
    """Where the run's recognizer (the ner stage's) and linker (the link stage's) are, or None when
    the ner stage ran without ``ner.paths``."""
    from pipelines.stages.link import LINKER_FILE
    from pipelines.stages.ner import RECOGNIZER_DIR

    if not ctx.upstream.get("ner", {}).get("enabled"):
        return None
    if not ctx.upstream.get("link", {}).get("enabled"):
        raise StageError("extract: the ner stage trained a recognizer but the link stage built no linker "
                         "(it ran without ner.paths); run `graphmert link` with this config first")
    version = f"{ctx.upstream['ner'].get('output_hash')}+{ctx.upstream['link'].get('output_hash')}"
    return EntityTools(recognizer=str(ctx.stage_dir("ner") / RECOGNIZER_DIR),
                       linker=str(ctx.stage_dir("link") / LINKER_FILE), version=version, extract=ctx.cfg.extract)


def recognize(ctx: StageContext, parts: list[Part]) -> tuple[list[Part], list, dict]:
    """With a recognizer, one recognition task per part (:func:`recognize_part`): (the parts naming
    their recognised documents, the recognition shards, the run's recognition counts); without
    one, the parts as they are."""
    tools = entity_tools(ctx)
    if tools is None or not parts:
        return parts, [], {"recognized_documents": 0}
    shards = ctx.map_shards(recognize_part, parts, name="recognized", shared=tools)
    parts = [Part(documents=p.documents, ids=p.ids, chunks=p.chunks, recognized=str(s.path))
             for p, s in zip(parts, shards)]
    return parts, shards, sum_recognition([s.counts for s in shards])


def run_chunking(ctx: StageContext) -> Chunking:
    """How this run chunks: its tokenizer, ``corpus`` and ``graph`` sections."""
    tokenizer = ctx.stage_dir("tokenizer") / "tokenizer.json"
    return Chunking(tokenizer=str(tokenizer.resolve()), tokenizer_hash=ctx.upstream["tokenizer"]["output_hash"],
                    corpus=ctx.cfg.corpus, graph=ctx.cfg.graph)
