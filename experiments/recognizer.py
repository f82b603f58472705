"""Entity recognizer variants, chosen on held-out BioRED-train documents (issue #19).

    .venv/bin/python experiments/recognizer.py --variant shipped \\
        --variant separate 'ner.separate_categories=[biolink:Gene]' \\
        --variant wide ner.width=128 ner.embed_rows=10000 [--out F]
    .venv/bin/python experiments/recognizer.py --models-from build/rec/seed0 --save build/rec \\
        --add ../shared/datasets/bc5cdr/CDR_TestSet.PubTator.txt --variant cdr DC_ONLY...
    .venv/bin/python experiments/recognizer.py --models-from build/rec/seed0 --every-epoch build/epochs \\
        --variant ep15 DC_ONLY... ner.epochs=15 ner.patience=15

A variant is a name and dotted overrides on top of configs/biored-raw.yaml (none: the config as it
is). Every variant trains the recognizer exactly as the ``ner`` stage does
(:func:`graphmert.ner.recognizer.train_recognizer`, on the documents of ``ner.sources`` in the shared
corpus) except that the held-out 20% of the BioRED-train documents (``_study.held_out``, the split
``experiments/linking.py`` chooses its threshold on: 82 documents) are left out. It is then scored there,
from the raw text, with ``graphmert evaluate``'s strict-span recognition scores
(:func:`graphmert.eval.entities.recognition_scores`). BioRED annotates all three categories, so those
documents need none of the partial-annotation care of the training set. BioRED dev is never read.

Variants train one after another (never two at once on the shared cores). Each row reports the
training minutes (with the set-up: word vectors, training examples), its models' own minutes (their
epochs, summed over the models trained; a ``--models-from`` model is not) and the selection-slice F1
that picked its epoch beside the held-out scores. Each
variant is scored twice: as trained, and with ``extract.propagate_mentions`` (one sense per
document: every other occurrence of a recognised text is a mention too), which needs no training of
its own.

Training data beyond ``ner.sources`` (docs/experiments/recognizer-training.md, "more disease and
chemical documents"): ``--add`` gives every variant the annotated documents of further corpus files
(never one of the shared corpus, of BioRED dev or a held-out one), ``--repeat SOURCE N`` reads each
training document of a source N times an epoch, and ``--models-from`` completes a variant that trains
some categories only (``ner.categories=[...]``) with a saved recognizer's models for the others, so
that one model can be compared beside the same other models (DC_ONLY above:
``ner.categories=[biolink:Disease,biolink:ChemicalEntity] ner.separate_categories=[]
extract.name_mentions=[biolink:ChemicalEntity,biolink:Disease]``; ``ner.part_sources`` lends such a
variant nothing for the categories it does not train).

Every epoch (docs/experiments/recognizer-training.md, "the epoch each model keeps"): ``--every-epoch
DIR`` saves each epoch's model as a whole recognizer (``DIR/<variant>/<labels>/epoch-NN``, with the
``--models-from`` models in their places) for ``experiments/raw_entities.py`` to score, and records
its F1 on the selection slice's documents of each source, so that one training shows which epoch
each way of choosing would keep and how the held-out scores move from epoch to epoch.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _study import ROOT, lent_documents, print_table, recognizer_documents, require_shared, write_json  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.eval.entities import MICRO, recognition_scores  # noqa: E402
from graphmert.ner.recognizer import (LABELS, Recognizer, RecognizerPart, selection_scores,  # noqa: E402
                                      group_documents, selection_split, train_recognizer)

CONFIG = ROOT / "configs" / "biored-raw.yaml"


def further_texts(paths: list[str], held: set[str]) -> list[str]:
    """The texts of the variant's ``ner.paths`` beyond the shared corpus's abstracts (which
    :func:`_study.recognizer_documents` reads): what ``ner.vectors`` also learns from when a variant
    adds, say, ``pubmed_unlabeled/texts.jsonl.gz``. Never a held-out document."""
    from graphmert.corpus.readers import read_corpus

    corpus = require_shared("biomed_abstracts_corpus", "abstracts.jsonl.gz").resolve()
    further = [p for p in paths if Path(p).resolve() != corpus]
    return [d.text for d in read_corpus(further) if d.id not in held] if further else []


def added_documents(paths: list[Path], read: set[str]) -> list:
    """The annotated documents of ``paths`` that no study may read otherwise or twice: none whose
    id is in ``read`` (the shared corpus's, which the variants train on already, and the held-out
    ones scored) or BioRED dev's (reported, never learnt from)."""
    from graphmert.corpus.readers import read_corpus
    from graphmert.ner.corpus import annotated_documents

    dev = {d.id for d in read_corpus([require_shared("biored", "Dev.PubTator")])}
    return [d for d in annotated_documents(read_corpus(paths)) if d.id not in read | dev]


