"""The relation typer (graphmert/extract/relation_typer.py): its features keep the two entities apart,
it learns cue words on a corpus built to be learnable, it answers with normalised log-probabilities,
and bad input gets a clear error."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from graphmert.config import ExtractConfig
from graphmert.corpus.document import Document, Mention, Relation
from graphmert.extract.relation_typer import (ROLE_WEIGHT, RelationTyper, TyperError, _apart_row, _DocWords, _roles,
                                              _shared, pair_sentence_features)

CHEMS = ["metformin", "aspirin", "statin", "insulin", "cisplatin", "lithium", "heparin", "caffeine"]
DISEASES = ["diabetes", "obesity", "asthma", "anemia", "gout", "colitis", "psoriasis", "glaucoma"]


def make(doc_id: str, parts: list[tuple[str, str, str]], relations: list[tuple[str, str, str]]) -> Document:
    """A document of one sentence per (chemical, cue, disease): "<chemical> <cue> <disease>." with
    chemical and disease mentions whose ids are their names."""
    text, mentions, sentences = "", [], []
    for chem, cue, dis in parts:
        start = len(text)
        text += f"{chem} {cue} {dis}. "
        mentions.append(Mention(start, start + len(chem), chem, "Chemical", [f"C:{chem}"]))
        d0 = start + len(chem) + len(cue) + 2
        mentions.append(Mention(d0, d0 + len(dis), dis, "Disease", [f"D:{dis}"]))
        sentences.append((start, len(text) - 1))
    rels = [Relation(type=t, head=f"C:{c}", tail=f"D:{d}") for t, c, d in relations]
    return Document(doc_id, text.strip(), mentions=mentions, sentences=sentences, relations=rels)


def training_docs(n: int = 40) -> list[Document]:
    """'induces' states a positive correlation, 'relieves' a negative one, with varied entities."""
    docs = []
    for i in range(n):
        c, d = CHEMS[i % 6], DISEASES[(i * 5) % 6]        # the first six names only
        cue, kind = ("induces", "Positive_Correlation") if i % 2 else ("relieves", "Negative_Correlation")
        docs.append(make(f"t{i}", [(c, cue, d)], [(kind, c, d)]))
    return docs


def best(log_p: dict[str, float]) -> str:
    return max(log_p, key=log_p.get)


def test_the_typer_learns_cue_words_and_types_unseen_entities():
    typer = RelationTyper(window=2, c=3.0).fit(training_docs())
    assert typer.types == ["Negative_Correlation", "Positive_Correlation"]
    assert typer.fit_counts == {"documents": 40, "relations": 40, "relations_in_one_sentence": 40, "rows": 40}
    new = [make("n1", [("lithium", "induces", "psoriasis")], []),
           make("n2", [("heparin", "relieves", "glaucoma")], [])]
    out = typer.log_probabilities([(new[0], "C:lithium", "D:psoriasis"), (new[1], "D:glaucoma", "C:heparin")])
    assert [best(x) for x in out] == ["Positive_Correlation", "Negative_Correlation"]
    for x in out:
        assert math.fsum(math.exp(v) for v in x.values()) == pytest.approx(1.0)


def test_cue_words_attach_to_their_own_pair():
    """One sentence, two chemicals: the words between each chemical and the disease decide, which a
    bag of the sentence's words cannot."""
    typer = RelationTyper(window=0, c=3.0).fit(training_docs())
    text = "caffeine induces gout and heparin relieves anemia."
    men = [Mention(0, 8, "caffeine", "Chemical", ["C:caffeine"]), Mention(17, 21, "gout", "Disease", ["D:gout"]),
           Mention(26, 33, "heparin", "Chemical", ["C:heparin"]), Mention(43, 49, "anemia", "Disease", ["D:anemia"])]
    doc = Document("mixed", text, mentions=men, sentences=[(0, len(text))])
    first, second = typer.log_probabilities([(doc, "C:caffeine", "D:gout"), (doc, "C:heparin", "D:anemia")])
    assert best(first) == "Positive_Correlation" and best(second) == "Negative_Correlation"
    # the words between the pair's own mentions; the other pair's mentions as category tokens
    row = pair_sentence_features(doc, "C:heparin", "D:anemia", window=3)[0]
    assert row["b:@ChemicalEntity|@Disease:relieves"] == 1.0
    assert "b:@ChemicalEntity|@Disease:induces" not in row
    assert row["l@ChemicalEntity:@ChemicalEntity|@Disease:@Disease"] == 1.0          # gout, masked
    assert row["s:@ChemicalEntity|@Disease:induces"] == pytest.approx(0.3)          # the sentence bag


