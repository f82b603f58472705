"""End-to-end extraction with a tiny random model: determinism, provenance, batching, merging, errors."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from spacy.lang.en.stop_words import STOP_WORDS

from extract_helpers import make_chunks, make_docs, make_kg, make_model, make_schema, make_tokenizer
from graphmert.config import ExtractConfig, build_section
from graphmert.corpus.tokenizer import special_ids
from graphmert.extract.extractor import ExtractionError, Extractor
from graphmert.extract.predict import LeafPredictor, Query
from graphmert.extract.triples import (Evidence, Triple, is_stated, merge_triples,
                                       read_triples, read_triples_jsonl, triple_key, write_triples,
                                       write_triples_jsonl)
from graphmert.graph.collate import collate_graphs
from graphmert.graph.layout import LeafyChainGraph
from graphmert.kg.lexicon import Lexicon

R, K = 32, 4


@pytest.fixture(scope="module")
def world():
    docs = make_docs()
    tok = make_tokenizer(docs)
    kg = make_kg()
    return docs, tok, make_chunks(docs, tok, R), kg, make_schema(kg), make_model(tok.get_vocab_size(),
                                                                                 len(kg.relations))


def extractor(world, **kw) -> Extractor:
    docs, tok, chunks, kg, schema, model = world
    cfg = build_section(ExtractConfig, {"beta": 0.0, **kw}, "extract")
    return Extractor(model, tok, kg, schema, kg.relation_map, cfg, R, K, checkpoint_id="ck", run_id="run")


def test_two_runs_give_identical_triples(world):
    docs, _, chunks, *_ = world
    a, rep_a = extractor(world).extract(docs, chunks)
    b, rep_b = extractor(world).extract(docs, chunks)
    assert a and [t.to_dict() for t in a] == [t.to_dict() for t in b] and rep_a == rep_b


def test_an_extractor_kept_for_many_parts_reports_each_calls_own_work(world):
    """A worker keeps one extractor for every part it runs: each call's counts are that call's."""
    docs, _, chunks, *_ = world
    ex = extractor(world)
    first = [ex.extract(docs, chunks)[1] for _ in range(3)]
    assert first[0]["counts"]["forwards"] > 0 and first[0] == first[1] == first[2]


def test_provenance_spans_point_at_the_right_text(world):
    """Every span is the text it names, and the quote holds the head and, when the tail is a mention of
    the chunk, the tail too: from the head's sentence through the tail's (tail scope: the document)."""
    docs, _, chunks, *_ = world
    by_id, by_chunk = {d.id: d for d in docs}, {c.id: c for c in chunks}
    triples, _ = extractor(world, tail_sources=["mention", "phrase"]).extract(docs, chunks)
    assert triples
    across = 0
    for t in triples:
        (ev,) = t.evidence
        doc = by_id[ev.doc_id]
        head_text = doc.text[ev.head_start:ev.head_end]
        assert head_text in {m.text for m in doc.mentions}
        end = ev.sentence_start + len(ev.sentence)
        assert doc.text[ev.sentence_start:end] == ev.sentence
        assert ev.sentence_start <= ev.head_start and ev.head_end <= end
        if t.tail_source in ("mention", "phrase"):
            tail_text = doc.text[ev.tail_start:ev.tail_end]
            assert tail_text.lower() == t.tail_name.lower() or t.tail_id and any(
                m.text == tail_text and t.tail_id in m.ids for m in doc.mentions)
            if any(a <= ev.tail_start < b for a, b in by_chunk[ev.chunk_id].char_ranges()):
                assert ev.sentence_start <= ev.tail_start and ev.tail_end <= end
                across += sum(a <= ev.tail_start < b and not a <= ev.head_start < b for a, b in doc.sentences)
        assert ev.confidence == pytest.approx(t.confidence)
        assert t.checkpoint_id == "ck" and t.run_id == "run"
    assert across > 0                       # some tails lie in another sentence than their head


def test_heads_follow_the_schema_and_never_pair_with_themselves(world):
    docs, _, chunks, kg, schema, _ = world
    triples, rep = extractor(world, check_range=False).extract(docs, chunks)
    for t in triples:
        assert t.relation in schema.relations_for_subject(t.head_category)
        assert not (t.head_id and t.head_id == t.tail_id)
        assert t.tail_name.lower() != t.head_name.lower()
    assert rep["counts"]["heads"] >= 8


def test_unlinked_mentions_are_heads_with_their_surface_form(world):
    docs, _, chunks, *_ = world
    triples, _ = extractor(world, check_range=False, tails_per_query=2).extract(docs, chunks)
    pain = [t for t in triples if t.head_name == "pain"]
    assert pain and all(t.head_id == "" and t.head_category == "biolink:Disease" for t in pain)


def test_tails_per_query_and_relation_restriction(world):
    docs, _, chunks, *_ = world
    one, _ = extractor(world, check_range=False).extract(docs, chunks)
    two, _ = extractor(world, check_range=False, tails_per_query=2).extract(docs, chunks)
    assert len(two) == 2 * len(one)
    only, _ = extractor(world, check_range=False, relations=["treats"]).extract(docs, chunks)
    assert only and {t.relation for t in only} == {"treats"}


def test_unknown_relation_and_source_are_errors(world):
    with pytest.raises(ExtractionError, match="extract.relations.*causes"):
        extractor(world, relations=["causes"])
    with pytest.raises(ExtractionError, match="tail_sources"):
        extractor(world, tail_sources=["mention", "oracle"])
    docs, _, chunks, *_ = world
    with pytest.raises(ExtractionError, match="docB"):
        extractor(world).extract(docs[:1], chunks)


def test_packed_queries_equal_single_queries_when_alone_in_their_graph(world):
    """A packed graph with one query is the single-query graph: identical log-probabilities."""
    _, tok, chunks, kg, _, model = world
    sp = special_ids(tok)
    queries = [Query(chunk=0, root=1, head_length=1, relation=0, length=2),
               Query(chunk=0, root=1, head_length=1, relation=1, length=3),
               Query(chunk=1, root=2, head_length=1, relation=0, length=1)]
    packed = dict(LeafPredictor(model, R, K, sp["pad"], sp["mask"], 8, pack=True).predict(chunks, queries))
    single = dict(LeafPredictor(model, R, K, sp["pad"], sp["mask"], 1, pack=False).predict(chunks, queries))
    assert set(packed) == set(single) == {0, 1, 2}
    for q in range(3):
        assert packed[q].shape == (queries[q].length, tok.get_vocab_size())
        torch.testing.assert_close(packed[q], single[q], atol=1e-5, rtol=1e-5)


def shared_graph_log_probs(model, tok, chunk, injections) -> dict[tuple[int, int], torch.Tensor]:
    """log p [V] per (root, slot) of one graph holding the chunk's roots and every (root, length,
    relation, head length) of ``injections`` as masked leaves, computed here from the model."""
    sp = special_ids(tok)
    g = LeafyChainGraph.from_roots(chunk.id, chunk.doc_id, chunk.input_ids, chunk.word_ids, R, K, sp["pad"])
    for root, length, relation, head_length in injections:
        g.inject(root, [sp["mask"]] * length, relation, head_length)
    batch = collate_graphs([g], layout="packed")
    at = (batch.leaf_slot >= 0) & batch.attention_mask
    with torch.no_grad():
        logits = model(batch, logits_at=at).logits                                       # [N, V]
    keys = zip(batch.root_index[at].tolist(), batch.leaf_slot[at].tolist())
    return dict(zip(keys, torch.log_softmax(logits, dim=-1)))


def test_packed_queries_sharing_a_graph_get_that_graphs_answers(world):
    """Where several queries share a graph, each sees the others' masked leaves, so its answer is not
    the single-query one: the contract is that it gets the shared graph's distributions at its own
    root's slots (not another query's), and that a second query on the same root opens a new graph."""
    _, tok, chunks, _, _, model = world
    sp = special_ids(tok)
    queries = [Query(chunk=0, root=1, head_length=1, relation=0, length=2),     # one graph
               Query(chunk=0, root=9, head_length=2, relation=0, length=2),
               Query(chunk=0, root=17, head_length=1, relation=0, length=2),
               Query(chunk=0, root=9, head_length=1, relation=0, length=2),     # root 9 again: a second graph
               Query(chunk=0, root=5, head_length=1, relation=1, length=2),     # the other relation: a third
               Query(chunk=0, root=12, head_length=1, relation=1, length=2),
               Query(chunk=1, root=3, head_length=1, relation=0, length=1),     # the other chunk: a fourth
               Query(chunk=1, root=8, head_length=1, relation=0, length=1)]
    graphs = [[0, 1, 2], [3], [4, 5], [6, 7]]
    predictor = LeafPredictor(model, R, K, sp["pad"], sp["mask"], 2, pack=True)
    packed = dict(predictor.predict(chunks, queries))
    assert set(packed) == set(range(len(queries))) and predictor.graphs == len(graphs)
    for members in graphs:
        c = queries[members[0]].chunk
        want = shared_graph_log_probs(model, tok, chunks[c], [(queries[q].root, queries[q].length,
                                                               queries[q].relation, queries[q].head_length)
                                                              for q in members])
        for q in members:
            assert packed[q].shape == (queries[q].length, tok.get_vocab_size())
            torch.testing.assert_close(packed[q], torch.stack([want[(queries[q].root, k)]
                                                               for k in range(queries[q].length)]),
                                       atol=1e-5, rtol=1e-5, msg=f"query {q}")


@pytest.mark.parametrize("max_leaves", [1, 3, 5, 100])
def test_leaf_budget_cuts_forwards_not_answers(world, max_leaves):
    """``max_leaves`` caps the masked leaves of a forward, greedily (a graph with more runs alone):
    every query gets the answer it gets from forwards without a budget."""
    _, tok, chunks, *_, model = world
    sp = special_ids(tok)
    queries = [Query(chunk=c, root=r, head_length=1, relation=rel, length=t)
               for c, r, rel, t in [(0, 1, 0, 2), (0, 9, 0, 2), (0, 5, 1, 3), (1, 3, 0, 1), (1, 8, 1, 4),
                                    (1, 2, 0, 2), (0, 4, 1, 1)]]
    whole = dict(LeafPredictor(model, R, K, sp["pad"], sp["mask"], 64, pack=False, max_leaves=10**6)
                 .predict(chunks, queries))
    sizes: list[tuple[int, int]] = []            # (graphs, masked leaves) of each forward
    hook = model.register_forward_pre_hook(
        lambda _, args, kwargs: sizes.append((args[0].input_ids.shape[0], kwargs["logits_at"].numel())),
        with_kwargs=True)
    try:
        got = dict(LeafPredictor(model, R, K, sp["pad"], sp["mask"], 64, pack=False, max_leaves=max_leaves)
                   .predict(chunks, queries))
    finally:
        hook.remove()
    assert sum(n for _, n in sizes) == sum(q.length for q in queries)
    assert all(n <= max_leaves or graphs == 1 for graphs, n in sizes)
    assert all(a + b > max_leaves for (_, a), (_, b) in zip(sizes, sizes[1:]))      # greedy: none could join
    assert (len(sizes) == 1) == (max_leaves >= sum(q.length for q in queries))
    assert set(got) == set(whole)
    for q in whole:
        torch.testing.assert_close(got[q], whole[q], atol=1e-5, rtol=1e-5)


def test_extractor_forwards_follow_the_configured_leaf_budget(world):
    """``extract.leaves_per_forward`` reaches the predictor: a budget of one leaf makes more forwards
    and the same triples."""
    docs, _, chunks, *_ = world
    wide, rep_wide = extractor(world).extract(docs, chunks)
    narrow, rep_narrow = extractor(world, leaves_per_forward=1).extract(docs, chunks)
    assert rep_narrow["counts"]["forwards"] > rep_wide["counts"]["forwards"]
    assert [triple_key(t) for t in narrow] == [triple_key(t) for t in wide]      # float32 rounding aside
    assert [t.confidence for t in narrow] == pytest.approx([t.confidence for t in wide], rel=1e-5)


def test_packing_uses_fewer_graphs_and_answers_every_query(world):
    docs, _, chunks, *_ = world
    p, rep_p = extractor(world, pack_queries=True).extract(docs, chunks)
    s, rep_s = extractor(world, pack_queries=False).extract(docs, chunks)
    assert rep_p["counts"]["queries"] == rep_s["counts"]["queries"] == rep_s["counts"]["graphs"]
    assert rep_p["counts"]["graphs"] < rep_s["counts"]["graphs"]
    # one best tail per (head, relation) either way: the same questions answered (the tails may
    # differ, since a shared graph's answers are its own: the test above)
    key = lambda t: (t.evidence[0].doc_id, t.evidence[0].head_start, t.relation)    # noqa: E731
    assert len(p) == len(s) and sorted(map(key, p)) == sorted(map(key, s))


def slot0_log_probs(model, tok, chunk, root: int, head_length: int, relation: int) -> torch.Tensor:
    """log p [V] of leaf slot 0 for one (head, relation) query, computed here as MNM was trained: the
    chunk's roots, one [MASK] leaf on the head's first root under the relation, a graph of its own."""
    sp = special_ids(tok)
    g = LeafyChainGraph.from_roots(chunk.id, chunk.doc_id, chunk.input_ids, chunk.word_ids, R, K, sp["pad"])
    g.inject(root, [sp["mask"]], relation, head_length)
    batch = collate_graphs([g], layout="packed")
    with torch.no_grad():
        logits = model(batch, logits_at=(batch.leaf_slot >= 0) & batch.attention_mask).logits   # [1, V]
    return torch.log_softmax(logits.double(), dim=-1)[0]


def test_paper_mode_tail_is_the_likeliest_whole_word_top_k_token_of_slot_0(world):
    """Paper mode: per (head, relation) one single-token tail, the likeliest of the top-k tokens of
    leaf slot 0 that is a whole word (not special, not a word piece, not a stop word, not the head
    itself), its probability the confidence; a token naming a KG node is linked to it."""
    docs, tok, chunks, kg, schema, model = world
    # A model whose six slot-0 favourites are tokens paper mode must pass over (a stop word, a word
    # piece, a special token, punctuation, a digit, a single letter), with "aspirin" (a KG name)
    # raised a little: the tail of most heads, but never of aspirin itself.
    forbidden = [tok.token_to_id(w) for w in ("the", "##s", "[MASK]", ",", "2", "g")]
    model = copy.deepcopy(model)
    with torch.no_grad():
        model.mlm_head.bias[forbidden] += 1.0
        model.mlm_head.bias[tok.token_to_id("aspirin")] += 0.2
    biased = (docs, tok, chunks, kg, schema, model)

    def paper(top_k):      # one query per graph, as slot0_log_probs computes it
        return extractor(biased, tail_mode="paper", check_range=False, pack_queries=False,
                         top_k=top_k).extract(docs, chunks)

    # tails come from the top-k only: with k = 6 every candidate is forbidden, so no query has a tail
    none, rep = paper(6)
    assert none == [] and rep["counts"]["queries"] == rep["counts"]["head_relation_pairs"] > 5
    top_k = 30
    triples, rep = paper(top_k)
    assert len(triples) == rep["counts"]["head_relation_pairs"]   # each query has a whole word here
    assert {bool(t.tail_id) for t in triples} == {True, False}
    specials = set(special_ids(tok).values())
    names = Lexicon.from_kg(kg)
    by_chunk, by_doc = {c.id: c for c in chunks}, {d.id: d for d in docs}
    answered = set()
    for t in triples:
        (ev,) = t.evidence
        chunk = by_chunk[ev.chunk_id]
        roots = [i for i, (a, b) in enumerate(chunk.offsets) if 0 <= a < ev.head_end and b > ev.head_start]
        assert (chunk.id, roots[0], t.relation) not in answered           # one tail per query
        answered.add((chunk.id, roots[0], t.relation))
        head = by_doc[ev.doc_id].text[ev.head_start:ev.head_end].lower()

        def whole_word(i: int) -> bool:
            w = tok.id_to_token(i)
            return (i not in specials and not w.startswith("##") and len(w) >= 2
                    and any(c.isalpha() for c in w) and w.lower() not in STOP_WORDS and w.lower() != head
                    and not (t.head_id and t.head_id in names.lookup(w)))

        logp = slot0_log_probs(model, tok, chunk, roots[0], len(roots), kg.relation_map[t.relation])
        top = logp.topk(top_k).indices.tolist()
        assert set(top[:6]) == set(forbidden)
        admissible = [i for i in top if whole_word(i)]
        assert t.tail_source == "token"
        if t.tail_id:
            assert t.tail_name == kg.name(t.tail_id)
            token = [i for i in admissible if t.tail_id in names.lookup(tok.id_to_token(i))]
        else:
            assert not names.lookup(t.tail_name)
            token = [i for i in admissible if tok.id_to_token(i) == t.tail_name]
        query = (t.head_name, t.relation, t.tail_name)
        assert len(token) == 1, f"{query}: not an admissible top-{top_k} token of slot 0"
        i = token[0]
        assert logp[i] >= logp[admissible[0]] - 1e-5, query       # the likeliest (float32 ties)
        scale = ExtractConfig().predicted_tail_scale                  # a token tail is predicted
        assert t.confidence == pytest.approx(scale * math.exp(logp[i]), rel=1e-5)


def test_tails_the_text_does_not_name_get_a_lower_confidence_band(world):
    """Lexicon tails (spelled from leaf tokens) are scaled by extract.predicted_tail_scale; mention
    tails keep the model's confidence."""
    docs, _, chunks, *_ = world
    kw = {"tail_sources": ["mention", "lexicon"], "tails_per_query": 10, "check_range": False}
    full, _ = extractor(world, predicted_tail_scale=1.0, **kw).extract(docs, chunks)
    half, _ = extractor(world, predicted_tail_scale=0.5, **kw).extract(docs, chunks)
    assert {t.tail_source for t in full} == {"mention", "lexicon"}
    assert [triple_key(t) for t in full] == [triple_key(t) for t in half]
    for a, b in zip(full, half):
        expected = a.confidence if is_stated(a.tail_source) else 0.5 * a.confidence
        assert b.confidence == pytest.approx(expected, rel=1e-6), triple_key(a)


