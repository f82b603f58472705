"""Fit ``extract.calibration`` (Platt scaling of graphmert's confidences) on a run with gold, and show
what it does to another (docs/experiments/raw-slice.md, "Confidence on raw text").

    .venv/bin/python experiments/calibrate.py --run-dir runs/tune-raw \\
        --gold ../shared/datasets/biored/Train.PubTator \\
        [--apply-to runs/biored-raw --apply-gold ../shared/datasets/biored/Dev.PubTator]   # seconds

The fit is ``graphmert calibrate``'s (:func:`pipelines.calibrate.fit_scored`: each scored pair of
graphmert's triples in ``--run-dir``, labelled by whether the gold holds it, an unlinked end a false
pair; a run whose extract manifest records a map is refused; the record goes to RUN/calibrate/, the
config lines to set are printed). This study adds the expected calibration error
before and after on a run nothing was fitted on (``--apply-to``; the map is monotone, so no pair and
no F1 changes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _study import print_table, write_json  # noqa: E402

from graphmert.eval.calibration import reliability  # noqa: E402
from graphmert.extract.calibrate import platt  # noqa: E402
from pipelines.calibrate import config_lines, fit_scored, scored_pairs  # noqa: E402


def _row(name: str, conf: dict, gold, a: float, b: float) -> dict:
    mapped = {k: (platt(c, a, b), types) for k, (c, types) in conf.items()}
    before, after = reliability(conf, gold), reliability(mapped, gold)
    right = sum(k in gold.untyped for k in conf)
    return {"run": name, "pairs": len(conf), "precision": round(right / len(conf), 3) if conf else None,
            "ECE before": round(before["ece"], 3), "ECE after": round(after["ece"], 3),
            "≥ 0.8 after: pairs": sum(c >= 0.8 for c, _ in mapped.values()),
            "≥ 0.5 after: pairs": sum(c >= 0.5 for c, _ in mapped.values())}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run-dir", type=Path, required=True, help="the run to fit on (extracted without the map)")
    ap.add_argument("--gold", type=Path, nargs="+", required=True, help="its annotated gold")
    ap.add_argument("--apply-to", type=Path, default=None, help="a run to report the fitted map on")
    ap.add_argument("--apply-gold", type=Path, nargs="+", default=None, help="that run's gold")
    ap.add_argument("--out", type=Path, default=None, help="the JSON rows (default experiments/results/)")
    args = ap.parse_args(argv)
    if args.apply_to is not None and not args.apply_gold:
        raise SystemExit("--apply-to needs --apply-gold, the gold of that run's documents")
    scored = scored_pairs(args.run_dir, args.gold)
    record = fit_scored(scored)
    a, b = record["a"], record["b"]
    rows = [_row(str(args.run_dir), scored.conf, scored.gold, a, b)]
    if args.apply_to is not None:
        theirs = scored_pairs(args.apply_to, args.apply_gold, refuse_mapped=False)
        rows.append(_row(str(args.apply_to), theirs.conf, theirs.gold, a, b))
    print_table(rows, title=f"Platt scaling fitted on {args.run_dir}: a = {a}, b = {b}")
    print(config_lines(record))
    write_json("calibrate", rows, args.out, a=a, b=b, fitted_with=record["fitted_with"])


if __name__ == "__main__":
    main()
