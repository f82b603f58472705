"""WordPiece tokenizer: trained on the ingested corpus with HF ``tokenizers``, or loaded from a path.

Nothing is downloaded. The tokenizer is BERT-style: BertNormalizer (lower-casing from config),
BertPreTokenizer (whitespace + punctuation), WordPiece with ``##`` continuation, the special tokens
``[PAD] [UNK] [CLS] [SEP] [MASK]`` at ids 0..4, and a ``[CLS] $A [SEP]`` post-processor.

Training. HF ``tokenizers``' WordPiece trainer breaks ties between equally frequent pairs in hash
order, which is seeded per process: two trainings on the same corpus give different vocabularies. So
the vocabulary is learned here with the same algorithm (BPE-style merges over the words produced by
the tokenizer's own normalizer and pre-tokenizer; the first character of a word as is, the others with
``##``; merge the most frequent adjacent pair, keep merging while the pair occurs ≥ ``min_frequency``
times and the vocabulary is below ``vocab_size``) with ties broken by the pair's text, and ids assigned
canonically (special tokens, then the alphabet, then merges in order). The result is a plain HF
``tokenizers`` WordPiece tokenizer, and the same corpus and config give a byte-identical
``tokenizer.json``.
"""

from __future__ import annotations

import heapq
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from graphmert.config import ConfigError, TokenizerConfig
from graphmert.io import atomic_write_text

__all__ = [
    "SPECIAL_TOKENS",
    "PAD", "UNK", "CLS", "SEP", "MASK",
    "TokenizerError",
    "train_tokenizer",
    "learn_wordpiece_vocab",
    "load_tokenizer",
    "save_tokenizer",
    "special_ids",
]

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = [PAD, UNK, CLS, SEP, MASK]


class TokenizerError(ConfigError):
    """A tokenizer file is missing, unreadable, or lacks the special tokens."""


def _assemble(vocab: dict[str, int], lowercase: bool) -> Tokenizer:
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token=UNK, continuing_subword_prefix="##"))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=None, lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single=f"{CLS} $A {SEP}", pair=f"{CLS} $A {SEP} $B:1 {SEP}:1",
        special_tokens=[(CLS, vocab[CLS]), (SEP, vocab[SEP])],
    )
    tok.decoder = decoders.WordPiece(prefix="##")
    return tok


def _merge_word(symbols: list[str], a: str, b: str, merged: str) -> list[str]:
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
            out.append(merged)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def learn_wordpiece_vocab(word_counts: dict[str, int], vocab_size: int,
                          min_frequency: int) -> list[str]:
    """Deterministic BPE-style WordPiece vocabulary (see module docstring). Returns tokens by id."""
    words = sorted(word_counts)
    counts = [word_counts[w] for w in words]
    splits = [[w[0]] + ["##" + c for c in w[1:]] for w in words]
    alphabet = sorted({s for sp in splits for s in sp})
    vocab = SPECIAL_TOKENS + [t for t in alphabet if t not in SPECIAL_TOKENS]
    known = set(vocab)
    pair_count: dict[tuple[str, str], int] = defaultdict(int)
    pair_words: dict[tuple[str, str], set[int]] = defaultdict(set)
    for wi, sp in enumerate(splits):
        for p in zip(sp, sp[1:]):
            pair_count[p] += counts[wi]
            pair_words[p].add(wi)
    heap = [(-c, p) for p, c in pair_count.items()]
    heapq.heapify(heap)
    while len(vocab) < vocab_size and heap:
        neg, pair = heapq.heappop(heap)
        if -neg != pair_count.get(pair, 0):
            continue                                  # stale heap entry
        if -neg < min_frequency:
            break
        a, b = pair
        merged = a + (b[2:] if b.startswith("##") else b)
        changed: set[tuple[str, str]] = set()
        for wi in sorted(pair_words.pop(pair)):
            sp = splits[wi]
            new = _merge_word(sp, a, b, merged)
            if len(new) == len(sp):
                continue
            c = counts[wi]
            for p in zip(sp, sp[1:]):
                pair_count[p] -= c
                changed.add(p)
            for p in zip(new, new[1:]):
                pair_count[p] += c
                pair_words[p].add(wi)
                changed.add(p)
            splits[wi] = new
        pair_count.pop(pair, None)
        for p in sorted(changed - {pair}):
            if pair_count[p] > 0:
                heapq.heappush(heap, (-pair_count[p], p))
        if merged not in known:
            known.add(merged)
            vocab.append(merged)
    return vocab


def train_tokenizer(texts: Iterable[str], cfg: TokenizerConfig) -> Tokenizer:
    """Train a WordPiece tokenizer on ``texts`` (deterministic; see module docstring)."""
    normalizer = normalizers.BertNormalizer(lowercase=cfg.lowercase, strip_accents=None)
    pre = pre_tokenizers.BertPreTokenizer()
    word_counts: Counter[str] = Counter()
    for text in texts:
        word_counts.update(w for w, _ in pre.pre_tokenize_str(normalizer.normalize_str(text)))
    tokens = learn_wordpiece_vocab(dict(word_counts), cfg.vocab_size, cfg.min_frequency)
    return _assemble({t: i for i, t in enumerate(tokens)}, cfg.lowercase)


def _check_specials(tok: Tokenizer, path: Path) -> Tokenizer:
    vocab = tok.get_vocab()
    missing = [t for t in SPECIAL_TOKENS if t not in vocab]
    if missing:
        raise TokenizerError(f"{path}: tokenizer lacks special tokens {missing}; "
                             f"required: {SPECIAL_TOKENS}")
    return tok


def load_tokenizer(path: str | Path, lowercase: bool = True) -> Tokenizer:
    """Load ``tokenizer.json`` (HF tokenizers) or a BERT ``vocab.txt`` (one token per line)."""
    path = Path(path)
    if path.is_dir():
        for name in ("tokenizer.json", "vocab.txt"):
            if (path / name).exists():
                path = path / name
                break
    if not path.is_file():
        raise TokenizerError(f"{path}: tokenizer file not found (expected tokenizer.json or vocab.txt)")
    if path.suffix == ".txt":
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as e:
            raise TokenizerError(f"{path}: not UTF-8 text ({e})") from None
        vocab: dict[str, int] = {}
        for line in lines:
            token = line.rstrip("\n")
            if token and token not in vocab:
                vocab[token] = len(vocab)
        missing = [t for t in SPECIAL_TOKENS if t not in vocab]
        if missing:
            raise TokenizerError(f"{path}: vocabulary lacks special tokens {missing}")
        return _assemble(vocab, lowercase)
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as e:  # tokenizers raises plain Exception subclasses
        raise TokenizerError(f"{path}: not a valid tokenizer.json ({e})") from None
    return _check_specials(tok, path)


def save_tokenizer(tok: Tokenizer, path: str | Path) -> Path:
    """Write ``tokenizer.json`` atomically, with stable formatting."""
    data = json.loads(tok.to_str())
    return atomic_write_text(path, json.dumps(data, ensure_ascii=False, indent=1, sort_keys=False) + "\n")


def special_ids(tok: Tokenizer) -> dict[str, int]:
    """``{"pad": 0, "unk": 1, "cls": 2, "sep": 3, "mask": 4}`` for the given tokenizer."""
    vocab = tok.get_vocab()
    return {name.strip("[]").lower(): vocab[name] for name in SPECIAL_TOKENS}
