"""Candidate tails and their scores (graphmert.extract.tails), on hand-built cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from extract_helpers import make_chunks, make_docs, make_kg, make_tokenizer
from graphmert.corpus.tokenizer import special_ids
from graphmert.extract.tails import (FormTokenizer, LexiconIndex, TailCandidate, best_form_scores,
                                     mention_candidates, name_key, paper_tails, phrase_candidates,
                                     score_forms)


@pytest.fixture(scope="module")
def setup():
    docs = make_docs()
    tok = make_tokenizer(docs)
    return docs, tok, make_chunks(docs, tok), make_kg()


def test_score_forms_is_the_mean_token_log_probability():
    torch.manual_seed(0)
    logp = torch.log_softmax(torch.randn(3, 11), dim=-1)                  # t = 3 slots, V = 11
    forms = np.array([[1, 2, 3], [10, 0, 5], [4, 4, 4]])
    got = score_forms(logp, forms)
    for c, f in enumerate(forms):
        naive = sum(float(logp[k, f[k]]) for k in range(3)) / 3
        assert got[c].item() == pytest.approx(naive, abs=1e-6)


def test_best_form_scores_take_each_candidates_likeliest_form():
    """Against the naive maximum over each candidate's forms (one to three forms each)."""
    rng, _ = np.random.default_rng(0), torch.manual_seed(0)
    logp = torch.log_softmax(torch.randn(3, 11), dim=-1)                  # t = 3 slots, V = 11
    cands = [TailCandidate(key=f"c{i}", id="", name=f"c{i}", category="", source="lexicon",
                           forms=[tuple(rng.integers(0, 11, 3).tolist()) for _ in range(n)])
             for i, n in enumerate([1, 3, 2, 1, 2])]
    got = best_form_scores(logp, cands)
    assert got.shape == (5,) and best_form_scores(logp, []).shape == (0,)
    for c, g in zip(cands, got):
        naive = max(sum(float(logp[k, f[k]]) for k in range(3)) / 3 for f in c.forms)
        assert g.item() == pytest.approx(naive, abs=1e-6), c.forms


def test_hand_built_scores_rank_the_likelier_tail_first():
    """Two candidates of 2 tokens: slot probabilities make the second clearly likelier."""
    V = 6
    p = torch.full((2, V), 0.02)
    p[0, 1], p[1, 2] = 0.5, 0.5           # candidate A = (1, 2): 0.5, 0.5 → confidence 0.5
    p[0, 3], p[1, 4] = 0.4, 0.4           # candidate B = (3, 4): 0.4, 0.4 → confidence 0.4
    logp = torch.log(p / p.sum(-1, keepdim=True))
    s = score_forms(logp, np.array([[3, 4], [1, 2]]))
    assert s[1] > s[0]
    norm = 0.5 / float(p[0].sum())
    assert math.exp(s[1].item()) == pytest.approx(norm, rel=1e-5)


def test_mention_candidates_group_by_id_and_keep_surface_forms(setup):
    docs, tok, _, kg = setup
    forms = FormTokenizer(tok, 4, special_ids(tok)["unk"])
    cands = {c.key: c for c in mention_candidates(docs[0], kg, forms)}
    assert set(cands) == {"MESH:D008687", "MESH:D005947", "MESH:D003924", "MESH:D009765"}
    met = cands["MESH:D008687"]
    assert met.name == "metformin" and met.category == "biolink:ChemicalEntity"
    assert len(met.spans) == 2 and all(docs[0].text[a:b].lower() == "metformin" for a, b in met.spans)
    t2d = cands["MESH:D003924"]
    # "type 2 diabetes" (surface) and "type 2 diabetes mellitus" (KG name) are both forms when ≤ K
    decoded = {tok.decode(list(f)) for f in t2d.forms}
    assert "type 2 diabetes" in decoded
    # unlinked mentions are grouped by their normalised text
    b = {c.key: c for c in mention_candidates(docs[1], kg, forms)}
    assert name_key("pain") in b and b[name_key("pain")].id == ""


def test_forms_longer_than_k_are_dropped(setup):
    _, tok, _, _ = setup
    forms = FormTokenizer(tok, 2, special_ids(tok)["unk"])
    assert forms.forms(["type 2 diabetes"]) == []
    assert forms.too_long == 1
    assert len(forms.forms(["obesity"])) == 1


def test_the_form_cache_is_bounded_and_changes_no_answer(setup):
    _, tok, _, _ = setup
    unk = special_ids(tok)["unk"]
    small, ref = FormTokenizer(tok, 4, unk, cache_size=3), FormTokenizer(tok, 4, unk)
    batches = [["obesity", "insulin"], ["type 2 diabetes", "obesity", "pain"], ["insulin", "x y z w v"],
               ["obesity"], ["pain", "insulin", "obesity"]]
    for texts in batches:
        assert small.forms(texts) == ref.forms(texts)
        assert len(small.cache) <= 3
    assert len(ref.cache) == 5


def test_phrase_candidates_respect_stop_words_punctuation_and_entities(setup):
    docs, tok, chunks, _ = setup
    doc, chunk = docs[0], chunks[0]
    spans = [(m.start, m.end) for m in doc.mentions]
    cands = phrase_candidates(chunk, doc.text, 3, 4, {"in", "of", "the", "and"}, spans)
    names = {c.name.lower() for c in cands}
    assert "raises the risk" in names and "lowers" in names
    assert "type" not in names                    # cuts into the mention "type 2 diabetes"
    assert "lowers glucose" not in names          # overlaps the mention "glucose"
    assert "type 2 diabetes" in names             # the mention itself is fine
    assert not any(n.split()[0] in {"in", "of", "the"} or n.split()[-1] in {"in", "of", "the"}
                   for n in names)
    assert not any("." in n or "," in n for n in names)
    for c in cands:                               # spans point at the phrase text
        assert all(doc.text[a:b] == c.name or doc.text[a:b].lower() == c.name.lower() for a, b in c.spans)
        assert c.category == "" and c.id == "" and c.source == "phrase"


def test_lexicon_index_finds_names_whose_tokens_are_in_the_top_k(setup):
    _, tok, _, kg = setup
    forms = FormTokenizer(tok, 4, special_ids(tok)["unk"])
    index = LexiconIndex(kg, forms)
    obesity = forms.forms(["obesity"])[0]
    top = np.array([[obesity[0], 7, 8]]) if len(obesity) == 1 else None
    assert top is not None
    found = index.matches(top)
    assert [c.id for c in found] == ["MESH:D009765"] and found[0].source == "lexicon"
    assert index.matches(np.array([[7, 8, 9]])) == []


def test_paper_tails_keep_whole_word_tokens_only(setup):
    _, tok, _, _ = setup
    vocab = tok.get_vocab()
    V = tok.get_vocab_size()
    logp = torch.full((1, V), -20.0)
    sub = next(t for t in vocab if t.startswith("##"))
    for rank, t in enumerate(["obesity", sub, "the", "[MASK]", "metformin"]):
        logp[0, vocab[t]] = -1.0 - rank
    out = paper_tails(logp, 5, tok, {"the"}, list(special_ids(tok).values()))
    assert [c.name for c in out] == ["obesity", "metformin"]
    assert all(c.source == "token" for c in out)
