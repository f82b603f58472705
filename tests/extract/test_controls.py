"""The controls at their own settings and the supervised lexical baseline (issue #48): each control
selects at its own k and threshold; ``lexical`` ranks by the relation typer's relatedness, asked once
per document and pair; the hybrid pools the model with it as documented, and graphmert_model_only
stays the model alone; the relatedness of pairs that share no sentence is learnt; bad settings get
clear errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from graphmert.config import ConfigError, ExtractConfig, build
from graphmert.corpus.document import Document, Mention, Relation
from graphmert.extract.pairs import check_control_settings, control_settings
from graphmert.extract.relation_typer import RelationTyper
from graphmert.kg.graph import KGError

from test_pairs import ab, extractor, world  # noqa: F401  (the module-scoped fixture)
from test_relation_typer import CHEMS, DISEASES, make, training_docs


class RelatednessTyper:
    """q(related) = a fixed value per unordered pair of ids (0.5 for others); counts what it is asked."""

    def __init__(self, table: dict[frozenset, float]):
        self.table, self.asked = table, []

    def relatedness(self, items, cache=None):
        self.asked += [(d.id, frozenset((h, t))) for d, h, t in items]
        return [self.table.get(frozenset((h, t)), 0.5) for d, h, t in items]


def per_question(triples) -> dict[tuple, int]:
    out: dict[tuple, int] = {}
    for t in triples:
        key = (t.documents[0], t.head_id, t.relation)
        out[key] = out.get(key, 0) + 1
    return out


def test_each_control_selects_at_its_own_k_and_threshold(world):  # noqa: F811
    """salience at k = 1 keeps one tail per question while graphmert keeps up to 5; lexical at its
    own threshold drops the pairs below it; a control not named runs at graphmert's settings."""
    docs, chunks = ab(world)
    typer = RelatednessTyper({})
    settings = dict(tails_per_query=5, min_confidence=0.0,
                    control_tails_per_query={"salience": 1, "lexical": 2},
                    control_min_confidence={"lexical": 0.6}, controls=["salience", "lexical", "nearest"])
    ex = extractor(world, **settings)
    ex.typer = typer
    typer.table = {frozenset(("MESH:D008687", "MESH:D003924")): 0.9,         # metformin–T2D
                   frozenset(("MESH:D008687", "MESH:D009765")): 0.7,         # metformin–obesity
                   frozenset(("MESH:D005947", "MESH:D003924")): 0.59}        # glucose–T2D: below 0.6
    out, _ = ex.extract(docs, chunks, rankers=["model", "salience", "lexical", "nearest"])
    assert max(per_question(out["model"]).values()) == 2          # every candidate of a 2-tail question
    assert max(per_question(out["salience"]).values()) == 1
    assert max(per_question(out["nearest"]).values()) == 2        # graphmert's k = 5
    lexical = {(t.head_id, t.tail_id): t.confidence for t in out["lexical"]}
    assert all(v >= 0.6 for v in lexical.values())
    assert ("MESH:D008687", "MESH:D003924") in lexical and ("MESH:D005947", "MESH:D003924") not in lexical
    assert control_settings(ex.cfg, "lexical") == (2, 0.6)
    assert control_settings(ex.cfg, "nearest") == (5, 0.0)
    assert control_settings(ex.cfg, "model") == (5, 0.0)
    assert ex.cfg.tails_per_query == 5                              # the extractor's own settings stay


def test_the_same_control_moves_with_its_own_settings_only(world):  # noqa: F811
    """Raising salience's k or lexical's threshold changes that control's triples and nothing else."""
    docs, chunks = ab(world)

    def run(**own):
        ex = extractor(world, controls=["salience", "lexical"], **own)
        ex.typer = RelatednessTyper({frozenset(("MESH:D008687", "MESH:D003924")): 0.9})
        out, _ = ex.extract(docs, chunks, rankers=["model", "salience", "lexical"])
        return {k: sorted((t.head_id, t.relation, t.tail_id) for t in v) for k, v in out.items()}

    base = run()
    tight = run(control_tails_per_query={"salience": 1}, control_min_confidence={"lexical": 0.8})
    assert tight["model"] == base["model"]
    assert len(tight["salience"]) < len(base["salience"])
    assert tight["lexical"] == [("MESH:D008687", "treats", "MESH:D003924")] != base["lexical"]


def test_lexical_scores_are_the_typers_relatedness_asked_once_per_pair(world):  # noqa: F811
    docs, chunks = ab(world)
    ex = extractor(world, model=None)
    ex.typer = RelatednessTyper({frozenset(("MESH:D008687", "MESH:D003924")): 0.8})
    plans = ex.questions(docs, chunks)
    queries = [q for p in plans for q in p.queries]
    scores = ex.answers(plans, queries, "lexical")
    for q, s in zip(queries, scores):
        want = [0.8 if {q.head, c} == {"MESH:D008687", "MESH:D003924"} else 0.5 for c in q.candidates]
        assert s.tolist() == want
    asked = ex.typer.asked
    assert len(asked) == len(set(asked))                 # T2D–obesity is asked by both heads: once
    assert len(asked) < sum(len(q.candidates) for q in queries)
    ex.typer = None
    with pytest.raises(KGError, match="'lexical' control and extract.lexical_weight needs a fitted "
                                      "relation typer"):
        ex.answers(plans, queries, "lexical")


