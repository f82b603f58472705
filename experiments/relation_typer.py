"""Choose the relation typer's window and C, and measure it against the category-pair prior.

    .venv/bin/python experiments/relation_typer.py [--fraction 0.2] [--windows 2 3 5] [--C 0.03 ... 10]

The typer (graphmert/extract/relation_typer.py) is fitted on BioRED *train* outside the tuning slice
(``extract.document_fraction`` 0.2 of Train.PubTator, as in docs/EVALUATION.md). Each (window, C) is
fitted on 80% of those documents and scored on the other 20% (a document split, never the slice); the
best setting is then refitted on all of them and scored once on the slice. Accuracy is over gold pairs
whose entities share a sentence: the typer's most probable type against the gold type. The prior
types every pair by its category pair's most frequent type in the fit documents. Nothing here reads
BioRED dev.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _study import print_table, require_shared, write_json  # noqa: E402

from graphmert.corpus.nlp import TextAnalyzer  # noqa: E402
from graphmert.corpus.readers import read_corpus  # noqa: E402
from graphmert.extract.relation_typer import RelationTyper, pair_sentence_features  # noqa: E402
from graphmert.kg.schema import mention_category  # noqa: E402
from pipelines.holdout import document_fraction, in_slice  # noqa: E402


def gold_pairs(docs, shared_sentence: bool = True) -> list[tuple]:
    """(document, head, tail, gold type, category pair) per gold relation whose entities share a
    sentence, or per every gold relation when not ``shared_sentence`` (the smallest type name when a
    pair has several)."""
    out = []
    for d in docs:
        cat = {i: mention_category(m.type) for m in d.mentions for i in m.ids}
        types: dict = defaultdict(list)
        for r in d.relations:
            types[frozenset((r.head, r.tail))].append(r.type)
        for pair, ts in types.items():
            if len(pair) != 2:                                  # a self-pair
                continue
            head, tail = sorted(pair)
            if not shared_sentence or pair_sentence_features(d, head, tail, 0):
                out.append((d, head, tail, min(ts), "|".join(sorted((cat.get(head, ""), cat.get(tail, ""))))))
    return out


def accuracy(typer: RelationTyper, pairs: list[tuple]) -> float:
    answers = typer.log_probabilities([(d, h, t) for d, h, t, _, _ in pairs])
    return sum(max(a, key=a.get) == gold for a, (*_, gold, _) in zip(answers, pairs)) / len(pairs)


def prior_accuracy(fit: list[tuple], pairs: list[tuple]) -> float:
    counts: dict = defaultdict(Counter)
    for *_, gold, cats in fit:
        counts[cats][gold] += 1
    overall = Counter(gold for *_, gold, _ in fit).most_common(1)[0][0]
    guess = {c: n.most_common(1)[0][0] for c, n in counts.items()}
    return sum(guess.get(cats, overall) == gold for *_, gold, cats in pairs) / len(pairs)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fraction", type=float, default=0.2, help="the tuning slice of BioRED train")
    p.add_argument("--windows", nargs="+", type=int, default=[2, 3, 5])
    p.add_argument("--C", nargs="+", type=float, default=[0.03, 0.1, 0.3, 1.0, 3.0, 10.0])
    p.add_argument("--out", type=Path)
    a = p.parse_args()
    train = require_shared("biored", "Train.PubTator")
    docs = list(TextAnalyzer(sentences=True, abbreviations=False).annotate(read_corpus([train])))
    fit = [d for d in docs if not in_slice(d.id, a.fraction)]
    inner = [d for d in fit if document_fraction("probe:" + d.id) >= 0.2]
    held = [d for d in fit if document_fraction("probe:" + d.id) < 0.2]
    held_pairs, inner_pairs = gold_pairs(held), gold_pairs(inner)
    rows = [{"window": w, "C": c, "held_acc": accuracy(RelationTyper(window=w, c=c).fit(inner), held_pairs),
             "held_prior_acc": prior_accuracy(inner_pairs, held_pairs)}
            for w in a.windows for c in a.C]
    print_table(rows, f"typer on a document split of the fit documents ({len(inner)} fit, {len(held)} "
                      f"held, {len(held_pairs)} held pairs)")
    best = max(rows, key=lambda r: (r["held_acc"], -r["C"], -r["window"]))    # ties: the simpler model
    slice_pairs = gold_pairs([d for d in docs if in_slice(d.id, a.fraction)])
    final = {"window": best["window"], "C": best["C"], "slice_pairs": len(slice_pairs),
             "slice_acc": accuracy(RelationTyper(window=best["window"], c=best["C"]).fit(fit), slice_pairs),
             "slice_prior_acc": prior_accuracy(gold_pairs(fit), slice_pairs)}
    print_table([final], f"the best held setting, fitted on all {len(fit)} fit documents, on the slice")
    write_json("relation_typer", rows + [final], a.out, fraction=a.fraction)


if __name__ == "__main__":
    main()
