"""Dictionary flags (graphmert/ner/dictionary.py): the tags, their keys against the linker's, the
sets read from the vocabularies, persistence, the config's errors, and that the recognizer learns
from them what its words alone cannot tell it."""

from __future__ import annotations

import gzip
import random
from dataclasses import replace
from pathlib import Path

import pytest

from graphmert.config import NERConfig, load_config
from graphmert.config.ner import VocabularySource
from graphmert.config.options import ConfigError
from graphmert.corpus.document import Document, Mention
from graphmert.ner.dictionary import DictionaryFlags, build_dictionary_flags
from graphmert.ner.vocabularies.surface import fold_key, surface_key
from graphmert.ner.recognizer import Recognizer, RecognizerError, recognizer_nlp, tok2vec_config, train_recognizer
from test_linking_genes import HEADER, gene_row, write

ROOT = Path(__file__).resolve().parents[2]
CATS = ["biolink:ChemicalEntity"]


def flags(symbols=(), names=(), terms=()) -> DictionaryFlags:
    return DictionaryFlags(symbols=frozenset(symbols), names=frozenset(names), terms=frozenset(terms))


def tagged(d: DictionaryFlags, text: str) -> list[tuple[str, str]]:
    doc = recognizer_nlp(CATS).make_doc(text)
    return [(t.text, tag) for t, tag in zip(doc, d.tags(doc))]


def test_each_set_tags_its_longest_runs_b_then_i():
    d = flags(symbols={"tnfalpha", "tnf", "il6"}, names={"tumornecrosisfactor"},
              terms={"tumornecrosisfactor", "tumor", "breastcancer", "cancer"})
    assert tagged(d, "tumor necrosis factor (TNF-alpha) and IL-6 in breast cancer.") == [
        ("tumor", "GBTB"), ("necrosis", "GITI"), ("factor", "GITI"), ("(", "O"), ("TNF", "GB"), ("-", "GI"),
        ("alpha", "GI"), (")", "O"), ("and", "O"), ("IL", "GB"), ("-", "GI"), ("6", "GI"), ("in", "O"),
        ("breast", "TB"), ("cancer", "TI"), (".", "O")]


def test_symbols_need_more_than_lower_case_letters_and_full_names_do_not():
    d = flags(symbols={"was", "p53"}, names={"leptin"})
    assert tagged(d, "was WAS p53 leptin Leptin") == [("was", "O"), ("WAS", "GB"), ("p53", "GB"),
                                                       ("leptin", "GB"), ("Leptin", "GB")]


def test_a_run_neither_starts_nor_ends_with_punctuation_and_is_at_most_six_tokens():
    d = flags(terms={"a,b", "abcdefg", "abcdef"})
    assert [t for _, t in tagged(d, "a, b")] == ["TB", "TI", "TI"]
    assert [t for _, t in tagged(d, "a b c d e f g")] == ["TB", "TI", "TI", "TI", "TI", "TI", "O"]


@pytest.mark.parametrize("text", ["TNF-α receptor", "Parkinson's disease", "IL-1 beta/IL 6", "5-fluorouracil",
                                  "type II diabetes", "Na+/K+-ATPase", "β-catenin (CTNNB1)", "N,N-dimethyl"])
def test_a_runs_key_is_the_linkers_surface_key_of_its_text(text):
    """Every run that starts and ends with a word: its tokens' fold keys joined = ``surface_key``."""
    doc = recognizer_nlp(CATS).make_doc(text)
    words = [t for t in doc if not (t.is_punct or t.is_space) and fold_key(t.text)]
    assert len(words) >= 2
    for a in words:
        for b in words:
            if b.i >= a.i:
                run = doc[a.i:b.i + 1]
                assert "".join(fold_key(t.text) for t in run) == surface_key(run.text), run.text


