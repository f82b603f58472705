"""What a demo run's KG holds, against the facts the demo's texts were written from.

    .venv/bin/python experiments/demo_facts.py --run-dir runs/demo [--out FILE]

The demo data (``data/demo/``, ``data/README.md``) was written from two fact lists: the seed KG's edges
(``data/demo/src/facts.tsv``, written to ``kg_edges.tsv``) and held-out facts the texts state but the
seed KG lacks (``data/demo/src/held_out.tsv``). Every extracted triple of ``RUN/extract`` is one of:

- **seed fact**: its (head, relation, tail) is a seed-KG edge the texts restate;
- **held-out fact**: it is one of the held-out facts, found anew;
- **other**: neither (a plausible new statement or a wrong one: read them, they are listed).

Entities are matched by id; both fact lists are read and resolved by ``data/demo/build_demo.py``.
The counts are given at the demo's threshold (0.3) and at stricter ones. Reads no model; about 1 s.
This is where the demo's figures in the README and ``configs/demo.yaml`` come from.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
from _study import print_table, write_json  # noqa: E402
from graphmert.extract.triples import Triple, read_triples  # noqa: E402

THRESHOLDS = (0.3, 0.4, 0.5)


def _demo_builder():
    """data/demo/build_demo.py, the generator of the demo files (not a package: loaded by path)."""
    spec = importlib.util.spec_from_file_location("graphmert_demo_build", ROOT / "data" / "demo" / "build_demo.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def demo_facts() -> tuple[set[tuple[str, str, str]], set[tuple[str, str, str]]]:
    """(seed-KG edges, held-out facts), each a set of (head id, relation, tail id), resolved from
    node names by the demo's own generator (which checks them: unknown names, schema, duplicates)."""
    build = _demo_builder()
    nodes = build.load_nodes()
    return set(build.resolve_facts(build.FACTS, nodes)), set(build.resolve_facts(build.HELD_OUT, nodes))


def kind(t: Triple, seed: set, held: set) -> str:
    key = (t.head_id, t.relation, t.tail_id)
    return "seed fact" if key in seed else "held-out fact" if key in held else "other"


def tally(triples: list[Triple], seed: set, held: set, thresholds=THRESHOLDS) -> list[dict]:
    """One row per confidence threshold: how many triples of each kind it keeps."""
    rows = []
    for t in thresholds:
        kept = [x for x in triples if x.confidence >= t]
        kinds = [kind(x, seed, held) for x in kept]
        rows.append({"min confidence": round(t, 3), "triples": len(kept), "seed facts": kinds.count("seed fact"),
                     "held-out facts found": kinds.count("held-out fact"), "other": kinds.count("other")})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run-dir", type=Path, required=True, help="a finished demo run (RUN/extract)")
    ap.add_argument("--out", type=Path, default=None,
                    help="where the rows go as JSON (default experiments/results/demo_facts.json)")
    a = ap.parse_args()
    manifest = a.run_dir / "extract" / "manifest.json"
    if not manifest.is_file():
        raise SystemExit(f"{manifest}: not found; run the demo first (make demo RUN={a.run_dir})")
    shards = json.loads(manifest.read_text())["shards"]
    triples = list(read_triples([a.run_dir / "extract" / s for s in shards]))
    seed, held = demo_facts()
    rows = tally(triples, seed, held)
    print_table(rows, f"{a.run_dir}: extracted triples against the demo's facts")
    print(f"\n{len(held)} held-out facts in data/demo/src/held_out.tsv; the triples that are neither:")
    for t in sorted(triples, key=lambda x: -x.confidence):
        if kind(t, seed, held) == "other":
            print(f"  {t.confidence:.3f}  {t.head_name} {t.relation} {t.tail_name}")
    write_json("demo_facts", rows, a.out, run_dir=str(a.run_dir))


if __name__ == "__main__":
    main()
