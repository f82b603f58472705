"""Each extraction filter drops exactly the triples it should, and counts them."""

from __future__ import annotations

import pytest

from graphmert.config import ExtractConfig, build_section
from graphmert.extract.filters import FILTERS, Pending, apply_filters
from graphmert.extract.triples import Triple
from graphmert.kg.schema import RelationSchema
from graphmert.kg.scoring import TfidfScorer

SCHEMA = RelationSchema({"treats": {("biolink:ChemicalEntity", "biolink:Disease")}})
CHUNKS = ["metformin treats type 2 diabetes in adults", "aspirin relieves headache quickly"]


def triple(tail="type 2 diabetes", tail_cat="biolink:Disease", conf=0.9, head="metformin"):
    return Triple(head_id="MESH:1", head_name=head, head_category="biolink:ChemicalEntity",
                  relation="treats", tail_id="", tail_name=tail, tail_category=tail_cat,
                  tail_source="mention", confidence=conf)


def cfg(**kw) -> ExtractConfig:
    return build_section(ExtractConfig, {"beta": 0.0, **kw}, "extract")


def run(pending, **kw):
    scorer = TfidfScorer().fit(CHUNKS)
    return apply_filters(pending, cfg(**kw), SCHEMA, scorer)


def test_nothing_dropped_when_everything_fits():
    kept, rep = run([Pending(triple=triple(), chunk_index=0, doc_text=CHUNKS[0])])
    assert len(kept) == 1 and rep.kept == 1 and sum(rep.dropped.values()) == 0
    assert set(rep.to_dict()["dropped"]) == set(FILTERS)


def test_confidence_threshold():
    p = [Pending(triple=triple(conf=0.2), chunk_index=0, doc_text=CHUNKS[0]),
         Pending(triple=triple(conf=0.6), chunk_index=0, doc_text=CHUNKS[0])]
    kept, rep = run(p, min_confidence=0.5)
    assert [t.confidence for t in kept] == [0.6]
    assert rep.dropped["confidence"] == 1


def test_range_type_and_untyped_tails():
    p = [Pending(triple=triple(tail="INS", tail_cat="biolink:Gene"), chunk_index=0, doc_text=CHUNKS[0]),
         Pending(triple=triple(tail="adults", tail_cat=""), chunk_index=0, doc_text=CHUNKS[0])]
    kept, rep = run(p)
    assert [t.tail_name for t in kept] == ["adults"]
    assert rep.dropped["range"] == 1 and rep.untyped_tails == 1
    kept, rep = run(p, check_range=False)
    assert len(kept) == 2 and rep.dropped["range"] == 0


def test_similarity_to_the_chunk():
    on_topic = Pending(triple=triple(), chunk_index=0, doc_text=CHUNKS[0])
    off_topic = Pending(triple=triple(tail="headache", head="aspirin"), chunk_index=0, doc_text=CHUNKS[0])
    kept, rep = run([on_topic, off_topic], beta=0.3)
    assert [t.tail_name for t in kept] == ["type 2 diabetes"]
    assert rep.dropped["similarity"] == 1
    # the same off-topic triple judged against its own chunk passes
    off_topic = Pending(triple=triple(tail="headache", head="aspirin"), chunk_index=1, doc_text=CHUNKS[1])
    kept, _ = run([off_topic], beta=0.3)
    assert len(kept) == 1


def test_similarity_needs_a_fitted_scorer():
    with pytest.raises(ValueError, match="similarity scorer"):
        apply_filters([Pending(triple=triple(), chunk_index=0, doc_text=CHUNKS[0])], cfg(beta=0.5), SCHEMA,
                      None)


def test_tail_must_appear_in_the_document():
    text = "Metformin is used in Type 2 Diabetes."
    p = [Pending(triple=triple(), chunk_index=0, doc_text=text),
         Pending(triple=triple(tail="obesity"), chunk_index=0, doc_text=text),
         Pending(triple=triple(tail="T2DM"), chunk_index=0, doc_text=text, tail_forms=("type 2 diabetes",))]
    kept, rep = run(p, require_tail_in_document=True)
    assert [t.tail_name for t in kept] == ["type 2 diabetes", "T2DM"]
    assert rep.dropped["tail_not_in_document"] == 1
    kept, _ = run(p)                               # off by default
    assert len(kept) == 3


def test_a_triple_is_counted_under_its_first_failing_filter():
    p = [Pending(triple=triple(tail="INS", tail_cat="biolink:Gene", conf=0.1), chunk_index=0,
                 doc_text=CHUNKS[0])]
    _, rep = run(p, min_confidence=0.5)
    assert rep.dropped["confidence"] == 1 and rep.dropped["range"] == 0
    assert rep.checked == 1 and rep.kept == 0
