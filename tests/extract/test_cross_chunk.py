"""Pairs that no chunk holds (extract.cross_chunk_pairs): which pairs, against a naive reference; the
features by hand; the regression learns a rule built to be learnable; clear errors; and in the
extractor, the same added pairs for every ranker, typed and directed as the schema admits."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from graphmert.config import ConfigError, ExtractConfig, build_section, load_config
from graphmert.corpus.chunk import Chunk, ChunkMention
from graphmert.corpus.document import Document, Mention, Relation
from graphmert.extract.cross_chunk import (CrossChunkError, CrossChunkPair, CrossChunkScorer, cross_chunk_pairs,
                                           cross_chunk_triples)
from graphmert.extract.pairs import PairExtractor

from extract_helpers import make_chunks, make_docs, make_kg, make_schema, make_tokenizer

CHEM, DIS, GENE = "biolink:ChemicalEntity", "biolink:Disease", "biolink:Gene"
TYPES = {"C": "Chemical", "D": "Disease", "G": "Gene"}


def document(doc_id: str, sentences: list[list[str]], relations=()) -> Document:
    """One sentence per list of entity ids, each id written as itself ("C1 D2."); the type is the
    id's first letter."""
    text, mentions, spans = "", [], []
    for ids in sentences:
        start = len(text)
        for e in ids:
            mentions.append(Mention(len(text), len(text) + len(e), e, TYPES[e[0]], [e]))
            text += e + " "
        text = text.rstrip() + ". "
        spans.append((start, len(text) - 1))
    return Document(doc_id, text.rstrip(), mentions=mentions, sentences=spans,
                    relations=[Relation("Association", a, b) for a, b in relations])


def chunks_of(doc: Document, groups: list[list[int]]) -> list[Chunk]:
    """Chunks holding the document's mentions of the given indices."""
    return [Chunk(id=f"{doc.id}#{k}", doc_id=doc.id, input_ids=[], offsets=[], word_ids=[],
                  mentions=[ChunkMention(0, 0, doc.mentions[i].start, doc.mentions[i].end,
                                         doc.mentions[i].text, doc.mentions[i].type, list(doc.mentions[i].ids),
                                         doc.id) for i in g])
            for k, g in enumerate(groups)]


def test_the_pairs_are_those_no_chunk_holds_as_a_naive_loop_finds_them():
    rng = random.Random(0)
    docs, chunks = [], []
    for n in range(30):
        ids = [f"{rng.choice('CDG')}{rng.randrange(4)}" for _ in range(rng.randrange(2, 9))]
        doc = document(f"d{n}", [ids[i:i + 2] for i in range(0, len(ids), 2)])
        groups = [sorted(rng.sample(range(len(ids)), rng.randrange(1, len(ids) + 1))) for _ in range(rng.randrange(1, 4))]
        docs.append(doc)
        chunks += chunks_of(doc, groups)
    pairs = [frozenset({CHEM, DIS}), frozenset({GENE})]                     # chemical–disease, gene–gene
    got = {(p.doc.id, p.a, p.b) for p in cross_chunk_pairs(docs, chunks, pairs)}
    want = set()
    for doc in docs:
        held = [{i for m in c.mentions for i in m.ids} for c in chunks if c.doc_id == doc.id]
        ents = sorted({m.ids[0] for m in doc.mentions})
        for a in ents:
            for b in ents:
                kinds = a[0] + b[0]
                if (kinds == "CD" or (kinds == "GG" and a < b)) and not any(a in h and b in h for h in held):
                    want.add((doc.id, a, b))
    assert got == want and got


def test_the_features_by_hand():
    # title: D1 C1; then D1; then D2; then V... no: C2 alone; chunks: {D1, C1, D1}, {D2, C2}
    doc = document("x", [["D1", "C1"], ["D1"], ["D2"], ["C2"]])
    chunks = chunks_of(doc, [[0, 1, 2], [3, 4]])
    found = {(p.a, p.b): p for p in cross_chunk_pairs([doc], chunks, [frozenset({CHEM, DIS})])}
    assert set(found) == {("C1", "D2"), ("C2", "D1")}                      # C1–D1 and C2–D2 share a chunk
    p = found[("C2", "D1")]
    assert p.categories == (CHEM, DIS)
    assert p.x == pytest.approx((math.log1p(1), 1.0, 0.0,                  # C2: one mention, most named (tie), not in the title
                                 math.log1p(2), 1.0, 1.0,                  # D1: two mentions, the most named, in the title
                                 math.log1p(2), math.log1p(2),             # two chemicals, two diseases
                                 math.log1p(2),                            # sentences 3 and 1: two apart
                                 0.5,                                      # C2 shares a chunk with one of two diseases
                                 1 / 4, 2 / 4))                            # C2 in 1 of 4 sentences, D1 in 2
    assert found[("C1", "D2")].x[8] == pytest.approx(math.log1p(2))       # sentences 0 and 2


def synthetic(n: int, seed: int) -> tuple[list[Document], list[Chunk]]:
    """Documents whose chemical and disease never share a chunk; the pair is related exactly when
    the chemical is named at least twice (a rule the features can express)."""
    rng = random.Random(seed)
    docs, chunks = [], []
    for k in range(n):
        times = rng.randrange(1, 4)
        doc = document(f"s{seed}-{k}", [["C1"]] * times + [["D1"]], relations=[("C1", "D1")] if times >= 2 else [])
        docs.append(doc)
        chunks += chunks_of(doc, [list(range(times)), [times]])
    return docs, chunks