def test_sentences_add_evidence_and_unshared_or_absent_pairs_are_told_apart():
    typer = RelationTyper(window=2).fit(training_docs())
    twice = make("two", [("lithium", "induces", "psoriasis"), ("lithium", "induces", "psoriasis")], [])
    once = make("one", [("lithium", "induces", "psoriasis")], [])
    split = make("split", [("lithium", "and", "anemia"), ("heparin", "or", "psoriasis")], [])
    a, b, c, d = typer.log_probabilities([(twice, "C:lithium", "D:psoriasis"), (once, "C:lithium", "D:psoriasis"),
                                          (split, "C:lithium", "D:psoriasis"), (once, "C:lithium", "D:gout")])
    assert a["Positive_Correlation"] > b["Positive_Correlation"] > math.log(0.5)   # two sentences: surer
    assert c is not None and set(c) == set(typer.types)      # no shared sentence: the category pair alone
    assert d is None                                          # gout is not in the document
    assert len(pair_sentence_features(split, "C:lithium", "D:psoriasis", 3)) == 0


def apart(doc_id: str, chem: str, dis: str, cue: str, relation: str | None = None) -> Document:
    """"<chem> was given. Then <dis> <cue>.": the two entities share no sentence; the cue is in the
    disease's sentence."""
    first, second = f"{chem} was given.", f"Then {dis} {cue}."
    text = f"{first} {second}"
    d0 = len(first) + 6
    men = [Mention(0, len(chem), chem, "Chemical", [f"C:{chem}"]), Mention(d0, d0 + len(dis), dis, "Disease", [f"D:{dis}"])]
    rels = [Relation(type=relation, head=f"C:{chem}", tail=f"D:{dis}")] if relation else []
    return Document(doc_id, text, mentions=men, sentences=[(0, len(first)), (len(first) + 1, len(text))],
                    relations=rels)


def test_pairs_apart_are_typed_from_their_document_when_learnt():
    """Pairs that share no sentence: 'worsened' in the document means positive, 'resolved' negative.
    Learnt (learn_apart), unseen pairs are typed by the cue; otherwise every one gets the same type."""
    fit = training_docs()[:4] + [
        apart(f"a{i}", CHEMS[i % 6], DISEASES[(i * 5) % 6], *(("worsened", "Positive_Correlation") if i % 2
                                                               else ("resolved", "Negative_Correlation")))
        for i in range(40)]
    new = [apart("n1", "lithium", "psoriasis", "worsened"), apart("n2", "heparin", "glaucoma", "resolved")]
    items = [(new[0], "C:lithium", "D:psoriasis"), (new[1], "D:glaucoma", "C:heparin")]
    learnt = RelationTyper(window=2, c=3.0, learn_apart=True).fit(fit)
    assert learnt.fit_counts["apart_rows"] == 40 and learnt.fit_counts["rows"] == 44
    assert [best(x) for x in learnt.log_probabilities(items)] == ["Positive_Correlation", "Negative_Correlation"]
    plain = RelationTyper(window=2, c=3.0).fit(fit)
    assert plain.fit_counts["rows"] == 4 and "apart_rows" not in plain.fit_counts
    assert len({best(x) for x in plain.log_probabilities(items)}) == 1
    row = _apart_row(_DocWords(new[0]), "C:lithium", "D:psoriasis")
    assert row["apart=@ChemicalEntity|@Disease"] == 1.0
    assert row["d:@ChemicalEntity|@Disease:worsened"] == pytest.approx(0.3)
    assert row["am@ChemicalEntity:@ChemicalEntity|@Disease:lithium"] == 1.0
    assert _apart_row(_DocWords(new[0]), "C:lithium", "D:gout") is None
    assert "am@ChemicalEntity:@ChemicalEntity|@Disease:rs0" in _apart_row(
        _DocWords(apart("n3", "rs1234", "gout", "x")), "C:rs1234", "D:gout")                       # digit runs as 0
    assert RelationTyper.from_config(ExtractConfig(typer_apart=True)).learn_apart is True


