"""Recognizer learning curves: the last update's weights against their moving average, every epoch.

    .venv/bin/python benchmarks/recognizer_curves.py [overrides] [--out F]     # about 35 min

One training run per recognizer model, on ``configs/biored-raw.yaml`` (with the dotted overrides
given) and the training documents ``benchmarks/recognizer.py`` uses (``ner.sources`` less the 82
held-out BioRED-train documents). It trains with the ``ner`` stage's own loop for ``ner.epochs`` and no
early stop, keeping thinc's moving average of the weights (``ner.average_weights``) beside them,
and after every epoch scores both on the model's selection slice (what picks the epoch) and on the
held-out documents (strict spans, the model's own categories). The two columns share one training
trajectory, so they compare the weights, not two draws of the recognizer. The last rows say which
epoch each column's selection F1 picks and what that epoch scores on the held-out documents.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, lent_documents, print_table, recognizer_documents, write_json  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.ner import recognizer as rz  # noqa: E402

CONFIG = ROOT / "configs" / "biored-raw.yaml"


def curves(plan: rz.PartPlan, cfg, held: list) -> list[dict]:
    """Per epoch: selection and held-out F1 of the last update's weights and of their average, from
    the stage's own training loop (:func:`~graphmert.ner.recognizer.train_part` with a ``probe``)."""
    train_docs, pick_docs = rz._part_split(plan, cfg, "ner.paths")
    forms = [*train_docs, *plan.more]                     # the surface forms the stage's slice is marked with
    slices: dict[str, list] = {}

    def probe(nlp, optimizer) -> dict:
        if not slices:
            slices["selection"], _ = rz.training_examples(nlp, pick_docs, plan.categories, forms_from=forms)
            slices["held-out"], _ = rz.training_examples(nlp, held, plan.categories, forms_from=forms)
        row = {f"last: {k} F1": rz._scores(nlp, ex)["f"] for k, ex in slices.items()}
        with nlp.use_params(optimizer.averages):
            row.update({f"average: {k} F1": rz._scores(nlp, ex)["f"] for k, ex in slices.items()})
        print(row, flush=True)
        return row

    _, report = rz.train_part(plan, replace(cfg, patience=cfg.epochs, average_weights=True),
                              deadline=math.inf, probe=probe)
    model = " + ".join(c.removeprefix("biolink:") for c in plan.categories)
    keys = [k for k in report["history"][0] if k.startswith(("last:", "average:"))]
    return [{"model": model, "epoch": r["epoch"], **{k: r[k] for k in keys}, "minutes": r["minutes"]}
            for r in report["history"]]


def picked(rows: list[dict]) -> dict:
    """Which epoch each column's selection F1 picks (the first best, as the stage), and its held-out F1."""
    out = {"model": rows[0]["model"], "epoch": "picked"}
    for kind in ("last", "average"):
        best = max(rows, key=lambda r: (r[f"{kind}: selection F1"], -r["epoch"]))
        out[f"{kind}: selection F1"] = f"epoch {best['epoch']}"
        out[f"{kind}: held-out F1"] = best[f"{kind}: held-out F1"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("overrides", nargs="*", help="section.key=value settings over configs/biored-raw.yaml")
    ap.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    a = ap.parse_args()
    cfg = load_config(CONFIG, a.overrides).ner
    split = recognizer_documents(cfg.sources)
    held = split["held"]
    plans = rz.plan_parts(split["train"], cfg, extra=lent_documents(split, cfg.part_sources), texts=split["texts"])
    rows = []
    for plan in sorted(plans, key=lambda p: p.size):       # one after another, never two at once
        part = curves(plan, cfg, held)
        rows += [*part, picked(part)]
    print_table(rows, f"recognizer models, every epoch: {len(held)} held-out BioRED-train documents")
    if a.out:
        write_json("recognizer_curves", rows, a.out, overrides=a.overrides)


if __name__ == "__main__":
    main()