def test_the_regression_learns_a_learnable_rule():
    scorer = CrossChunkScorer(pairs=["ChemicalEntity|Disease"]).fit(*synthetic(60, 0))
    assert scorer.fit_counts["ChemicalEntity|Disease"]["pairs"] == 60
    docs, chunks = synthetic(40, 1)
    scored = scorer.score(docs, chunks)
    assert [p.doc.id for p, _ in scored] == [d.id for d in docs]           # document order
    right = [(v >= 0.5) == bool(p.doc.relations) for p, v in scored]
    assert np.mean(right) == 1.0


def test_an_added_triple_quotes_its_nearest_mentions_from_the_first_sentence_through_the_last():
    doc = document("d", [["C1"], ["G3"], ["D2"], ["C1"], ["G4"]])                   # "C1. G3. D2. C1. G4."
    pair = CrossChunkPair(doc=doc, a="C1", b="D2", categories=(CHEM, DIS), x=())
    (t,) = cross_chunk_triples([(pair, 0.7, "treats", "C1", "D2")], [], lambda p, i: i)
    ev = t.evidence[0]
    assert (ev.head_start, ev.tail_start) == (doc.mentions[3].start, doc.mentions[2].start)   # the later C1
    assert (ev.sentence_start, ev.sentence) == (doc.sentences[2][0], "D2. C1.")


def test_errors_name_the_problem():
    docs, chunks = synthetic(5, 0)
    with pytest.raises(CrossChunkError, match=r"cross_chunk_pairs Disease\|Gene: the typer documents hold 0 such "
                                              r"pairs that no chunk holds, 0 of them related"):
        CrossChunkScorer(pairs=["Gene|Disease"]).fit(docs, chunks)
    with pytest.raises(CrossChunkError, match="asked before it was fitted"):
        CrossChunkScorer(pairs=["Gene|Disease"]).score(docs, chunks)
    with pytest.raises(ConfigError, match="extract.cross_chunk_pairs: key 'Gene' is not a category pair"):
        load_config(None, ["extract.cross_chunk_pairs=[Gene]", "extract.typer_files=[x]"])
    with pytest.raises(ConfigError, match=r"extract.cross_chunk_pairs \['Gene\|Disease'\] needs extract.typer_files"):
        load_config(None, ["extract.cross_chunk_pairs=[Gene|Disease]"])


def test_every_ranker_gets_the_same_added_pairs_typed_as_the_schema_admits():
    """docB's aspirin and neonatal diabetes share no chunk of 12 roots: the fitted regression keeps
    the pair for both rankers, as aspirin 'treats' it (the schema's only chemical–disease relation,
    chemical first), with the mentions' spans as evidence; a threshold above its probability drops it."""
    docs = make_docs()
    tok, kg = make_tokenizer(docs), make_kg()
    chunks = make_chunks(docs, tok, 12, 2)
    scorer = CrossChunkScorer(pairs=["ChemicalEntity|Disease"]).fit(*synthetic(60, 0))
    (pair, p), = scorer.score(docs, chunks)
    assert (pair.doc.id, pair.a, pair.b) == ("docB", "MESH:D001241", "MESH:C563425")

    def extract(**cfg):
        c = build_section(ExtractConfig, {"text_entities": False, "beta": 0.0, **cfg}, "extract")
        ex = PairExtractor(None, tok, kg, make_schema(kg), kg.relation_map, c, 12, 4, relations=kg.relations,
                           checkpoint_id="ck", run_id="run", cross_chunk=scorer)
        return ex.extract(docs, chunks, rankers=["candidates", "nearest"])

    out, report = extract(cross_chunk_min_probability=p - 1e-6)
    added = [[t for t in out[r] if t.evidence[0].tail_start >= 0 and t.tail_id == "MESH:C563425"
              and t.head_id == "MESH:D001241"] for r in ("candidates", "nearest")]
    assert len(added[0]) == 1 and [t.to_dict() for t in added[0]] == [t.to_dict() for t in added[1]]
    t = added[0][0]
    text = docs[1].text
    assert (t.relation, t.head_category, t.tail_category, t.confidence) == ("treats", CHEM, DIS, pytest.approx(p))
    assert (t.head_name, t.tail_name) == ("aspirin", "neonatal diabetes")   # the KG's name, else the text
    ev = t.evidence[0]
    assert text[ev.head_start:ev.head_end] == "Aspirin" and text[ev.tail_start:ev.tail_end] == "neonatal diabetes"
    assert ev.chunk_id == "docB#0" and (ev.sentence_start, ev.sentence) == (0, text)   # both ends' sentences
    assert report["counts"]["cross_chunk_pairs_kept"] == 1
    out, report = extract(cross_chunk_min_probability=min(p + 1e-6, 1.0))
    assert report["counts"]["cross_chunk_pairs_kept"] == 0
    assert not any(t.head_id == "MESH:D001241" and t.tail_id == "MESH:C563425" for t in out["candidates"])
