"""Is a pair's relation type a property of its document? Three measurements by document
cross-validation over BioRED train (docs/experiments/relation-typer.md, "The document's type").

    .venv/bin/python experiments/typing_document.py [--folds 5] [--salts cv cv2] [--weights 0 0.5 1 2 4]

1. **Homogeneity**, per category pair, from the gold alone: typing every pair of a document by the
   document's most frequent type for that category pair (an oracle that knows the document's
   answer) against typing it by the category pair's most frequent type over all of BioRED train.
2. **A document vote**: the shipped typer (window 2, C 1, ``typer_apart``, ``typer_shared``),
   fitted on the other folds, gives each gold pair log P(type | pair); the vote adds
   λ · log Q(type), where Q is the mean of P(type | pair') over the pairs pair' of the same document
   and category pair that share a sentence, each weighted by the typer's P(related) (the pairs an
   extractor would keep are not known here, so every candidate pair votes by its relatedness).
   λ = 0 is the typer alone.
3. **The document's words**: a logistic regression over tf-idf word 1–2-grams of the whole abstract,
   fitted on the other folds' documents, predicts each document's majority disease–variant type;
   every pair of the document gets it.

Nothing here reads BioRED dev.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _study import document_fold, print_table, require_shared, write_json  # noqa: E402
from relation_typer import gold_pairs  # noqa: E402  (experiments/relation_typer.py)

import graphmert.extract.relation_typer as relation_typer  # noqa: E402
from graphmert.corpus.nlp import TextAnalyzer  # noqa: E402
from graphmert.corpus.readers import read_corpus  # noqa: E402
from graphmert.kg.schema import mention_category  # noqa: E402

DISEASE_VARIANT = "biolink:Disease|biolink:SequenceVariant"


def short(cats: str) -> str:
    return cats.replace("biolink:", "").replace("ChemicalEntity", "Chemical").replace("SequenceVariant", "Variant")


def homogeneity(pairs: list[tuple]) -> list[dict]:
    """Per category pair: the share of gold pairs typed right by their document's majority type
    (ties to the smallest name) and by the category pair's (measurement 1)."""
    by_doc: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for d, _, _, gold, cats in pairs:
        by_doc[cats][d.id][gold] += 1
    rows = []
    for cats, docs in sorted(by_doc.items()):
        n = sum(sum(c.values()) for c in docs.values())
        overall = Counter()
        for c in docs.values():
            overall.update(c)
        if n >= 50:
            rows.append({"category pair": short(cats), "pairs": n, "documents": len(docs),
                         "document majority": round(sum(max(c.values()) for c in docs.values()) / n, 3),
                         "category-pair majority": round(max(overall.values()) / n, 3)})
    return rows


def fold_votes(fit: list, test_docs: list, weights: list[float]) -> tuple[list[tuple], dict[float, list[bool]]]:
    """The test documents' gold pairs and, per λ, whether the typer plus the document vote types
    each right (measurement 2)."""
    typer = relation_typer.RelationTyper(window=2, c=1.0, learn_apart=True, shared=True, related=True).fit(fit)
    types = typer.types
    test = gold_pairs(test_docs, shared_sentence=False)
    vote: dict[tuple[str, str], np.ndarray] = {}
    for d in test_docs:
        cat = {i: mention_category(m.type) for m in d.mentions for i in m.ids}
        items = [(d, a, b) for a, b in relation_typer._entity_pairs(d)]
        if not items:
            continue
        groups: dict[str, list] = defaultdict(list)
        for (_, a, b), r, lp in zip(items, typer.relation_probabilities(items), typer.log_probabilities(items)):
            if r is not None and lp is not None:
                groups["|".join(sorted((cat.get(a, ""), cat.get(b, ""))))].append(
                    (r, np.exp([lp[t] for t in types])))
        for cats, got in groups.items():
            w = np.array([r for r, _ in got])                                               # [pairs]
            vote[(d.id, cats)] = (w[:, None] * np.stack([p for _, p in got])).sum(0) / max(w.sum(), 1e-12)
    right: dict[float, list[bool]] = {lam: [] for lam in weights}
    for answer, (d, _, _, gold, cats) in zip(typer.log_probabilities([(d, h, t) for d, h, t, _, _ in test]), test):
        own = None if answer is None else np.array([answer[t] for t in types])             # [types]
        q = vote.get((d.id, cats))
        for lam in weights:
            if own is None:
                right[lam].append(False)
                continue
            score = own if q is None or lam == 0 else own + lam * np.log(q + 1e-12)
            right[lam].append(types[int(np.argmax(score))] == gold)
    return test, right