def one_event(head_id: str, head_name: str, tail_id: str, tail_name: str, tail_source: str,
              ev: Evidence) -> Triple:
    """A per-chunk triple (relation r; category c, the tail's only when it has an id) with its one
    evidence event, whose confidence it takes."""
    return Triple(head_id=head_id, head_name=head_name, head_category="c", relation="r", tail_id=tail_id,
                  tail_name=tail_name, tail_category="c" if tail_id else "", tail_source=tail_source,
                  confidence=ev.confidence, confidence_mean=ev.confidence, evidence_count=1,
                  documents=[ev.doc_id], evidence=[ev])


def test_merge_folds_duplicates_and_round_trips(tmp_path):
    def ev(doc, start, conf):
        return Evidence(doc_id=doc, chunk_id=doc + "#0", sentence="s", sentence_start=0, head_start=start,
                        head_end=start + 3, tail_start=-1, tail_end=-1, confidence=conf)

    a = one_event("X:1", "x", "Y:2", "y", "mention", ev("d1", 5, 0.4))
    b = one_event("X:1", "x", "Y:2", "y", "mention", ev("d2", 1, 0.8))
    c = one_event("", "Foo  bar", "", "baz", "phrase", ev("d1", 9, 0.5))
    d = one_event("", "foo bar", "", "BAZ", "phrase", ev("d3", 2, 0.3))
    merged = merge_triples([a, c, b, d])
    assert len(merged) == 2
    m = next(t for t in merged if t.head_id == "X:1")
    assert m.evidence_count == 2 and m.documents == ["d1", "d2"]
    assert m.confidence == 0.8 and m.confidence_mean == pytest.approx(0.6)
    n = next(t for t in merged if t.head_id == "")
    assert triple_key(n) == ("name:foo bar", "r", "name:baz") and n.evidence_count == 2
    write_triples(merged, tmp_path / "t.parquet")
    write_triples_jsonl(merged, tmp_path / "t.jsonl")
    assert [t.to_dict() for t in read_triples(tmp_path / "t.parquet")] == [t.to_dict() for t in merged]
    assert [t.to_dict() for t in read_triples_jsonl(tmp_path / "t.jsonl")] == [t.to_dict() for t in merged]