def gene_sentence(doc_id: str, gene: str, cue: str, disease: str) -> Document:
    """"<gene> <cue> <disease>." with a gene and a disease mention, no relations."""
    d0 = len(gene) + len(cue) + 2
    text = f"{gene} {cue} {disease}."
    return Document(doc_id, text, sentences=[(0, len(text))],
                    mentions=[Mention(0, len(gene), gene, "GeneOrGeneProduct", [f"G:{gene}"]),
                              Mention(d0, d0 + len(disease), disease, "Disease", [f"D:{disease}"])])


def test_shared_cue_words_carry_to_a_category_pair_never_seen():
    """Cues learnt between chemicals and diseases type a gene–disease pair only with shared copies;
    the shared copy is made of the between and window words alone, keyed by '*'."""
    new = [gene_sentence("g1", "brca1", "induces", "psoriasis"), gene_sentence("g2", "tp53", "relieves", "glaucoma")]
    items = [(new[0], "G:brca1", "D:psoriasis"), (new[1], "D:glaucoma", "G:tp53")]
    shared = RelationTyper(window=2, c=3.0, shared=True).fit(training_docs())
    assert [best(x) for x in shared.log_probabilities(items)] == ["Positive_Correlation", "Negative_Correlation"]
    plain = RelationTyper(window=2, c=3.0).fit(training_docs())
    a, b = plain.log_probabilities(items)
    assert a == pytest.approx(b)                       # nothing it learnt reads a gene–disease sentence
    assert RelationTyper.from_config(ExtractConfig(typer_shared=True)).shared is True

    doc = make("w", [("aspirin", "strongly induces", "gout")], [])
    doc.text = "Here " + doc.text.replace(".", " in rats.")
    doc.mentions = [Mention(m.start + 5, m.end + 5, m.text, m.type, m.ids) for m in doc.mentions]
    doc.sentences = [(0, len(doc.text))]
    row = pair_sentence_features(doc, "C:aspirin", "D:gout", 2)[0]
    copies = {k: v for k, v in _shared(row).items() if k not in row}
    assert copies == {"b:*:strongly": 1.0, "b:*:induces": 1.0, "bb:*:strongly_induces": 1.0,
                      "l:*:here": 1.0, "r:*:in": 1.0, "r:*:rats": 1.0}
    assert _shared(row) - Counter(copies) == row       # the pair's own features are kept


def role_document(doc_id: str, chem: str, dis: str, role: str, kind: str | None = None) -> Document:
    """Two sentences: the chemical's role elsewhere ("<chem>-induced stress." or "treatment with
    <chem>."), then "<chem> and <dis> were studied." , which says nothing of the pair's type."""
    first = f"{chem}-induced stress. " if role == "induced" else f"treatment with {chem}. "
    c0 = 0 if role == "induced" else len("treatment with ")
    second = f"{chem} and {dis} were studied."
    s1 = len(first)
    mentions = [Mention(c0, c0 + len(chem), chem, "Chemical", [f"C:{chem}"]),
                Mention(s1, s1 + len(chem), chem, "Chemical", [f"C:{chem}"]),
                Mention(s1 + len(chem) + 5, s1 + len(chem) + 5 + len(dis), dis, "Disease", [f"D:{dis}"])]
    rels = [Relation(type=kind, head=f"C:{chem}", tail=f"D:{dis}")] if kind else []
    return Document(doc_id, first + second, mentions=mentions, sentences=[(0, s1 - 1), (s1, len(first + second))],
                    relations=rels)


