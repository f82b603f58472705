"""Self-training the recognizer on unlabeled abstracts, scored on held-out BioRED train (issue #49 D4).

    .venv/bin/python experiments/recognizer.py --variant shipped --save build/rec      # the teacher, once
    .venv/bin/python experiments/self_training.py --teacher build/rec/shipped --documents 3000 \\
        [ner.max_minutes=40 ...] [--out F]

The recognizer learns from about 1,900 annotated abstracts; ``../shared/datasets/pubmed_unlabeled/``
holds 8,274 more texts (GENIA, DrugProt, NCBI disease, cancer hallmarks, ...) with no annotation.
Self-training, the oldest semi-supervised recipe for NER: the *teacher* (a recognizer trained as
``experiments/recognizer.py`` trains it, without the 82 held-out BioRED-train documents) labels
``--documents`` of those texts (a fixed hash order; one sense per document, as extraction reads
them), and a *student* of the same configuration trains on the annotated documents plus, for each
of its models, the pseudo-labelled texts where the teacher found a mention of that model's
categories (``ner.part_sources``' mechanism: never a selection slice, which stays gold). Both are
scored on the held-out documents from their raw text, as ``experiments/recognizer.py`` scores
(strict spans, with and without one sense per document). BioRED dev is never read.

Dotted overrides apply to the student's ``ner`` section (configs/biored-raw.yaml otherwise); the
student reads more documents per epoch, so ``ner.max_minutes`` may need raising for it to train
as many epochs as the teacher did.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _study import lent_documents, print_table, recognizer_documents, require_shared, write_json  # noqa: E402
from recognizer import CONFIG, score_row  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.corpus.readers import read_corpus  # noqa: E402
from graphmert.kg.schema import mention_category  # noqa: E402
from graphmert.ner.recognizer import Recognizer, train_recognizer  # noqa: E402


def unlabeled(n: int) -> list:
    """The first ``n`` texts of ``pubmed_unlabeled`` in sha256(id) order (a fixed sample), without mentions."""
    docs = list(read_corpus([require_shared("pubmed_unlabeled", "texts.jsonl.gz")]))
    docs.sort(key=lambda d: hashlib.sha256(d.id.encode("utf-8")).hexdigest())
    return [replace(d, mentions=[]) for d in docs[:n]]


def pseudo_extra(pseudo: list, categories: list[str], extra: dict[str, list]) -> dict[str, list]:
    """``extra`` (category → lent documents) with each pseudo-labelled document added to every
    category of ``categories`` it has a mention of."""
    out = {c: list(docs) for c, docs in extra.items()}
    for d in pseudo:
        for c in {mention_category(m.type) for m in d.mentions} & set(categories):
            out.setdefault(c, []).append(d)
    return {c: docs for c, docs in out.items() if docs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--teacher", type=Path, required=True, help="a recognizer saved by experiments/recognizer.py "
                                                                "--save (trained without the held-out documents)")
    ap.add_argument("--documents", type=int, default=3000, help="unlabeled texts the teacher labels")
    ap.add_argument("--categories", nargs="+", default=None, metavar="CATEGORY",
                    help="lend the pseudo-labelled texts to these categories' models only (default: all)")
    ap.add_argument("--save", type=Path, default=None, help="also save the student here")
    ap.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    ap.add_argument("overrides", nargs="*", help="dotted ner.* overrides for the student")
    a = ap.parse_args()
    t0 = time.perf_counter()
    cfg = load_config(CONFIG, a.overrides).ner
    split = recognizer_documents(cfg.sources)
    train, held = split["train"], split["held"]
    teacher = Recognizer.load(a.teacher)
    pseudo = list(teacher.recognize(unlabeled(a.documents), propagate=True))
    counts = {c: sum(mention_category(m.type) == c for d in pseudo for m in d.mentions) for c in cfg.categories}
    extra = pseudo_extra(pseudo, a.categories or cfg.categories, lent_documents(split, cfg.part_sources))
    print(f"{len(train)} training documents, {len(held)} held out; the teacher labelled {len(pseudo)} texts "
          f"({counts}) in {time.perf_counter() - t0:.0f} s; lent per category "
          f"{ {c: len(d) for c, d in extra.items()} }", flush=True)
    rows = [score_row("teacher", teacher, {"minutes": None, "selection": {"f": None}}, held, p) for p in (False, True)]
    student, report = train_recognizer(train, cfg, extra=extra, texts=split["texts"])
    if a.save:
        student.save(a.save, report)
    name = f"student ({a.documents} texts{', ' + ' + '.join(a.categories) if a.categories else ''})"
    rows += [score_row(name, student, report, held, p) for p in (False, True)]
    print_table(rows, f"recognition on {len(held)} held-out BioRED-train documents (strict spans; "
                      f"{time.perf_counter() - t0:.0f} s)")
    if a.out:
        write_json("self_training", rows, a.out, documents=a.documents, overrides=a.overrides,
                   categories=a.categories,
                   teacher=str(a.teacher), pseudo_mentions=counts)


if __name__ == "__main__":
    main()
