"""The pairs ``extract.cross_chunk_pairs`` adds to a finished run, scored against gold by threshold
(docs/experiments/document-scope.md, §23).

    .venv/bin/python experiments/cross_chunk_run.py --with runs/tune-raw-xc --without runs/tune-raw \\
        --gold ../shared/datasets/biored/Train.PubTator [--thresholds 0.1 0.2 0.35 0.5] \\
        [--base-p 0.406 --base-r 0.392 --base-gold 692]                        # a few seconds

``--with`` is a run extracted with the option at a low ``extract.cross_chunk_min_probability``,
``--without`` the same run's models extracted without it (both on the same documents). The pairs
graphmert's triples hold in the first and not in the second are the regression's (the model never
asks them: no chunk holds both ends), each with its probability as the triple's confidence, so one
extraction answers every higher threshold. For each threshold the table gives the pairs kept, how
many the gold holds, and the F1 of the base system with them added, 2(TP + t) / (S + n + G)
(experiments/cross_chunk.py): the base is the ``--without`` run's graphmert, or the P, R and gold
count given (a run whose own model could not be scored there, such as one that saw the slice's
relations in training: the added pairs do not depend on the model). On raw text every triple
counts, so a pair with a mislinked end is a false one; adding pairs pays when more than F1 / 2 of
them are right.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _study import print_table, run_documents, system_files, write_json  # noqa: E402
from cross_chunk import f1_with  # noqa: E402

from graphmert.eval.gold import load_gold  # noqa: E402
from graphmert.eval.metrics import pair_keys, pair_sets, triple_documents  # noqa: E402
from graphmert.extract.triples import read_triples  # noqa: E402


def added_pairs(with_run: Path, without_run: Path) -> dict[tuple, float]:
    """(document, {a, b}) → the highest confidence of graphmert's triples in ``with_run`` on the pairs
    ``without_run``'s graphmert does not hold."""
    base, _ = pair_sets(read_triples(system_files(without_run, "graphmert")))
    added: dict[tuple, float] = {}
    for t in read_triples(system_files(with_run, "graphmert")):
        pair = pair_keys(t)
        for doc in triple_documents(t) if pair else []:
            if (doc, pair) not in base:
                added[(doc, pair)] = max(added.get((doc, pair), 0.0), t.confidence)
    return added


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--with", dest="with_run", type=Path, required=True,
                    help="a run extracted with extract.cross_chunk_pairs at a low threshold")
    ap.add_argument("--without", type=Path, required=True, help="the same models extracted without it")
    ap.add_argument("--gold", type=Path, nargs="+", required=True, help="the annotated gold (PubTator or BioC)")
    ap.add_argument("--thresholds", type=float, nargs="+", default=[0.1, 0.2, 0.3, 0.35, 0.4, 0.5, 0.6])
    ap.add_argument("--base-p", type=float, default=None, help="the base system's pair precision …")
    ap.add_argument("--base-r", type=float, default=None, help="… recall …")
    ap.add_argument("--base-gold", type=int, default=None, help="… and gold pairs (default: --without's graphmert)")
    ap.add_argument("--out", type=Path, default=None, help="the JSON rows (default experiments/results/)")
    args = ap.parse_args(argv)
    if (args.base_p is None) != (args.base_r is None):
        raise SystemExit("--base-p and --base-r go together: the base system's pair precision and recall")
    docs = run_documents(args.with_run)
    if docs != run_documents(args.without):
        raise SystemExit(f"{args.with_run} and {args.without} extracted different documents")
    gold = load_gold(args.gold).subset(docs)
    added = added_pairs(args.with_run, args.without)
    if args.base_p is not None:
        g = args.base_gold or len(gold.untyped)
        tp, predicted = args.base_r * g, args.base_r * g / args.base_p
    else:
        base, _ = pair_sets(read_triples(system_files(args.without, "graphmert")))
        g, tp, predicted = len(gold.untyped), len(base & gold.untyped), len(base)
    f1 = f1_with(tp, predicted, g, 0, 0)
    table = []
    for t in args.thresholds:
        kept = [p for p, v in added.items() if v >= t]
        right = sum(p in gold.untyped for p in kept)
        table.append({"threshold": t, "pairs added": len(kept), "gold": right,
                      "precision": round(right / len(kept), 3) if kept else None,
                      "gold − added·F/2": round(right - len(kept) * f1 / 2, 1),
                      "F1": round(f1_with(tp, predicted, g, len(kept), right), 4),
                      "ΔF1": round(f1_with(tp, predicted, g, len(kept), right) - f1, 4)})
    print_table(table, title=f"pairs extract.cross_chunk_pairs adds ({len(added)} at the run's threshold; "
                             f"{len(docs)} documents, {g} gold pairs; base F1 {f1:.4f})")
    write_json("cross_chunk_run", table, args.out, base_f1=f1, gold_pairs=g,
               runs=[str(args.with_run), str(args.without)])


if __name__ == "__main__":
    main()
