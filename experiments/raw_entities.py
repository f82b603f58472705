"""The extract stage's entity steps on raw held-out BioRED-train text, one rule at a time (issue #19).

    .venv/bin/python experiments/recognizer.py --variant shipped --save build/rec     # ~30 min, once
    .venv/bin/python experiments/raw_entities.py --recognizer build/rec/shipped \\
        [--variant NAME OVERRIDE ...] [--out F]                                       # about a minute

Entity recognition and linking on raw text is judged end to end on BioRED dev, and on the raw
BioRED-train slice only with a GraphMERT model trained without it (docs/NER.md). Recognition and
normalisation need no model, so this scores them on the 82 held-out BioRED-train documents of
``experiments/recognizer.py`` (``_study.held_out_biored_train``) from their raw text, in about a
minute for a set of variants once a recognizer trained without them is saved:

* abbreviations detected as the corpus stage does (scispaCy), every annotation removed;
* the saved recognizer, with one sense per document when ``extract.propagate_mentions`` is on;
* the linker built as the ``link`` stage builds it (:func:`pipelines.stages.link.build_linker`, from
  configs/biored-raw.yaml's ``ner`` section, the held-out documents held out);
* the extract stage's own steps after recognition (:func:`pipelines.stages.extract_parts.recognized_entities`:
  KG-name, abbreviation and KG-symbol mentions, the abbreviation veto, linking with the species
  options, variants) under configs/biored-raw.yaml's ``extract`` settings;
* ``graphmert evaluate``'s scores: strict-span recognition and document-level normalisation
  (:mod:`graphmert.eval.entities`), micro over genes, diseases and chemicals.

Rows: the shipped settings, then each of their entity rules switched off alone (the default
variants), or the ``--variant`` name and dotted ``extract.*`` overrides given; ``--linker`` builds the
linker of every row with ``ner.*`` overrides (a name table, another vocabulary). One recognizer serves
every row, so a difference between rows is the rule's alone, not a recognizer's draw. Several
``--recognizer`` directories (trained alike but for ``ner.seed``) vote span by span instead
(:class:`VotingRecognizer`; docs/experiments/recognizer-training.md, "three seeds voting").
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _study import held_out_biored_train, print_table, write_json  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.corpus.document import Document, Mention  # noqa: E402
from graphmert.corpus.nlp import TextAnalyzer  # noqa: E402
from graphmert.eval.entities import MICRO, normalisation_scores, recognition_scores  # noqa: E402
from graphmert.ner.corpus import annotated_documents  # noqa: E402
from graphmert.ner.recognizer import LABELS, Recognizer, _disjoint, propagate_mentions  # noqa: E402
from pipelines.stages.extract_parts import extraction_linker, recognized_entities  # noqa: E402
from pipelines.stages.link import build_linker  # noqa: E402
from pipelines.stages.ner_documents import read_ner_documents, training_documents  # noqa: E402
from recognizer import CONFIG  # noqa: E402

# each shipped entity rule of configs/biored-raw.yaml, switched off alone
RULES_OFF = (
    ("no one sense per document", ["extract.propagate_mentions=false"]),
    ("no abbreviation mentions", ["extract.abbreviation_mentions=false"]),
    ("no KG gene symbols", ["extract.symbol_mentions=false"]),
    ("no abbreviation veto", ["extract.abbreviation_veto=[]"]),
    ("no KG gene species", ["extract.kg_gene_species=null"]),
    ("no strict gene species", ["extract.strict_gene_species=false"]),
    ("no KG names", ["extract.name_mentions=[]"]),
    ("no KG gene names", ["extract.name_mentions=[biolink:ChemicalEntity,biolink:Disease]"]),
    ("no chemicals as genes", ["extract.gene_name_labels=false"]),
    ("no route trim", ["extract.route_trim=false"]),
    ("no Greek suffixes", ["extract.greek_suffix=false"]),
    ("no name extension", ["extract.name_extension=false"]),
    ("no gene extension", ["extract.gene_extension=false"]),
    ("no residue chemicals", ["extract.residue_chemicals=false"]),
    ("no sentence cut", ["extract.sentence_cut=false"]),
    ("no slash split", ["extract.slash_split=false"]),
)


@dataclass
class VotingRecognizer:
    """Recognizers trained alike but for their seed (``ner.seed``), voting span by span: a found span
    (start, end, label) is kept where at least ``votes`` of them find it exactly, then overlaps are
    settled as one recognizer settles its parts' (:func:`graphmert.ner.recognizer._disjoint`, longer
    first) and, with ``propagate``, one sense per document follows on the votes' spans. With one
    member it is that recognizer. Only the labels ``voted`` are voted on; the first member alone
    gives the others. A study of seed ensembles (docs/experiments/recognizer-training.md)."""

    members: list[Recognizer]
    votes: int
    voted: frozenset[str] = frozenset(LABELS.values())    # labels voted on; the others: the first member's

    def recognize(self, docs: list[Document], propagate: bool = False) -> list[Document]:
        docs = list(docs)
        return self._voted(docs, self._found(docs), propagate)

    def recognize_both(self, docs: list[Document]) -> dict[bool, list[Document]]:
        """``docs`` recognised without (False) and with (True) one sense per document, from one
        pass of each member."""
        docs = list(docs)
        found = self._found(docs)
        return {p: self._voted(docs, found, p) for p in (False, True)}

    def _found(self, docs: list[Document]) -> list[list[Document]]:
        return [list(m.recognize(docs)) for m in self.members]

    def _voted(self, docs: list[Document], found: list[list[Document]], propagate: bool) -> list[Document]:
        out = []
        for k, d in enumerate(docs):
            if d.mentions:
                out.append(d)
                continue
            count = Counter((m.start, m.end, m.type) for f in found for m in f[k].mentions
                            if m.type in self.voted)
            count.update({(m.start, m.end, m.type): self.votes for m in found[0][k].mentions
                          if m.type not in self.voted})
            kept = _disjoint([(a, b, 0, d.text[a:b], lab) for (a, b, lab), n in count.items()
                              if n >= self.votes])
            if propagate:
                kept = propagate_mentions(d.text, kept)
            out.append(replace(d, mentions=[Mention(start=a, end=b, text=t, type=lab)
                                            for a, b, _, t, lab in kept]))
        return out


def score(name: str, predicted: list[Document], gold: list[Document]) -> dict:
    rec, norm = recognition_scores(predicted, gold), normalisation_scores(predicted, gold)
    row = {"variant": name}
    for what, s in (("rec.", rec), ("norm.", norm)):
        row.update({f"{LABELS[c]} {what} F1": round(s[c]["f1"], 3) for c in LABELS})
        row.update({f"{what} P": round(s[MICRO]["precision"], 3), f"{what} R": round(s[MICRO]["recall"], 3),
                    f"{what} F1": round(s[MICRO]["f1"], 4)})
    return row


def errors(predicted: list[Document], gold: list[Document], top: int) -> list[dict]:
    """The ``top`` most frequent texts of each category's missed and spurious mentions (strict spans,
    as :func:`~graphmert.eval.entities.recognition_scores` counts them), with how often each is."""
    from graphmert.kg.schema import mention_category

    def spans(doc: Document) -> dict[tuple, str]:
        return {(mention_category(m.type), m.start, m.end): m.text for m in doc.mentions
                if mention_category(m.type) in LABELS}

    counts: dict[tuple[str, str], Counter] = {}
    by_id = {d.id: d for d in predicted}
    for g in gold:
        want, got = spans(g), spans(by_id.get(g.id, replace(g, mentions=[])))
        for kind, a, b in (("missed", want, got), ("spurious", got, want)):
            for key in a.keys() - b.keys():
                counts.setdefault((key[0], kind), Counter())[a[key]] += 1
    return [{"category": LABELS[cat], "error": kind, "count": n, "text": text}
            for (cat, kind), c in sorted(counts.items()) for text, n in c.most_common(top)]


ERROR_KINDS = ("boundary", "category", "boundary and category", "other kind", "nothing")


def error_kinds(predicted: list[Document], gold: list[Document]) -> list[dict]:
    """Each category's strict-span errors by what the other side has there. A gold mention not
    found exactly is *missed*, a found one the gold lacks *spurious*; each is then classed by the
    other side's mentions: one of the same category overlapping it (``boundary``), one with the same
    span and another of the three categories (``category``), an overlapping one of another of them
    (``boundary and category``), an overlapping mention outside the three categories only, such as
    a gold cell line or species or a found variant (``other kind``), else ``nothing``. One row per
    category and a micro row; its "F1 were the boundaries right" pairs each missed mention with a
    same-category overlap with a spurious one (as many as the fewer of the two): about what span
    repairs alone could give at most."""
    from graphmert.kg.schema import mention_category

    counts: Counter = Counter()
    by_id = {d.id: d for d in predicted}
    for g in gold:
        want = {(mention_category(m.type), m.start, m.end) for m in g.mentions}    # spans as sets,
        p = by_id.get(g.id)                                                        # as the scores count
        got = {(mention_category(m.type), m.start, m.end) for m in (p.mentions if p else [])}
        for kind, a, b in (("missed", want, got), ("spurious", got, want)):
            for cat, s, e in sorted(a):
                if cat not in LABELS:
                    continue
                how = None if (cat, s, e) in b else _error_kind(cat, s, e, b)
                for key in (cat, "micro"):
                    counts[key, "all " + kind] += 1
                    counts[key, kind, how] += how is not None
    return [_error_row(cat, counts) for cat in (*LABELS, "micro")]


def _error_kind(cat: str, start: int, end: int, other: set[tuple]) -> str:
    """The class :func:`error_kinds` gives an error at [start, end) of ``cat`` against ``other``."""
    near = [(c, s, e) for c, s, e in other if s < end and start < e]
    ours = [c for c, _, _ in near if c in LABELS]
    if cat in ours:
        return "boundary"
    if any(c in LABELS and (s, e) == (start, end) for c, s, e in near):
        return "category"
    if ours:
        return "boundary and category"
    return "other kind" if near else "nothing"


def _error_row(cat: str, counts) -> dict:
    gold, found = counts[cat, "all missed"], counts[cat, "all spurious"]
    missed = sum(counts[cat, "missed", k] for k in ERROR_KINDS)
    right = gold - missed
    row = {"category": LABELS.get(cat, cat), "gold": gold, "found": found, "right": right}
    for kind in ("missed", "spurious"):
        row.update({f"{kind}: {k}": counts[cat, kind, k] for k in ERROR_KINDS})
    fixed = min(counts[cat, "missed", "boundary"], counts[cat, "spurious", "boundary"])
    row["F1 were the boundaries right"] = round(2 * (right + fixed) / (gold + found), 3) if gold + found else 0.0
    row["F1"] = round(2 * right / (gold + found), 3) if gold + found else 0.0
    return row


def variant_ids(predicted: list[Document], gold: list[Document], training: list[Document]) -> list[dict]:
    """The rule-found variants' document-level ids by kind (a dbSNP rs id or a tmVar key), each with
    how many are the gold document's; and the gold variant mentions with an rs id that a found variant
    spans exactly with another id, and how many of those rs ids any training document annotates
    (what a table learnt from them could map): ``--variant-ids``."""
    from graphmert.kg.schema import mention_category

    variant = "biolink:SequenceVariant"

    def ids(doc: Document) -> set[str]:
        return {i for m in doc.mentions if mention_category(m.type) == variant for i in m.ids}

    taught = {i for d in training for i in ids(d)}
    by_id = {d.id: d for d in predicted}
    rows = {kind: {"ids": kind, "found": 0, "the gold's": 0} for kind in ("dbSNP", "tmVar")}
    keyed = learnt = 0
    for g in gold:
        p = by_id.get(g.id, replace(g, mentions=[]))
        for i in ids(p):
            row = rows[i.split(":", 1)[0]]
            row["found"] += 1
            row["the gold's"] += i in ids(g)
        spans = {(m.start, m.end): m.ids for m in p.mentions if mention_category(m.type) == variant}
        for m in g.mentions:
            rs = [i for i in m.ids if i.startswith("dbSNP:")]
            if mention_category(m.type) == variant and rs and (m.start, m.end) in spans \
                    and not set(rs) & set(spans[m.start, m.end]):
                keyed += 1
                learnt += bool(set(rs) & taught)
    return [*rows.values(), {"ids": "gold rs-id mentions found with the span and another id", "found": keyed,
                             "the gold's": f"{learnt} of their rs ids annotated in training"}]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recognizer", type=Path, required=True, nargs="+",
                    help="a recognizer saved by experiments/recognizer.py --save (trained without the "
                         "held-out documents); several (other ner.seed values) vote span by span")
    ap.add_argument("--votes", type=int, default=None,
                    help="with several recognizers, how many must find a span exactly (default: a "
                         "majority)")
    ap.add_argument("--voted", nargs="+", default=list(LABELS.values()), choices=list(LABELS.values()),
                    help="the labels voted on (Gene, Disease, Chemical); the first recognizer alone "
                         "gives the others")
    ap.add_argument("--variant", nargs="+", action="append", default=[], metavar="NAME [OVERRIDE]",
                    help="a name, then its dotted extract.* overrides (repeatable; default: the shipped "
                         "settings and each entity rule off)")
    ap.add_argument("--linker", nargs="+", default=[], metavar="OVERRIDE",
                    help="dotted ner.* overrides of configs/biored-raw.yaml that the linker is built "
                         "with, for every row (ner.name_tables, ner.vocabularies, ...)")
    ap.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    ap.add_argument("--variant-ids", action="store_true",
                    help="also print the rule-found variants' ids by kind under the first variant")
    ap.add_argument("--errors", type=int, default=0, metavar="N",
                    help="also print the N most frequent missed and spurious mention texts of each "
                         "category under the first variant")
    a = ap.parse_args()
    t0 = time.perf_counter()
    cfg = load_config(CONFIG, a.linker)
    read = read_ner_documents(cfg)
    gold = [d for d in annotated_documents(read, cfg.ner.sources) if held_out_biored_train(d)]
    held = frozenset(d.id for d in gold)
    docs, _, _ = training_documents(cfg, held, read)
    linker = build_linker(cfg, docs, held)
    analyzer = TextAnalyzer(sentences=False, abbreviations=True)
    raw = list(analyzer.annotate([replace(d, mentions=[]) for d in gold]))
    votes = a.votes or len(a.recognizer) // 2 + 1
    if not 1 <= votes <= len(a.recognizer):
        ap.error(f"--votes {votes}: give 1 to {len(a.recognizer)}, the number of recognizers")
    recognizer = VotingRecognizer([Recognizer.load(r) for r in a.recognizer], votes=votes,
                                  voted=frozenset(a.voted))
    recognized = recognizer.recognize_both(raw)
    print(f"{len(docs)} training documents, {len(gold)} held-out; ready in {time.perf_counter() - t0:.0f} s")

    def run(overrides: list[str]) -> list[Document]:
        ex = load_config(CONFIG, [*a.linker, *overrides]).extract
        extraction_linker(linker, ex)
        return [recognized_entities(d, linker, ex) for d in recognized[ex.propagate_mentions]]

    variants = [(v[0], v[1:]) for v in a.variant] or [("shipped", []), *RULES_OFF]
    rows = [score(name, run(overrides), gold) for name, overrides in variants]
    print_table(rows, f"entities of {len(gold)} held-out BioRED-train documents from raw text "
                      f"({time.perf_counter() - t0:.0f} s)")
    if a.errors:
        found = run(variants[0][1])
        print_table(error_kinds(found, gold),
                    f"recognition errors by kind, strict spans ({variants[0][0]}; error_kinds)")
        print_table(errors(found, gold, a.errors),
                    f"the {a.errors} most frequent recognition errors of each category ({variants[0][0]})")
    if a.variant_ids:
        print_table(variant_ids(run(variants[0][1]), gold, [d for d in docs if d.id not in held]),
                    f"the rule-found variants' document-level ids ({variants[0][0]})")
    if a.out:
        write_json("raw_entities", rows, a.out, recognizer=[str(r) for r in a.recognizer], votes=votes,
                   voted=a.voted, variants=dict(variants),
                   linker=a.linker)


if __name__ == "__main__":
    main()
