"""Where an extraction run finds and misses gold pairs, per category pair.

    .venv/bin/python experiments/category_pairs.py --run-dir RUN --gold GOLD [--systems graphmert candidates]

For every system of a finished ``extract`` stage (``graphmert``: the triples; any other name: its
``control-<name>.parquet``), the document-level pairs are scored against the gold as
``graphmert evaluate`` scores them (:func:`graphmert.eval.metrics.pair_sets`), split by the unordered pair of
the two entities' Biolink categories (the gold's category of each id in its document), with the
type accuracy of the found pairs (``type_acc``: the share of found gold pairs whose type is right,
types mapped by the run's ``evaluate.relation_map``). The gold pairs
that the ``candidates`` control misses were never asked: they are split by whether one of the two
entities is mentioned in the title. Run it on the tuning slice to choose; on dev only to explain a
number already reported.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _study import print_table, run_documents, system_files, write_json  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.eval.gold import load_gold  # noqa: E402
from graphmert.eval.metrics import pair_sets  # noqa: E402
from graphmert.extract.triples import read_triples  # noqa: E402


def _category_pair(gold, doc: str, pair: frozenset) -> str:
    return "–".join(sorted(gold.categories.get((doc, i), "?").replace("biolink:", "") for i in pair))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--gold", required=True, nargs="+")
    p.add_argument("--systems", nargs="+", default=["graphmert", "candidates"])
    p.add_argument("--out", type=Path)
    a = p.parse_args()
    docs = run_documents(a.run_dir)
    gold = load_gold(a.gold).subset(docs)
    rows = []
    rmap = dict(load_config(a.run_dir / "config.yaml").evaluate.relation_map)
    for name in a.systems:
        pred, typed = pair_sets(read_triples(system_files(a.run_dir, name)), rmap, linked_only=True)
        pred = {x for x in pred if x[0] in docs}
        counts: dict[str, Counter] = defaultdict(Counter)
        for key, part in (("predicted", pred), ("gold", gold.untyped), ("tp", pred & gold.untyped),
                          ("typed_tp", {(d, pair) for d, pair, _ in typed & gold.typed})):
            for doc, pair in part:
                counts[_category_pair(gold, doc, pair)][key] += 1
        for cats, c in sorted(counts.items(), key=lambda kv: -kv[1]["gold"]):
            rows.append({"system": name, "categories": cats, "gold": c["gold"], "predicted": c["predicted"],
                         "tp": c["tp"], "P": c["tp"] / c["predicted"] if c["predicted"] else 0.0,
                         "R": c["tp"] / c["gold"] if c["gold"] else 0.0,
                         "type_acc": c["typed_tp"] / c["tp"] if c["tp"] else 0.0})
    print_table(rows, f"{a.run_dir}: pairs per category pair, {len(docs)} documents")
    missed = []
    if "candidates" in a.systems:
        asked, _ = pair_sets(read_triples(system_files(a.run_dir, "candidates")), linked_only=True)
        never: Counter = Counter()
        for doc, pair in gold.untyped - asked:
            d = gold.documents[doc]
            in_title = any(i in m.ids and m.end <= len(d.title) for m in d.mentions for i in pair)
            never[(_category_pair(gold, doc, pair), in_title)] += 1
        missed = [{"categories": c, "one entity in the title": t, "gold pairs never asked": n}
                  for (c, t), n in sorted(never.items(), key=lambda kv: -kv[1])]
        print_table(missed, "gold pairs no candidate set holds")
    write_json("category_pairs", rows, a.out, run_dir=str(a.run_dir), missed=missed)


if __name__ == "__main__":
    main()
