"""With decay `none`, H-GAT off and learned positions, embeddings + roberta backbone reproduce
``transformers.RobertaModel`` hidden states after loading its weights."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from graphmert.config import ConfigError, ModelConfig
from graphmert.graph.batch import GraphBatch
from graphmert.model import build_model, load_hf_roberta_weights

transformers = pytest.importorskip("transformers")

PAD_HF = 1


def tiny_hf(vocab=99, attn="eager"):
    cfg = transformers.RobertaConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=3,
                                     num_attention_heads=4, intermediate_size=64,
                                     max_position_embeddings=40, type_vocab_size=1, pad_token_id=PAD_HF,
                                     layer_norm_eps=1e-5, hidden_act="gelu", attn_implementation=attn)
    torch.manual_seed(0)
    model = transformers.RobertaModel(cfg, add_pooling_layer=False).eval()
    with torch.no_grad():   # random non-trivial LayerNorm/bias values so the mapping is really pinned
        for name, p in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                p.add_(0.1 * torch.randn_like(p))
    return model


def roots_only_batch(input_ids, lengths):
    B, L = input_ids.shape
    mask = torch.arange(L)[None, :] < torch.tensor(lengths)[:, None]
    root_index = torch.where(mask, torch.arange(L)[None, :], 0)
    return GraphBatch(input_ids=input_ids, attention_mask=mask, root_index=root_index,
                      leaf_slot=torch.full((B, L), -1), relation_ids=torch.full((B, L), -1),
                      head_length=torch.zeros(B, L, dtype=torch.long),
                      hgat_edge_index=torch.empty(2, 0, dtype=torch.long),
                      hgat_edge_type=torch.empty(0, dtype=torch.long), layout="packed")


def ours_like(hf, kernel):
    c = hf.config
    cfg = ModelConfig(hidden_size=c.hidden_size, num_layers=c.num_hidden_layers,
                      num_heads=c.num_attention_heads, intermediate_size=c.intermediate_size,
                      layer_norm_eps=c.layer_norm_eps, decay_mode="none", hgat=False,
                      position_embedding="learned", max_position_embeddings=c.max_position_embeddings - 2,
                      attention_kernel=kernel, sbo_head=False)
    model = build_model(cfg, c.vocab_size, 0).eval()
    unused = load_hf_roberta_weights(model, hf.state_dict(), padding_idx=c.pad_token_id)
    assert all(k.startswith("embeddings.position_ids") or k.startswith("embeddings.token_type_ids")
               for k in unused), unused
    return model


@pytest.mark.parametrize("kernel", ["eager", "sdpa"])
@pytest.mark.parametrize("hf_attn", ["eager", "sdpa"])
def test_hidden_states_match_transformers(kernel, hf_attn):
    hf = tiny_hf(attn=hf_attn)
    ours = ours_like(hf, kernel)
    gen = torch.Generator().manual_seed(1)
    B, L = 3, 20
    lengths = [20, 13, 5]
    ids = torch.randint(3, 99, (B, L), generator=gen)
    mask = torch.arange(L)[None, :] < torch.tensor(lengths)[:, None]
    hf_ids = torch.where(mask, ids, PAD_HF)
    with torch.no_grad():
        want = hf(input_ids=hf_ids, attention_mask=mask.long()).last_hidden_state
        got = ours(roots_only_batch(torch.where(mask, ids, 0), lengths)).hidden
    assert torch.allclose(got[mask], want[mask], atol=1e-5, rtol=0), (got[mask] - want[mask]).abs().max()


def test_rejects_mismatching_models():
    hf = tiny_hf()
    c = hf.config
    base = ModelConfig(hidden_size=32, num_layers=3, num_heads=4, intermediate_size=64, decay_mode="none",
                       hgat=False, position_embedding="learned", sbo_head=False)
    with pytest.raises(ConfigError, match="model.position_embedding"):
        load_hf_roberta_weights(build_model(dataclasses.replace(base, position_embedding="none"),
                                            c.vocab_size, 0), hf.state_dict())
    with pytest.raises(ConfigError, match="model.num_layers"):
        load_hf_roberta_weights(build_model(dataclasses.replace(base, num_layers=2), c.vocab_size, 0),
                                hf.state_dict())
    with pytest.raises(ValueError, match="shape"):
        load_hf_roberta_weights(build_model(base, c.vocab_size + 1, 0), hf.state_dict())
