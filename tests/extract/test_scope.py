"""Tail scopes (graphmert/extract/scope.py): the character ranges of each scope, the per-category-pair
choice, and the errors for misspelt keys and values (config and schema)."""

from __future__ import annotations

import pytest

from extract_helpers import make_kg, make_schema
from graphmert.config import ConfigError, build
from graphmert.corpus.chunk import Chunk
from graphmert.corpus.document import Document
from graphmert.extract.extractor import _spans_in_scope
from graphmert.extract.scope import TailScopes, within
from graphmert.extract.tails import TailCandidate
from graphmert.kg.graph import KGError

TEXT = "Obesity and glucose. Metformin was given to patients with type 2 diabetes. Weight fell."
DOC = Document("d", TEXT, title="Obesity and glucose.", sentences=[(0, 20), (21, 74), (75, 87)])


def chunk(start: int, end: int) -> Chunk:
    return Chunk(id="d#0", doc_id="d", input_ids=[], offsets=[], word_ids=[], text=TEXT[start:end],
                 char_start=start)


def test_each_scope_is_its_character_ranges():
    c = chunk(0, len(TEXT))
    head = TEXT.index("Metformin")
    assert TailScopes.ranges("sentence", DOC, c, head) == [(21, 74)]
    assert TailScopes.ranges("title", DOC, c, head) == [(21, 74), (0, 20)]
    assert TailScopes.ranges("chunk", DOC, chunk(21, 87), head) == [(21, 87)]
    assert TailScopes.ranges("document", DOC, c, head) is None
    untitled = Document("e", TEXT, sentences=DOC.sentences)
    assert TailScopes.ranges("title", untitled, c, head) == [(21, 74)]


def test_a_chunk_that_repeats_the_title_covers_the_title_and_its_window():
    # roots: [CLS] "Obesity and glucose." (4 tokens) "Weight fell." (3 tokens) [SEP]
    offsets = [(-1, -1), (0, 7), (8, 11), (12, 19), (19, 20), (75, 81), (82, 86), (86, 87), (-1, -1)]
    c = Chunk(id="d#1", doc_id="d", input_ids=[0] * 9, offsets=offsets, word_ids=[0] * 9,
              text=TEXT[:20] + " " + TEXT[75:], char_start=0, title_roots=4)
    assert TailScopes.ranges("chunk", DOC, c, 75) == [(0, 20), (75, 87)]
    metformin = TEXT.index("Metformin")
    assert not within((metformin, metformin + 9), TailScopes.ranges("chunk", DOC, c, 75))
    unsplit = Document("e", TEXT)                       # no sentences: the window is the sentence
    assert TailScopes.ranges("sentence", unsplit, c, 75) == [(75, 87)]
    assert TailScopes.ranges("sentence", unsplit, c, 8) == [(0, 20)]         # a head in the title


def test_within_needs_the_whole_span_inside_one_range():
    assert within((0, 7), [(21, 74), (0, 20)])
    assert not within((15, 25), [(21, 74), (0, 20)])         # straddles the two
    assert within((80, 86), None)


def test_the_scope_of_a_pair_follows_its_two_categories_in_either_order():
    s = TailScopes("sentence", {"Disease|SequenceVariant": "title", "biolink:Gene|biolink:Gene": "chunk"})
    assert s.name("biolink:SequenceVariant", "biolink:Disease") == "title"
    assert s.name("biolink:Disease", "biolink:SequenceVariant") == "title"
    assert s.name("biolink:Gene", "biolink:Gene") == "chunk"
    assert s.name("biolink:Gene", "biolink:Disease") == "sentence"


def test_the_paper_extractor_keeps_mention_spans_in_any_range():
    cand = TailCandidate(key="obesity", id="MESH:D009765", name="Obesity", category="biolink:Disease",
                         source="mention", forms=[], spans=[(0, 7), (40, 47)])
    assert _spans_in_scope(cand, [(21, 30), (0, 20)]) == [(0, 7)]
    assert _spans_in_scope(cand, [(21, 30)]) is None
    assert _spans_in_scope(cand, None) == [(0, 7), (40, 47)]


@pytest.mark.parametrize("scopes, message", [
    ({"Disease": "title"}, "not a category pair"),
    ({"Disease|Gene|Gene": "title"}, "not a category pair"),
    ({"Disease|": "title"}, "not a category pair"),
    ({"Disease|Gene": "paragraph"}, "'paragraph' is not allowed"),
])
def test_bad_category_scopes_are_config_errors(scopes, message):
    with pytest.raises(ConfigError, match=message):
        build({"extract": {"tail_scope_by_category": scopes}})


def test_a_category_the_schema_does_not_know_is_refused():
    schema = make_schema(make_kg())
    TailScopes("sentence", {"Disease|Gene": "title"}).check(schema)
    with pytest.raises(KGError, match=r"\['biolink:Sequencevariant'\] are not categories of the "
                                      r"relation schema"):
        TailScopes("sentence", {"Disease|Sequencevariant": "title"}).check(schema)


def test_evidence_quotes_the_sentences_from_the_head_through_the_tail():
    from graphmert.extract.heads import evidence_passage

    c = chunk(0, len(TEXT))
    head, tail = TEXT.index("Metformin"), TEXT.index("Weight")
    assert evidence_passage(DOC, head, TEXT.index("type 2"), c) == (21, TEXT[21:74])    # one sentence
    assert evidence_passage(DOC, head, tail, c) == (21, TEXT[21:87])                    # on through the tail's
    assert evidence_passage(DOC, tail, TEXT.index("Obesity"), c) == (0, TEXT)            # a tail before the head
    assert evidence_passage(DOC, head, -1, c) == (21, TEXT[21:74])                      # no tail mention
    assert evidence_passage(DOC, head, tail, chunk(0, 74)) == (21, TEXT[21:74])         # a tail outside the chunk
    unsplit = Document("e", TEXT)                       # no sentences: the chunk's text, as head_sentence
    assert evidence_passage(unsplit, head, tail, chunk(21, 87)) == (21, TEXT[21:87])