def test_the_hybrid_pools_model_and_lexical_log_linearly(world):  # noqa: F811
    """score = p^(1-w) q^w of the model's and the lexical answers; w = 1 is the lexical ranking;
    graphmert_model_only decides on the model's answers alone."""
    docs, chunks = ab(world)
    typer = RelatednessTyper({frozenset(("MESH:D008687", "MESH:D009765")): 0.95})
    plain, hybrid, lexical_only = (extractor(world, lexical_weight=w) for w in (0.0, 0.4, 1.0))
    for ex in (plain, hybrid, lexical_only):
        ex.typer = typer
    plans = plain.questions(docs, chunks)
    queries = [q for p in plans for q in p.queries]
    p = plain.answers(plans, queries, "model")
    q = plain.answers(plans, queries, "lexical")
    for got, pp, qq in zip(hybrid.answers(plans, queries, "model"), p, q):
        np.testing.assert_allclose(got, pp ** 0.6 * qq ** 0.4, rtol=1e-12)
    for got, qq in zip(lexical_only.answers(plans, queries, "model"), q):
        np.testing.assert_allclose(got, qq, rtol=1e-12)
    # controls are never pooled
    for got, qq in zip(hybrid.answers(plans, queries, "nearest"), plain.answers(plans, queries, "nearest")):
        assert got.tolist() == qq.tolist()
    out, _ = hybrid.extract(docs, chunks, rankers=["model"], untyped="alone")
    alone, _ = plain.extract(docs, chunks, rankers=["model"])
    assert [t.to_dict() for t in out["alone"]] == [t.to_dict() for t in alone["model"]]
    assert {t.confidence for t in out["model"]} != {t.confidence for t in alone["model"]}


def test_bad_control_settings_get_clear_errors():
    with pytest.raises(ConfigError, match=r"extract.control_tails_per_query.salience: 'salience' is not "
                                          r"one of extract.controls"):
        build({"extract": {"controls": ["random"], "control_tails_per_query": {"salience": 2}}})
    with pytest.raises(ConfigError, match=r"extract.control_tails_per_query.random: 0 is out of range"):
        build({"extract": {"controls": ["random"], "control_tails_per_query": {"random": 0}}})
    with pytest.raises(ConfigError, match=r"extract.control_min_confidence.lexical: 1.5 is out of range"):
        build({"extract": {"controls": ["lexical"], "control_min_confidence": {"lexical": 1.5},
                           "typer_files": ["x.pubtator"]}})
    with pytest.raises(ConfigError, match=r"the 'lexical' control \(extract.controls\) needs extract.typer_files"):
        build({"extract": {"controls": ["lexical"]}})
    with pytest.raises(ConfigError, match=r"extract.lexical_weight 0.5 needs extract.typer_files"):
        build({"extract": {"lexical_weight": 0.5}})
    for bad, match in ((dict(control_tails_per_query={"candidates": 2}), "'candidates' keeps every candidate"),
                       (dict(control_min_confidence={"salience": 0.2}), "a threshold needs a control whose "
                                                                        "score is a probability"),
                       (dict(control_tails_per_query={"model": 2}), "'model' is not a control")):
        cfg = dataclasses.replace(ExtractConfig(controls=["candidates", "salience", "model"]), **bad)
        with pytest.raises(KGError, match=match):
            check_control_settings(cfg)


def test_the_relatedness_of_pairs_apart_is_learnt_per_category_pair():
    """Pairs that share no sentence get the smoothed share of such pairs the fit documents relate:
    here the chemical–disease pairs across sentences are related 3 times in 4."""
    docs = []
    for i, d in enumerate(training_docs()):
        other_c, other_d = CHEMS[(i + 2) % 6], DISEASES[(i + 3) % 6]
        d2 = make("x", [(other_c, "and", other_d)], [])
        start = len(d.text) + 1
        d.text += " " + d2.text
        d.mentions += [Mention(m.start + start, m.end + start, m.text, m.type, m.ids) for m in d2.mentions]
        d.sentences += [(a + start, b + start) for a, b in d2.sentences]
        # the first sentence's chemical with the second's disease: related in 3 documents of 4
        if i % 4:
            d.relations.append(Relation(type="Association", head=d.mentions[0].ids[0], tail=f"D:{other_d}"))
        docs.append(d)
    typer = RelationTyper(related=True).fit(docs)
    # each document: two chemical–disease pairs apart (c1–d2, c2–d1), 30 of 80 related, and the
    # chemical–chemical and disease–disease pairs, never related
    assert typer.apart == {"@ChemicalEntity|@Disease": (30, 80), "@ChemicalEntity|@ChemicalEntity": (0, 40),
                           "@Disease|@Disease": (0, 40)}
    new = make("n", [("lithium", "induces", "psoriasis"), ("heparin", "and", "glaucoma")], [])
    apart, together = typer.relatedness([(new, "C:lithium", "D:glaucoma"), (new, "C:lithium", "D:psoriasis")])
    assert apart == pytest.approx(31 / 82)
    assert together == typer.relation_probabilities([(new, "C:lithium", "D:psoriasis")])[0]
    unknown = Document("u", "", mentions=[])
    assert typer.apart_probability(unknown, "A", "B") == pytest.approx(0.5)   # an unseen pair: (0+1)/(0+2)


def test_the_typer_reads_relatedness_when_the_lexical_control_or_hybrid_asks():
    assert RelationTyper.from_config(ExtractConfig(controls=["lexical"])).related is True
    assert RelationTyper.from_config(ExtractConfig(lexical_weight=0.3)).related is True
    assert RelationTyper.from_config(ExtractConfig()).related is False
