"""The lexical_document control (graphmert/extract/lexical_document.py): its features are the counts,
distance and word score they claim to be, each fit document's word score comes from a typer that
never saw it, the regression learns a ranking built to be learnable, and misuse gets clear errors."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from graphmert.config import ConfigError, ExtractConfig, load_config
from graphmert.extract.lexical_document import (NUMERIC, CandidateFeatures, LexicalDocumentStack, StackError,
                                                candidate_features, fit_stack, out_of_fold_relatedness,
                                                stack_fold)
from graphmert.extract.relation_typer import RelationTyper
from graphmert.kg.graph import KGError

from test_controls import RelatednessTyper
from test_pairs import MET, OB, T2D, extractor, world  # noqa: F401  (the module-scoped fixture)


def questions(ex, w):
    plans = ex.questions(w["docs"], w["chunks"])
    return plans, [q for p in plans for q in p.queries]


def test_the_features_are_the_word_score_the_counts_and_the_distance(world):  # noqa: F811
    ex = extractor(world, model=None)
    ex.typer = RelatednessTyper({frozenset((MET, T2D)): 0.8})
    plans, queries = questions(ex, world)
    feats = candidate_features(plans, queries, ex.lexical_scores(plans, queries),
                               ex.answers(plans, queries, "nearest", pooled=False))
    assert len(feats) == len(queries) and NUMERIC[0] == "log_q"
    for f, q in zip(feats, queries):
        plan = plans[q.chunk]
        count = Counter(i for m in plan.doc.mentions for i in m.ids)          # by hand, per document
        roots = plan.entities.spans
        for row, c, cat in zip(f.numeric, q.candidates, f.category):
            want_q = 0.8 if {q.head, c} == {MET, T2D} else 0.5
            near = 1.0 / (1 + min(abs(a - q.root) for a, _, _ in roots[c]))
            assert row.tolist() == pytest.approx([np.log(want_q), np.log(1 + count[c]), np.log(1 + count[q.head]),
                                                  near, np.log(len(q.candidates))])
            cats = plan.entities.categories
            assert cat == "|".join(sorted((cats[q.head], cats[c])))
        assert f.relation == q.relation
    # docC: Metformin's candidates obesity (1 mention, nearer) and type 2 diabetes (3 mentions)
    doc_c = [(f, q) for f, q in zip(feats, queries) if plans[q.chunk].doc.id == "docC" and q.head == MET]
    f, q = doc_c[0]
    by = dict(zip(q.candidates, f.numeric))
    assert by[T2D][1] == pytest.approx(np.log(4)) and by[OB][1] == pytest.approx(np.log(2))
    assert by[OB][3] > by[T2D][3]


class FoldTyper:
    """Records the documents it was fitted on and refuses to score any of them."""

    fits: list[set[str]] = []

    def fit(self, docs, where=""):
        self.seen = {d.id for d in docs}
        FoldTyper.fits.append(self.seen)
        return self

    def relatedness(self, items, cache=None):
        assert not any(doc.id in self.seen for doc, _, _ in items), "scored a document it was fitted on"
        return [0.25 + 0.5 * (len(doc.id) % 2) for doc, _, _ in items]


def test_each_documents_word_score_comes_from_a_typer_that_never_saw_it(world):  # noqa: F811
    ex = extractor(world, model=None)
    plans, queries = questions(ex, world)
    FoldTyper.fits = []
    q = out_of_fold_relatedness(FoldTyper, world["docs"], plans, queries, folds=3)
    assert [len(x) for x in q] == [len(qu.candidates) for qu in queries]
    ids = {d.id for d in world["docs"]}
    # one typer per fold that holds a document, each fitted on the others
    folds = {stack_fold(i, 3) for i in ids}
    assert len(FoldTyper.fits) == len(folds) and all(s < ids for s in FoldTyper.fits)
    with pytest.raises(StackError, match="extract.stack_folds 1: cross-fitting needs at least 2 folds"):
        out_of_fold_relatedness(FoldTyper, world["docs"], plans, queries, folds=1)


def test_the_fold_is_a_salted_hash_of_the_id():
    import hashlib

    ids = [f"doc{i}" for i in range(200)]
    assert [stack_fold(i, 5) for i in ids] == [stack_fold(i, 5) for i in ids]
    assert set(stack_fold(i, 5) for i in ids) == set(range(5))
    plain = [int(hashlib.sha256(i.encode()).hexdigest(), 16) % 5 for i in ids]
    assert [stack_fold(i, 5) for i in ids] != plain                      # not the slice's hash


def synthetic(n: int, seed: int) -> tuple[list[CandidateFeatures], list[np.ndarray]]:
    """Questions of 4 candidates: the related one is the most mentioned; q is noise."""
    rng = np.random.default_rng(seed)
    feats, labels = [], []
    for _ in range(n):
        counts = rng.permutation(4) + 1.0
        numeric = np.stack([np.log(rng.uniform(0.1, 0.9, 4)), np.log1p(counts), np.full(4, np.log(3.0)),
                            rng.uniform(0.1, 1.0, 4), np.full(4, np.log(4.0))], axis=1)
        feats.append(CandidateFeatures(numeric=numeric, relation="Association", category=("A|B",) * 4))
        labels.append((counts == 4).astype(float))
    return feats, labels


def test_the_stack_learns_a_ranking_built_to_be_learnable():
    train, y = synthetic(200, 0)
    stack = LexicalDocumentStack(c=1.0).fit(train, y)
    assert stack.fit_counts == {"questions": 200, "candidates": 800, "related": 200}
    test, want = synthetic(100, 1)
    top = [int(np.argmax(p)) for p in stack.probabilities(test)]
    assert top == [int(np.argmax(w)) for w in want]
    # an unseen relation or category pair is all zeros in its one-hot block, not an error
    other = CandidateFeatures(numeric=test[0].numeric, relation="Bind", category=("C|D",) * 4)
    assert stack.design(other)[:, len(NUMERIC):].sum() == 0
    assert len(stack.probabilities([other])[0]) == 4


def test_the_stack_refuses_one_class_and_an_unfitted_call():
    feats, labels = synthetic(5, 0)
    with pytest.raises(StackError, match="needs related and unrelated candidates .* found 0 related of 20"):
        LexicalDocumentStack().fit(feats, [np.zeros(4)] * 5)
    with pytest.raises(StackError, match="asked before it was fitted"):
        LexicalDocumentStack().probabilities(feats)


def test_fit_stack_learns_from_the_typer_documents_gold_pairs(world):  # noqa: F811
    """Fitted on documents whose relations say Metformin treats type 2 diabetes, the control ranks
    that pair above Metformin–obesity in docC; with the gold saying obesity instead, the other way."""
    from graphmert.corpus.document import Relation

    class Flat:                                  # the same word score everywhere: the counts decide
        def fit(self, docs, where=""):
            return self

        def relatedness(self, items, cache=None):
            return [0.5] * len(items)

    for related, other in ((T2D, OB), (OB, T2D)):
        docs = [d.__class__(d.id, d.text, mentions=d.mentions, sentences=d.sentences,
                            relations=[Relation(type="treats", head=MET, tail=related)]) for d in world["docs"]]
        ex = extractor(world, model=None)
        stack = fit_stack(ex, docs, world["chunks"], Flat, folds=2, c=10.0)
        assert stack.fit_counts["documents"] == 3
        assert 0 < stack.fit_counts["related"] < stack.fit_counts["candidates"]
        ex.stack, ex.typer = stack, Flat()
        plans, queries = questions(ex, dict(world, docs=docs))
        asked = [(q, s) for q, s in zip(queries, ex.answers(plans, queries, "lexical_document"))
                 if plans[q.chunk].doc.id == "docC" and q.head == MET]
        assert asked
        for q, s in asked:
            by = dict(zip(q.candidates, s))
            assert by[related] > by[other]


def test_the_control_needs_its_regression_and_typer_files(world):  # noqa: F811
    ex = extractor(world, model=None)
    ex.typer = RelatednessTyper({})
    plans, queries = questions(ex, world)
    with pytest.raises(KGError, match="'lexical_document' needs its fitted regression"):
        ex.answers(plans, queries, "lexical_document")
    with pytest.raises(ConfigError, match="the 'lexical_document' control \\(extract.controls\\) needs "
                                          "extract.typer_files"):
        load_config(None, ["extract.controls=[lexical_document]"])
    with pytest.raises(ConfigError, match="stack_folds"):
        load_config(None, ["extract.stack_folds=1"])
    assert RelationTyper.from_config(ExtractConfig(controls=["lexical_document"])).related is True
