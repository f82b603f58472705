"""WordPiece tokenizer: deterministic training, special tokens, loading from tokenizer.json/vocab.txt."""

from __future__ import annotations

import pytest

from graphmert.config import TokenizerConfig
from graphmert.corpus.tokenizer import (SPECIAL_TOKENS, TokenizerError, load_tokenizer,
                                        save_tokenizer, special_ids, train_tokenizer)

TEXTS = [
    "Type 2 diabetes mellitus (T2DM) is treated with metformin and sitagliptin.",
    "Metformin activates AMPK and lowers hepatic glucose production in T2DM.",
    "Insulin resistance in obesity involves IRS1, PPARG and TNF signalling.",
    "GLP-1 receptor agonists such as liraglutide reduce body weight.",
] * 5


def test_training_is_byte_identical(tmp_path):
    cfg = TokenizerConfig(vocab_size=300, min_frequency=1)
    a = save_tokenizer(train_tokenizer(TEXTS, cfg), tmp_path / "a.json").read_bytes()
    b = save_tokenizer(train_tokenizer(list(TEXTS), cfg), tmp_path / "b.json").read_bytes()
    assert a == b


def test_special_tokens_and_template():
    tok = train_tokenizer(TEXTS, TokenizerConfig(vocab_size=300, min_frequency=1))
    assert special_ids(tok) == {"pad": 0, "unk": 1, "cls": 2, "sep": 3, "mask": 4}
    enc = tok.encode("metformin lowers glucose")
    assert enc.tokens[0] == "[CLS]" and enc.tokens[-1] == "[SEP]"
    plain = tok.encode("Metformin lowers glucose", add_special_tokens=False)
    assert plain.tokens[0].startswith("metformin"[:2])  # lower-cased
    # offsets point into the original (cased) text
    s, e = plain.offsets[0]
    assert "Metformin lowers glucose"[s:e].lower() == plain.tokens[0].lstrip("#")


def test_vocab_size_respected():
    tok = train_tokenizer(TEXTS, TokenizerConfig(vocab_size=120, min_frequency=1))
    assert tok.get_vocab_size() <= 120


def test_load_json_and_vocab_txt(tmp_path):
    tok = train_tokenizer(TEXTS, TokenizerConfig(vocab_size=300, min_frequency=1))
    p = save_tokenizer(tok, tmp_path / "tokenizer.json")
    again = load_tokenizer(tmp_path)  # a folder containing tokenizer.json works too
    assert again.encode("metformin AMPK").ids == tok.encode("metformin AMPK").ids
    vocab = sorted(tok.get_vocab().items(), key=lambda kv: kv[1])
    (tmp_path / "vocab.txt").write_text("\n".join(t for t, _ in vocab) + "\n")
    from_txt = load_tokenizer(tmp_path / "vocab.txt")
    assert from_txt.encode("metformin AMPK").ids == tok.encode("metformin AMPK").ids
    assert p.exists()


def test_bad_tokenizer_files(tmp_path):
    with pytest.raises(TokenizerError, match="not found"):
        load_tokenizer(tmp_path / "nope.json")
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(TokenizerError, match="broken.json: not a valid tokenizer.json"):
        load_tokenizer(tmp_path / "broken.json")
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\nhello\n")
    with pytest.raises(TokenizerError, match=r"lacks special tokens \['\[CLS\]', '\[SEP\]', '\[MASK\]'\]"):
        load_tokenizer(tmp_path / "vocab.txt")
    assert SPECIAL_TOKENS == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