def repeat_counts(pairs: list[list[str]]) -> dict[str, int]:
    """``--repeat SOURCE N`` pairs as source → N; a count that is not a whole number of at least 1
    is an error naming it."""
    counts = {}
    for source, n in pairs:
        if not n.isdigit() or int(n) < 1:
            raise ValueError(f"--repeat {source} {n}: give a whole number of at least 1")
        counts[source] = int(n)
    return counts


def repeated(docs: list, repeats: dict[str, int]) -> list:
    """``docs``, then each document of a source of ``repeats`` (its ``source`` field) again, until it
    is there that many times: the recognizer reads it so often an epoch, and its selection slice (by
    the document's id) counts it as often."""
    return docs + [d for n in range(1, max(repeats.values(), default=1)) for d in docs
                   if repeats.get(d.metadata.get("source"), 1) > n]


def completed(recognizer: Recognizer, other: Recognizer) -> Recognizer:
    """``recognizer`` with the models of ``other`` that find none of its categories: its own models
    take the place of the first model of ``other`` that they replace, so that overlapping mentions of
    equal length are settled as in ``other`` (the earlier part wins a tie), or go first where they
    replace none. A model of ``other`` that shares only some of its categories is an error."""
    mine = set(recognizer.categories)
    shared = [p.categories for p in other.parts if mine & set(p.categories) and not set(p.categories) <= mine]
    if shared:
        raise SystemExit(f"--models-from: its models {shared} find some of the variant's categories "
                         f"{sorted(mine)} and some others")
    own, parts = list(recognizer.parts), []
    for p in other.parts:
        if mine & set(p.categories):
            parts, own = parts + own, []
        else:
            parts.append(p)
    return Recognizer(parts=own + parts, dictionary=recognizer.dictionary)


def _training_split(sources: list[str], add: list[Path], repeats: dict[str, int]) -> dict[str, list]:
    """:func:`_study.recognizer_documents` for ``sources``, with ``repeated`` (the training documents
    as a variant reads them: :func:`repeated`, then those of :func:`added_documents`) and the added
    documents' texts among ``texts`` (what ``ner.vectors`` learns from)."""
    split = recognizer_documents(sources)
    added = added_documents(add, split["ids"]) if add else []
    split["repeated"] = repeated(split["train"], repeats) + added
    split["texts"] = split["texts"] + [d.text for d in added]
    print(f"ner.sources {sources}: {len(split['train'])} training documents, {len(added)} added, "
          f"{len(split['repeated']) - len(added) - len(split['train'])} repeats; "
          f"{len(split['held'])} held-out BioRED-train documents", flush=True)
    return split


class EpochSaver:
    """``--every-epoch DIR``: the :func:`graphmert.ner.recognizer.train_part` probe that, after each
    epoch of each model, saves that epoch's weights (the moving average the library scores and keeps)
    as a whole recognizer, ``DIR/<labels>/epoch-NN``, completed with ``others`` (``--models-from``),
    so that ``experiments/raw_entities.py`` can score any epoch with the entity rules; and scores the
    model on its selection slice's documents of each source (the record's ``selection_by_source``:
    which epoch a slice of BioRED's documents alone would pick). Each model trains from its own
    seed, so its weights and its choice of epoch are those of a run without the probe."""

    def __init__(self, root: Path, docs: list, cfg, others: Recognizer | None):
        self.root, self.others, self.categories = root, others, list(cfg.categories)
        self.pick = selection_split(docs, cfg.selection_fraction)[1]         # the library's slice
        self.epochs: dict[str, int] = {}

    def __call__(self, nlp, optimizer) -> dict:
        labels = set(nlp.get_pipe("ner").labels)
        cats = [c for c in self.categories if LABELS[c] in labels]
        name = "+".join(LABELS[c] for c in cats)
        epoch = self.epochs[name] = self.epochs.get(name, 0) + 1
        by_source: dict[str, list] = {}
        for d in group_documents(self.pick, cats):
            by_source.setdefault(d.metadata.get("source") or "(no source)", []).append(d)     # --add's: none
        with nlp.use_params(optimizer.averages or {}):
            part = Recognizer([RecognizerPart(nlp=nlp, categories=cats)])
            scores = {src: {k: v for k, v in selection_scores(part, docs, cats).items() if k != "per_label"}
                      for src, docs in sorted(by_source.items())}
            whole = completed(part, self.others) if self.others is not None else part
            whole.save(self.root / name / f"epoch-{epoch:02d}", {"selection_by_source": scores})
        print(f"{name} epoch {epoch}: selection F1 by source "
              f"{ {s: v['f'] for s, v in scores.items()} }", flush=True)
        return {"selection_by_source": scores}