def test_the_sets_come_from_the_gene_and_terms_sources(tmp_path):
    genes = write(tmp_path / "h.gene_info.gz", "\n".join([
        HEADER, gene_row(9606, 3952, "LEP", "OB|OBS", "leptin", other="obesity factor"),
        gene_row(9606, 9001, "DUPP", "DUPX", "a pseudogene", kind="pseudo"),
        gene_row(9606, 7124, "T", "-", "tumor necrosis factor")]) + "\n")
    terms = write(tmp_path / "mesh.tsv", "D009765\tObesity\tAdiposity|Fatness, Abdominal\n")
    sources = [VocabularySource(kind="gene_info", path=genes),
               VocabularySource(kind="homologene", path=str(tmp_path / "unread.tsv")),
               VocabularySource(kind="terms", path=terms)]
    d = build_dictionary_flags(sources, ["genes", "terms"])
    # "T" is one character; the pseudogene's names and every "other designation" are no flags
    assert d.symbols == {"lep", "ob", "obs"} and d.names == {"leptin", "tumornecrosisfactor"}
    assert d.terms == {"obesity", "adiposity", "abdominalfatness"}      # MeSH inversions read back
    assert build_dictionary_flags(sources, ["genes"]) == replace(d, terms=frozenset())
    assert build_dictionary_flags(sources, ["terms"]) == replace(d, symbols=frozenset(), names=frozenset())
    assert build_dictionary_flags(sources[1:2], ["genes", "terms"]) is None


def test_saved_flags_load_back_and_a_damaged_file_is_named(tmp_path):
    d = flags(symbols={"il6"}, names={"leptin"}, terms={"obesity"})
    d.save(tmp_path / "a.json.gz")
    d.save(tmp_path / "b.json.gz")
    assert DictionaryFlags.load(tmp_path / "a.json.gz") == d
    assert (tmp_path / "a.json.gz").read_bytes() == (tmp_path / "b.json.gz").read_bytes()
    (tmp_path / "bad.json.gz").write_bytes(gzip.compress(
        b'{"format": "graphmert-dictionary-flags", "format_version": 1, "symbols": []}'))
    with pytest.raises(ValueError, match=r"bad.json.gz: corrupt dictionary-flags file \(KeyError"):
        DictionaryFlags.load(tmp_path / "bad.json.gz")
    (tmp_path / "other.json.gz").write_bytes(gzip.compress(b'{"format": 1, "symbols": []}'))
    with pytest.raises(ValueError, match=r"other.json.gz: not a dictionary-flags file \(format "):
        DictionaryFlags.load(tmp_path / "other.json.gz")
    (tmp_path / "cut.json.gz").write_bytes((tmp_path / "a.json.gz").read_bytes()[:-9])
    with pytest.raises(ValueError, match=r"cut.json.gz: not a readable dictionary-flags file"):
        DictionaryFlags.load(tmp_path / "cut.json.gz")
    doc = recognizer_nlp(CATS).make_doc("two tokens")
    with pytest.raises(ValueError, match="dictionary flags: 1 tags for a doc of 2 tokens"):
        d.flag(doc, ["O"])


def test_the_config_refuses_flags_it_cannot_embed_or_make(tmp_path):
    terms = write(tmp_path / "mesh.tsv", "D009765\tObesity\t\n")
    vocab = f"ner.vocabularies=[{{kind: terms, path: '{terms}'}}]"

    def flags_of(*overrides: str) -> list[str]:
        return load_config(ROOT / "configs/demo.yaml", list(overrides)).ner.dictionary_flags

    assert flags_of(vocab, "ner.dictionary_flags=[terms]") == ["terms"] and flags_of(vocab) == []
    with pytest.raises(ConfigError, match="ner.dictionary_flags: needs ner.embed 'hash'"):
        flags_of(vocab, "ner.dictionary_flags=[terms]", "ner.embed=characters")
    with pytest.raises(ConfigError, match="ner.dictionary_flags: 'genes' needs a ner.vocabularies source of "
                                          "kind gene_info or gene_table"):
        flags_of(vocab, "ner.dictionary_flags=[terms, genes]")
    with pytest.raises(ConfigError, match=r"ner.dictionary_flags: 'mesh' is not a flag set; choose from \['genes'"):
        flags_of(vocab, "ner.dictionary_flags=[mesh]")


