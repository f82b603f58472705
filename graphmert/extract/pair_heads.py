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

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np
import torch

from graphmert.config import ExtractConfig
from graphmert.errors import GraphmertError
from graphmert.model.candidates import span_means

__all__ = ["PairHead", "PairHeadError", "PairSums", "RELATED", "batch_question_vectors", "blend", "fit_heads",
           "pair_sums", "pair_vectors", "question_vectors"]

PairKey = tuple[str, frozenset]            # (document id, unordered pair of entity keys)
RELATED = ("unrelated", "related")         # the relatedness head's classes


class PairHeadError(GraphmertError):
    """A pair head cannot be fitted (too few labelled pairs or classes) or was not."""


QuestionKey = tuple[str, int, int, str, str, str]   # (document, chunk, head root, head, relation, candidate)


@torch.inference_mode()
def question_vectors(ex, models, plans) -> list[dict[QuestionKey, np.ndarray]]:
    """Per model of ``models``: (document, chunk, head root, head, relation, candidate) → x(h, c)
    [4H], every question of ``plans`` (the :class:`~graphmert.extract.pairs.PairExtractor` ``ex``'s)
    encoded in the extractor's own graphs, ``extract.batch_size`` graphs at a time, without bf16.
    The per-question definition that :class:`PairSums` accumulates for extraction, and the
    reference its tests compare it with."""
    out: list[dict] = [{} for _ in models]
    for block, batch, hiddens, cq in ex.encoded(models, plans, by_length=True, bf16=False):
        for found, model, hidden in zip(out, models, hiddens):
            found.update(batch_question_vectors(model, block, batch, hidden, cq))
    return out


def _batch_x(model, block, batch, hidden, cq) -> torch.Tensor:
    """x(h, c) [C, 4H] of every candidate row of one encoded batch (:func:`batch_question_vectors`),
    float32 on the hidden states' device."""
    L = batch.input_ids.shape[1]
    hidden = hidden.float()                                                               # [B, L, H]
    flat = hidden.reshape(-1, hidden.shape[-1])                                           # [B·L, H]
    ent = model.candidate_head.entity_states(flat, cq.entity_token, cq.entity_of_token, cq.num_entities)
    heads = torch.tensor([[b * L + q.root, b * L + q.end] for b, (_, qs) in enumerate(block) for q in qs],
                         device=hidden.device, dtype=cq.cand_between.dtype)               # [G, 2]
    C = len(cq.cand_between)
    spans = span_means(hidden, torch.cat([cq.cand_between, heads]))    # one prefix sum   [C + G, H]
    x = torch.cat([spans[C:][cq.cand_group], ent[cq.cand_entity], spans[:C],
                   flat[cq.query_index][cq.cand_group]], dim=-1)                          # [C, 4H]
    if len(x) != sum(len(q.candidates) for _, qs in block for q in qs):
        raise AssertionError(f"{sum(len(q.candidates) for _, qs in block for q in qs)} candidates asked, "
                             f"{len(x)} candidate rows encoded")
    return x


def batch_question_vectors(model, block, batch, hidden, cq) -> dict[QuestionKey, np.ndarray]:
    """x(h, c) [4H] of every question of one encoded batch (``block``, ``batch``, ``model``'s hidden
    [B, L, H] and the candidate query ``cq`` of :meth:`~graphmert.extract.pairs.PairExtractor.encoded`)."""
    x = _batch_x(model, block, batch, hidden, cq).cpu().numpy()                         # [C, 4H]
    rows = [(p.doc.id, q.chunk, q.root, q.head, q.relation, c) for p, qs in block for q in qs for c in q.candidates]
    return dict(zip(rows, x))


@contextmanager
def _deterministic() -> Iterator[None]:
    """PyTorch's deterministic algorithms inside the block, the caller's setting (and its warn-only
    flag) restored after it, whatever the block raises."""
    before = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn_only)


def _sum_rows(x: torch.Tensor, group: torch.Tensor, groups: int) -> torch.Tensor:
    """[groups, D]: row g the sum of the rows of x [N, D] whose ``group`` [N] is g, added from zero in
    an order fixed by the input, so that the sums are the same from run to run on every device.

    ``index_add_`` adds in row order on a CPU. On CUDA its default kernel adds with atomics, in
    whatever order the threads reach a row, so it runs there under PyTorch's deterministic mode
    (:func:`_deterministic`, for this call alone), whose kernel sorts the rows by group and adds
    each group's rows in turn."""
    out = x.new_zeros(groups, x.shape[1])                                                 # [groups, D]
    with _deterministic() if x.is_cuda else nullcontext():
        return out.index_add_(0, group, x)


