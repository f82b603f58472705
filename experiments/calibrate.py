"""Fit ``extract.calibration`` (Platt scaling of graphmert's confidences) on a run with gold, and show
what it does to another (docs/experiments/raw-slice.md, "Confidence on raw text").

    .venv/bin/python experiments/calibrate.py --run-dir runs/tune-raw \\
        --gold ../shared/datasets/biored/Train.PubTator \\
        [--apply-to runs/biored-raw --apply-gold ../shared/datasets/biored/Dev.PubTator]   # seconds

Each scored pair of graphmert's triples in ``--run-dir`` (:func:`graphmert.eval.pair_confidences`:
its best confidence, an unlinked end a false pair) is labelled by whether the gold holds it, and
(a, b) of :mod:`graphmert.extract.calibrate` are fitted to those labels. The script prints them as the
config line to set, and the expected calibration error before and after on the fitting run and,
given ``--apply-to``, on a run nothing was fitted on (the map is monotone, so no pair and no F1
changes). The fitting run must have been extracted without ``extract.calibration`` (a run whose
extract manifest records a map is refused).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _study import print_table, run_documents, system_files, write_json  # noqa: E402

from graphmert.eval import load_gold  # noqa: E402
from graphmert.eval.calibration import pair_confidences, reliability  # noqa: E402
from graphmert.extract.calibrate import fit_platt, platt  # noqa: E402
from graphmert.extract.triples import read_triples  # noqa: E402


def scored_pairs(run: Path, gold_files: list[Path], unmapped: bool = False) -> tuple[dict, object]:
    """graphmert's pair confidences of ``run`` on the gold's documents, and that gold. ``unmapped``:
    refuse a run whose confidences were already mapped (its extract manifest's ``calibration``)."""
    manifest = run / "extract" / "manifest.json"
    done = json.loads(manifest.read_text()).get("calibration") if unmapped and manifest.is_file() else None
    if done:
        raise SystemExit(f"{manifest}: this run's confidences are already mapped by extract.calibration "
                         f"{done}; fit on a run extracted with 'extract.calibration=[]'")
    gold = load_gold(gold_files).subset(run_documents(run))
    conf = pair_confidences(read_triples(system_files(run, "graphmert")))
    return {k: v for k, v in conf.items() if k[0] in gold.documents}, gold


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
    conf, gold = scored_pairs(args.run_dir, args.gold, unmapped=True)
    a, b = fit_platt([c for c, _ in conf.values()], [k in gold.untyped for k in conf])
    rows = [_row(str(args.run_dir), conf, gold, a, b)]
    if args.apply_to is not None:
        rows.append(_row(str(args.apply_to), *scored_pairs(args.apply_to, args.apply_gold), a, b))
    print_table(rows, title=f"Platt scaling fitted on {args.run_dir}: a = {a:.4f}, b = {b:.4f}")
    print(f"extract.calibration: [{a:.3f}, {b:.3f}]")
    write_json("calibrate", rows, args.out, a=a, b=b)


if __name__ == "__main__":
    main()