def test_entity_roles_type_a_pair_from_what_the_abstract_says_of_its_entities_elsewhere():
    """The pair's own sentence is neutral; only the chemical's role in another sentence tells an
    inducer from a treatment. Without roles the two unseen pairs get the same distribution."""
    docs = [role_document(f"r{i}", CHEMS[i % 6], DISEASES[(i * 5) % 6], role, kind)
            for i in range(40) for role, kind in
            [("induced", "Positive_Correlation") if i % 2 else ("with", "Negative_Correlation")]]
    new = [role_document("n1", "caffeine", "psoriasis", "induced"), role_document("n2", "heparin", "glaucoma", "with")]
    items = [(new[0], "C:caffeine", "D:psoriasis"), (new[1], "D:glaucoma", "C:heparin")]      # unseen names
    roles = RelationTyper(window=2, c=3.0, roles=True).fit(docs)
    assert [best(x) for x in roles.log_probabilities(items)] == ["Positive_Correlation", "Negative_Correlation"]
    a, b = RelationTyper(window=2, c=3.0).fit(docs).log_probabilities(items)
    assert a == pytest.approx(b)
    assert RelationTyper.from_config(ExtractConfig(typer_roles=True)).roles is True
    pair = "@ChemicalEntity|@Disease"
    assert _roles(new[0], "C:caffeine", "D:psoriasis", pair) == {
        f"ro@ChemicalEntity:{pair}:induced": ROLE_WEIGHT,      # attached after "caffeine-"
        f"ro@ChemicalEntity:{pair}:stress": ROLE_WEIGHT,       # the word before its second mention
        f"ro@ChemicalEntity:{pair}:and": ROLE_WEIGHT,          # attached after that one
        f"ro@Disease:{pair}:and": ROLE_WEIGHT, f"ro@Disease:{pair}:were": ROLE_WEIGHT}
    assert _roles(new[1], "C:heparin", "D:glaucoma", pair)[f"ro@ChemicalEntity:{pair}:with"] == ROLE_WEIGHT


def test_the_typer_learns_which_pairs_the_text_relates():
    """'induces' relates its pair; 'and ... were measured' does not. Related is the noisy-OR over the
    pair's sentences; a pair sharing no sentence has no answer."""
    def measured(d: Document, c: str, dis: str) -> Document:
        """``d`` plus the sentence "<c> and <dis> were measured."."""
        start = len(d.text) + 1
        d.text += f" {c} and {dis} were measured."
        d.mentions += [Mention(start, start + len(c), c, "Chemical", [f"C:{c}"]),
                       Mention(start + len(c) + 5, start + len(c) + 5 + len(dis), dis, "Disease", [f"D:{dis}"])]
        d.sentences.append((start, len(d.text)))
        return d

    docs = [measured(d, CHEMS[(i + 3) % 6], DISEASES[(i + 1) % 6]) for i, d in enumerate(training_docs())]
    typer = RelationTyper(window=2, related=True).fit(docs)
    assert typer.fit_counts["pair_rows"] == 80 and typer.fit_counts["related_pair_rows"] == 40
    new = measured(make("n", [("lithium", "induces", "psoriasis")], []), "heparin", "glaucoma")
    twice = make("n2", [("lithium", "induces", "psoriasis"), ("lithium", "induces", "psoriasis")], [])
    p = typer.relation_probabilities([(new, "C:lithium", "D:psoriasis"), (new, "D:glaucoma", "C:heparin"),
                                      (twice, "C:lithium", "D:psoriasis"), (new, "C:lithium", "D:glaucoma")])
    assert p[0] > 0.5 > p[1] and p[2] == pytest.approx(1 - (1 - p[0]) ** 2) and p[3] is None


