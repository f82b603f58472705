"""Pair heads: what the encoder's own states say about a pair, read by two regressions.

Extraction asks question (head h at roots [a, b), relation r) of every candidate c of a chunk
(:mod:`graphmert.extract.pairs`). From the final hidden states of the graph that asks it:

    x(h, c) = [h̄ ‖ ē_c ‖ b̄_c ‖ q_r]                                                   [4H]

h̄ the mean state of the head mention's roots, ē_c the candidate's mean state over its mentions in
the chunk, b̄_c the mean state of the roots strictly between the two nearest mentions (zero when they
touch) and q_r the state of the question's first masked leaf: the candidate head's own inputs
(:mod:`graphmert.model.candidates`). A document pair {u, v} averages x over every question that links
them, asked either way, with its first two blocks ordered by (category, id) so that the vector does
not depend on who asked; an ensemble concatenates its M members' vectors:

    x̄(u, v) ∈ R^{4HM},   z = (x̄ − μ) / σ

Two heads read z, each an L2-regularised logistic regression fitted on the pairs that extraction's
questions link in the relation typer's documents (``extract.typer_files``, less the documents
extraction or evaluation reads), with the encoder frozen:

    relatedness   ρ(u, v)     = σ(wᵀ z + b)                 label: the document relates the pair
    type          P(r | u, v) = softmax_r(W z + b)          label: its gold type, over the asked relations

Extraction pools a model ranker's answer s_c (after the lexical pooling) with the relatedness of the
pair, log-linearly, at ``extract.related_head_weight`` v:

    score(c) = s_c^(1−v) · ρ(h, c)^v

and, with ``relation_choice: typer``, types the model rankers' pairs by

    argmax_r  (1 − b) · log P_typer(r | pair) + b · log P(r | pair)

over the relations the schema admits (``extract.type_head_weight`` b; b = 1: the model alone; a pair
the typer cannot read takes the head's choice).

Why regressions on a frozen encoder rather than heads trained with it: the candidate head's loss
compares a question's candidates with one another, never a pair's evidence across chunks and
questions, nor one relation with another for the same pair; these heads ask exactly that, and fitting
them on frozen states costs one encoder pass over the typer's documents instead of a training run.
scikit-learn's logistic regression (as the relation typer uses) does the fitting.

Shapes: per question, hidden [B, L, H] of its graph → x [4H]; per pair x̄ [4HM] → ρ, P [|R|].
"""

from __future__ import annotations

from dataclasses import dataclass, field
import numpy as np
import torch

from graphmert.config import ExtractConfig
from graphmert.errors import GraphmertError
from graphmert.model.candidates import span_means

__all__ = ["PairHead", "PairHeadError", "RELATED", "batch_question_vectors", "blend", "fit_heads", "pair_vectors",
           "question_vectors"]

PairKey = tuple[str, frozenset]            # (document id, unordered pair of entity keys)
RELATED = ("unrelated", "related")         # the relatedness head's classes


class PairHeadError(GraphmertError):
    """A pair head cannot be fitted (too few labelled pairs or classes) or was not."""


QuestionKey = tuple[str, int, int, str, str, str]   # (document, chunk, head root, head, relation, candidate)


@torch.inference_mode()
def question_vectors(ex, models, plans) -> list[dict[QuestionKey, np.ndarray]]:
    """Per model of ``models``: (document, chunk, head root, head, relation, candidate) → x(h, c)
    [4H], every question of ``plans`` (the :class:`~graphmert.extract.pairs.PairExtractor` ``ex``'s)
    encoded in the extractor's own graphs, ``extract.batch_size`` graphs at a time, without bf16."""
    out: list[dict] = [{} for _ in models]
    for block, batch, hiddens, cq in ex.encoded(models, plans, by_length=True, bf16=False):
        for found, model, hidden in zip(out, models, hiddens):
            found.update(batch_question_vectors(model, block, batch, hidden, cq))
    return out


def batch_question_vectors(model, block, batch, hidden, cq) -> dict[QuestionKey, np.ndarray]:
    """x(h, c) [4H] of every question of one encoded batch (``block``, ``batch``, ``model``'s hidden
    [B, L, H] and the candidate query ``cq`` of :meth:`~graphmert.extract.pairs.PairExtractor.encoded`)."""
    L = batch.input_ids.shape[1]
    hidden = hidden.float()                                                               # [B, L, H]
    flat = hidden.reshape(-1, hidden.shape[-1])                                           # [B·L, H]
    ent = model.candidate_head.entity_states(flat, cq.entity_token, cq.entity_of_token, cq.num_entities)
    between = span_means(hidden, cq.cand_between)                                         # [C, H]
    asked = [(p, q) for p, qs in block for q in qs]
    spans = torch.tensor([[b * L + q.root, b * L + q.end] for b, (_, qs) in enumerate(block) for q in qs],
                         device=hidden.device)                                            # [G, 2]
    x = torch.cat([span_means(hidden, spans)[cq.cand_group], ent[cq.cand_entity], between,
                   flat[cq.query_index][cq.cand_group]], dim=-1).cpu().numpy()            # [C, 4H]
    rows = [(p.doc.id, q.chunk, q.root, q.head, q.relation, c) for p, q in asked for c in q.candidates]
    if len(rows) != len(x):
        raise AssertionError(f"{len(rows)} candidates asked, {len(x)} candidate rows encoded")
    return dict(zip(rows, x))


