"""Does pretraining the recognizer's tok2vec on raw text help it? (issue #49, deliverable 4)

    .venv/bin/python experiments/recognizer_pretrain.py --minutes 12 --save build/pretrain \
        [OVERRIDE ...] [--out F]                                                              # ~25 min
    .venv/bin/python experiments/raw_entities.py --recognizer build/pretrain/pretrained --variant shipped

The recognizer (configs/biored-raw.yaml) learns its tok2vec from about 1,900 annotated abstracts
only; systems that reach recognition F1 0.85-0.90 start from encoders pretrained on raw text, which
this project cannot download. spaCy's own answer for that case is ``spacy pretrain``: train the
tok2vec to predict each word's first and last characters from its context (the "characters"
objective, ``spacy.PretrainCharacters.v1``; masked-language-model style) on raw text, then start
the NER training from those weights.

This script does that by hand rather than through ``spacy pretrain``, because the recognizer's
pipeline is built in code (its infixes, and the word vectors ``ner.vectors`` learns in the run,
which the tok2vec reads) and the CLI builds its own from a config file:

1. the word vectors exactly as the ``ner`` stage learns them (the texts of ``ner.paths`` less the
   82 held-out BioRED-train documents of ``experiments/recognizer.py``);
2. the tok2vec of configs/biored-raw.yaml's ``ner`` component (beside those vectors) is pretrained
   with the characters objective (4 characters, hidden 300, dropout 0.2; Adam 0.001, averaged) for
   ``--minutes`` on those texts plus ``pubmed_unlabeled`` (8,274 further texts; each text's first
   5,000 characters), never a held-out document;
3. the recognizer trains as ``experiments/recognizer.py --variant shipped`` does, each model
   starting from the pretrained tok2vec (its projection to the parser's width stays fresh), and is
   saved to ``--save``/pretrained, to be scored with every shipped rule by ``raw_entities.py``;
   its rows here are ``recognizer.py``'s (strict spans, as trained and with one sense per document).

Dotted ``ner.*`` overrides apply on top of the config (the smoke test's tiny recognizer).

The record is docs/experiments/recognizer-training.md ("Measured, not kept: a pretrained tok2vec").
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _study import lent_documents, print_table, recognizer_documents, require_shared, write_json  # noqa: E402
from recognizer import CONFIG, score_row  # noqa: E402

import graphmert.ner.recognizer as rec  # noqa: E402
from graphmert.config import load_config  # noqa: E402
from graphmert.corpus.readers import read_corpus  # noqa: E402
from graphmert.ner.vectors import use_vectors  # noqa: E402


def _inner_tok2vec(nlp):
    """The ``ner`` component's own tok2vec: the parser wraps it as chain(tok2vec, list2array,
    Linear), and the pretraining objective reads the per-document arrays before that wrapper."""
    return nlp.get_pipe("ner").model.get_ref("tok2vec").layers[0]


def pretrain(texts: list[str], cfg, vectors, minutes: float, seed: int) -> bytes:
    """The tok2vec's weights (the optimizer's averages) after ``minutes`` of the characters objective."""
    from spacy.util import minibatch, registry
    from thinc.api import Adam, set_dropout_rate

    nlp = rec.recognizer_nlp(list(cfg.categories), cfg)
    if vectors is not None:
        use_vectors(nlp, vectors)
    with nlp.select_pipes(enable=[]):
        nlp.initialize()
    tok2vec = _inner_tok2vec(nlp)
    probe = [nlp.make_doc("Give it a doc to infer shapes")]
    tok2vec.initialize(X=probe)
    objective = registry.architectures.get("spacy.PretrainCharacters.v1")(
        maxout_pieces=3, hidden_size=300, n_characters=4)
    model = objective(nlp.vocab, tok2vec)
    model.initialize(X=probe)
    set_dropout_rate(model, 0.2)
    optimizer = Adam(0.001, use_averages=True, grad_clip=1.0, L2=0.01)
    loss_of = model.attrs["loss"]
    rng, start, words, epoch = random.Random(seed), time.monotonic(), 0, 0
    texts = list(texts)
    while time.monotonic() - start < 60 * minutes:
        epoch += 1
        rng.shuffle(texts)
        for step, batch in enumerate(minibatch(texts, size=64), 1):
            docs = [nlp.make_doc(t[:5000]) for t in batch]
            predictions, backprop = model.begin_update(docs)
            loss, gradients = loss_of(model.ops, docs, predictions)
            backprop(gradients)
            model.finish_update(optimizer)
            n = sum(len(d) for d in docs)
            words += n
            if step % 50 == 0:
                print(f"pretrain: epoch {epoch}, {words} words, loss/word {float(loss) / n:.3f}, "
                      f"{words / (time.monotonic() - start):.0f} words/s", flush=True)
            if time.monotonic() - start >= 60 * minutes:
                break
    print(f"pretrain: {words} words in {(time.monotonic() - start) / 60:.1f} min ({epoch} epochs started)")
    with model.use_params(optimizer.averages):
        return tok2vec.to_bytes()


def starting_from(weights: bytes) -> None:
    """Make every recognizer pipeline built from now on (:func:`graphmert.ner.recognizer.recognizer_nlp`)
    load ``weights`` into its tok2vec right after ``nlp.initialize``."""
    build = rec.recognizer_nlp

    def recognizer_nlp(categories, cfg=None):
        nlp = build(categories, cfg)
        initialize = nlp.initialize

        def initialized(*args, **kwargs):
            optimizer = initialize(*args, **kwargs)
            _inner_tok2vec(nlp).from_bytes(weights)
            return optimizer

        nlp.initialize = initialized
        return nlp

    rec.recognizer_nlp = recognizer_nlp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=12.0, help="pretraining wall-clock budget")
    ap.add_argument("--save", type=Path, required=True, metavar="DIR",
                    help="writes DIR/tok2vec.bin and the recognizer DIR/pretrained")
    ap.add_argument("overrides", nargs="*", metavar="OVERRIDE", help="dotted ner.* overrides")
    ap.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    a = ap.parse_args()
    cfg = load_config(CONFIG, a.overrides).ner
    split = recognizer_documents(cfg.sources)
    texts = split["texts"]
    more = [d.text for d in read_corpus([require_shared("pubmed_unlabeled", "texts.jsonl.gz")])]
    print(f"{len(split['train'])} training documents, {len(split['held'])} held out; pretraining on "
          f"{len(texts)} + {len(more)} texts", flush=True)
    vectors = rec._word_vectors(texts, cfg, "experiments/recognizer_pretrain.py") if cfg.vectors else None
    weights = pretrain(texts + more, cfg, vectors, a.minutes, cfg.seed)
    a.save.mkdir(parents=True, exist_ok=True)
    (a.save / "tok2vec.bin").write_bytes(weights)
    starting_from(weights)
    t0 = time.monotonic()
    recognizer, report = rec.train_recognizer(split["train"], cfg, extra=lent_documents(split, cfg.part_sources),
                                              texts=texts)
    recognizer.save(a.save / "pretrained", report)
    print(f"trained in {(time.monotonic() - t0) / 60:.1f} min; selection F1 {report['selection']['f']}")
    for p in report["parts"]:
        print(f"  {' + '.join(p['categories'])}: {p['epochs_run']} epochs ({p['stopped']}), best "
              f"{p['best_epoch']}, selection F1 {p['selection']['f']}")
    rows = [score_row("pretrained", recognizer, report, split["held"], propagate) for propagate in (False, True)]
    print_table(rows, f"recognition on {len(split['held'])} held-out BioRED-train documents (strict spans)")
    if a.out:
        write_json("recognizer_pretrain", rows, a.out, minutes=a.minutes, overrides=a.overrides)


if __name__ == "__main__":
    main()