def test_bad_input_gets_a_clear_error():
    one_type = [make(f"p{i}", [("aspirin", "induces", "gout")], [("Positive_Correlation", "aspirin", "gout")])
                for i in range(3)]
    with pytest.raises(TyperError, match=r"my files: the typer needs typed relations of at least two types"):
        RelationTyper().fit(one_type, where="my files")
    no_sentences = make("nosent", [("aspirin", "induces", "gout")], [("Positive_Correlation", "aspirin", "gout")])
    no_sentences.sentences = []
    with pytest.raises(TyperError, match="document nosent has relations but no sentence spans"):
        RelationTyper().fit([no_sentences])
    with pytest.raises(TyperError, match="before it was fitted"):
        RelationTyper().log_probabilities([])
    with pytest.raises(TyperError, match=r"my files: the related-or-not regression needs related and "
                                         r"unrelated pairs that share a sentence; found 40 related of 40"):
        RelationTyper(related=True).fit(training_docs(), where="my files")   # every such pair is related
    with pytest.raises(TyperError, match=r"fitted without its related-or-not regression"):
        RelationTyper().fit(training_docs()).relation_probabilities([])


def test_the_extract_section_chooses_the_typer():
    assert RelationTyper.from_config(ExtractConfig(typer_window=2, typer_c=0.5)) == RelationTyper(window=2, c=0.5)
    assert RelationTyper.from_config(ExtractConfig(typer_min_relation=0.3)).related is True


def reference_features(doc: Document, head: str, tail: str, window: int) -> list[Counter]:
    """pair_sentence_features as first written: every sentence scanned and every span's words read
    afresh for each pair (the module's _words is the reference for the words of one span)."""
    from graphmert.extract.relation_typer import SENTENCE_WEIGHT, _ATTACHED, _WORD, _token, _words

    mentions = sorted(doc.mentions, key=lambda m: (m.start, m.end))
    rows = []
    for s0, s1 in doc.sentences:
        xs = [m for m in mentions if head in m.ids and s0 <= m.start and m.end <= s1]
        ys = [m for m in mentions if tail in m.ids and s0 <= m.start and m.end <= s1]
        if not (xs and ys):
            continue
        x, y = min(((x, y) for x in xs for y in ys), key=lambda p: (abs(p[0].start - p[1].start), p[0].start,
                                                                    p[1].start))
        a, b = (x, y) if (x.start, x.end) <= (y.start, y.end) else (y, x)
        ta, tb = _token(a), _token(b)
        pair = "|".join(sorted((ta, tb)))
        f = Counter({f"pair={pair}": 1.0, f"order={ta}<{tb}": 1.0})
        between = _words(doc, a.end, b.start, mentions)
        f.update(f"b:{pair}:{w}" for w in between)
        f.update(f"bb:{pair}:{w1}_{w2}" for w1, w2 in zip(between, between[1:]))
        f.update(f"l{ta}:{pair}:{w}" for w in (_words(doc, s0, a.start, mentions)[-window:] if window else []))
        f.update(f"r{tb}:{pair}:{w}" for w in _words(doc, b.end, s1, mentions)[:window])
        for m, t in ((a, ta), (b, tb)):
            f.update(f"m{t}:{w}" for w in _WORD.findall(m.text.lower()))
            if attached := _ATTACHED.match(doc.text[m.end:m.end + 16].lower()):
                f[f"after{t}:{attached.group(1)}"] += 1.0
        f = Counter({k: float(v) for k, v in f.items()})
        f["distance"] = min(len(between), 30) / 30.0
        for w in set(_words(doc, s0, s1, mentions)):
            f[f"s:{pair}:{w}"] += SENTENCE_WEIGHT
        rows.append(f)
    return rows


