"""Lexicon, phrase matching rules, head linking onto chunk tokens, and the relation schema."""

from __future__ import annotations

import pickle
import re
import warnings

import pytest

from graphmert.corpus.chunk import Chunk, ChunkMention
from graphmert.kg.graph import Edge, KGError, Node, SeedKG
from graphmert.kg.lexicon import Lexicon, LexiconMatcher
from graphmert.kg.linking import lexicon_mentions, link_heads, segments
from graphmert.kg.schema import RelationSchema, mention_category

NODES = [
    Node("MESH:D003920", "Diabetes Mellitus", "biolink:Disease"),
    Node("MESH:D003924", "Type 2 Diabetes Mellitus", "biolink:Disease", ("T2DM",)),
    Node("MESH:D008687", "Metformin", "biolink:ChemicalEntity"),
    Node("DRUGBANK:DB00331", "metformin", "biolink:ChemicalEntity"),
    Node("NCBIGene:847", "CAT", "biolink:Gene"),
    Node("NCBIGene:7454", "WAS", "biolink:Gene"),
    Node("NCBIGene:2", "IL", "biolink:Gene"),
    Node("NCBIGene:3630", "INS", "biolink:Gene", ("insulin",)),
]
EDGES = [
    Edge("MESH:D008687", "treats", "MESH:D003924"),
    Edge("NCBIGene:3630", "associated_with", "MESH:D003924"),
    Edge("NCBIGene:847", "associated_with", "MESH:D003920"),
]


@pytest.fixture(scope="module")
def kg():
    return SeedKG(NODES, EDGES)


@pytest.fixture(scope="module")
def matcher(kg):
    return LexiconMatcher(Lexicon.from_kg(kg), min_chars=3)


def test_lexicon_lookup(kg):
    lex = Lexicon.from_kg(kg)
    assert lex.lookup("  METFORMIN ") == ["DRUGBANK:DB00331", "MESH:D008687"]
    assert lex.lookup("t2dm") == ["MESH:D003924"]
    assert lex.lookup("type 2   diabetes mellitus") == ["MESH:D003924"]
    assert lex.lookup("aspirin") == [] and "Insulin" in lex


def spans(matcher, text):
    return [(text[m.start:m.end], m.ids) for m in matcher.match(text)]


def test_longest_match_wins_and_no_overlap(matcher):
    text = "Patients with type 2 diabetes mellitus and diabetes mellitus took Metformin."
    assert spans(matcher, text) == [
        ("type 2 diabetes mellitus", ("MESH:D003924",)),
        ("diabetes mellitus", ("MESH:D003920",)),
        ("Metformin", ("DRUGBANK:DB00331", "MESH:D008687")),
    ]


def test_uppercase_symbols_match_case_sensitively_and_stop_words_never(matcher):
    assert spans(matcher, "The cat was fed insulin.") == [("insulin", ("NCBIGene:3630",))]
    assert spans(matcher, "CAT and WAS levels; IL was low") == [("CAT", ("NCBIGene:847",))]


def test_a_pickled_matcher_matches_the_same_and_unpickles_without_warnings(matcher):
    """Dask ships the matcher to its workers; scispaCy's tokenizer regexes, recompiled there, made
    Python's ``re`` warn (FutureWarning) in every worker's log."""
    text = "Patients with type 2 diabetes mellitus took Metformin; CAT was low."
    blob = pickle.dumps(matcher)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        copy = pickle.loads(blob)
    assert spans(copy, text) == spans(matcher, text) != []
    assert copy.num_patterns == matcher.num_patterns


def test_min_chars(kg):
    m = LexiconMatcher(Lexicon.from_kg(kg), min_chars=4)
    assert spans(m, "CAT and metformin") == [("metformin", ("DRUGBANK:DB00331", "MESH:D008687"))]


def _chunk(text: str, mentions=(), doc_id="d1", char_start=0) -> Chunk:
    """Tokens = words split into ≤4-character pieces (like word pieces), with document offsets."""
    ids, offsets, words = [2], [(-1, -1)], [-1]
    for w, m in enumerate(re.finditer(r"\w+|[^\w\s]", text)):
        for s in range(m.start(), m.end(), 4):
            ids.append(10 + len(ids))
            offsets.append((char_start + s, char_start + min(s + 4, m.end())))
            words.append(w)
    ids.append(3)
    offsets.append((-1, -1))
    words.append(-1)
    return Chunk(id=f"{doc_id}#0", doc_id=doc_id, input_ids=ids, offsets=offsets, word_ids=words,
                 mentions=list(mentions), text=text, char_start=char_start)


