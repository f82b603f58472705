"""What could type BioRED pairs better than their category pair? Probes on a tuning run's model.

    .venv/bin/python benchmarks/typing_probe.py --config configs/biored.yaml --run-dir runs/biored-tune \
        'extract.paths=[../shared/datasets/biored/Train.PubTator]' extract.document_fraction=0.2 \
        'evaluate.gold=[../shared/datasets/biored/Train.PubTator]'

docs/EVALUATION.md finds that the model types a found pair no better than the category pair alone.
Before building a pair-level relation head, this asks whether the information is there to learn. Every
gold pair of a BioRED train document whose entities share the head's sentence gives one row per head
mention; the rows of the tuning slice (``extract.document_fraction``: documents that got no leaves and
no seed triples) are scored, the rows of the other train documents fit each typer:

- ``category pair``: the regression on the pair's two Biolink categories alone (one-hot): the
  prior, its most frequent type per category pair;
- ``encoder probe``: multinomial logistic regression on the frozen final hidden states of the run's
  model (head and tail entity means, their product and difference, ``[CLS]``) plus the categories —
  what a relation head on top of this encoder could reach at most without changing the encoder;
- ``sentence words``: the same regression on tf-idf word 1–2-grams of the head's sentence plus the
  categories — how much the 300-odd train documents teach about typing from the words alone.

Accuracy is over the slice's rows; each typer's regularisation C is chosen on a 20% split of the fit
documents, never on the slice. Nothing here reads BioRED dev.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, write_json  # noqa: E402
from tune_extraction import _extractor  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from scipy.sparse import csr_matrix, hstack  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.corpus.windowing import chunk_documents  # noqa: E402
from graphmert.corpus.nlp import TextAnalyzer  # noqa: E402
from graphmert.corpus.readers import read_corpus  # noqa: E402
from graphmert.eval import load_gold  # noqa: E402
from graphmert.extract.pairs import _sentence  # noqa: E402
from graphmert.graph.collate import collate_graphs  # noqa: E402
from pipelines.holdout import document_fraction, in_slice  # noqa: E402


@dataclasses.dataclass(kw_only=True)
class Row:
    test: bool            # a tuning-slice document
    doc: str
    cats: str             # the pair's two categories, sorted
    label: str            # the gold BioRED type
    state: np.ndarray     # frozen encoder features
    sentence: str


@torch.inference_mode()
def pair_rows(ex, plans, types: dict, fraction: float) -> list[Row]:
    """One row per (head mention, candidate) whose document pair has a gold type."""
    rows = []
    for start in range(0, len(plans), ex.cfg.batch_size):
        block = plans[start:start + ex.cfg.batch_size]
        hidden = ex.model(collate_graphs([ex._graph(p, []) for p in block], "packed")).hidden  # [B, L, H]
        for h, p in zip(hidden, block):
            rows += chunk_rows(h, p, types, fraction)
    return rows


def chunk_rows(h: torch.Tensor, p, types: dict, fraction: float) -> list[Row]:
    """The rows of one chunk plan from its final hidden states h [L, H]; a pair asked under several
    relations from the same head mention gives one row."""
    ents = p.entities
    states = {e: h[torch.as_tensor(np.concatenate([np.arange(a, b) for a, b, _ in spans]))].mean(0).numpy()
              for e, spans in ents.spans.items()}                                       # entity → [H]
    pairs = {(q.root, q.head, c) for q in p.queries for c in q.candidates
             if (p.doc.id, frozenset((q.head, c))) in types}
    rows = []
    for root, head, c in sorted(pairs):
        eh, ec = states[head], states[c]
        rows.append(Row(
            test=in_slice(p.doc.id, fraction), doc=p.doc.id,
            cats="|".join(sorted((ents.categories[head], ents.categories[c]))),
            label=types[(p.doc.id, frozenset((head, c)))],
            state=np.concatenate([eh + ec, eh * ec, np.abs(eh - ec), h[0].numpy()]),
            sentence=_sentence(p.doc, int(p.chunk.offsets[root][0]), p.chunk)[1]))
    return rows


def fit_and_score(name: str, features, fit: list[Row], test: list[Row], Cs: list[float]) -> dict:
    """Logistic regression on ``features(rows)``; C chosen on a document split of ``fit``."""
    inner = [r for r in fit if document_fraction("probe:" + r.doc) >= 0.2]
    held = [r for r in fit if document_fraction("probe:" + r.doc) < 0.2]
    acc = {}
    for C in Cs:
        clf = LogisticRegression(C=C, max_iter=3000).fit(features(inner, inner), [r.label for r in inner])
        acc[C] = float(np.mean(clf.predict(features(inner, held)) == np.array([r.label for r in held])))
    C = max(Cs, key=lambda c: (acc[c], -c))
    clf = LogisticRegression(C=C, max_iter=3000).fit(features(fit, fit), [r.label for r in fit])
    test_acc = float(np.mean(clf.predict(features(fit, test)) == np.array([r.label for r in test])))
    return {"typer": name, "C": C, "fit_split_acc": acc[C], "slice_acc": test_acc}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True)
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--C", nargs="+", type=float, default=[0.01, 0.03, 0.1, 0.3, 1.0, 3.0])
    p.add_argument("--out", type=Path)
    p.add_argument("overrides", nargs="*")
    a = p.parse_args()
    cfg = load_config(a.config, a.overrides)
    frac = cfg.extract.document_fraction
    if frac >= 1.0:
        raise SystemExit("typing_probe needs a tuning slice: set extract.document_fraction < 1")
    docs = list(TextAnalyzer(sentences=True, abbreviations=cfg.corpus.abbreviations)
                .annotate(read_corpus(cfg.extract.paths, format=cfg.extract.format)))
    types: dict = defaultdict(list)
    for doc, pair, t in load_gold(cfg.evaluate.gold, format=cfg.evaluate.format).typed:
        types[(doc, pair)].append(t)
    types = {k: min(v) for k, v in types.items()}
    ex = _extractor(cfg, a.run_dir, [d for d in docs if in_slice(d.id, frac)])
    ex.model.eval()
    ex.cfg = dataclasses.replace(cfg.extract, tail_scope="sentence")
    rows = pair_rows(ex, ex.questions(docs, list(chunk_documents(docs, ex.tok, cfg.corpus, cfg.graph))),
                     types, frac)
    fit, test = [r for r in rows if not r.test], [r for r in rows if r.test]
    cats = sorted({r.cats for r in rows})
    onehot = lambda rs: np.eye(len(cats))[[cats.index(r.cats) for r in rs]]          # noqa: E731
    out = [fit_and_score("category pair", lambda _, rs: onehot(rs), fit, test, a.C)]
    out.append(fit_and_score("encoder probe", lambda _, rs: np.hstack([np.stack([r.state for r in rs]), onehot(rs)]),
                             fit, test, a.C))

    def words(basis, rs):
        vec = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True).fit([r.sentence for r in basis])
        return hstack([vec.transform([r.sentence for r in rs]), csr_matrix(onehot(rs))]).tocsr()
    out.append(fit_and_score("sentence words", words, fit, test, a.C))
    for r in out:
        r.update(fit_rows=len(fit), slice_rows=len(test))
    print_table(out, f"typing a gold pair's mention (slice: {len({r.doc for r in test})} documents, "
                     f"fit: {len({r.doc for r in fit})}); slice types {Counter(r.label for r in test).most_common()}")
    write_json("typing_probe", out, a.out, run_dir=str(a.run_dir), overrides=a.overrides)


if __name__ == "__main__":
    main()