def tangled_doc() -> Document:
    """Three sentences; an entity named twice in one sentence, a mention with two ids, a mention
    nested in another, one that crosses a sentence end, and mentions listed out of text order."""
    text = ("IL-6 and TNF raise CRP in IL-6-driven colitis. "
            "Aspirin lowered IL-6, not TNF receptor levels, in colitis mice. "
            "No other finding.")
    def at(word, nth=0, ids=(), kind="Gene"):
        start = -1
        for _ in range(nth + 1):
            start = text.index(word, start + 1)
        return Mention(start, start + len(word), word, kind, list(ids))
    s1 = text.index("Aspirin")
    s2 = text.index("No other")
    mentions = [at("colitis", 1, ["D:colitis"], "Disease"), at("IL-6", 0, ["G:il6"]), at("TNF", 0, ["G:tnf"]),
                at("CRP", 0, ["G:crp", "G:crp2"]), at("IL-6", 1, ["G:il6"]), at("colitis", 0, ["D:colitis"], "Disease"),
                at("IL-6-driven colitis", 0, ["D:il6colitis"], "Disease"), at("Aspirin", 0, ["C:aspirin"], "Chemical"),
                at("IL-6", 2, ["G:il6"]), at("TNF receptor", 0, ["G:tnfr"]), at("TNF", 1, ["G:tnf"]),
                Mention(s2 - 6, s2 + 2, "e. No", "Gene", ["G:cross"])]
    return Document("tangled", text, mentions=mentions, sentences=[(0, s1 - 1), (s1, s2 - 1), (s2, len(text))])


def test_pair_features_with_shared_lookups_equal_the_per_pair_reference():
    doc = tangled_doc()
    ids = sorted({i for m in doc.mentions for i in m.ids})
    words = _DocWords(doc)
    asked = 0
    for head in ids:
        for tail in ids:
            for window in (0, 2):
                want = reference_features(doc, head, tail, window)
                assert pair_sentence_features(doc, head, tail, window, words=words) == want, (head, tail, window)
                assert pair_sentence_features(doc, head, tail, window) == want
                asked += bool(want)
    assert asked > 20                                           # most pairs share a sentence


@pytest.mark.parametrize("shared,roles", [(False, False), (True, False), (False, True), (True, True)])
def test_one_cache_over_calls_reads_each_pair_once_and_answers_as_fresh_calls(shared, roles):
    """An extraction asks the relatedness of its candidate pairs and then the types of those it keeps,
    with one cache: the answers equal calls without it, each pair's rows are built once (the cache
    holds them), and typing (its shared copies, its role words) leaves those rows as they were."""
    docs = [role_document(f"r{i}", CHEMS[i % 6], DISEASES[(i * 5) % 6], role, kind) for i in range(40)
            for role, kind in [("induced", "Positive_Correlation") if i % 2 else ("with", "Negative_Correlation")]]
    docs += [make(f"u{i}", [(CHEMS[i % 6], "induces", DISEASES[i % 6]), (CHEMS[(i + 1) % 6], "and", DISEASES[i % 6])],
                  [("Positive_Correlation", CHEMS[i % 6], DISEASES[i % 6])]) for i in range(10)]   # unrelated pairs too
    typer = RelationTyper(window=2, c=3.0, related=True, shared=shared, roles=roles).fit(docs)
    doc = tangled_doc()
    ids = sorted({i for m in doc.mentions for i in m.ids})
    items = [(doc, a, b) for k, a in enumerate(ids) for b in ids[k + 1:]]
    cache: dict = {}
    assert typer.relatedness(items, cache=cache) == typer.relatedness(items)
    (words,) = cache.values()
    rows = {key: [Counter(r) for r in found] for key, found in words.pair_rows.items()}
    assert set(rows) == {(a, b, 2) for _, a, b in items}
    assert typer.log_probabilities(items, cache=cache) == typer.log_probabilities(items)
    assert typer.relation_probabilities(items, cache=cache) == typer.relation_probabilities(items)
    assert set(words.pair_rows) == set(rows)                                 # nothing read twice
    assert {key: found for key, found in words.pair_rows.items()} == rows    # nor changed
    assert all(words.pair_rows[(a, b, 2)] == reference_features(doc, a, b, 2) for _, a, b in items)


