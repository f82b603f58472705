"""What else could type a found pair? Three sources for the relation typer, by cross-validation over
BioRED train (docs/experiments/relation-typer.md, "Shared cue words, distant labels, word vectors").

    .venv/bin/python experiments/typer_features.py [--folds 5] [--salts cv cv2] \\
        [--variants shipped shared distant distant_treats vectors roles pooled_mean pooled_max] [--base shipped]
        [--related]

Every variant is the typer as ``configs/biored.yaml`` shipped it before this study (window 2, C 1,
``typer_apart``; the ``shipped`` row) plus one thing:

* ``shared``: the type rows' between and window words also keyed by ``*`` (``extract.typer_shared``);
* ``distant``: BC5CDR's documents outside BioRED (train and dev) added to each fold's fit, their
  ``CID`` relations typed Positive_Correlation;
* ``distant_treats``: that, plus each chemical–disease pair of those documents that is not CID and
  that the seed KG says ``treats`` or ``palliates``, typed Negative_Correlation;
* ``vectors``: skip-gram vectors (gensim, 50 dimensions) learnt on BioRED train's, the shared
  corpus's and ``pubmed_unlabeled``'s texts, never a BioRED dev document's; the mean vector of a row's
  between words and of its window words, keyed by the category pair, added to the row;
* ``roles`` (with ``shared``, as shipped since): ``extract.typer_roles``, what the whole abstract
  says of each entity of the pair wherever it is named (the word before each of its mentions and
  the word attached after it, keyed by its category and the category pair) in each of the pair's
  sentence rows;
* ``pooled_mean``, ``pooled_max`` (with ``shared``): one type row per pair, its sentence rows pooled
  (:class:`PooledTyper`), in the fit and when asked, instead of one row per sentence each carrying
  the pair's document-level label.

The BioRED-train documents are cut into ``--folds`` folds by a salted hash of their ids; each fold's
gold pairs (every pair, sharing a sentence or not) are typed by the variant fitted on the other folds.
The table gives the type accuracy per category pair, and per variant the pairs it types right and
the ``--base`` variant (the shipped typer unless given) wrong (``won``) and the other way (``lost``),
with a two-sided sign test.
``--related`` also scores the related-or-not regression with and without the shared copies. Nothing
here reads BioRED dev's relations.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import math
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _study import document_fold, print_table, require_shared, write_json  # noqa: E402
from relation_typer import gold_pairs  # noqa: E402  (experiments/relation_typer.py)

import graphmert.extract.relation_typer as relation_typer  # noqa: E402
from graphmert.corpus.document import Relation  # noqa: E402
from graphmert.corpus.nlp import TextAnalyzer  # noqa: E402
from graphmert.corpus.readers import read_corpus  # noqa: E402

VARIANTS = ("shipped", "shared", "distant", "distant_treats", "vectors", "roles", "pooled_mean", "pooled_max")
DIM = 50
_WORD = re.compile(r"[a-z0-9]+")


class PooledTyper(relation_typer.RelationTyper):
    """The typer with one type row per pair instead of one per sentence: its sentence rows pooled by
    ``pool`` (``mean``: each feature's mean over the sentences; ``max``: its largest value), so that
    a pair's document-level label is learnt from one row, as it is asked."""

    def __init__(self, *args, pool: str = "mean", **kw) -> None:
        super().__init__(*args, **kw)
        self.pool = pool

    def _type_rows(self, words, head, tail):
        rows = super()._type_rows(words, head, tail)
        if len(rows) < 2:
            return rows
        out = Counter()
        for r in rows:
            for k, v in r.items():
                out[k] = max(out[k], v) if self.pool == "max" else out[k] + v / len(rows)
        return [out]


def distant_documents(analyzer, biored_ids: set[str], treats: bool) -> list:
    """BC5CDR's documents outside BioRED, sentence-split, CID typed Positive_Correlation; with
    ``treats``, the seed KG's treats / palliates pairs among the rest typed Negative_Correlation."""
    files = [require_shared("bc5cdr", f"CDR_{s}Set.PubTator.txt") for s in ("Training", "Development", "Test")]
    known = _seed_treats() if treats else set()
    out = []
    for d in read_corpus(files):
        if d.id in biored_ids:
            continue
        cid = {frozenset((r.head, r.tail)) for r in d.relations}
        rels = [Relation(type="Positive_Correlation", head=r.head, tail=r.tail) for r in d.relations]
        chemicals = {i for m in d.mentions if m.type == "Chemical" for i in m.ids}
        diseases = {i for m in d.mentions if m.type == "Disease" for i in m.ids}
        rels += [Relation(type="Negative_Correlation", head=c, tail=x) for c in sorted(chemicals)
                 for x in sorted(diseases) if (c, x) in known and frozenset((c, x)) not in cid]
        out.append(replace(d, relations=rels))
    return list(analyzer.annotate(out))


def _seed_treats() -> set[tuple[str, str]]:
    path = require_shared("seed_kg_hetionet_disgenet_mesh", "edges_hetionet_mesh_harmonized.tsv.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return {(r["subject"], r["object"]) for r in csv.DictReader(f, delimiter="\t")
                if r["predicate"] in ("treats", "palliates")}


def word_vectors(train, dev_ids: set[str]) -> dict[str, np.ndarray]:
    """Unit skip-gram vectors of :data:`DIM` dimensions over the texts of ``train``, the shared corpus
    and pubmed_unlabeled, leaving out every document of ``dev_ids``."""
    from gensim.models import Word2Vec

    texts = [d.text for d in train]
    for path in (require_shared("biomed_abstracts_corpus", "abstracts.jsonl.gz"),
                 require_shared("pubmed_unlabeled", "texts.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                if r["doc_id"].removeprefix("PMID:") not in dev_ids:
                    texts.append(f"{r.get('title') or ''} {r.get('abstract') or ''}")
    start = time.monotonic()
    w2v = Word2Vec([_WORD.findall(t.lower()) for t in texts], vector_size=DIM, window=5, min_count=3,
                   sg=1, epochs=5, workers=2, seed=0)
    print(f"word vectors: {len(w2v.wv.index_to_key)} words from {len(texts)} texts in "
          f"{time.monotonic() - start:.0f} s", flush=True)
    return {w: w2v.wv[w] / (np.linalg.norm(w2v.wv[w]) + 1e-8) for w in w2v.wv.index_to_key}


def with_vectors(features, vectors: dict[str, np.ndarray]):
    """``pair_sentence_features`` whose rows also hold the mean vector of their between words
    (``vb``) and of their window words (``vw``), keyed by the category pair."""
    def rows(doc, head, tail, window, words=None):
        out = [Counter(r) for r in features(doc, head, tail, window, words=words)]   # words keeps the originals
        for row in out:
            pair = next(k.removeprefix("pair=") for k in row if k.startswith("pair="))
            sums = defaultdict(lambda: [np.zeros(DIM), 0.0])
            for key, value in list(row.items()):
                group, word = key.split(":", 1)[0], key.rsplit(":", 1)[-1]
                name = "vb" if group == "b" else "vw" if group[:2] in ("l@", "r@") else None
                if name and word in vectors:
                    sums[name][0] += value * vectors[word]
                    sums[name][1] += value
            for name, (total, n) in sums.items():
                row.update({f"{name}:{pair}:{i}": float(x) for i, x in enumerate(total / n)})
        return out
    return rows


def cross_validate(make, train, extra, folds: int, salt: str, features=None) -> list[bool]:
    """Per gold pair of ``train`` (in :func:`gold_pairs` order over folds): whether the typer
    ``make()`` fitted on the other folds plus ``extra`` types it right."""
    original = relation_typer.pair_sentence_features
    relation_typer.pair_sentence_features = features or original
    try:
        right = []
        for k in range(folds):
            fit = [d for d in train if document_fold(f"{salt}:{d.id}", folds) != k] + extra
            test = gold_pairs([d for d in train if document_fold(f"{salt}:{d.id}", folds) == k],
                              shared_sentence=False)
            answers = make().fit(fit).log_probabilities([(d, h, t) for d, h, t, _, _ in test])
            right += [a is not None and max(a, key=a.get) == gold for a, (*_, gold, _) in zip(answers, test)]
        return right
    finally:
        relation_typer.pair_sentence_features = original


def related_study(train, folds: int, salt: str) -> list[dict]:
    """The related-or-not regression with and without the shared copies in its rows: AUC, average
    precision and log loss over every pair of entities that share a sentence, each fold's pairs
    scored by the regression fitted on the other folds."""
    from sklearn.metrics import average_precision_score, log_loss, roc_auc_score

    original = relation_typer.pair_sentence_features
    shared = lambda doc, head, tail, window, words=None: [  # noqa: E731
        relation_typer._shared(r) for r in original(doc, head, tail, window, words=words)]
    rows = []
    for name, features in (("related, shipped", original), ("related, shared copies", shared)):
        relation_typer.pair_sentence_features = features
        try:
            y, p = [], []
            for k in range(folds):
                typer = relation_typer.RelationTyper(window=2, c=1.0, related=True).fit(
                    [d for d in train if document_fold(f"{salt}:{d.id}", folds) != k])
                test = [d for d in train if document_fold(f"{salt}:{d.id}", folds) == k]
                items = [(d, a, b) for d in test for a, b in relation_typer._entity_pairs(d)]
                gold = {(d.id, frozenset((r.head, r.tail))) for d in test for r in d.relations}
                p += typer.relation_probabilities(items)
                y += [(d.id, frozenset((a, b))) in gold for d, a, b in items]
        finally:
            relation_typer.pair_sentence_features = original
        p = np.clip(p, 1e-6, 1 - 1e-6)
        rows.append({"variant": name, "salt": salt, "pairs": len(y), "AUC": round(roc_auc_score(y, p), 4),
                     "average_precision": round(average_precision_score(y, p), 4),
                     "log_loss": round(log_loss(y, p), 4)})
    return rows


def sign_test(won: int, lost: int) -> float:
    """Two-sided exact sign test of ``won`` against ``lost`` discordant pairs."""
    n = won + lost
    tail = sum(math.comb(n, i) for i in range(min(won, lost) + 1)) / 2 ** n if n else 1.0
    return min(1.0, 2 * tail)


def row(variant: str, salt: str, right: list[bool], base: list[bool], cats: list[str]) -> dict:
    """One table row: accuracy overall and per category pair, and the paired comparison with the
    ``--base`` variant's answers on the same pairs."""
    out = {"variant": variant, "salt": salt, "pairs": len(right), "accuracy": round(sum(right) / len(right), 4)}
    for cat in sorted(set(cats)):
        hits = [r for r, c in zip(right, cats) if c == cat]
        if len(hits) >= 50:
            out[cat] = round(sum(hits) / len(hits), 3)
    won = sum(r and not s for r, s in zip(right, base))
    lost = sum(s and not r for r, s in zip(right, base))
    return {**out, "won": won, "lost": lost, "sign_p": round(sign_test(won, lost), 4)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--salts", nargs="+", default=["cv", "cv2"], help="one cross-validation per fold salt")
    p.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    p.add_argument("--base", choices=VARIANTS, default="shipped",
                   help="the variant each row's won / lost / sign test compares with")
    p.add_argument("--related", action="store_true", help="also the related-or-not regression with and "
                   "without the shared copies (first salt)")
    p.add_argument("--out", type=Path)
    a = p.parse_args()
    analyzer = TextAnalyzer(sentences=True, abbreviations=False)
    train = list(analyzer.annotate(read_corpus([require_shared("biored", "Train.PubTator")])))
    dev_ids = {d.id for d in read_corpus([require_shared("biored", "Dev.PubTator")])}
    biored_ids = dev_ids | {d.id for d in train}
    make = lambda **kw: (lambda: relation_typer.RelationTyper(window=2, c=1.0, learn_apart=True, **kw))  # noqa: E731
    setups = {"shipped": lambda: (make(), [], None),
              "shared": lambda: (make(shared=True), [], None),
              "distant": lambda: (make(), distant_documents(analyzer, biored_ids, treats=False), None),
              "distant_treats": lambda: (make(), distant_documents(analyzer, biored_ids, treats=True), None),
              "vectors": lambda: (make(), [], with_vectors(relation_typer.pair_sentence_features,
                                                             word_vectors(train, dev_ids))),
              "roles": lambda: (make(shared=True, roles=True), [], None),
              "pooled_mean": lambda: (lambda: PooledTyper(window=2, c=1.0, learn_apart=True, shared=True), [], None),
              "pooled_max": lambda: (lambda: PooledTyper(window=2, c=1.0, learn_apart=True, shared=True,
                                                         pool="max"), [], None)}
    built = {v: setups[v]() for v in {*a.variants, a.base}}      # (typer maker, extra documents, features)
    rows = []
    for salt in a.salts:
        cats = [c.replace("biolink:", "").replace("|", "–") for k in range(a.folds) for *_, c in
                gold_pairs([d for d in train if document_fold(f"{salt}:{d.id}", a.folds) == k], shared_sentence=False)]
        typer, extra, features = built[a.base]
        base = cross_validate(typer, train, extra, a.folds, salt, features)
        for variant in a.variants:
            typer, extra, features = built[variant]
            right = base if variant == a.base else cross_validate(typer, train, extra, a.folds, salt, features)
            rows.append(row(variant, salt, right, base, cats))
            print(rows[-1], flush=True)
    print_table(rows, f"type accuracy over BioRED train's gold pairs, {a.folds}-fold document cross-validation")
    if a.related:
        related = related_study(train, a.folds, a.salts[0])
        print_table(related, "the related-or-not regression over pairs that share a sentence")
        rows += related
    write_json("typer_features", rows, a.out, folds=a.folds)


if __name__ == "__main__":
    main()
