"""The ``lexical_document`` control: the words and the document's counts, stacked by one regression.

Why. The ``lexical`` control ranks a question's candidates by q, the relation typer's probability
that the words around the pair relate it (:mod:`graphmert.extract.relation_typer`). It ignores how
often the document names each entity and how far apart they are, which the ``salience`` and
``nearest`` controls show matter. A regression over both, without the model, is the strongest
supervised baseline measured on the same labels (docs/experiments/stacked-baselines.md: it ties
graphmert on the tuning slice). This module makes it a control that every ``metrics.md`` reports.

For question (head h, relation r) of document d and each candidate c of its candidate set C:

    x(h, r, c) = [log q(h, c), log(1 + n_d(c)), log(1 + n_d(h)), 1 / (1 + δ(h, c)), log |C|,
                  onehot(r), onehot({cat h, cat c})]                                     [5 + |R| + |K|]

n_d(e) the mentions of entity e in d, δ(h, c) the roots between the head's mention and the nearest
mention of c (the ``nearest`` control's distance), R the asked relations and K the category pairs seen
in the fit. The control's score is

    P(d relates {h, c} | x) = σ(wᵀ (x − μ) / s + b)

an L2-regularised logistic regression (scikit-learn, inverse strength ``extract.stack_c``) on the
standardised features, fitted on every question that extraction asks of the relation typer's own
documents (``extract.typer_files``, less those extraction or evaluation reads), labelled by their
gold pairs (any type). On those documents q must not come from a typer that saw their labels, or
the regression would learn to trust an overfitted q: each document's q comes from a typer fitted on
the other ``extract.stack_folds`` − 1 folds (cross-fitting; a document's fold is a salted hash of its
id). On the documents extraction reads, q is the ``lexical`` control's own, from the typer fitted
on all of them.

Hand-written, not a scikit-learn stacking estimator, because the rows are (question, candidate)
pairs grouped by document and the out-of-fold feature comes from a different model (the typer) fitted
on documents, not rows. Shapes: per question, features [|C|, 5 + |R| + |K|] → scores [|C|].
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from graphmert.corpus.document import Document
from graphmert.errors import GraphmertError

__all__ = ["NUMERIC", "CandidateFeatures", "LexicalDocumentStack", "StackError", "candidate_features",
           "fit_stack", "out_of_fold_relatedness", "stack_fold"]

#: the numeric columns of x, in order (module docstring)
NUMERIC = ("log_q", "log_tail_mentions", "log_head_mentions", "nearest", "log_candidates")
_FOLD_SALT = "graphmert.lexical_document.fold\x1f"


class StackError(GraphmertError):
    """The stack cannot be fitted (no labelled questions of both kinds) or was asked unfitted."""


@dataclass(frozen=True)
class CandidateFeatures:
    """One question's features before encoding: ``numeric`` [|C|, 5] in :data:`NUMERIC` order, the
    question's ``relation`` and each candidate's category pair (``category``, sorted and '|'-joined)."""

    numeric: np.ndarray
    relation: str
    category: tuple[str, ...]


def stack_fold(doc_id: str, folds: int) -> int:
    """A document's cross-fitting fold in 0 … folds − 1: a salted sha256 of its id, so that it does
    not follow the other id hashes (the tuning slice's, the recognizer's selection)."""
    return int(hashlib.sha256((_FOLD_SALT + doc_id).encode("utf-8")).hexdigest(), 16) % folds


def candidate_features(plans, queries, q: Sequence[np.ndarray], nearest: Sequence[np.ndarray]
                       ) -> list[CandidateFeatures]:
    """Per question of ``queries`` (asked in ``plans``, :class:`~graphmert.extract.pairs.PairExtractor`'s),
    its candidates' features given their relatedness ``q`` and the ``nearest`` control's scores
    1 / (1 + δ), each one array per question."""
    counts = {p.doc.id: Counter(i for m in p.doc.mentions for i in m.ids) for p in plans}
    out = []
    for qu, qs, near in zip(queries, q, nearest):
        plan = plans[qu.chunk]
        n, cats = counts[plan.doc.id], plan.entities.categories
        numeric = np.stack([np.log(np.clip(qs, 1e-6, 1.0)),
                            np.log1p([n[c] for c in qu.candidates]),
                            np.full(len(qu.candidates), np.log1p(n[qu.head])),
                            np.asarray(near, dtype=np.float64),
                            np.full(len(qu.candidates), np.log(len(qu.candidates)))], axis=1)  # [|C|, 5]
        category = tuple("|".join(sorted((cats.get(qu.head, ""), cats.get(c, "")))) for c in qu.candidates)
        out.append(CandidateFeatures(numeric=numeric, relation=qu.relation, category=category))
    return out


def out_of_fold_relatedness(new_typer: Callable[[], object], docs: Sequence[Document], plans, queries,
                            folds: int) -> list[np.ndarray]:
    """Per question, q of each candidate from a relation typer (``new_typer()``, unfitted, with its
    related-or-not regression) fitted on the documents of the other folds (module docstring)."""
    if folds < 2:
        raise StackError(f"extract.stack_folds {folds}: cross-fitting needs at least 2 folds")
    fold = {d.id: stack_fold(d.id, folds) for d in docs}
    out: list[np.ndarray | None] = [None] * len(queries)
    for f in range(folds):
        asked = [i for i, qu in enumerate(queries) if fold[plans[qu.chunk].doc.id] == f]
        if not asked:
            continue
        typer = new_typer().fit([d for d in docs if fold[d.id] != f], where=f"typer documents outside fold {f}")
        items = [(plans[queries[i].chunk].doc, queries[i].head, c) for i in asked for c in queries[i].candidates]
        flat = np.asarray(typer.relatedness(items), dtype=np.float64)
        sizes = np.cumsum([len(queries[i].candidates) for i in asked])[:-1]
        for i, part in zip(asked, np.split(flat, sizes)):
            out[i] = part
    return out


@dataclass
class LexicalDocumentStack:
    """P(related | x) over the features of :func:`candidate_features` (module docstring). Fit with
    :meth:`fit`; ``relations`` and ``categories`` fix the one-hot columns (an unseen value is all zeros)."""

    c: float = 0.1
    relations: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    fit_counts: dict = field(default_factory=dict)
    _scaler: object = None
    _clf: object = None

    def design(self, f: CandidateFeatures) -> np.ndarray:
        """x for each candidate of one question: [|C|, 5 + |R| + |K|]."""
        n = len(f.category)
        rel = np.zeros((n, len(self.relations)))
        if f.relation in self.relations:
            rel[:, self.relations.index(f.relation)] = 1.0
        cat = np.zeros((n, len(self.categories)))
        for i, k in enumerate(f.category):
            if k in self.categories:
                cat[i, self.categories.index(k)] = 1.0
        return np.concatenate([f.numeric, rel, cat], axis=1)

    def fit(self, feats: Sequence[CandidateFeatures], labels: Sequence[np.ndarray]) -> "LexicalDocumentStack":
        """Fit on the questions' features and their candidates' 0/1 labels (the document relates the pair)."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.preprocessing import StandardScaler

        y = np.concatenate(labels) if len(labels) else np.zeros(0)
        if len(set(y.tolist())) < 2:
            raise StackError(f"the lexical_document control needs related and unrelated candidates among "
                             f"the questions asked of extract.typer_files; found {int(y.sum())} related "
                             f"of {len(y)}")
        self.relations = sorted({f.relation for f in feats})
        self.categories = sorted({k for f in feats for k in f.category})
        X = np.concatenate([self.design(f) for f in feats])                         # [rows, F]
        self._scaler = StandardScaler().fit(X)
        self._clf = LogisticRegression(C=self.c, max_iter=2000).fit(self._scaler.transform(X), y)
        self.fit_counts = {"questions": len(feats), "candidates": len(y), "related": int(y.sum())}
        return self

    def probabilities(self, feats: Sequence[CandidateFeatures]) -> list[np.ndarray]:
        """Per question, P(related) of each candidate."""
        if self._clf is None:
            raise StackError("the lexical_document stack was asked before it was fitted")
        return [self._clf.predict_proba(self._scaler.transform(self.design(f)))[:, 1] if len(f.category)
                else np.zeros(0) for f in feats]


def fit_stack(ex, docs: Sequence[Document], chunks, new_typer: Callable[[], object], folds: int,
              c: float) -> LexicalDocumentStack:
    """The stack fitted on the questions the extractor ``ex`` asks of ``docs`` (the typer's documents,
    with gold relations and sentence spans) and their ``chunks``: q cross-fitted over ``folds``
    folds by typers from ``new_typer``, labels from the documents' relations (module docstring)."""
    plans = ex.questions(docs, chunks)
    queries = [qu for p in plans for qu in p.queries]
    q = out_of_fold_relatedness(new_typer, docs, plans, queries, folds)
    feats = candidate_features(plans, queries, q, ex.answers(plans, queries, "nearest", pooled=False))
    gold = {(d.id, frozenset((r.head, r.tail))) for d in docs for r in d.relations}
    labels = [np.array([float((plans[qu.chunk].doc.id, frozenset((qu.head, c))) in gold) for c in qu.candidates])
              for qu in queries]
    stack = LexicalDocumentStack(c=c).fit(feats, labels)
    stack.fit_counts["documents"] = len(docs)
    return stack