def test_the_typers_design_matrix_equals_the_vectorizers():
    """Each regression's design matrix is its own vectorizer's transform, and each regression has
    columns for its own rows' features only: the type rows' shared copies are no column of the
    related-or-not regression (whose weight L2 would keep at zero)."""
    docs = [make(f"r{i}", [(CHEMS[i % 6], "induces" if i % 2 else "relieves", DISEASES[(i * 5) % 6]),
                           (CHEMS[(i + 3) % 6], "and", DISEASES[(i + 1) % 6])],      # a pair left unrelated
                 [("Positive_Correlation" if i % 2 else "Negative_Correlation", CHEMS[i % 6], DISEASES[(i * 5) % 6])])
            for i in range(40)]
    typer = RelationTyper(window=2, c=3.0, related=True, shared=True).fit(docs)
    rows = [r for d in training_docs(6) for r in pair_sentence_features(d, *sorted({i for m in d.mentions
                                                                                    for i in m.ids}), 2)]
    rows.append(Counter({"never seen": 1.0, "distance": 0.5}))
    rows.append(Counter())
    for vec in (typer._vec, typer._vec_related):
        got, want = typer._design(rows, vec), vec.transform(rows)
        assert got.shape == want.shape and got.has_sorted_indices
        assert (got.indptr == want.indptr).all() and (got.indices == want.indices).all()
        assert (got.data == want.data).all()
    assert (typer._design(rows) != typer._design(rows, typer._vec)).nnz == 0           # the type one by default
    assert any(k.startswith("b:*:") for k in typer._vec.vocabulary_)                 # shared copies: type rows only
    assert not any(k.startswith("b:*:") for k in typer._vec_related.vocabulary_)


def reference_shared(row: Counter) -> Counter:
    """_shared as first written: every feature name split, the between and window words copied."""
    out = Counter(row)
    for key, value in row.items():
        group, _, rest = key.partition(":")
        if group in ("b", "bb") or group[:2] in ("l@", "r@"):
            out[f"{group if group in ('b', 'bb') else group[0]}:*:{rest.partition(':')[2]}"] += value
    return out


def test_shared_copies_equal_the_reference_on_every_row():
    from graphmert.extract.relation_typer import _shared

    doc = tangled_doc()
    ids = sorted({i for m in doc.mentions for i in m.ids})
    rows = [r for h in ids for t in ids for r in pair_sentence_features(doc, h, t, 2)]
    assert len(rows) > 20 and any(k.startswith("r@") for r in rows for k in r)
    for row in rows:
        assert _shared(row) == reference_shared(row)


def test_a_typer_without_its_type_regression_relates_pairs_as_the_whole_one_does():
    """type_regression=False (the lexical_document control's out-of-fold typers read relatedness
    only) fits the related-or-not regression alone: the same probabilities, the same counts of pairs
    apart, and a clear error when asked for types."""
    docs = [make(f"r{i}", [(CHEMS[i % 6], "induces" if i % 2 else "relieves", DISEASES[(i * 5) % 6]),
                           (CHEMS[(i + 3) % 6], "and", DISEASES[(i + 1) % 6])],
                 [("Positive_Correlation" if i % 2 else "Negative_Correlation", CHEMS[i % 6], DISEASES[(i * 5) % 6])])
            for i in range(40)]
    whole = RelationTyper(window=2, related=True, shared=True).fit(docs)
    alone = RelationTyper(window=2, related=True, shared=True, type_regression=False).fit(docs)
    new = make("n", [("lithium", "induces", "psoriasis"), ("heparin", "and", "glaucoma")], [])
    items = [(new, "C:lithium", "D:psoriasis"), (new, "C:heparin", "D:glaucoma"), (new, "C:lithium", "D:glaucoma")]
    assert alone.relatedness(items) == whole.relatedness(items)
    assert alone.apart == whole.apart and alone.fit_counts["pair_rows"] == whole.fit_counts["pair_rows"]
    with pytest.raises(TyperError, match="without its type regression"):
        alone.log_probabilities(items)
    with pytest.raises(TyperError, match="needs its related-or-not one"):
        RelationTyper(type_regression=False).fit(docs)