def document_words(train: list, folds: int, salt: str, c: float) -> float:
    """The share of disease–variant gold pairs typed right by a regression over their abstract's
    words that predicts the document's majority type (measurement 3)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    docs = []
    for d in train:
        cat = {i: mention_category(m.type) for m in d.mentions for i in m.ids}
        counts = Counter(r.type for r in d.relations
                         if "|".join(sorted((cat.get(r.head, ""), cat.get(r.tail, "")))) == DISEASE_VARIANT)
        if counts:
            docs.append((d, counts))
    hits = total = 0
    for k in range(folds):
        fit = [(d, n) for d, n in docs if document_fold(f"{salt}:{d.id}", folds) != k]
        test = [(d, n) for d, n in docs if document_fold(f"{salt}:{d.id}", folds) == k]
        vec = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
        x = vec.fit_transform([d.text for d, _ in fit])
        clf = LogisticRegression(C=c, max_iter=2000).fit(x, [min(n, key=lambda t: (-n[t], t)) for _, n in fit])
        for guess, (_, n) in zip(clf.predict(vec.transform([d.text for d, _ in test])), test):
            hits += n[guess]
            total += sum(n.values())
    return hits / total


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--salts", nargs="+", default=["cv", "cv2"], help="one cross-validation per fold salt")
    p.add_argument("--weights", nargs="+", type=float, default=[0.0, 0.5, 1.0, 2.0, 4.0], help="λ of the vote")
    p.add_argument("--out", type=Path)
    a = p.parse_args()
    train = list(TextAnalyzer(sentences=True, abbreviations=False).annotate(
        read_corpus([require_shared("biored", "Train.PubTator")])))
    table = homogeneity(gold_pairs(train, shared_sentence=False))
    print_table(table, "gold types: a document's majority against the category pair's (BioRED train)")
    votes = []
    for salt in a.salts:
        tests, right = [], {lam: [] for lam in a.weights}
        for k in range(a.folds):
            fit = [d for d in train if document_fold(f"{salt}:{d.id}", a.folds) != k]
            test, got = fold_votes(fit, [d for d in train if document_fold(f"{salt}:{d.id}", a.folds) == k], a.weights)
            tests += test
            for lam in a.weights:
                right[lam] += got[lam]
        cats = [c for *_, c in tests]
        for lam in a.weights:
            row = {"salt": salt, "λ": lam, "accuracy": round(float(np.mean(right[lam])), 4)}
            for c in sorted({c for c in cats if cats.count(c) >= 50}):
                row[short(c)] = round(float(np.mean([r for r, x in zip(right[lam], cats) if x == c])), 3)
            votes.append(row)
            print(row, flush=True)
    print_table(votes, f"type accuracy of the typer plus a document vote, {a.folds}-fold cross-validation")
    words = [{"salt": salt, "C": c, "disease–variant accuracy": round(document_words(train, a.folds, salt, c), 3)}
             for salt in a.salts for c in (0.3, 1.0, 3.0)]
    print_table(words, "disease–variant pairs typed by their abstract's words (the document's majority type)")
    write_json("typing_document", table + votes + words, a.out, folds=a.folds)


if __name__ == "__main__":
    main()