class PairSums:
    """Σ x and the count of questions per document pair, one encoded batch at a time: what
    :func:`pair_vectors` averages, without keeping a vector, a key and a Python object per question
    and candidate until the pass ends (on 100 BioRED dev abstracts that was 33,584 rows of 2 KB per
    model; peak memory 11% lower, docs/experiments/extract-host-work.md).

    Each document's entities are ranked once by (category, id), so a row's pair is (document, lower
    rank, higher rank) as integers, and a row whose head ranks after its candidate swaps its first
    two blocks. Each batch's rows are summed per pair on the device that encoded them, in an order
    fixed by the input (:func:`_sum_rows`), and only those [U, 4H] sums, one row per pair of the
    batch, come to the host to be added to the pair's running sum: on a GPU the [C, 4H] rows of every
    question and candidate never cross to the host (the order of the float32 additions differs from a
    question by question loop in the last bits only)."""

    def __init__(self, plans) -> None:
        docs: dict[str, dict[str, str]] = {}
        for p in plans:
            docs.setdefault(p.doc.id, {}).update(p.entities.categories)
        self._doc = {d: k for k, d in enumerate(docs)}                                    # document → number
        self._names = {d: sorted(cats, key=lambda e: (cats[e], e)) for d, cats in docs.items()}   # rank → entity
        self._rank = {d: {e: r for r, e in enumerate(names)} for d, names in self._names.items()}
        self._size = max((len(c) for c in docs.values()), default=1)
        self._ranks: dict[int, np.ndarray] = {}                                           # plan → [E] ranks
        self._slot: dict[int, int] = {}                     # pair code → row of the sums (first-seen order)
        self._sums = np.zeros((0, 0), dtype=np.float32)                                   # [pairs+, 4H]
        self._counts = np.zeros(0, dtype=np.int64)
        self.rows = self.batch_pairs = 0       # rows x(h, c) summed on the device, per-pair sums copied

    def add(self, model, block, batch, hidden, cq) -> None:
        """Accumulate one encoded batch (the arguments of :func:`batch_question_vectors`)."""
        x = _batch_x(model, block, batch, hidden, cq)                            # [C, 4H] on the device
        head, cand, doc = self._row_entities(block, cq)                                   # [C] each
        n, H = self._size, x.shape[1] // 4
        code = (doc * n + np.minimum(head, cand)) * n + np.maximum(head, cand)            # [C]
        codes, first, local = np.unique(code, return_index=True, return_inverse=True)     # [U], [U], [C]
        for c in codes[np.argsort(first)].tolist():                                       # first-seen order
            self._slot.setdefault(c, len(self._slot))
        self._grow(len(self._slot), x.shape[1])
        slots = np.array([self._slot[c] for c in codes.tolist()], dtype=np.int64)         # [U]
        swap = torch.from_numpy(head > cand).to(x.device)                                 # [C]
        blocks = torch.cat([torch.arange(H, 2 * H), torch.arange(H), torch.arange(2 * H, 4 * H)]).to(x.device)
        x = torch.where(swap[:, None], x[:, blocks], x)          # first two blocks in rank order  [C, 4H]
        self._sums[slots] += _sum_rows(x, torch.from_numpy(local).to(x.device), len(codes)).cpu().numpy()
        self._counts[slots] += np.bincount(local, minlength=len(codes))
        self.rows, self.batch_pairs = self.rows + len(code), self.batch_pairs + len(codes)

    def _grow(self, rows: int, width: int) -> None:
        """Room for ``rows`` pairs in the sums (doubling, so a run's batches copy them O(log) times)."""
        if self._sums.shape[0] >= rows and self._sums.shape[1] == width:
            return
        size = max(rows, 2 * self._sums.shape[0], 64)
        sums = np.zeros((size, width), dtype=np.float32)
        if self._sums.size:
            sums[:self._sums.shape[0]] = self._sums
        counts = np.zeros(size, dtype=np.int64)
        counts[:len(self._counts)] = self._counts
        self._sums, self._counts = sums, counts

    def _row_entities(self, block, cq) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per candidate row of ``block``: the head's and the candidate's ranks, and the document
        (the candidate from ``cq.cand_entity``, numbered across the batch's entity tables)."""
        ranks = np.concatenate([self._plan_ranks(p) for p, _ in block] or [np.zeros(0, dtype=np.int64)])
        head = np.array([self._rank[p.doc.id][q.head] for p, qs in block for q in qs], dtype=np.int64)   # [G]
        doc = np.array([self._doc[p.doc.id] for p, qs in block for _ in qs], dtype=np.int64)             # [G]
        group = cq.cand_group.cpu().numpy()
        return head[group], ranks[cq.cand_entity.cpu().numpy()], doc[group]

    def _plan_ranks(self, plan) -> np.ndarray:
        """[E] the document rank of each entity of ``plan``'s entity table (the batch's numbering)."""
        got = self._ranks.get(id(plan))
        if got is None:
            rank = self._rank[plan.doc.id]
            got = self._ranks[id(plan)] = np.array([rank.get(e, -1) for e in plan.entities.table.ids],
                                                   dtype=np.int64)           # −1: never a head or candidate
        return got

    def means(self) -> dict[PairKey, np.ndarray]:
        """(document, unordered id pair) → x̄ [4H], in the order the pairs were first seen."""
        docs, n, rows = list(self._doc), self._size, len(self._slot)
        mean = self._sums[:rows] / self._counts[:rows, None].astype(self._sums.dtype)    # [pairs, 4H]
        out = {}
        for c, x in zip(self._slot, mean):
            d, rest = divmod(c, n * n)
            lo, hi = divmod(rest, n)
            names = self._names[docs[d]]
            out[(docs[d], frozenset((names[lo], names[hi])))] = x
        return out


def pair_sums(ex, plans) -> list[PairSums]:
    """Each of the extractor ``ex``'s models' :class:`PairSums` of ``plans``, from one pass of them
    all over the extractor's graphs, without bf16."""
    models = [ex.model, *ex.members]
    found = [PairSums(plans) for _ in models]
    with torch.inference_mode():
        for block, batch, hiddens, cq in ex.encoded(models, plans, by_length=True, bf16=False):
            for sums, model, hidden in zip(found, models, hiddens):
                sums.add(model, block, batch, hidden, cq)
    return found


def pair_vectors(ex, plans, found: list[PairSums] | None = None) -> dict[PairKey, np.ndarray]:
    """(document, unordered id pair) → x̄ [4HM]: the pair's question vectors averaged, the first two
    blocks in (category, id) order, the ensemble members' concatenated (module docstring).
    ``found``: each model's :class:`PairSums` of ``plans`` when the caller has them (else
    :func:`pair_sums`)."""
    found = pair_sums(ex, plans) if found is None else found
    per_model = [s.means() for s in found]
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
