"""Rebuild a run's entity linker with other linker settings, keeping its recognizer (issue #19).

    .venv/bin/python benchmarks/relink.py --run-dir runs/x 'ner.name_tables=[]'     # about 10 s

then ``graphmert extract`` and ``graphmert evaluate`` on the run. Retraining the recognizer to try
a linker setting takes 15 minutes and draws another recognizer (docs/NER.md, "What limits it": the
recognizer's draw), which can move the numbers as much as the setting. This builds
``RUN/ner/linker.json.gz`` exactly as the ``ner`` stage does (the same training documents, held-out
documents, seed KG and tables: :func:`pipelines.stages.ner.build_linker`), from the run's resolved
``config.yaml`` and the ``section.key=value`` overrides given, and leaves the recognizer alone.
The ``ner`` stage does not know; rerun it (``graphmert ner --force``) to make the run whole again.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphmert.config import load_config  # noqa: E402
from pipelines.holdout import held_out_documents  # noqa: E402
from pipelines.stages.ner import LINKER_FILE, build_linker, training_documents  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run-dir", type=Path, required=True, help="a run whose ner stage has finished")
    ap.add_argument("overrides", nargs="*", help="section.key=value settings over RUN/config.yaml")
    a = ap.parse_args()
    linker_path = a.run_dir / "ner" / LINKER_FILE
    if not linker_path.is_file():
        sys.exit(f"{linker_path}: not found; run the ner stage first")
    t0 = time.perf_counter()
    cfg = load_config(a.run_dir / "config.yaml", a.overrides)
    held = held_out_documents(cfg)
    docs, _, _ = training_documents(cfg, held)
    linker = build_linker(cfg, docs, held)
    linker.save(linker_path)
    print(json.dumps(linker.stats(), indent=1))
    print(f"wrote {linker_path} in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
