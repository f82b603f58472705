"""Extraction throughput on CPU: queries/s and documents/s for the demo and small configs, packed
(many queries per forward graph) vs one query per graph, in one run.

    .venv/bin/python benchmarks/extract.py [--docs N] [--configs demo small] [--threads T] [--out FILE]

For each config: its corpus (the demo corpus; the shared abstracts for ``small``, first N documents
with annotations), a tokenizer trained on those documents, its seed KG, and a model of the config's
size with random weights — speed does not depend on the weights (confidence and similarity
thresholds are then set to 0, so the agreement compares every best tail); with ``--run-dir RUN`` the run's
tokenizer and trained checkpoint are used instead (one config). Each mode extracts from the same
documents; the table reports queries, forward graphs, wall time, queries/s, documents/s, triples and
the agreement of the two modes' triples (Jaccard of (head, relation, tail) keys; packing lets the
masked leaves of a chunk's heads see each other, so it is close to but not exactly the single-query
result).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, print_table, require_shared, write_json  # noqa: E402

import torch  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.corpus.chunking import chunk_documents  # noqa: E402
from graphmert.corpus.nlp import TextAnalyzer  # noqa: E402
from graphmert.corpus.readers import read_corpus  # noqa: E402
from graphmert.corpus.tokenizer import load_tokenizer, train_tokenizer  # noqa: E402
from graphmert.extract.extractor import Extractor  # noqa: E402
from graphmert.extract.triples import triple_key  # noqa: E402
from graphmert.kg.graph import load_relation_map  # noqa: E402
from graphmert.kg.loaders import load_kg  # noqa: E402
from graphmert.kg.schema import RelationSchema  # noqa: E402
from graphmert.model.checkpoint import load_checkpoint  # noqa: E402
from graphmert.model.graphmert import build_model  # noqa: E402

CONFIGS = {"demo": ROOT / "configs" / "demo.yaml", "small": ROOT / "configs" / "small.yaml"}


def load_docs(cfg, limit: int) -> list:
    if any("../shared" in p for p in cfg.corpus.paths):
        require_shared("biomed_abstracts_corpus")
    docs = []
    for d in read_corpus([str(ROOT / p) for p in cfg.corpus.paths]):
        if d.mentions:
            docs.append(d)
        if len(docs) >= limit:
            break
    return list(TextAnalyzer(sentences=True, abbreviations=False).annotate(docs))


def bench(name: str, cfg, docs, run_dir: Path | None, threads: int) -> list[dict]:
    torch.set_num_threads(threads)
    if cfg.kg.path:
        cfg.kg.path = str(ROOT / cfg.kg.path)
    cfg.kg.nodes = [str(ROOT / p) for p in cfg.kg.nodes]
    cfg.kg.edges = [str(ROOT / p) for p in cfg.kg.edges]
    kg = load_kg(cfg.kg)
    schema = RelationSchema.from_kg(kg, cfg.kg.relation_schema)
    if run_dir is not None:
        tok = load_tokenizer(run_dir / "tokenizer" / "tokenizer.json")
        rmap = load_relation_map(run_dir / "graphs" / "relation_map.json")
        model, _ = load_checkpoint(run_dir / "train" / "model", expected_relations=rmap)
    else:
        tok = train_tokenizer((d.text for d in docs), cfg.tokenizer)
        rmap = dict(kg.relation_map)
        torch.manual_seed(0)
        model = build_model(cfg.model, tok.get_vocab_size(), len(rmap)).eval()
    chunks = list(chunk_documents(docs, tok, cfg.corpus, cfg.graph))
    if run_dir is None:                      # random weights: keep every best tail for the agreement
        cfg.extract.min_confidence, cfg.extract.beta = 0.0, 0.0
    rows, keys = [], {}
    for pack in (True, False):
        cfg.extract.pack_queries = pack
        ex = Extractor(model, tok, kg, schema, rmap, cfg.extract, cfg.graph.num_roots, cfg.graph.num_leaves)
        ex.fit_similarity(chunks)
        t0 = time.perf_counter()
        triples, rep = ex.extract(docs, chunks)
        dt = time.perf_counter() - t0
        c = rep["counts"]
        mode = "packed" if pack else "single"
        keys[mode] = {triple_key(t) for t in triples}
        rows.append({"config": name, "mode": mode, "documents": len(docs), "chunks": len(chunks),
                     "queries": c["queries"], "graphs": c["graphs"], "forwards": c["forwards"],
                     "seconds": round(dt, 2), "queries_per_s": round(c["queries"] / dt, 1),
                     "documents_per_s": round(len(docs) / dt, 3), "triples": len(triples)})
    union = keys["packed"] | keys["single"]
    agree = len(keys["packed"] & keys["single"]) / len(union) if union else 1.0
    for r in rows:
        r["agreement"] = round(agree, 3)
        r["speedup"] = round(rows[1]["seconds"] / r["seconds"], 2)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", nargs="+", default=["demo", "small"], choices=sorted(CONFIGS))
    ap.add_argument("--docs", type=int, default=10, help="documents per config")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--run-dir", type=Path, default=None, help="use this run's tokenizer and "
                    "checkpoint (with a single --configs entry)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.run_dir is not None and len(args.configs) != 1:
        raise SystemExit("--run-dir needs exactly one --configs entry")
    rows = []
    for name in args.configs:
        cfg = load_config(CONFIGS[name])
        docs = load_docs(cfg, args.docs)
        rows += bench(name, cfg, docs, args.run_dir, args.threads)
    print_table(rows, f"extraction on CPU ({args.threads} thread(s)), packed vs one query per graph")
    write_json("extract", rows, args.out, threads=args.threads, docs=args.docs)


if __name__ == "__main__":
    main()