# ------------------------------------------------------------------------------ the recognizer
WORDS = ["".join(random.Random(i).choices("bcdfgklmnprstvz", k=3)) + "ol" + "".join(
    random.Random(1000 + i).choices("aeiou", k=1)) for i in range(400)]
KNOWN = set(WORDS[::2])                     # the dictionary's half; the other half are no names


def _word_doc(i: int, rng: random.Random) -> Document:
    """Two sentences of one template, one with a dictionary word (a chemical) and one without."""
    text, mentions = "", []
    for w in rng.sample([rng.choice(sorted(KNOWN)), rng.choice(sorted(set(WORDS) - KNOWN))], 2):
        text += f"{' ' if text else ''}Patients given "
        if w in KNOWN:
            mentions.append(Mention(len(text), len(text) + len(w), w, "Chemical", []))
        text += w + " improved."
    return Document(id=f"w{i}", text=text, mentions=mentions)


def _f1(rec: Recognizer, docs: list[Document]) -> float:
    found = {(d.id, m.start, m.end) for d in rec.recognize([replace(d, mentions=[]) for d in docs])
             for m in d.mentions}
    gold = {(d.id, m.start, m.end) for d in docs for m in d.mentions}
    return 2 * len(found & gold) / max(1, len(found) + len(gold))


def test_the_recognizer_learns_from_the_flags_what_the_words_cannot_say(tmp_path, monkeypatch):
    """A chemical is a word of the dictionary and nothing else tells it apart (same template, random
    words): with the flags the recognizer finds the chemicals of documents whose words it never saw;
    without them it cannot. The saved recognizer keeps its flags."""
    train_words, test_words = WORDS[:300], WORDS[300:]
    rng = random.Random(0)
    docs = [_word_doc(i, rng) for i in range(200)]
    train = [d for d in docs if all(m.text in train_words for m in d.mentions) and
             all(w not in d.text for w in test_words)][:90]
    test = [d for d in (_word_doc(1000 + i, random.Random(i)) for i in range(200))
            if all(w not in d.text for w in train_words)][:20]
    assert len(train) >= 60 and len(test) >= 10
    d = flags(terms=KNOWN)
    cfg = replace(NERConfig(), categories=CATS, epochs=6, patience=6, selection_fraction=0.2, width=32, seed=0)
    with_flags = replace(cfg, dictionary_flags=["terms"])
    assert tok2vec_config(with_flags)["embed"]["attrs"][-1] == "TAG"

    plain, _ = train_recognizer(train, cfg)
    monkeypatch.setattr("graphmert.ner.recognizer.build_dictionary_flags", lambda sources, sets: d)
    flagged, report = train_recognizer(train, with_flags)
    assert report["dictionary"] == {"gene_symbols": 0, "gene_names": 0, "terms": len(KNOWN)}
    assert _f1(flagged, test) > 0.9 > 0.7 > _f1(plain, test)

    flagged.save(tmp_path / "rec", report)
    back = Recognizer.load(tmp_path / "rec")
    assert back.dictionary == d
    docs = [replace(x, mentions=[]) for x in test]
    assert [x.mentions for x in back.recognize(docs)] == [x.mentions for x in flagged.recognize(docs)]
    (tmp_path / "rec" / "dictionary.json.gz").write_bytes(b"")
    with pytest.raises(RecognizerError, match="dictionary.json.gz"):
        Recognizer.load(tmp_path / "rec")


def test_flags_without_a_vocabulary_that_names_entities_are_refused():
    rng = random.Random(0)
    with pytest.raises(RecognizerError, match=r"ner.dictionary_flags: no ner.vocabularies source gives the "
                                              r"flag sets \['genes'\]"):
        train_recognizer([_word_doc(i, rng) for i in range(30)],
                         replace(NERConfig(), epochs=1, selection_fraction=0.2, categories=CATS,
                                 dictionary_flags=["genes"]))
