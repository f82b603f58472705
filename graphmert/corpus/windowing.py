"""Documents → chunks of R root tokens (``[CLS]`` + up to R−2 tokens + ``[SEP]``).

Two modes (``corpus.chunk_mode``):

* ``document`` (default): no chunk crosses a document, so provenance points to one document. A
  document longer than R−2 tokens becomes overlapping windows: window w covers tokens
  [w·s, w·s + R−2) with stride s = R−2−overlap; the last window is aligned to the document's end.
* ``concatenate`` (the paper's): all documents' tokens joined in order and cut every R−2 tokens.

``corpus.repeat_title`` (document mode): every window of a long document starts with the document's
t title tokens, and the windows (stride R−2−t−overlap) cover the rest: window w is the title plus
body tokens [t + s_w, t + s_w + R−2−t), so the first window is the document's first R−2 tokens as
before. An abstract's title names what the whole abstract is about (in BioRED a variant's disease is
often named only there), and without it a later window's entities never share a chunk with it. A
title longer than half a window (or one the text does not start with) is not repeated.

Each chunk keeps its source document id, per-token character offsets into that document's text,
whole-word ids, and every mention mapped to the root positions it covers. A mention is kept in a
window only if the window contains all of its tokens (overlapping windows make sure most mentions
that straddle a cut are complete in the neighbouring window).
"""

from __future__ import annotations

import bisect
from typing import Iterable, Iterator

from tokenizers import Tokenizer

from graphmert.config import CorpusConfig, GraphConfig
from graphmert.corpus.chunk import Chunk, ChunkMention
from graphmert.corpus.document import Document
from graphmert.corpus.tokenizer import special_ids
from graphmert.errors import noting

__all__ = ["TokenizedDocument", "tokenize_document", "chunk_documents", "window_starts", "title_tokens"]


class TokenizedDocument:
    """A document's WordPiece tokens (no specials) with char offsets and word ids."""

    __slots__ = ("doc", "ids", "offsets", "word_ids", "_starts", "_sentences")

    def __init__(self, doc: Document, ids: list[int], offsets: list[tuple[int, int]],
                 word_ids: list[int]) -> None:
        self.doc = doc
        self.ids = ids
        self.offsets = offsets
        self.word_ids = word_ids
        self._starts = [o[0] for o in offsets]
        self._sentences: list[int] | None = None

    def sentence_ids(self) -> list[int]:
        """[n] the index of the document sentence holding each token's first character (−1: none);
        empty when the document records no sentences (:attr:`Chunk.sentence_ids`)."""
        if self._sentences is None:
            spans = self.doc.sentences
            starts = [a for a, _ in spans]
            out = []
            for c in self._starts:
                i = bisect.bisect_right(starts, c) - 1
                out.append(i if i >= 0 and c < spans[i][1] else -1)
            self._sentences = out if spans else []
        return self._sentences

    def title_chars(self) -> int:
        """len(title) when the text starts with the title, else 0 (:attr:`Chunk.title_chars`)."""
        title = self.doc.title
        return len(title) if title and self.doc.text.startswith(title) else 0

    def __len__(self) -> int:
        return len(self.ids)

    def token_span(self, start: int, end: int) -> tuple[int, int] | None:
        """Tokens overlapping the char span [start, end) as [first, last+1), or None if none do."""
        i = bisect.bisect_right(self._starts, start) - 1
        if i < 0 or self.offsets[i][1] <= start:
            i += 1
        j = bisect.bisect_left(self._starts, end)
        if i >= j or i >= len(self.ids):
            return None
        return i, j


def tokenize_document(doc: Document, tokenizer: Tokenizer) -> TokenizedDocument:
    enc = tokenizer.encode(doc.text, add_special_tokens=False)
    word_ids = [-1 if w is None else w for w in enc.word_ids]
    return TokenizedDocument(doc, list(enc.ids), [tuple(o) for o in enc.offsets], word_ids)


def window_starts(n_tokens: int, width: int, overlap: int) -> list[int]:
    """Start token of each window; the last window ends exactly at ``n_tokens``."""
    if n_tokens <= width:
        return [0]
    stride = width - overlap
    starts = list(range(0, n_tokens - width, stride))
    starts.append(n_tokens - width)
    return starts


def _renumber_words(word_ids: list[int]) -> list[int]:
    out, mapping = [], {}
    for w in word_ids:
        out.append(-1 if w < 0 else mapping.setdefault(w, len(mapping)))
    return out


def title_tokens(td: TokenizedDocument, width: int) -> int:
    """How many leading tokens a window repeats as the title (``corpus.repeat_title``): the tokens
    of ``doc.title`` when the text starts with it and it fills at most half a window, else 0."""
    chars = td.title_chars()
    if not chars:
        return 0
    t = bisect.bisect_left(td._starts, chars)
    return t if 0 < t <= width // 2 else 0


