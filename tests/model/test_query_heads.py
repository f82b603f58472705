"""The model's parts for "fixed" leaf queries: the entity-type embedding (filled by collate, adding a
row only at the roots of entity mentions), the config rule tying the candidate head to
``leaf_query = "fixed"``, the parameter breakdown with the new heads, and a checkpoint round trip
that keeps the candidate head, the copy head and the entity-type table, and layout invariance of
the candidate scores and copy-mixed leaf log-probabilities."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, models

from graphmert.config import ConfigError, ModelConfig, TrainConfig, load_config
from graphmert.graph.collate import collate_graphs
from graphmert.graph.layout import SALIENCE_BUCKETS, layout_arrays
from graphmert.kg.schema import ENTITY_TYPES, MENTION_TYPE_CATEGORIES, entity_type_id
from graphmert.model import build_model, load_checkpoint, parameter_breakdown, save_checkpoint
from graphmert.model.embeddings import GraphEmbeddings
from graphmert.graph.candidates import candidate_query
from graphmert.train.masking import MaskingCollator, MaskingSpec
from entity_graphs import CLS, MASK, PAD, SEP, UNK, as_queries, graph_a, graph_b, graph_c

V, NREL, H = 60, 3, 16
CFG = ModelConfig(hidden_size=H, num_layers=2, num_heads=2, intermediate_size=32, max_leaf_slots=3,
                  leaf_query="fixed", entity_type_embedding=True, candidate_head=True, leaf_copy=True)
QUERIES = [[1, 6], [1], [2, 4]]


def shown_batch(layout: str = "packed"):
    graphs = [graph_a(), graph_b(), graph_c()]
    shown = [as_queries(g, q) for g, q in zip(graphs, QUERIES)]
    batch = collate_graphs(shown, layout)
    L = batch.input_ids.shape[1]
    cq = candidate_query(graphs, [layout_arrays(g, layout).leaf_position for g in shown],
                         [np.asarray(q) for q in QUERIES], L)
    return graphs, batch, cq


# -- entity types ------------------------------------------------------------------------------------


def test_entity_type_table_and_ids():
    assert ENTITY_TYPES[0] == "" and ENTITY_TYPES[-1] == "other"
    assert set(MENTION_TYPE_CATEGORIES.values()) == set(ENTITY_TYPES[1:-1])
    assert entity_type_id("") == 0
    assert entity_type_id("biolink:NoSuchThing") == len(ENTITY_TYPES) - 1
    for cat in MENTION_TYPE_CATEGORIES.values():
        assert ENTITY_TYPES[entity_type_id(cat)] == cat


@pytest.mark.parametrize("layout", ["dense", "packed"])
def test_collate_fills_entity_types_at_mention_roots_only(layout):
    graphs, batch, _ = shown_batch(layout)
    want = np.zeros(batch.input_ids.shape, dtype=np.int64)
    want[0, [1, 2, 6]] = 1                    # A0
    want[0, 4] = 3                            # A1 and A3 share root 4: the last mention listed wins
    want[0, 8] = 2                            # A2
    want[2, 2] = 2                            # C0
    want[2, [1, 5, 6]] = 4                    # C1
    assert batch.entity_type.tolist() == want.tolist()      # leaves, padding, graph b: 0
    assert batch.entity_salience.shape == batch.input_ids.shape
    assert (batch.entity_salience[want == 0] == 0).all() and (batch.entity_salience[want > 0] > 0).all()


def test_entity_type_embedding_changes_only_mention_roots():
    """With the table on: e(types) − e(all types 0) is nonzero exactly at the roots inside mentions."""
    torch.manual_seed(0)
    emb = GraphEmbeddings(V, H, num_entity_types=len(ENTITY_TYPES), dropout=0.0).eval()
    _, batch, _ = shown_batch()
    args = (batch.input_ids, batch.root_index, batch.leaf_slot)
    with torch.no_grad():
        typed = emb(*args, batch.entity_type)
        untyped = emb(*args, torch.zeros_like(batch.entity_type))
    changed = (typed - untyped).abs().amax(-1) > 0
    assert torch.equal(changed, batch.entity_type > 0)
    # the rows added are the table's: same type, same row (two roots of "A0" with equal tokens agree)
    same_token = batch.input_ids.clone()
    same_token[0, 6] = same_token[0, 1]
    with torch.no_grad():
        again = emb(same_token, batch.root_index, batch.leaf_slot, batch.entity_type)
    assert torch.equal(again[0, 6], again[0, 1])


def test_entity_type_embedding_through_the_model():
    """model.embed without H-GAT: only mention roots move when the types are set; a model without the
    table ignores them."""
    torch.manual_seed(0)
    model = build_model(dataclasses.replace(CFG, hgat=False), V, NREL).eval()
    plain = build_model(dataclasses.replace(CFG, hgat=False, entity_type_embedding=False), V, NREL).eval()
    _, batch, _ = shown_batch()
    zeroed = dataclasses.replace(batch, entity_type=torch.zeros_like(batch.entity_type))
    with torch.no_grad():
        changed = (model.embed(batch) - model.embed(zeroed)).abs().amax(-1) > 0
        assert torch.equal(changed, batch.entity_type > 0)
        assert torch.equal(plain.embed(batch), plain.embed(zeroed))
        assert torch.equal(plain.embed(batch), plain.embed(dataclasses.replace(batch, entity_type=None)))
    assert model.embeddings.entity_type_embeddings.weight.shape == (len(ENTITY_TYPES), H)
    assert plain.embeddings.entity_type_embeddings is None


# -- config ------------------------------------------------------------------------------------------


def test_candidate_head_needs_fixed_leaf_queries():
    with pytest.raises(ConfigError, match=r"model\.candidate_head.*leaf_query"):
        load_config(overrides=["model.candidate_head=true"])
    cfg = load_config(overrides=["model.candidate_head=true", "model.leaf_query=fixed"])
    assert cfg.model.candidate_head and cfg.model.leaf_query == "fixed"
    with pytest.raises(ConfigError, match=r"model\.leaf_query"):
        load_config(overrides=["model.leaf_query=short"])


def test_new_keys_default_to_the_paper_model():
    m = ModelConfig()
    assert (m.leaf_query, m.entity_type_embedding, m.candidate_head, m.leaf_copy) == ("tail", False, False,
                                                                                      False)
    model = build_model(dataclasses.replace(CFG, leaf_query="tail", entity_type_embedding=False,
                                            candidate_head=False, leaf_copy=False), V, NREL)
    assert model.candidate_head is None and model.leaf_copy is None
    with pytest.raises(ValueError, match="candidate_head"):
        model.candidate_logits(torch.zeros(1, 2, H), shown_batch()[2])


# -- parameters --------------------------------------------------------------------------------------


@pytest.mark.parametrize("salience", [False, True])
def test_parameter_breakdown_adds_up_with_the_new_heads(salience):
    cfg = dataclasses.replace(CFG, salience_embedding=salience)
    with_heads = parameter_breakdown(build_model(cfg, V, NREL))
    bare = parameter_breakdown(build_model(dataclasses.replace(
        cfg, entity_type_embedding=False, salience_embedding=False, candidate_head=False,
        leaf_copy=False), V, NREL))
    candidate = 2 * (H * H + H) + (H + 1) + 4            # W_q, W_k (+ biases), w_∅ + b_∅, w (no bias)
    copy = 2 * (H * H + H) + (H + 1)                     # W_q, W_k (+ biases), w_g + b_g
    assert with_heads["heads"] - bare["heads"] == candidate + copy
    assert with_heads["embeddings"] - bare["embeddings"] == (len(ENTITY_TYPES)
                                                             + salience * SALIENCE_BUCKETS) * H
    assert with_heads["encoder"] == bare["encoder"] and with_heads["relations"] == bare["relations"]
    assert with_heads["total"] == sum(v for k, v in with_heads.items() if k != "total")
    assert with_heads["total"] - bare["total"] == candidate + copy + (len(ENTITY_TYPES)
                                                                      + salience * SALIENCE_BUCKETS) * H


# -- checkpoint --------------------------------------------------------------------------------------


@pytest.fixture()
def tokenizer_file(tmp_path: Path) -> Path:
    path = tmp_path / "tok.json"
    Tokenizer(models.WordPiece({f"tok{i}": i for i in range(V)}, unk_token="tok0")).save(str(path))
    return path


def test_checkpoint_round_trip_keeps_the_new_heads(tmp_path, tokenizer_file):
    cfg = dataclasses.replace(CFG, salience_embedding=True)
    torch.manual_seed(0)
    model = build_model(cfg, V, NREL)
    with torch.no_grad():                      # move every parameter off its init (feature weights: 0)
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    model.eval()
    rmap = {"r0": 0, "r1": 1, "r2": 2}
    ckpt = save_checkpoint(tmp_path / "ckpt", model, cfg, tokenizer_file, rmap)
    loaded, info = load_checkpoint(ckpt, expected_vocab=V, expected_relations=rmap, expected_config=cfg)
    assert info["config"] == cfg
    assert loaded.candidate_head is not None and loaded.leaf_copy is not None
    assert loaded.embeddings.entity_type_embeddings is not None
    assert loaded.state_dict().keys() == model.state_dict().keys()
    for k, v in model.state_dict().items():
        assert torch.equal(v, loaded.state_dict()[k]), k
    for prefix in ("candidate_head.", "leaf_copy.", "embeddings.entity_type_embeddings."):
        assert any(k.startswith(prefix) for k in model.state_dict()), prefix
    _, batch, cq = shown_batch()
    index = torch.nonzero(batch.leaf_slot.reshape(-1) >= 0).flatten()
    with torch.no_grad():
        outs = []
        for m in (model, loaded):
            out = m(batch, logits_at=index)
            outs.append((out.hidden, *m.candidate_logits(out.hidden, cq),
                         m.leaf_log_probs(out.hidden, batch, index, out.logits)))
    for a, b in zip(*outs):
        assert torch.equal(a, b)
    # a config without the heads does not load these weights silently
    with pytest.raises(Exception, match="candidate_head"):
        load_checkpoint(ckpt, expected_config=dataclasses.replace(cfg, candidate_head=False))


# -- layouts -----------------------------------------------------------------------------------------


def test_candidate_scores_and_leaf_log_probs_do_not_depend_on_the_layout():
    """The same masked items in the dense and the packed layout give the same candidate scores and
    the same copy-mixed leaf log-probabilities, target by target (roots keep their index; leaves move)."""
    spec = MaskingSpec.from_config(TrainConfig(mlm_probability=0.2, mnm_probability=1.0), 3,
                                   {"pad": PAD, "unk": UNK, "cls": CLS, "sep": SEP, "mask": MASK}, V, None,
                                   leaf_query="fixed")
    torch.manual_seed(0)
    cfg = dataclasses.replace(CFG, salience_embedding=True, leaf_slot_embedding=True)
    model = build_model(cfg, V, NREL).eval()
    with torch.no_grad():
        model.candidate_head.features.weight.normal_()
    items = [(0, i, g) for i, g in enumerate([graph_a(), graph_b(), graph_c()])]
    got = {}
    for layout in ("dense", "packed"):
        batch = MaskingCollator(spec, layout, seed=0)(items)
        with torch.no_grad():
            out = model(batch.graph, logits_at=batch.mnm_index)
            got[layout] = (*model.candidate_logits(out.hidden, batch.candidates),
                           model.leaf_log_probs(out.hidden, batch.graph, batch.mnm_index, out.logits),
                           batch.mnm_labels)
    (s_d, n_d, lp_d, y_d), (s_p, n_p, lp_p, y_p) = got["dense"], got["packed"]
    assert torch.equal(y_d, y_p) and s_d.numel() == 6
    for a, b in ((s_d, s_p), (n_d, n_p), (lp_d, lp_p)):
        assert (a - b).abs().max() < 1e-4
