"""Merging per-chunk triples is what incremental updates rest on (pipelines/update.py): merging merged
records again with new ones equals merging everything at once, and dropping documents' evidence
equals never having merged it. Checked against the naive reference (merge the raw events at once)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmert.extract.triples import Evidence, Triple, drop_documents, is_stated, merge_triples

DOCS = ["d1", "d2", "d3", "d4"]
ENTITIES = [("X:1", "alpha"), ("X:2", "beta"), ("", "gamma chain")]


def _event(doc: str, start: int, head: int, tail: int, source: str, conf: float) -> Triple:
    """One raw per-chunk triple with one evidence (what extraction writes before merging)."""
    (hid, hname), (tid, tname) = ENTITIES[head], ENTITIES[tail]
    ev = Evidence(doc_id=doc, chunk_id=f"{doc}#0", sentence="s", sentence_start=0, head_start=start,
                  head_end=start + 3, confidence=conf)
    return Triple(head_id=hid, head_name=hname, head_category="c", relation="r", tail_id=tid,
                  tail_name=tname, tail_category="c", tail_source=source, confidence=conf,
                  confidence_mean=conf, evidence_count=1, documents=[doc], evidence=[ev])


events = st.lists(st.builds(_event, st.sampled_from(DOCS), st.integers(0, 50), st.integers(0, 2),
                            st.integers(0, 2), st.sampled_from(["mention", "lexicon"]),
                            st.floats(0.01, 1.0)), min_size=1, max_size=25)


def _view(triples: list[Triple]) -> list[dict]:
    """Records without the order of equal-key evidence (sorted by position, ties in input order)."""
    out = []
    for t in triples:
        d = t.to_dict()
        d["evidence"] = sorted(d["evidence"], key=lambda e: tuple(map(str, e.values())))
        out.append(d)
    return out


@settings(max_examples=60, deadline=None)
@given(events, st.integers(0, 25))
def test_merging_merged_records_with_new_ones_equals_merging_at_once(raw, cut):
    first, later = raw[:cut], raw[cut:]
    assert _view(merge_triples(merge_triples(first) + later)) == _view(merge_triples(raw))


@settings(max_examples=60, deadline=None)
@given(events, st.sets(st.sampled_from(DOCS)))
def test_dropping_documents_equals_never_merging_their_evidence(raw, gone):
    kept = [t for t in raw if t.evidence[0].doc_id not in gone]
    dropped = drop_documents(merge_triples(raw), gone)
    expected = merge_triples(kept)
    assert [(t.head_id, t.tail_id, t.tail_source, t.documents, t.evidence_count) for t in dropped] == \
        [(t.head_id, t.tail_id, t.tail_source, t.documents, t.evidence_count) for t in expected]
    for a, b in zip(dropped, expected):
        assert a.confidence == b.confidence and a.confidence_mean == pytest.approx(b.confidence_mean)
        assert all(e.doc_id not in gone for e in a.evidence)


def test_a_tail_source_follows_the_evidence_left():
    """A tail named in the text by one document only is predicted (not stated) again once that
    document's evidence is dropped."""
    named = _event("d1", 0, 0, 1, "mention", 0.3)
    spelled = _event("d2", 0, 0, 1, "lexicon", 0.6)
    (both,) = merge_triples([spelled, named])
    assert both.tail_source == "mention" and is_stated(both.tail_source)
    (left,) = drop_documents([both], {"d1"})
    assert left.tail_source == "lexicon" and not is_stated(left.tail_source)
    assert left.confidence == 0.6 and left.documents == ["d2"] and left.evidence_count == 1
    assert drop_documents([both], {"d1", "d2"}) == []


def test_a_systems_file_gives_each_system_back_and_is_no_triple_shard(tmp_path):
    """write_systems / read_system: each named system's triples come back as written, in order, from
    one file or several; a system a file lacks reads as none; read_triples refuses such a file (its
    rows would mix systems), and read_system a plain triple shard."""
    from graphmert.extract.triples import read_system, read_triples, write_systems, write_triples

    a = [_event("d1", 0, 0, 1, "mention", 0.9), _event("d2", 5, 1, 0, "mention", 0.4)]
    b = [_event("d3", 7, 2, 1, "lexicon", 0.2)]
    assert write_systems({"a": a, "b": b}, tmp_path / "one.parquet") == 3
    write_systems({"a": b, "empty": []}, tmp_path / "two.parquet")
    assert [t.to_dict() for t in read_system(tmp_path / "one.parquet", "b")] == [t.to_dict() for t in b]
    both = [tmp_path / "one.parquet", tmp_path / "two.parquet"]
    assert [t.to_dict() for t in read_system(both, "a")] == [t.to_dict() for t in a + b]
    assert list(read_system(both, "empty")) == [] == list(read_system(both, "c"))
    with pytest.raises(ValueError, match="one.parquet: not a triple shard; missing columns"):
        list(read_triples(tmp_path / "one.parquet"))
    write_triples(a, tmp_path / "plain.parquet")                # and the other way round
    with pytest.raises(ValueError, match=r"plain.parquet: not a systems shard; missing columns \['system', 'triple'\]"):
        list(read_system(tmp_path / "plain.parquet", "a"))


@settings(max_examples=30, deadline=None)
@given(events)
def test_to_dict_equals_asdict_and_owns_its_lists(raw):
    """``Triple.to_dict`` is ``dataclasses.asdict`` (keys, order, values), written out for speed;
    changing the dict's lists leaves the record as it was."""
    (t, *_) = merge_triples(raw)
    d = t.to_dict()
    assert d == dataclasses.asdict(t) and list(d) == list(dataclasses.asdict(t))
    assert [list(e) for e in d["evidence"]] == [[f.name for f in dataclasses.fields(Evidence)]] * len(t.evidence)
    d["documents"].append("elsewhere")
    d["evidence"][0]["confidence"] = -1.0
    d["evidence"].clear()
    assert "elsewhere" not in t.documents and t.evidence and t.evidence[0].confidence != -1.0
