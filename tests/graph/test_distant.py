"""Distant supervision (``kg.injection = cooccurrence``, graphmert/graph/distant.py, issue #15) on one
hand-built chunk read as three documents: one annotated by a relation corpus for {treats, binds}, one
annotated for {treats} only, and one not annotated.

The chunk (a word-level tokenizer: one root per word; K = 4)::

    root  1 aspro  2 eases  3 alpha  4 itis  5 and  6 beta  7 aspro  8 binds  9 kinase  10 near
         11 xeno  12 aspro  13 with  14 betoid  15 bromo  16 long 17 tail 18 disease 19 name 20 here

    H  (chemical, seed node)   "aspro" at 1, 7, 12
    T1 (disease, seed node)    "alpha itis" at 3–4
    T2 (disease, seed node)    "beta" at 6, "betoid" at 14
    G  (gene, seed node)       "kinase" at 9 (mention type unknown: the seed KG's category)
    X  (disease, not a node)   "xeno" at 11
    H2 (chemical, seed node)   "bromo" at 15
    L  (disease, seed node)    "long tail disease name here" at 16–20: 5 tokens > K
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from graphmert.corpus.chunk import Chunk, ChunkMention
from graphmert.graph import io as graph_io
from graphmert.graph.distant import DistantSupervision, chunk_entities, document_counts
from graphmert.graph.io import graphs_equal, read_graphs, write_graphs
from graphmert.graph.layout import LeafyChainGraph
from graphmert.graph.scope import ScopeNames
from graphmert.kg.graph import AnnotatedDocument, Edge, KGError, Node, SeedKG
from graphmert.kg.schema import RelationSchema, entity_type_id

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ("aspro eases alpha itis and beta aspro binds kinase near xeno aspro with betoid bromo "
         "long tail disease name here").split()
R, K = 32, 4
H, H2, T1, T2, G, X, L = "MESH:H", "MESH:H2", "MESH:T1", "MESH:T2", "NCBIGene:G", "MESH:X", "MESH:L"
G2 = "NCBIGene:G2"
# (first root, end root, type, id)
MENTIONS = [(1, 2, "Chemical", H), (3, 5, "Disease", T1), (6, 7, "Disease", T2), (7, 8, "Chemical", H),
            (9, 10, "Entity", G), (11, 12, "Disease", X), (12, 13, "Chemical", H), (14, 15, "Disease", T2),
            (15, 16, "Chemical", H2), (16, 21, "Disease", L)]
CHEM, DIS, GENE = "biolink:ChemicalEntity", "biolink:Disease", "biolink:Gene"


def both(s, r, o):
    return {(s, r, o), (o, r, s)}


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    vocab = {w: i for i, w in enumerate(SPECIALS + sorted(set(WORDS)))}
    t = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return t


def make_chunk(tok, doc_id: str, mentions=MENTIONS, window: int = 0, sentences=(), title_chars=0) -> Chunk:
    """``sentences``: the sentence of each word (root 1 on), empty: unknown."""
    text = " ".join(WORDS)
    offsets, at = [(-1, -1)], 0
    for w in WORDS:
        offsets.append((at, at + len(w)))
        at += len(w) + 1
    offsets.append((-1, -1))
    ids = [tok.token_to_id("[CLS]"), *(tok.token_to_id(w) for w in WORDS), tok.token_to_id("[SEP]")]
    cms = [ChunkMention(a, b, offsets[a][0], offsets[b - 1][1], " ".join(WORDS[a - 1:b - 1]), typ, [eid],
                        doc_id) for a, b, typ, eid in mentions]
    return Chunk(id=f"{doc_id}#{window}", doc_id=doc_id, input_ids=ids, offsets=offsets,
                 word_ids=[-1, *range(len(WORDS)), -1], mentions=cms, text=text, char_start=0,
                 sentence_ids=[-1, *sentences, -1] if sentences else [], title_chars=title_chars)


def make_kg(annotated=None) -> SeedKG:
    nodes = [Node(H, "aspro", CHEM), Node(H2, "bromo", CHEM), Node(T1, "alpha itis", DIS),
             Node(T2, "beta", DIS), Node(G, "kinase", GENE), Node(G2, "other kinase", GENE),
             Node(L, "long tail disease name here", DIS)]
    edges = [Edge(H, "treats", T1), Edge(H, "treats", T2), Edge(H2, "treats", L),
             Edge(H, "binds", G), Edge(H, "binds", G2),                    # G2 is not in the chunk
             Edge(G, "associated_with", T1), Edge(G, "associated_with", T2),
             Edge(H, "rare", T1)]                                     # 1 triple < min_relation_count
    return SeedKG(nodes, edges, annotated=annotated or {
        # annotated for treats and binds: H treats T1 and T2, binds nothing (a known negative)
        "d1": AnnotatedDocument(frozenset({"treats", "binds", "rare"}), frozenset(
            both(H, "treats", T1) | both(H, "treats", T2) | both(H, "rare", T1))),
        # annotated for treats only: binds and associated_with fall back to the seed KG
        "d3": AnnotatedDocument(frozenset({"treats"}), frozenset(both(H, "treats", T1)))})


def run(tok, doc_id, kg=None, min_relation_count=2, negatives=True, mentions=MENTIONS, scopes=None,
        **chunk_args):
    kg = kg or make_kg()
    ds = DistantSupervision(kg, RelationSchema.from_kg(kg), tok, K, min_relation_count, negatives, scopes)
    stats: Counter = Counter()
    chunk = make_chunk(tok, doc_id, mentions, **chunk_args)
    g = ds.graph(chunk, R, tok.token_to_id("[PAD]"), stats, {H: 3, T1: 5})
    g.validate()
    return g, stats, kg


def groups(g: LeafyChainGraph, kg: SeedKG) -> dict[int, tuple]:
    """root → (head entity, relation, shown tail entity or None, leaf words)."""
    e, inv = g.entities, {v: k for k, v in kg.relation_map.items()}
    vocab = dict(enumerate(SPECIALS + sorted(set(WORDS))))
    return {int(r): (e.ids[e.head[r]], inv[int(g.relation_ids[r])],
                     e.ids[e.tail[r]] if e.tail[r] >= 0 else None,
                     " ".join(vocab[int(t)] for t in g.leaf_ids[r, :g.leaf_length[r]]))
            for r in g.groups}


def candidates(g: LeafyChainGraph, root: int) -> dict[str, int]:
    e = g.entities
    return {e.ids[int(c)]: int(t) for r, c, t in e.candidates if r == root}


def test_entity_table_of_the_chunk(tok):
    kg = make_kg()
    ents = chunk_entities(make_chunk(tok, "d1"), kg, R, {H: 3, T1: 5})
    assert ents.table.ids == [H, T1, T2, G, X, H2, L]                 # first mention order
    assert ents.categories == {H: CHEM, T1: DIS, T2: DIS, G: GENE, X: DIS, H2: CHEM, L: DIS}
    assert ents.table.types.tolist() == [entity_type_id(ents.categories[i]) for i in ents.table.ids]
    assert ents.table.counts.tolist() == [3, 5, 1, 1, 1, 1, 1]        # document counts, at least 1
    assert [tuple(m) for m in ents.table.mentions.tolist()][:3] == [(1, 2, 0), (3, 5, 1), (6, 7, 2)]
    assert ents.heads == {1: (2, H), 3: (5, T1), 6: (7, T2), 7: (8, H), 9: (10, G), 11: (12, X),
                          12: (13, H), 14: (15, T2), 15: (16, H2), 16: (21, L)}
    assert ents.spans[T2] == [(6, 7, "beta"), (14, 15, "betoid")]


def test_annotated_document_positives_none_questions_and_round_robin(tok):
    g, stats, kg = run(tok, "d1")
    got = groups(g, kg)
    # H asks treats (tails T1, T2) and binds (none: annotated, no binds partner); its three mentions
    # take the questions in turn, positives first: treats/T1, binds/none, treats/T2 (its 2nd turn)
    assert got[1] == (H, "treats", T1, "alpha itis")                  # nearest (only) form of T1
    assert got[7] == (H, "binds", None, "")
    assert got[12] == (H, "treats", T2, "betoid")                     # the form of T2 nearest root 12
    # H2 has no annotated partner: one "none" question for one of the relations the document covers
    assert got[15][0] == H2 and got[15][2] is None and got[15][1] in {"treats", "binds"}
    # G: associated_with is not annotated for d1, so the seed KG's tails are positives
    assert got[9] == (G, "associated_with", T1, "alpha itis")
    assert set(got) == {1, 7, 9, 12, 15}          # X is no seed node; no relation asks from a disease
    assert all(r != "rare" for _, r, _, _ in got.values())           # under min_relation_count
    assert g.leaf_length[7] == 0 and g.head_length[7] == 1
    assert stats["groups"] == 5 and stats["groups_with_tail"] == 3 and stats["groups_without_tail"] == 2
    assert stats["relation:treats"] == 2 and stats["relation:associated_with"] == 1
    assert stats["none:binds"] + stats["none:treats"] == 2 and stats["chunks_with_groups"] == 1


def test_candidates_are_the_admitted_entities_with_gold_flags(tok):
    g, _, kg = run(tok, "d1")
    # treats admits diseases after a chemical: every disease of the chunk, gold tails flagged
    assert candidates(g, 1) == {T1: 1, T2: 1, X: 0, L: 0}
    assert candidates(g, 12) == candidates(g, 1)
    assert candidates(g, 7) == {G: 0}                                # binds: genes; none is gold
    assert candidates(g, 9) == {T1: 1, T2: 1, X: 0, L: 0}             # associated_with after a gene
    assert all(H not in candidates(g, r) for r in (1, 7, 12))         # never the head itself
    e = g.entities
    assert e.head[1] == e.ids.index(H) and e.tail[1] == e.ids.index(T1) and e.tail[7] == -1
    assert (e.head[[r for r in range(R) if r not in (1, 7, 9, 12, 15)]] == -1).all()


def test_relations_the_document_does_not_annotate_use_the_seed_kg(tok):
    """d3 is annotated for treats only: H's binds question takes the seed KG's tail G (not a "none");
    its treats tails are only the document's own (T1, not the seed KG's T2)."""
    g, stats, kg = run(tok, "d3")
    got = groups(g, kg)
    h = {r: got[r] for r in (1, 7, 12)}
    assert {(rel, tail) for _, rel, tail, _ in h.values()} == {("treats", T1), ("binds", G)}
    assert got[15][1:3] == ("treats", None)                           # H2: treats annotated, no tail
    assert got[9] == (G, "associated_with", T1, "alpha itis")
    assert candidates(g, next(r for r, v in h.items() if v[1] == "treats")) == {T1: 1, T2: 0, X: 0, L: 0}


def test_unannotated_document_asks_only_questions_with_tails(tok):
    g, stats, kg = run(tok, "d2")
    got = groups(g, kg)
    assert stats["groups_without_tail"] == 0 and all(t is not None for _, _, t, _ in got.values())
    # H: treats (T1, T2) and binds (G) from the seed KG, in turn over its three mentions
    assert got[1][1] == got[12][1] != got[7][1]
    assert {got[1][1], got[7][1]} == {"treats", "binds"}
    if got[1][1] == "treats":
        assert (got[1][2], got[12][2], got[7][2]) == (T1, T2, G)
    else:
        assert (got[1][2], got[12][2], got[7][2]) == (G, G, T1)
    # only tails the chunk mentions: H binds G2 in the seed KG too, but G2 is not in the chunk
    binds = next(r for r in (1, 7) if got[r][1] == "binds")
    assert candidates(g, binds) == {G: 1} and G2 not in g.entities.ids
    # H2's only tail, L, has 5 tokens > K: not shown, the question is skipped and counted
    assert 15 not in got and stats["tails_not_shown"] == 1
    assert got[9][:3] == (G, "associated_with", T1)


def test_negatives_off_and_min_relation_count(tok):
    g, stats, kg = run(tok, "d1", negatives=False)
    got = groups(g, kg)
    assert stats["groups_without_tail"] == 0 and 15 not in got
    # one question left for H (treats): its mentions show T1, T2, T1 in turn, each nearest its head
    assert [got[r] for r in (1, 7, 12)] == [(H, "treats", T1, "alpha itis"), (H, "treats", T2, "beta"),
                                            (H, "treats", T1, "alpha itis")]
    g, stats, kg = run(tok, "d1", min_relation_count=0)
    assert stats["relation:rare"] == 1                                # asked once it counts
    g, stats, kg = run(tok, "d1", min_relation_count=4)
    assert stats["groups"] == 0 and (g.relation_ids < 0).all()        # every relation has ≤ 3 triples


def test_the_assignment_is_deterministic(tok):
    a, _, _ = run(tok, "d2")
    b, _, _ = run(tok, "d2")
    assert graphs_equal(a, b)


def test_document_counts_count_each_mention_once():
    chunks = [Chunk(id=f"d#{w}", doc_id="d", input_ids=[2, 10, 3], offsets=[(-1, -1), (0, 1), (-1, -1)],
                    word_ids=[-1, 0, -1],
                    mentions=[ChunkMention(1, 2, 0, 5, "aspro", "Chemical", [H], "d"),
                              ChunkMention(1, 2, 10 + w, 15 + w, "aspro", "Chemical", [H], "d")])
              for w in (0, 1)]                      # the first mention is in both windows
    assert document_counts(chunks) == {"d": Counter({H: 3})}


def test_graphs_with_entity_tables_round_trip(tok, tmp_path):
    graphs = [run(tok, d)[0] for d in ("d1", "d2", "d3")]
    paper = LeafyChainGraph.from_roots("p#0", "p", [2, 10, 11, 3], [-1, 0, 1, -1], R, K, 0)
    paper.inject(1, [12, 13], 0, 1)
    write_graphs(graphs + [paper], tmp_path / "g.parquet")
    back = list(read_graphs(tmp_path / "g.parquet"))
    assert all(graphs_equal(a, b) for a, b in zip(graphs + [paper], back))
    assert back[-1].entities is None
    assert back[0].entities.counts.tolist() == graphs[0].entities.counts.tolist()
    for g in back:
        g.validate()
    # a group without a tail needs its table
    broken = back[0]
    broken.entities = None
    with pytest.raises(ValueError, match="needs an entity table"):
        broken.validate()


def test_shards_without_entity_columns_still_read(tmp_path):
    g = LeafyChainGraph.from_roots("p#0", "p", [2, 10, 11, 3], [-1, 0, 1, -1], R, K, 0)
    g.inject(1, [12, 13], 0, 1)
    row = {k: v for k, v in graph_io._row(g).items() if k not in graph_io._ENTITY_COLUMNS}
    old = pa.schema([f for f in graph_io.SCHEMA if f.name not in graph_io._ENTITY_COLUMNS])
    pq.write_table(pa.Table.from_pylist([row], schema=old), tmp_path / "old.parquet")
    (back,) = read_graphs(tmp_path / "old.parquet")
    assert back.entities is None and graphs_equal(back, g)
    assert np.array_equal(back.leaf_ids, g.leaf_ids)


# ---------------------------------------------------------------- kg.candidate_scope
# sentences of the words, root 1 on: "aspro eases alpha itis and beta" | "aspro binds kinase near" |
# "xeno aspro with betoid bromo long tail disease name here"
THREE = [0] * 6 + [1] * 4 + [2] * 10


def test_sentence_scope_keeps_the_candidates_of_the_heads_sentence(tok):
    g, stats, kg = run(tok, "d1", scopes=ScopeNames("sentence"), sentences=THREE)
    chunk_wide, _, _ = run(tok, "d1", sentences=THREE)
    assert groups(g, kg) == groups(chunk_wide, kg)        # the same questions and leaves
    assert candidates(g, 1) == {T1: 1, T2: 1}              # X and L lie in another sentence
    assert candidates(g, 12) == {T2: 1, X: 0, L: 0}        # T2 by its second form, "betoid"
    assert candidates(g, 7) == {G: 0}
    # G's associated_with tails (T1, T2) come from the seed KG and lie outside its sentence: the
    # question keeps its leaves and asks the candidate head nothing
    assert groups(g, kg)[9] == (G, "associated_with", T1, "alpha itis") and candidates(g, 9) == {}
    assert stats["groups_tails_out_of_scope"] == 1
    assert stats["candidates_out_of_scope"] == 2 + 1 + 0 + 4 + 1    # roots 1, 12, 7, 9, 15


def test_an_annotated_question_whose_tails_lie_outside_becomes_a_none_question(tok):
    # root 12 "aspro" shares its sentence with "xeno" only: d1 annotates treats, so none of the
    # sentence's diseases is a treats tail
    sentences = [0] * 10 + [1] * 3 + [2] * 7
    g, stats, kg = run(tok, "d1", scopes=ScopeNames("sentence"), sentences=sentences)
    assert groups(g, kg)[12] == (H, "treats", T2, "betoid") and candidates(g, 12) == {X: 0}
    assert candidates(g, 9) == {T1: 1, T2: 1}              # G's sentence holds its tails
    assert stats["groups_tails_out_of_scope"] == 1
    # the title (the first six words) is in scope too for chemical-disease pairs under 'title'
    title = len("aspro eases alpha itis and beta")
    g, _, _ = run(tok, "d1", scopes=ScopeNames("sentence", {"ChemicalEntity|Disease": "title"}),
                  sentences=sentences, title_chars=title)
    assert candidates(g, 12) == {T1: 1, T2: 1, X: 0}
    assert candidates(g, 7) == {G: 0}                      # chemical-gene: its own sentence only


def test_chunk_scope_or_unknown_sentences_change_nothing(tok):
    plain, _, kg = run(tok, "d1")
    for scopes, sentences in ((ScopeNames("chunk", {"ChemicalEntity|Disease": "document"}), THREE),
                              (ScopeNames("sentence"), ())):       # no sentences: one sentence
        g, stats, _ = run(tok, "d1", scopes=scopes, sentences=sentences)
        assert groups(g, kg) == groups(plain, kg) and stats["candidates_out_of_scope"] == 0
        assert np.array_equal(g.entities.candidates, plain.entities.candidates)


@pytest.mark.parametrize("kg_cfg, corpus, message", [
    ({"candidate_scope": "paragraph"}, {}, "kg.candidate_scope"),
    ({"candidate_scope_by_category": {"Disease": "chunk"}}, {},
     "kg.candidate_scope_by_category: key 'Disease' is not a category pair"),
    ({"candidate_scope_by_category": {"Disease|Gene": "document"}}, {},
     r"kg.candidate_scope_by_category.Disease\|Gene: 'document' is not allowed"),
    ({"candidate_scope_by_category": {"Disease|Gene": "title"}}, {"chunk_mode": "concatenate"},
     "kg.candidate_scope 'title' needs corpus.chunk_mode 'document'"),
])
def test_bad_candidate_scopes_are_config_errors(kg_cfg, corpus, message):
    from graphmert.config import ConfigError, build

    with pytest.raises(ConfigError, match=message):
        build({"kg": kg_cfg, "corpus": corpus})


def test_a_candidate_scope_category_the_schema_does_not_know_is_refused(tok):
    kg = make_kg()
    scopes = ScopeNames("sentence", {"Disease|Variant": "chunk"}, key="kg.candidate_scope_by_category")
    with pytest.raises(KGError, match=r"kg.candidate_scope_by_category: \['biolink:Variant'\] are not"):
        DistantSupervision(kg, RelationSchema.from_kg(kg), tok, K, scopes=scopes)


def test_sentence_keys_count_sentence_boundaries_along_the_roots(tok, tmp_path):
    from dataclasses import replace

    from graphmert.graph.scope import sentence_keys

    c = make_chunk(tok, "d1", sentences=THREE)
    assert sentence_keys(c).tolist() == [0] * 7 + [1] * 4 + [2] * 11          # [CLS] … [SEP]
    assert sentence_keys(make_chunk(tok, "d1")).tolist() == [0] * 22          # unknown: one sentence
    # a concatenated chunk: the same sentence index in two documents is two sentences
    two = replace(c, sentence_ids=[-1] + [0] * 20 + [-1], doc_ids=[""] + ["a"] * 10 + ["b"] * 10 + [""])
    assert sentence_keys(two).tolist() == [0] * 11 + [1] * 11
    g, _, _ = run(tok, "d1", sentences=THREE)
    assert g.entities.sentences.tolist() == sentence_keys(c).tolist()
    write_graphs([g], tmp_path / "g.parquet")
    assert graphs_equal(next(read_graphs(tmp_path / "g.parquet")), g)
