"""Masking for pre-training: SpanBERT span masking on roots (MLM), whole leaf groups (MNM), SBO targets.

Roots (MLM). The maskable roots of a chunk are its real tokens except the special tokens [CLS],
[SEP], [PAD] and [MASK] ([UNK] stands for a real word and may be masked). They form *words* (consecutive roots with the same ``word_id``; a root whose word id is −1
is a word of its own) and *segments* (runs of adjacent maskable roots; a span never crosses a special
token). A span covers ℓ whole consecutive words of one segment, with

    P(ℓ) = p(1 − p)^{ℓ−1} / (1 − (1 − p)^K),    ℓ = 1 … K      (Geometric(p) truncated to [1, K])

With n maskable tokens in w words and E[ℓ] the mean of that law, a chunk gets T spans, where T is the
stochastic rounding of  b / (E[ℓ] · n / w)  and  b = mlm_probability · n  is the token budget. The
spans are placed one after another, each at a start chosen uniformly among the positions where its
ℓ words are all still unmasked (no overlaps). Because T does not depend on the drawn lengths, the
lengths follow P(ℓ) exactly and the expected share of masked roots is mlm_probability (SpanBERT
instead cuts the last span at the budget, which biases the length law towards short spans). Only
when no run of ℓ free words is left is ℓ cut to the longest free run (in very short chunks).

Entities (``train.entity_mask_probability`` p_e, training only). Each entity of the chunk's entity
table is drawn with probability p_e, and every root of every mention of a drawn entity becomes [MASK]
and an MLM target (always [MASK]: a name left visible or replaced by random tokens would not hide
it). The candidate head then sees a drawn candidate only through its context, and a query whose
tail is drawn cannot copy the tail's name from the text: the model has to learn what the words around
an entity say about it, not which names the seed KG relates (entity masking as in Peng et al., 2020,
"Learning from Context or Names?"). Held-out evaluation never masks entities, as extraction does not.

Leaves (MNM). Every filled leaf group (the tail of one injection) is masked whole with probability
mnm_probability. Groups *related* to a masked group are masked with it: those that share its tail,
or its (head, tail) pair in the other direction. Left visible, such a twin would spell out the
masked tail — a cue extraction, where every query is masked, never gives.

``model.leaf_query = "fixed"``: a masked group is shown as all K leaf slots of [MASK] (never random
or kept tokens: that is how extraction asks), and its targets are the tail's t tokens followed by
the end token [SEP] in slot t (when t < K). A group without a tail (``t = 0``, "no tail in this
chunk") is always masked, with [SEP] as its slot-0 target; unmasked, it is simply absent. With an
entity table (:class:`~graphmert.graph.layout.EntityTable`) every masked group with candidates also
becomes a question for the candidate head (:class:`~graphmert.model.candidates.CandidateQuery`):
which of the chunk's entities is its tail, or none.

Replacement (80/10/10, per span and per leaf group as in SpanBERT): with probability
``mask_token_fraction`` every token of the unit becomes [MASK], with ``random_token_fraction`` each
becomes a random non-special token, otherwise the unit keeps its tokens. Targets are the original
tokens at every masked position either way.

SBO (SpanBERT span boundary objective). For a masked root span covering positions a … e−1, every
position t in it has the target token at t, the boundary positions a−1 and e (never past [CLS] or
[SEP], which are not maskable) and the relative position t − a. Targets with t − a ≥
``model.sbo_max_span_length`` are dropped (the SBO head has no row for them).

Determinism. Every draw for one graph comes from a generator seeded by (seed, stream, epoch, sample
index) (:func:`sample_rng`), so a graph gets the same mask whichever process, worker or batch it
lands in, and a resumed run repeats the masks of the run it continues.

Shapes of a collated :class:`MaskedBatch` (B graphs, L positions, flat indices into B·L):
``mlm_index``/``mlm_labels`` [N_r], ``mnm_index``/``mnm_labels`` [N_l], ``sbo_*`` [S].
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Mapping, Optional, Sequence

import numpy as np
import torch
from torch import Tensor

from graphmert.config import ConfigError, TrainConfig
from graphmert.graph.batch import GraphBatch
from graphmert.graph.candidates import CandidateQuery, candidate_query
from graphmert.graph.collate import collate_graphs
from graphmert.graph.layout import LeafyChainGraph, layout_arrays

__all__ = ["MaskingSpec", "GraphMask", "MaskedBatch", "MaskingCollator", "span_length_pmf",
           "root_words", "mask_graph", "sample_rng", "TRAIN_STREAM", "EVAL_STREAM",
           "MODE_MASK", "MODE_RANDOM", "MODE_KEEP"]

TRAIN_STREAM, EVAL_STREAM = 0, 1
MODE_MASK, MODE_RANDOM, MODE_KEEP = 0, 1, 2


def span_length_pmf(p: float, max_words: int) -> np.ndarray:
    """P(ℓ) for ℓ = 1 … max_words of Geometric(p) truncated to [1, max_words]: [max_words] float64."""
    if not 0.0 < p <= 1.0:
        raise ConfigError(f"train.span_geometric_p: {p!r} is out of range; must be > 0 and <= 1")
    if max_words < 1:
        raise ConfigError(f"graph.num_leaves: the span cap must be >= 1, got {max_words}")
    lengths = np.arange(1, max_words + 1)
    w = p * (1.0 - p) ** (lengths - 1)
    return w / w.sum()


def sample_rng(seed: int, stream: int, epoch: int, index: int) -> np.random.Generator:
    """The generator of one sample: PCG64 seeded by (seed, stream, epoch, index)."""
    return np.random.Generator(np.random.PCG64(
        np.random.SeedSequence([seed % 2**63, stream, epoch, index])))


@dataclass(frozen=True)
class MaskingSpec:
    """Everything masking needs: rates (from ``train``), the span cap K and the vocabulary."""

    mlm_probability: float
    mnm_probability: float
    span_geometric_p: float
    max_span_words: int                    # K = graph.num_leaves
    mask_token_fraction: float
    random_token_fraction: float
    mask_id: int
    special_ids: tuple[int, ...]           # never masked ([PAD], [CLS], [SEP], [MASK])
    vocab_size: int
    sbo_max_span_length: Optional[int]     # None: no SBO targets
    unk_id: int = -1                       # [UNK]: maskable, but never a random replacement
    leaf_query: str = "tail"               # model.leaf_query: "tail" (the paper) or "fixed"
    end_id: int = -1                       # [SEP]: the end-of-tail target of "fixed" queries
    entity_mask_probability: float = 0.0   # p_e: chance an entity has all its mentions masked

    def __post_init__(self) -> None:
        if self.mask_token_fraction + self.random_token_fraction > 1.0 + 1e-12:
            raise ConfigError(f"train.random_token_fraction: {self.random_token_fraction} + "
                              f"train.mask_token_fraction ({self.mask_token_fraction}) exceed 1")
        if not self.random_ids.size:
            raise ConfigError(f"tokenizer: a vocabulary of {self.vocab_size} tokens has no "
                              f"non-special token to use as a random replacement")

    @classmethod
    def from_config(cls, train: TrainConfig, num_leaves: int, special_ids: Mapping[str, int],
                    vocab_size: int, sbo_max_span_length: Optional[int],
                    leaf_query: str = "tail") -> "MaskingSpec":
        """Build from the ``train`` section, K, the tokenizer's special ids
        (:func:`graphmert.corpus.tokenizer.special_ids`: ``{"pad": 0, "unk": 1, …, "mask": 4}``) and
        ``model.leaf_query``. Every special token except [UNK] is never masked; [UNK] is never a
        random replacement."""
        if "mask" not in special_ids:
            raise ConfigError("tokenizer: no [MASK] token among the special tokens")
        never = tuple(sorted(int(v) for k, v in special_ids.items() if k != "unk"))
        return cls(train.mlm_probability, train.mnm_probability, train.span_geometric_p, num_leaves,
                   train.mask_token_fraction, train.random_token_fraction, int(special_ids["mask"]),
                   never, int(vocab_size), sbo_max_span_length, int(special_ids.get("unk", -1)),
                   leaf_query, int(special_ids.get("sep", -1)),
                   entity_mask_probability=train.entity_mask_probability)

    def for_evaluation(self) -> "MaskingSpec":
        """The same rates with every masked unit shown as [MASK] (no random/kept tokens) and no
        entity masking: held-out questions are asked as extraction asks them."""
        return dataclasses.replace(self, mask_token_fraction=1.0, random_token_fraction=0.0,
                                   entity_mask_probability=0.0)

    @cached_property
    def random_ids(self) -> np.ndarray:
        """Non-special token ids (not [UNK] either), the candidates for random replacement."""
        ids = np.arange(self.vocab_size, dtype=np.int64)
        return ids[~np.isin(ids, np.asarray(self.special_ids + (self.unk_id,), dtype=np.int64))]

    @cached_property
    def pmf(self) -> np.ndarray:
        """P(ℓ), ℓ = 1 … K: [K]."""
        return span_length_pmf(self.span_geometric_p, self.max_span_words)

    @cached_property
    def cdf(self) -> np.ndarray:
        return np.cumsum(self.pmf)

    @cached_property
    def mean_span_words(self) -> float:
        """E[ℓ] under :attr:`pmf`."""
        return float((np.arange(1, self.pmf.size + 1) * self.pmf).sum())


@dataclass
class GraphMask:
    """The masking of one graph (R roots, K leaf slots).

    Attributes:
        root_ids: [R] root tokens after replacement.  leaf_ids: [R, K] leaf tokens after replacement.
        root_masked: [R] bool, roots that are MLM targets (spans and masked entities).
        leaf_groups: [R] bool, roots whose whole leaf group is an MNM target.
        leaf_length: [R] leaves of each root in the masked graph (K for "fixed" queries; 0 for a
            tail-less group left out).
        spans: [S, 2] (start, end) root positions of each masked span, end exclusive, by start.
        span_words: [S] words per span.  span_mode: [S] MODE_MASK / MODE_RANDOM / MODE_KEEP.
        group_mode: [R] replacement mode of each masked leaf group (−1 where not masked).
    """

    root_ids: np.ndarray
    leaf_ids: np.ndarray
    root_masked: np.ndarray
    leaf_groups: np.ndarray
    spans: np.ndarray
    span_words: np.ndarray
    span_mode: np.ndarray
    group_mode: np.ndarray
    leaf_length: np.ndarray


def related_groups(g: LeafyChainGraph, chosen: np.ndarray) -> np.ndarray:
    """[R] bool: ``chosen`` plus every group sharing a masked group's tail, or its (head, tail) pair
    in either direction, until no more join (a group masked as a relative has relatives too; entity
    table, else the injections' provenance; groups without a known tail relate to nothing)."""
    if g.entities is not None:
        head, tail = g.entities.head, g.entities.tail
        keys = {i: (int(head[i]), int(tail[i])) for i in g.groups if tail[i] >= 0}
    else:
        keys = {inj.root: (inj.subject, inj.object) for inj in g.injections}
    out = chosen.copy()
    while True:
        hit_tails = {keys[i][1] for i in np.flatnonzero(out) if i in keys}
        hit_pairs = {frozenset(keys[i]) for i in np.flatnonzero(out) if i in keys}
        grown = [i for i, (h, t) in keys.items()
                 if not out[i] and (t in hit_tails or frozenset((h, t)) in hit_pairs)]
        if not grown:
            return out
        out[grown] = True


def root_words(g: LeafyChainGraph, special_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Whole words of the maskable roots: (start, end exclusive, segment) per word, [W] each."""
    n = g.num_roots
    ids = g.root_ids[:n]
    maskable = np.ones(n, dtype=bool)
    for s in special_ids:                      # a handful of ids: faster than np.isin on short rows
        maskable &= ids != s
    pos = np.flatnonzero(maskable)                                           # [P]
    if not pos.size:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    w = g.word_ids[pos]
    gap = np.diff(pos) != 1                                                  # [P−1]
    new_word = np.ones(pos.size, dtype=bool)
    new_word[1:] = gap | (w[1:] != w[:-1]) | (w[1:] < 0)
    last = np.ones(pos.size, dtype=bool)
    last[:-1] = new_word[1:]
    segment = np.concatenate([[0], np.cumsum(gap)])                          # [P]
    return pos[new_word], pos[last] + 1, segment[new_word]


def _free_runs(free: np.ndarray, seg_start: np.ndarray) -> np.ndarray:
    """For each word w: how many consecutive free words of w's segment start at w (0 if w is taken)."""
    W = free.size
    stops = np.flatnonzero(~free | seg_start)                                # blocking word indices
    stops = np.append(stops, W)
    nxt = stops[np.searchsorted(stops, np.arange(W), side="right")]          # first stop after w
    return np.where(free, nxt - np.arange(W), 0)


def _modes(rng: np.random.Generator, n: int, spec: MaskingSpec) -> np.ndarray:
    u = rng.random(n)
    return np.where(u < spec.mask_token_fraction, MODE_MASK,
                    np.where(u < spec.mask_token_fraction + spec.random_token_fraction,
                             MODE_RANDOM, MODE_KEEP))


def mask_graph(g: LeafyChainGraph, spec: MaskingSpec, rng: np.random.Generator,
               random_ids: Optional[np.ndarray] = None) -> GraphMask:
    """Mask one graph (see the module docstring). ``random_ids`` caches ``spec.random_ids``."""
    R = g.R
    random_ids = spec.random_ids if random_ids is None else random_ids
    root_ids, leaf_ids = g.root_ids.copy(), g.leaf_ids.copy()
    root_masked = np.zeros(R, dtype=bool)

    # -- roots: T spans of whole words ------------------------------------------------------------
    starts, ends, segment = root_words(g, spec.special_ids)
    W = starts.size
    spans, span_words = [], []
    if W and spec.mlm_probability > 0:
        n_tok = int((ends - starts).sum())
        pmf, cdf = spec.pmf, spec.cdf
        tokens_per_span = spec.mean_span_words * n_tok / W
        expected = spec.mlm_probability * n_tok / tokens_per_span
        T = int(expected) + int(rng.random() < expected - int(expected))
        free = np.ones(W, dtype=bool)
        seg_start = np.zeros(W, dtype=bool)
        seg_start[1:] = segment[1:] != segment[:-1]
        for _ in range(T):
            length = int(min(np.searchsorted(cdf, rng.random(), side="right"), pmf.size - 1)) + 1
            runs = _free_runs(free, seg_start)
            longest = int(runs.max())
            if longest == 0:
                break
            length = min(length, longest)
            candidates = np.flatnonzero(runs >= length)
            w0 = int(candidates[rng.integers(candidates.size)])
            free[w0:w0 + length] = False
            spans.append((int(starts[w0]), int(ends[w0 + length - 1])))
            span_words.append(length)
    order = sorted(range(len(spans)), key=lambda i: spans[i][0])
    span_arr = np.asarray([spans[i] for i in order], dtype=np.int64).reshape(-1, 2)
    words_arr = np.asarray([span_words[i] for i in order], dtype=np.int64)
    span_mode = _modes(rng, len(span_arr), spec)
    for (a, e), mode in zip(span_arr, span_mode):
        root_masked[a:e] = True
        if mode == MODE_MASK:
            root_ids[a:e] = spec.mask_id
        elif mode == MODE_RANDOM:
            root_ids[a:e] = random_ids[rng.integers(random_ids.size, size=e - a)]
    if spec.entity_mask_probability > 0 and g.entities is not None and len(g.entities.ids):
        _mask_entities(g, spec, rng, root_ids, root_masked)

    # -- leaves: whole groups -----------------------------------------------------------------------
    groups, group_mode, leaf_length = _mask_leaves(g, spec, rng, leaf_ids, random_ids)
    return GraphMask(root_ids, leaf_ids, root_masked, groups, span_arr, words_arr, span_mode, group_mode,
                     leaf_length)


def _mask_entities(g: LeafyChainGraph, spec: MaskingSpec, rng: np.random.Generator, root_ids: np.ndarray,
                   root_masked: np.ndarray) -> None:
    """Mask every mention of each entity drawn with p_e in ``root_ids`` / ``root_masked`` (in place;
    module docstring). No draw is made when p_e = 0, so the other masks stay as they were."""
    e = g.entities
    drawn = rng.random(len(e.ids)) < spec.entity_mask_probability                      # [E]
    for a, end, ent in e.mentions:
        if drawn[ent]:
            root_ids[a:end] = spec.mask_id
            root_masked[a:end] = True


def _mask_leaves(g: LeafyChainGraph, spec: MaskingSpec, rng: np.random.Generator, leaf_ids: np.ndarray,
                 random_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mask whole leaf groups of ``g`` in ``leaf_ids`` (in place): (masked groups [R], their
    replacement modes [R], leaf counts of the masked graph [R]); module docstring."""
    R, K = g.R, g.K
    has_group = g.relation_ids >= 0
    draw = rng.random(R) < spec.mnm_probability
    groups = related_groups(g, has_group & (g.leaf_length > 0) & draw)
    leaf_length = g.leaf_length.copy()
    group_mode = np.full(R, -1, dtype=np.int64)
    if spec.leaf_query == "fixed":
        groups |= has_group & (g.leaf_length == 0)            # tail-less groups exist only as queries
        idx = np.flatnonzero(groups)
        group_mode[idx] = MODE_MASK
        leaf_ids[idx] = spec.mask_id
        leaf_length[idx] = K
        return groups, group_mode, leaf_length
    idx = np.flatnonzero(groups)
    group_mode[idx] = _modes(rng, idx.size, spec)
    for i in idx:
        t = int(g.leaf_length[i])
        if group_mode[i] == MODE_MASK:
            leaf_ids[i, :t] = spec.mask_id
        elif group_mode[i] == MODE_RANDOM:
            leaf_ids[i, :t] = random_ids[rng.integers(random_ids.size, size=t)]
    return groups, group_mode, leaf_length


@dataclass
class MaskedBatch:
    """A collated batch with its masked-modelling targets (flat indices into the B·L positions)."""

    graph: GraphBatch          # masked inputs
    mlm_index: Tensor          # [N_r] long, masked roots
    mlm_labels: Tensor         # [N_r] long
    mnm_index: Tensor          # [N_l] long, masked leaves
    mnm_labels: Tensor         # [N_l] long
    sbo_left: Tensor           # [S] long, position before the span
    sbo_right: Tensor          # [S] long, position after the span
    sbo_rel_pos: Tensor        # [S] long, offset inside the span
    sbo_labels: Tensor         # [S] long
    sample_index: Tensor       # [B] long, dataset index of each graph
    mnm_end: Tensor            # [N_l] bool, the target is the end token of a "fixed" query
    candidates: CandidateQuery  # the masked groups with candidate tails (G groups; may be none)

    @property
    def counts(self) -> tuple[int, int, int, int]:
        """(masked roots N_r, masked leaves N_l, SBO targets S, candidate questions G)."""
        return (int(self.mlm_index.numel()), int(self.mnm_index.numel()), int(self.sbo_left.numel()),
                self.candidates.num_groups)

    @property
    def num_tokens(self) -> int:
        """Real (unpadded) positions of the batch."""
        return int(self.graph.attention_mask.sum())

    def to(self, device: torch.device | str) -> "MaskedBatch":
        kw = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return MaskedBatch(**{k: (v.to(device) if isinstance(v, (GraphBatch, CandidateQuery))
                                  else v.to(device, non_blocking=True)) for k, v in kw.items()})

    def pin_memory(self) -> "MaskedBatch":
        kw = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out = {}
        for k, v in kw.items():
            if isinstance(v, GraphBatch):
                out[k] = GraphBatch(**{f.name: (getattr(v, f.name).pin_memory()
                                                if isinstance(getattr(v, f.name), Tensor)
                                                else getattr(v, f.name)) for f in dataclasses.fields(v)})
            elif isinstance(v, CandidateQuery):
                out[k] = v.pin_memory()
            else:
                out[k] = v.pin_memory()
        return MaskedBatch(**out)


def _long(values: list) -> Tensor:
    return torch.as_tensor(np.concatenate(values) if values else np.zeros(0), dtype=torch.long)


class MaskingCollator:
    """``collate_fn``: items (epoch, index, graph) → :class:`MaskedBatch` (picklable for workers).

    Args:
        spec: the :class:`MaskingSpec`.  layout: ``graph.layout`` ("dense" or "packed").
        seed: ``train.seed``.  stream: :data:`TRAIN_STREAM` or :data:`EVAL_STREAM` (the "epoch" of an
            evaluation item is its pass number).
    """

    def __init__(self, spec: MaskingSpec, layout: str, seed: int, stream: int = TRAIN_STREAM) -> None:
        self.spec, self.layout, self.seed, self.stream = spec, layout, seed, stream
        self.random_ids = spec.random_ids

    def mask(self, epoch: int, index: int, g: LeafyChainGraph) -> GraphMask:
        return mask_graph(g, self.spec, sample_rng(self.seed, self.stream, epoch, index), self.random_ids)

    def __call__(self, items: Sequence[tuple[int, int, LeafyChainGraph]]) -> MaskedBatch:
        masked, masks = [], []
        for epoch, index, g in items:
            m = self.mask(epoch, index, g)
            masks.append(m)
            shown = m.leaf_length > 0                  # a group without leaves here is left out
            masked.append(dataclasses.replace(
                g, root_ids=m.root_ids, leaf_ids=m.leaf_ids, leaf_length=m.leaf_length,
                relation_ids=np.where(shown, g.relation_ids, -1),
                head_length=np.where(shown, g.head_length, 0), injections=[]))
        arrays = [layout_arrays(mg, self.layout) for mg in masked]
        batch = collate_graphs(masked, self.layout, arrays)
        L = batch.input_ids.shape[1]
        cols: dict[str, list] = {k: [] for k in ("mi", "ml", "ni", "nl", "ne", "sl", "sr", "sp", "sy")}
        positions = [a.leaf_position for a in arrays]                                    # [R, K] each
        for b, ((_, _, g), m) in enumerate(zip(items, masks)):
            base = b * L
            roots = np.flatnonzero(m.root_masked)
            cols["mi"].append(base + roots)                       # roots sit at index i in both layouts
            cols["ml"].append(g.root_ids[roots])
            if m.leaf_groups.any():
                index, labels, end = self._leaf_targets(g, m)
                cols["ni"].append(base + positions[b][index])
                cols["nl"].append(labels)
                cols["ne"].append(end)
            if self.spec.sbo_max_span_length is not None:
                for a, e in m.spans:
                    rel = np.arange(min(e - a, self.spec.sbo_max_span_length))
                    cols["sl"].append(np.full(rel.size, base + a - 1))
                    cols["sr"].append(np.full(rel.size, base + e))
                    cols["sp"].append(rel)
                    cols["sy"].append(g.root_ids[a + rel])
        return MaskedBatch(
            graph=batch, mlm_index=_long(cols["mi"]), mlm_labels=_long(cols["ml"]),
            mnm_index=_long(cols["ni"]), mnm_labels=_long(cols["nl"]),
            sbo_left=_long(cols["sl"]), sbo_right=_long(cols["sr"]), sbo_rel_pos=_long(cols["sp"]),
            sbo_labels=_long(cols["sy"]),
            sample_index=torch.as_tensor([int(i) for _, i, _ in items], dtype=torch.long),
            mnm_end=torch.as_tensor(np.concatenate(cols["ne"]) if cols["ne"] else np.zeros(0), dtype=torch.bool),
            candidates=candidate_query([g for _, _, g in items], positions,
                                       [np.flatnonzero(m.leaf_groups) for m in masks], L))

    def _leaf_targets(self, g: LeafyChainGraph, m: GraphMask) -> tuple[tuple, np.ndarray, np.ndarray]:
        """(leaf (root, slot) index arrays, labels, is-end flags) of the masked groups of ``g``: the
        tail tokens, and for "fixed" queries the end token after them (module docstring)."""
        K = g.K
        slots = np.arange(K)[None, :]
        tail = (slots < g.leaf_length[:, None]) & m.leaf_groups[:, None]                   # [R, K]
        end = np.zeros_like(tail)
        if self.spec.leaf_query == "fixed":
            end = (slots == g.leaf_length[:, None]) & m.leaf_groups[:, None]               # t < K only
        target = tail | end
        labels = np.where(end, self.spec.end_id, g.leaf_ids)[target]
        return np.nonzero(target), labels, end[target]
