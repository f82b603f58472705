"""Documents whose relations never become seed triples (pipelines/holdout.py, issue #15): the
extraction documents and the gold documents in the ``extract.document_fraction`` slice; and, on the
shared data, that ``configs/biored.yaml`` trains on no BioRED dev document or relation."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from graphmert.config import CorpusConfig, GraphConfig, TokenizerConfig, build, load_config
from graphmert.corpus.chunk import write_chunks
from graphmert.corpus.windowing import chunk_documents
from graphmert.corpus.document import Document, Mention
from graphmert.corpus.fraction import document_fraction
from graphmert.corpus.tokenizer import special_ids, train_tokenizer
from graphmert.graph.distant import DistantSupervision
from graphmert.graph.io import read_graphs
from graphmert.kg.corpus_relations import read_relation_files
from graphmert.kg.digest import CandidateDigest
from graphmert.kg.graph import Edge, Node, SeedKG
from graphmert.kg.loaders import load_kg
from graphmert.kg.schema import RelationSchema
from graphmert.kg.scoring import SCORERS
from pipelines.holdout import document_ids, held_out_documents, in_slice
from pipelines.stages.graphs import DistantInputs, LinkInputs, distant_shard, link_shard
from relation_corpora import pmids, write_pubtator

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "datasets"
F = 0.5


def doc(pmid: str):
    return (pmid, f"Title {pmid}", "Metformin treats type 2 diabetes.",
            [("Metformin", "Chemical", "D008687"), ("type 2 diabetes", "Disease", "D003924")],
            [("Association", "D008687", "D003924")])


def write(tmp_path: Path, name: str, ids) -> str:
    return str(write_pubtator(tmp_path / name, [doc(i) for i in ids]))


#: the members of the slice among doc0 … doc39, and u of two ids, computed once: every run's held-out
#: documents, evaluation split and extraction slice follow this hash, so it must never change by
#: accident (Python's salted ``hash()``, another digest or byte order, ``<=`` for ``<`` all fail here)
SLICE_OF_FIRST_40 = {0.1: ["doc16", "doc25", "doc26", "doc38"],
                     0.5: ["doc2", "doc4", "doc6", "doc8", "doc11", "doc14", "doc15", "doc16", "doc17", "doc18",
                           "doc20", "doc22", "doc23", "doc25", "doc26", "doc27", "doc31", "doc32", "doc36",
                           "doc37", "doc38", "doc39"]}
U = {"doc0": 0.9729493781423858, "12345": 0.34991878893470507}


def test_in_slice_is_a_deterministic_fraction():
    ids = [f"doc{i}" for i in range(4000)]
    for f in (0.1, 0.5, 0.8):
        picked = [i for i in ids if in_slice(i, f)]
        assert abs(len(picked) / len(ids) - f) < 0.03
    for f, members in SLICE_OF_FIRST_40.items():
        assert [i for i in ids[:40] if in_slice(i, f)] == members
    assert {i: document_fraction(i) for i in U} == U
    assert in_slice("12345", 0.35) and not in_slice("12345", U["12345"])      # u < fraction, strictly
    small, large = ({i for i in ids if in_slice(i, f)} for f in (0.2, 0.6))
    assert small < large                                                         # nested slices
    assert all(in_slice(i, 1.0) for i in ids)


def test_extraction_and_gold_documents_in_the_slice(tmp_path):
    ex_in, ex_out = pmids(3, True, F), pmids(3, False, F)
    gold_in, gold_out = pmids(2, True, F, start=200000), pmids(2, False, F, start=200000)
    extract = write(tmp_path, "extract.PubTator", ex_in + ex_out)
    # the gold file shares one sliced extraction document and has documents of its own
    gold = write(tmp_path, "gold.PubTator", [ex_in[0]] + gold_in + gold_out)
    cfg = build({"extract": {"paths": [extract], "document_fraction": F}, "evaluate": {"gold": [gold]}})
    corpus = pmids(2, True, F, start=300000)
    assert held_out_documents(cfg, corpus) == set(ex_in) | set(gold_in)        # corpus ids ignored
    everything = build({"extract": {"paths": [extract]}, "evaluate": {"gold": [gold]}})
    assert held_out_documents(everything) == set(ex_in + ex_out + gold_in + gold_out)
    no_gold = build({"extract": {"paths": [extract], "document_fraction": F}})
    assert held_out_documents(no_gold, corpus) == set(ex_in)


def test_corpus_documents_count_when_extraction_reads_the_corpus(tmp_path):
    gold_in, gold_out = pmids(1, True, F, start=200000), pmids(1, False, F, start=200000)
    gold = write(tmp_path, "gold.PubTator", gold_in + gold_out)
    corpus_in, corpus_out = pmids(3, True, F, start=300000), pmids(3, False, F, start=300000)
    cfg = build({"extract": {"document_fraction": F}, "evaluate": {"gold": [gold]}})
    assert held_out_documents(cfg, corpus_in + corpus_out) == set(corpus_in) | set(gold_in)
    assert held_out_documents(build({}), corpus_in + corpus_out) == set(corpus_in + corpus_out)
    assert held_out_documents(build({})) == frozenset()


def test_document_ids_reread_a_changed_file(tmp_path):
    path = write(tmp_path, "docs.PubTator", ["1", "2"])
    assert document_ids([path]) == {"1", "2"}
    write(tmp_path, "docs.PubTator", ["1", "2", "333"])                         # new size: read again
    assert document_ids([path]) == {"1", "2", "333"}
    assert document_ids([]) == frozenset()


def test_the_ner_and_link_stages_read_only_the_held_out_documents_of_their_own_files(tmp_path):
    """held_ner_documents: the held-out documents of ner.paths; held_link_documents: those and the
    held-out documents of kg.relation_files, each file read on its own (two share a document). An
    extraction file of other documents holds out none of theirs."""
    from pipelines.holdout import relation_document_ids
    from pipelines.stages.ner_documents import held_link_documents, held_ner_documents

    ner = write(tmp_path, "ner.PubTator", ["1", "2", "3"])
    rel_a, rel_b = write(tmp_path, "a.PubTator", ["3", "4"]), write(tmp_path, "b.PubTator", ["4", "5"])
    extract = write(tmp_path, "extract.PubTator", ["2", "4", "9"])
    other = write(tmp_path, "other.PubTator", ["7", "8"])

    def cfg(*paths: str):
        return build({"ner": {"paths": [ner]}, "kg": {"relation_files": [rel_a, rel_b]},
                      "extract": {"paths": list(paths)}})

    assert relation_document_ids(cfg()) == {"3", "4", "5"}
    assert held_ner_documents(cfg(extract)) == ["2"] and held_link_documents(cfg(extract)) == ["2", "4"]
    assert held_ner_documents(cfg(other)) == held_link_documents(cfg(other)) == []
    no_ner = build({"kg": {"relation_files": [rel_a]}, "extract": {"paths": [extract]}})
    assert held_ner_documents(no_ner) == held_link_documents(no_ner) == []       # the stages do nothing


# ------------------------------------------------------------------ configs/biored.yaml on the shared data
@pytest.mark.shared
@pytest.mark.skipif(not SHARED.is_dir(), reason=f"shared datasets not found at {SHARED}")
def test_biored_config_trains_on_no_dev_document_or_relation(monkeypatch):
    monkeypatch.chdir(ROOT)                  # the config's paths are relative to the repository
    cfg = load_config(ROOT / "configs" / "biored.yaml")
    dev = document_ids(cfg.extract.paths, cfg.extract.format)
    assert len(dev) == 100 and cfg.extract.document_fraction == 1.0
    assert document_ids(cfg.evaluate.gold) == dev

    # the training corpus: no document is a BioRED dev abstract, by id or by PMID
    corpus_ids, corpus_pmids = set(), set()
    for path in cfg.corpus.paths:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                corpus_ids.add(str(r["doc_id"]))
                if r.get("pmid"):
                    corpus_pmids.add(str(r["pmid"]))
    assert len(corpus_ids) == 3165
    assert not (corpus_ids | corpus_pmids) & dev

    held_out = held_out_documents(cfg, corpus_ids)
    assert held_out == dev                   # extract.paths given: the corpus's own ids do not count

    # the seed KG of the run: no triple taken from a dev document ...
    kg = load_kg(cfg.kg, held_out)
    from_dev = [e for e in kg.edges if e.provenance.get("publications") in dev]
    assert from_dev == []
    assert not set(kg.annotated) & dev
    # ... 16 BC5CDR abstracts are BioRED dev documents (10 in train, 6 in dev; bc5cdr/README.md)
    assert kg.skipped["relation_documents_held_out"] == 16

    # ... while without the holdout their BC5CDR relations would be seed triples
    leaky = read_relation_files(cfg.kg.relation_files)
    leaked = {e.provenance["publications"] for e in leaky.edges} & dev
    assert leaked and all(leaky.annotated[d].types == {"CID"} for d in leaked)
    assert len(set(leaky.annotated) & dev) == 16

    # the relation typer learns from BioRED train only, never from a dev document
    typer_ids = document_ids(cfg.extract.typer_files)
    assert len(typer_ids) == 400 and not typer_ids & dev
    assert cfg.extract.relation_choice == "typer"


# ------------------------------------------------------------------ graphs stage: concatenated chunks
@pytest.fixture
def concatenated(tmp_path):
    """Four one-sentence documents chunked with corpus.chunk_mode = concatenate into 16-root chunks,
    written as a chunk shard; the first chunk holds several documents. Returns (chunks, shard path,
    seed KG, tokenizer, graph config, the first chunk's second document)."""
    text = "Metformin treats diabetes in adults."
    docs = [Document(id=f"pmid{i}", text=text,
                     mentions=[Mention(0, 9, "Metformin", "Chemical", ["MESH:D008687"]),
                               Mention(17, 25, "diabetes", "Disease", ["MESH:D003924"])]) for i in range(4)]
    tok = train_tokenizer([text] * 10, TokenizerConfig(vocab_size=100, min_frequency=1))
    graph = GraphConfig(num_roots=16, num_leaves=3)
    chunks = list(chunk_documents(docs, tok, CorpusConfig(chunk_mode="concatenate"), graph))
    first = chunks[0]
    assert first.documents[0] == first.doc_id == "pmid0" and len(first.documents) > 1
    path = tmp_path / "chunks-00000.parquet"
    write_chunks(chunks, path)
    kg = SeedKG([Node("MESH:D008687", "metformin", "biolink:ChemicalEntity"),
                 Node("MESH:D003924", "diabetes", "biolink:Disease")],
                [Edge("MESH:D008687", "treats", "MESH:D003924")])
    return chunks, path, kg, tok, graph, first.documents[1]


def test_a_concatenated_chunk_is_held_out_when_any_of_its_documents_is(concatenated, tmp_path):
    """cooccurrence injection: a chunk holding a held-out document after another one (so not its
    doc_id) still gets no leaves — every chunk that holds a held-out document is held out."""
    chunks, path, kg, tok, graph, second = concatenated
    ds = DistantSupervision(kg, RelationSchema.from_kg(kg), tok, graph.num_leaves)

    def run(no_leaves: frozenset) -> tuple[dict, list]:
        out = tmp_path / f"graphs-{len(no_leaves)}.parquet"
        shared = DistantInputs(ds, graph, tok, special_ids(tok)["pad"], no_leaves)
        stats = distant_shard(str(path), shared, out)
        return stats, list(read_graphs(out))

    stats, graphs = run(frozenset())                  # without the holdout the chunk has a query group
    assert stats.get("chunks_held_out", 0) == 0 and len(graphs[0].groups)
    stats, graphs = run(frozenset({second}))
    held = [i for i, c in enumerate(chunks) if second in c.documents]
    assert 0 in held and stats["chunks_held_out"] == len(held)
    for i, g in enumerate(graphs):
        assert (len(g.groups) == 0 and g.num_filled_leaves == 0) == (i in held), i


def test_paper_injection_links_no_head_in_a_chunk_holding_a_held_out_document(concatenated, tmp_path,
                                                                               monkeypatch):
    """The same for kg.injection = paper: the link task finds no candidate in a held-out chunk (the
    rows it digests, every one of them, not only the digest's best row of each triple)."""
    chunks, path, kg, tok, graph, second = concatenated
    scorer = SCORERS.get("tfidf")().fit([c.text for c in chunks])
    digested: list[np.ndarray] = []
    of = CandidateDigest.of
    monkeypatch.setattr(CandidateDigest, "of", lambda rows, scores, alpha: (digested.append(rows.copy()),
                                                                            of(rows, scores, alpha))[1])

    def rows(no_leaves: frozenset) -> tuple[dict, set[int]]:
        out = tmp_path / f"link-{len(no_leaves)}.npz"
        stats = link_shard((str(path), 0), LinkInputs(kg=kg, matcher=None, scorer=scorer, tokenizer=tok, graph=graph,
                                                           alpha=None, no_leaves=no_leaves), out)
        assert CandidateDigest.load(out).candidates == stats["candidates"] == len(digested[-1])
        return stats, set(digested[-1][:, 0].tolist())

    stats, linked = rows(frozenset())
    assert stats.get("chunks_held_out", 0) == 0 and 0 in linked
    stats, linked = rows(frozenset({second}))
    held = {i for i, c in enumerate(chunks) if second in c.documents}
    assert 0 in held and stats["chunks_held_out"] == len(held) and not linked & held