def _window(td: TokenizedDocument, lo: int, hi: int, cls: int, sep: int, chunk_id: str,
            title: int = 0) -> Chunk:
    """Roots [CLS] + tokens [0, title) + tokens [lo, hi) + [SEP] (title 0: no repeated title)."""
    doc = td.doc
    pieces = [(0, title), (lo, hi)] if title else [(lo, hi)]
    ids = [cls] + [t for a, b in pieces for t in td.ids[a:b]] + [sep]
    offsets = [(-1, -1)] + [o for a, b in pieces for o in td.offsets[a:b]] + [(-1, -1)]
    words = [-1] + _renumber_words([w for a, b in pieces for w in td.word_ids[a:b]]) + [-1]
    sent = td.sentence_ids()
    sentences = [-1] + [i for a, b in pieces for i in sent[a:b]] + [-1] if sent else []
    mentions, root = [], 1                                      # root: where the piece starts
    for a, b in pieces:
        for m in doc.mentions:
            span = td.token_span(m.start, m.end)
            if span is None or span[0] < a or span[1] > b:
                continue
            mentions.append(ChunkMention(token_start=span[0] - a + root, token_end=span[1] - a + root,
                                         char_start=m.start, char_end=m.end, text=m.text, type=m.type,
                                         ids=list(m.ids), doc_id=doc.id))
        root += b - a
    texts = [doc.text[td.offsets[a][0]:td.offsets[b - 1][1]] for a, b in pieces]
    return Chunk(id=chunk_id, doc_id=doc.id, input_ids=ids, offsets=offsets, word_ids=words,
                 mentions=mentions, text=" ".join(texts), char_start=td.offsets[pieces[0][0]][0],
                 title_roots=title, sentence_ids=sentences, title_chars=td.title_chars())


def _document_mode(tds: Iterable[TokenizedDocument], width: int, overlap: int, cls: int,
                   sep: int, repeat_title: bool = False) -> Iterator[Chunk]:
    for td in tds:
        if len(td) == 0:
            continue
        with noting(f"document {td.doc.id}"):
            t = title_tokens(td, width) if repeat_title and len(td) > width else 0
            if t and width - t <= overlap:
                t = 0                                           # no stride left beside the title
            for w, s in enumerate(window_starts(len(td) - t, width - t, overlap)):
                lo = t + s if s else 0                          # the first window: tokens [0, width)
                yield _window(td, lo, min(s + width, len(td)), cls, sep, f"{td.doc.id}#{w}",
                              title=t if s else 0)


def _concatenate_mode(tds: Iterable[TokenizedDocument], width: int, cls: int,
                      sep: int) -> Iterator[Chunk]:
    # A stream of (tokenized doc, token index); cut every `width` tokens.
    buf: list[tuple[TokenizedDocument, int]] = []
    n = 0

    def emit(items: list[tuple[TokenizedDocument, int]], k: int) -> Chunk:
        ids = [cls] + [td.ids[i] for td, i in items] + [sep]
        offsets = [(-1, -1)] + [td.offsets[i] for td, i in items] + [(-1, -1)]
        doc_ids = [""] + [td.doc.id for td, _ in items] + [""]
        sentences = [-1] + [td.sentence_ids()[i] if td.sentence_ids() else -1 for td, i in items] + [-1]
        raw_words = [-1] + [(id(td), td.word_ids[i]) for td, i in items] + [-1]
        mapping: dict = {}
        words = [-1 if w == -1 else mapping.setdefault(w, len(mapping)) for w in raw_words]
        mentions = []
        # Mentions fully inside this chunk, per contributing document.
        by_doc: dict[int, tuple[TokenizedDocument, int, int, int]] = {}
        for pos, (td, i) in enumerate(items, start=1):
            t = by_doc.get(id(td))
            by_doc[id(td)] = (td, i if t is None else t[1], i + 1, pos if t is None else t[3])
        texts = []
        for td, lo, hi, first_pos in by_doc.values():
            texts.append(td.doc.text[td.offsets[lo][0]:td.offsets[hi - 1][1]])
            for m in td.doc.mentions:
                span = td.token_span(m.start, m.end)
                if span is None or span[0] < lo or span[1] > hi:
                    continue
                mentions.append(ChunkMention(token_start=first_pos + span[0] - lo,
                                             token_end=first_pos + span[1] - lo,
                                             char_start=m.start, char_end=m.end, text=m.text,
                                             type=m.type, ids=list(m.ids), doc_id=td.doc.id))
        return Chunk(id=f"concat#{k}", doc_id=items[0][0].doc.id, input_ids=ids, offsets=offsets,
                     word_ids=words, mentions=mentions, doc_ids=doc_ids, text=" ".join(texts),
                     char_start=items[0][0].offsets[items[0][1]][0], sentence_ids=sentences)

    k = 0
    for td in tds:
        for i in range(len(td)):
            buf.append((td, i))
            n += 1
            if n == width:
                yield emit(buf, k)
                k += 1
                buf, n = [], 0
    if buf:
        yield emit(buf, k)


def _tokenized(docs: Iterable[Document], tokenizer: Tokenizer) -> Iterator[TokenizedDocument]:
    """:func:`tokenize_document` of each document; an error names the document (a PEP 678 note)."""
    for d in docs:
        with noting(f"document {d.id}"):
            td = tokenize_document(d, tokenizer)
        yield td


def chunk_documents(docs: Iterable[Document], tokenizer: Tokenizer, corpus_cfg: CorpusConfig,
                    graph_cfg: GraphConfig) -> Iterator[Chunk]:
    """Tokenise documents and cut them into chunks of at most ``graph.num_roots`` root tokens."""
    sp = special_ids(tokenizer)
    width = graph_cfg.num_roots - 2
    tds = _tokenized(docs, tokenizer)
    if corpus_cfg.chunk_mode == "document":
        return _document_mode(tds, width, corpus_cfg.chunk_overlap, sp["cls"], sp["sep"],
                              corpus_cfg.repeat_title)
    return _concatenate_mode(tds, width, sp["cls"], sp["sep"])