def score_row(name: str, recognizer, report: dict, held: list, propagate: bool = False) -> dict:
    found = list(recognizer.recognize([replace(d, mentions=[]) for d in held], propagate=propagate))
    s = recognition_scores(found, held)
    row = {"variant": name + (" + propagate" if propagate else ""), "minutes": report["minutes"],
           "models' minutes": round(sum(p["minutes"] for p in report.get("parts", [])), 2),
           "selection F1": report["selection"]["f"]}
    for cat, label in LABELS.items():
        row[f"{label} P"], row[f"{label} R"], row[f"{label} F1"] = (
            round(s[cat][k], 4) for k in ("precision", "recall", "f1"))
    row.update({"micro P": round(s[MICRO]["precision"], 4), "micro R": round(s[MICRO]["recall"], 4),
                "micro F1": round(s[MICRO]["f1"], 4)})
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", nargs="+", action="append", default=[], metavar="NAME [OVERRIDE]",
                    help="a name, then its dotted overrides (repeatable)")
    ap.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    ap.add_argument("--save", type=Path, default=None, metavar="DIR",
                    help="also save each variant's recognizer in DIR/<name> (to score rules on top of it)")
    ap.add_argument("--add", type=Path, nargs="+", default=[], metavar="FILE",
                    help="annotated corpus files whose documents every variant also trains on (each "
                         "model on those that annotate its categories), less any document of the shared "
                         "corpus, of BioRED dev or held out")
    ap.add_argument("--repeat", nargs=2, action="append", default=[], metavar=("SOURCE", "N"),
                    help="read each training document of the shared corpus's SOURCE N times an epoch")
    ap.add_argument("--models-from", type=Path, default=None, metavar="DIR",
                    help="a saved recognizer whose models find the categories a variant does not train: "
                         "each variant is scored and saved beside them")
    ap.add_argument("--every-epoch", type=Path, default=None, metavar="DIR",
                    help="also save every epoch of every model as a whole recognizer, DIR/<variant>/<labels>/"
                         "epoch-NN, and score it on the selection slice's documents of each source")
    a = ap.parse_args()
    variants = [(v[0], v[1:]) for v in a.variant] or [("shipped", [])]
    try:
        repeats = repeat_counts(a.repeat)
    except ValueError as e:
        ap.error(str(e))
    others = Recognizer.load(a.models_from) if a.models_from else None
    rows, splits = [], {}
    for name, overrides in variants:
        cfg = load_config(CONFIG, overrides).ner
        if a.every_epoch and cfg.dictionary_flags:
            ap.error("--every-epoch saves models without ner.dictionary_flags' flags: give ner.dictionary_flags=[]")
        if tuple(cfg.sources) not in splits:              # the variant's own ner.sources
            splits[tuple(cfg.sources)] = _training_split(cfg.sources, a.add, repeats)
        split = splits[tuple(cfg.sources)]
        held = split["held"]
        extra = {c: docs for c, docs in lent_documents(split, cfg.part_sources).items()
                 if c in cfg.categories}          # a variant of some categories (--models-from) lends no other
        t0 = time.perf_counter()
        texts = split["texts"] + further_texts(cfg.paths, {d.id for d in held})
        probe = (EpochSaver(a.every_epoch / name, split["repeated"], cfg, others)
                 if a.every_epoch else None)
        recognizer, report = train_recognizer(split["repeated"], cfg, extra=extra, texts=texts, probe=probe)
        if others is not None:
            recognizer = completed(recognizer, others)
        if a.save:
            recognizer.save(a.save / name, report)
        rows += [score_row(name, recognizer, report, held, propagate) for propagate in (False, True)]
        print(f"{name}: {time.perf_counter() - t0:.0f} s; {rows[-2:]}", flush=True)
    print_table(rows, f"recognition on {len(held)} held-out BioRED-train documents (strict spans)")
    if a.out:
        write_json("recognizer", rows, a.out, variants={n: o for n, o in variants}, added=[str(p) for p in a.add],
                   repeats=repeats, models_from=str(a.models_from) if a.models_from else None)


if __name__ == "__main__":
    main()