def test_lexicon_mentions_map_to_token_spans(kg, matcher):
    text = "Metformin lowers glucose in type 2 diabetes mellitus."
    c = _chunk(text, char_start=100)
    heads, how = link_heads(c, kg, matcher)
    assert how == "lexicon"
    got = [(m.text, m.token_start, m.token_end, m.char_start, m.char_end, m.ids, m.type) for m in heads]
    toks = [text[a - 100:b - 100] for a, b in c.offsets[1:-1]]
    assert toks[:3] == ["Metf", "ormi", "n"]
    assert got[0] == ("Metformin", 1, 4, 100, 109, ["DRUGBANK:DB00331", "MESH:D008687"],
                      "biolink:ChemicalEntity")
    m2 = heads[1]
    assert m2.text == "type 2 diabetes mellitus" and m2.ids == ["MESH:D003924"]
    covered = "".join(text[a - 100:b - 100] for a, b in c.offsets[m2.token_start:m2.token_end])
    assert covered == "type2diabetesmellitus"


def test_annotated_heads_keep_kg_ids_only(kg, matcher):
    ms = [ChunkMention(1, 4, 0, 9, "Metformin", "Chemical", ["MESH:D008687", "CHEBI:1"]),
          ChunkMention(5, 6, 17, 24, "glucose", "Chemical", ["MESH:D005947"])]
    heads, how = link_heads(_chunk("Metformin lowers glucose.", ms), kg, matcher)
    assert how == "annotated" and [(m.text, m.ids) for m in heads] == [("Metformin", ["MESH:D008687"])]


def test_concatenated_chunk_segments(kg, matcher):
    a, b = "Metformin works.", "CAT rises."
    ca, cb = _chunk(a, doc_id="A", char_start=50), _chunk(b, doc_id="B", char_start=7)
    c = Chunk(id="concat#0", doc_id="A", input_ids=ca.input_ids[:-1] + cb.input_ids[1:],
              offsets=ca.offsets[:-1] + cb.offsets[1:], word_ids=ca.word_ids[:-1] + cb.word_ids[1:],
              doc_ids=[""] + ["A"] * (len(ca.input_ids) - 2) + ["B"] * (len(cb.input_ids) - 2) + [""],
              text=a + " " + b, char_start=50)
    segs = segments(c)
    assert [(s[4], s[3]) for s in segs] == [("A", 0), ("B", len(a) + 1)]
    ms = lexicon_mentions(c, matcher, kg)
    assert [(m.text, m.doc_id, m.char_start) for m in ms] == [("Metformin", "A", 50), ("CAT", "B", 7)]
    assert c.input_ids[ms[1].token_start] == cb.input_ids[1]
    bad = Chunk(**{**c.__dict__, "text": c.text + " extra"})
    with pytest.raises(KGError, match="does not match its token offsets"):
        segments(bad)


def test_a_repeated_title_is_a_segment_of_its_own(kg, matcher):
    title, body = "Metformin trial.", "Later, CAT rises."          # the window starts at char 90
    ct, cb = _chunk(title, doc_id="d"), _chunk(body, doc_id="d", char_start=90)
    c = Chunk(id="d#1", doc_id="d", input_ids=ct.input_ids[:-1] + cb.input_ids[1:],
              offsets=ct.offsets[:-1] + cb.offsets[1:], word_ids=ct.word_ids[:-1] + cb.word_ids[1:],
              text=title + " " + body, char_start=0, title_roots=len(ct.input_ids) - 2)
    assert [(s[0], s[2], s[3]) for s in segments(c)] == [(1, 0, 0), (len(ct.input_ids) - 1, 90, len(title) + 1)]
    ms = lexicon_mentions(c, matcher, kg)
    assert [(m.text, m.char_start, m.token_start) for m in ms] == [
        ("Metformin", 0, 1), ("CAT", 97, c.title_roots + 1 + 3)]     # after "Late", "r", ","


def test_schema_learned_and_overridden(kg, tmp_path):
    s = RelationSchema.from_kg(kg)
    assert s.allows("treats", "biolink:ChemicalEntity", "biolink:Disease")
    assert not s.allows("treats", "biolink:Gene", "biolink:Disease")
    assert s.relations_for_subject("biolink:Gene") == ["associated_with"]
    assert s.range("associated_with") == {"biolink:Disease"}
    s2 = RelationSchema.from_kg(kg, {"treats": [["biolink:ChemicalEntity", "biolink:PhenotypicFeature"]]})
    assert s2.domain("treats") == {"biolink:ChemicalEntity"}
    assert s2.range("treats") == {"biolink:PhenotypicFeature"}
    assert RelationSchema.load(s2.save(tmp_path / "schema.json")) == s2
    with pytest.raises(KGError, match=r"kg.relation_schema.treats\[0\]: expected"):
        RelationSchema.from_kg(kg, {"treats": [["only one"]]})


def test_mention_category():
    assert mention_category("GeneOrGeneProduct") == "biolink:Gene"
    assert mention_category("Chemical") == "biolink:ChemicalEntity"
    assert mention_category("SpecificDisease") == "biolink:Disease"
    assert mention_category("biolink:Gene") == "biolink:Gene" and mention_category("Foo") == ""