def pair_vectors(ex, plans, found: list[dict[QuestionKey, np.ndarray]] | None = None) -> dict[PairKey, np.ndarray]:
    """(document, unordered id pair) → x̄ [4HM]: the pair's question vectors averaged, the first two
    blocks in (category, id) order, the ensemble members' concatenated (module docstring).
    ``found``: each model's :func:`question_vectors` of ``plans`` when the caller has them (computed
    here otherwise, in one pass of the extractor's models)."""
    cats = {(p.doc.id, e): c for p in plans for e, c in p.entities.categories.items()}
    models = [ex.model, *ex.members]
    found = question_vectors(ex, models, plans) if found is None else found
    per_model = []
    for vectors in found:
        sums: dict[PairKey, list] = {}
        for (doc, _, _, h, _, c), x in vectors.items():
            H = len(x) // 4
            if (cats[(doc, h)], h) > (cats[(doc, c)], c):
                x = np.concatenate([x[H:2 * H], x[:H], x[2 * H:]])
            acc = sums.setdefault((doc, frozenset((h, c))), [0.0, 0])
            acc[0], acc[1] = acc[0] + x, acc[1] + 1
        per_model.append({k: s / n for k, (s, n) in sums.items()})
    return {k: np.concatenate([m[k] for m in per_model]) for k in per_model[0]} if per_model else {}


@dataclass
class PairHead:
    """P(class | pair) over ``classes`` from x̄ (module docstring): the type head's classes are the
    asked relations, the relatedness head's :data:`RELATED`. Fit with :meth:`fit`."""

    classes: list[str]
    c: float = 1.0
    fit_counts: dict = field(default_factory=dict)
    _model: object = None

    def fit(self, vectors: dict[PairKey, np.ndarray], labels: dict[PairKey, str]) -> "PairHead":
        """Fit on the pairs of ``vectors`` whose label (``labels``) is one of ``classes``."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        keys = [k for k in vectors if labels.get(k) in self.classes]
        y = [self.classes.index(labels[k]) for k in keys]
        if len(set(y)) < 2:
            raise PairHeadError(f"a pair head needs labelled pairs of at least two of {self.classes} among "
                                f"the pairs extraction asks in extract.typer_files; found {len(keys)} "
                                f"pair(s) of {len(set(y))} class(es)")
        self._model = make_pipeline(StandardScaler(), LogisticRegression(C=self.c, max_iter=2000))
        self._model.fit(np.stack([vectors[k] for k in keys]), np.array(y))
        self.fit_counts = {"pairs": len(keys), "documents": len({d for d, _ in keys}),
                           **{r: y.count(i) for i, r in enumerate(self.classes)}}
        return self

    def log_probabilities(self, vectors: dict[PairKey, np.ndarray]) -> dict[PairKey, dict[str, float]]:
        """(document, pair) → {class: log P(class | pair)}."""
        if self._model is None:
            raise PairHeadError("the pair head is not fitted")
        if not vectors:
            return {}
        keys = list(vectors)
        p = np.zeros((len(keys), len(self.classes)))
        p[:, self._model.classes_] = self._model.predict_proba(np.stack([vectors[k] for k in keys]))
        logp = np.log(np.clip(p, 1e-9, 1.0))
        return {k: dict(zip(self.classes, row.tolist())) for k, row in zip(keys, logp)}


def fit_heads(ex, docs, chunks, cfg: ExtractConfig) -> tuple[PairHead | None, PairHead | None]:
    """(type head, relatedness head) as ``cfg.type_head_weight`` and ``related_head_weight`` ask for
    them (None where 0), fitted on the gold pairs of ``docs`` (their relations) from the pair vectors
    of the extractor ``ex``'s models over ``chunks``: one encoder pass for both heads."""
    if cfg.type_head_weight <= 0 and cfg.related_head_weight <= 0:
        return None, None
    vectors = ex.pair_vectors(ex.questions(docs, chunks))
    types = {(d.id, frozenset((r.head, r.tail))): r.type for d in docs for r in d.relations}
    type_head = PairHead(ex.relations, cfg.type_head_c).fit(vectors, types) if cfg.type_head_weight > 0 else None
    related = {k: RELATED[k in types] for k in vectors}
    related_head = PairHead(list(RELATED), cfg.related_head_c).fit(vectors, related) \
        if cfg.related_head_weight > 0 else None
    return type_head, related_head


def blend(typer: dict[str, float] | None, head: dict[str, float], weight: float) -> dict[str, float]:
    """Per relation, (1 − b)·log P_typer + b·log P_head over the relations both answer (module
    docstring); the head alone where the typer has no answer (its pair shares no sentence) or b = 1."""
    if typer is None or weight >= 1:
        return dict(head)
    return {r: (1 - weight) * typer[r] + weight * h for r, h in head.items() if r in typer}