def test_a_tail_found_in_the_text_once_is_stated():
    """Merging keeps a stated tail source when any event found the tail in the text (the Biolink
    knowledge level is ``prediction`` either way: a model's decision, docs/EXPORT.md)."""
    def ev(doc, conf):
        return Evidence(doc_id=doc, chunk_id=doc + "#0", sentence="s", sentence_start=0, head_start=0,
                        head_end=3, tail_start=-1, tail_end=-1, confidence=conf)

    spelled = one_event("X:1", "x", "Y:2", "y", "lexicon", ev("d1", 0.4))
    named = one_event("X:1", "x", "Y:2", "y", "mention", ev("d2", 0.3))
    assert [is_stated(t.tail_source) for t in (spelled, named)] == [False, True]
    (merged,) = merge_triples([spelled, named])
    assert merged.tail_source == "mention" and is_stated(merged.tail_source)
    (alone,) = merge_triples([spelled])
    assert alone.tail_source == "lexicon" and not is_stated(alone.tail_source)


def test_helper_llm_heads_and_tails_are_grounded_and_scored(world, monkeypatch):
    """A stub OpenAI-compatible server on 127.0.0.1 proposes heads and tails; heads are grounded in
    the chunk and typed by the lexicon, tails are scored by the model (tail_source 'llm')."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from graphmert.extract.llm import HEADS_SYSTEM, LLMClient

    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    asked = {"heads": 0, "tails": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            heads = body["messages"][0]["content"] == HEADS_SYSTEM
            asked["heads" if heads else "tails"] += 1
            reply = '["aspirin", "not in the text"]' if heads else '["insulin resistance", "weight"]'
            out = json.dumps({"choices": [{"message": {"content": reply}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
    try:
        docs, tok, chunks, kg, schema, model = world
        unannotated = [type(c)(**{**c.__dict__, "mentions": []}) for c in chunks]
        cfg = build_section(ExtractConfig, {"beta": 0.0, "check_range": False, "tail_sources":
                                            ["mention", "llm"], "tails_per_query": 3}, "extract")
        llm = LLMClient(f"http://127.0.0.1:{server.server_address[1]}/v1", "stub", timeout=5.0)
        ex = Extractor(model, tok, kg, schema, kg.relation_map, cfg, R, K, llm=llm)
        triples, rep = ex.extract(docs, unannotated)
    finally:
        server.shutdown()
        server.server_close()
    assert asked["heads"] == len(chunks) and asked["tails"] > 0
    assert rep["counts"]["llm_heads_proposed"] >= 1 and rep["counts"]["llm_tails"] > 0
    llm_tails = [t for t in triples if t.tail_source == "llm"]
    assert llm_tails and all(t.tail_name in ("insulin resistance", "weight") for t in llm_tails)
    aspirin = [t for t in triples if t.head_name == "aspirin"]
    assert aspirin and all(t.head_id == "MESH:D001241" for t in aspirin)


def test_the_documents_gold_relations_change_no_output(world):
    """The documents handed to extraction carry their gold relations: the output is the same
    without them (no code reads them)."""
    from dataclasses import replace

    from graphmert.corpus.document import Relation

    docs, _, chunks, *_ = world
    gold = [replace(d, relations=[Relation("Association", "MESH:D008687", "MESH:D003924"),
                                        Relation("Bind", "NCBIGene:3630", "MESH:C563425")]) for d in docs]
    bare = [replace(d, relations=[]) for d in docs]
    a, rep_a = extractor(world).extract(gold, chunks)
    b, rep_b = extractor(world).extract(bare, chunks)
    assert a and [t.to_dict() for t in a] == [t.to_dict() for t in b] and rep_a == rep_b
