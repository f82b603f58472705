"""Graph building and collation throughput on the shared corpus + shared seed KG, and the packed/dense
token ratio.

    .venv/bin/python benchmarks/graphs.py [--limit N] [--alpha A] [--min-relation-count N]
                                          [--batch-size B] [--tokenizer tokenizer.json] [--out FILE]

Phases: seed-KG load; build_graphs (chunks/s overall, and its sub-phases: head linking, scoring,
selection + assembly); collation into GraphBatch per layout (chunks/s, and the share of batch
positions that are padding). Token ratio = tokens_packed / tokens_dense of the report (per graph), and
the same over whole batches (packed batches still pad to the longest graph of the batch).

The defaults ``--alpha 0.2 --min-relation-count 20`` are the values suggested for this corpus: TF-IDF
cosines are far below the paper's embedding-similarity α = 0.55, at which nothing survives.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, require_shared, write_json  # noqa: E402

from graphmert.config import build  # noqa: E402
from graphmert.corpus.windowing import chunk_documents  # noqa: E402
from graphmert.corpus.readers import read_corpus  # noqa: E402
from graphmert.corpus.tokenizer import load_tokenizer, train_tokenizer  # noqa: E402
from graphmert.graph.builder import build_graphs  # noqa: E402
from graphmert.graph.collate import collate_graphs  # noqa: E402
from graphmert.kg.loaders import load_kg  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=None, help="corpus file (default: the shared abstracts corpus)")
    ap.add_argument("--kg", default=None, help="seed-KG folder (default: the shared seed KG)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N documents")
    ap.add_argument("--tokenizer", default=None, help="existing tokenizer.json (default: train one)")
    ap.add_argument("--vocab-size", type=int, default=30522)
    ap.add_argument("--alpha", type=float, default=0.2)
    ap.add_argument("--min-relation-count", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    corpus = Path(args.corpus) if args.corpus else require_shared("biomed_abstracts_corpus", "abstracts.jsonl.gz")
    kg_path = Path(args.kg) if args.kg else require_shared("seed_kg_hetionet_disgenet_mesh")
    cfg = build({"kg": {"path": str(kg_path), "alpha": args.alpha,
                        "min_relation_count": args.min_relation_count},
                 "tokenizer": {"vocab_size": args.vocab_size}})
    rows = []

    docs = []
    for d in read_corpus([str(corpus)]):
        docs.append(d)
        if args.limit and len(docs) >= args.limit:
            break
    tok = load_tokenizer(args.tokenizer) if args.tokenizer else train_tokenizer((d.text for d in docs), cfg.tokenizer)
    chunks = list(chunk_documents(docs, tok, cfg.corpus, cfg.graph))
    n = len(chunks)
    print(f"{len(docs)} documents → {n} chunks (R={cfg.graph.num_roots}, K={cfg.graph.num_leaves})")

    t = time.perf_counter()
    kg = load_kg(cfg.kg)
    rows.append({"phase": "load seed KG", "chunks": "", "seconds": time.perf_counter() - t, "chunks/s": "",
                 "note": f"{len(kg.nodes)} nodes, {len(kg.edges)} edges"})

    marks: dict[str, float] = {}

    def progress(phase: str, done: int, total: int) -> None:
        marks.setdefault(f"{phase}:first", time.perf_counter())
        marks[f"{phase}:last"] = time.perf_counter()

    t0 = time.perf_counter()
    graphs, rep = build_graphs(chunks, kg, tok, cfg.kg, cfg.graph, progress=progress)
    t1 = time.perf_counter()
    rows.append({"phase": "build_graphs", "chunks": n, "seconds": t1 - t0, "chunks/s": n / (t1 - t0),
                 "note": f"{rep['injections']} injections, {rep['injection']['candidates']} candidates"})
    for name, a, b in (("  link heads", t0, marks["score:first"]),
                       ("  score candidates", marks["score:first"], marks["score:last"]),
                       ("  select + assemble", marks["score:last"], t1)):
        rows.append({"phase": name, "chunks": n, "seconds": b - a, "chunks/s": n / max(b - a, 1e-9)})

    B = args.batch_size
    batch_positions = {}
    for layout in ("dense", "packed"):
        t = time.perf_counter()
        positions = real = 0
        for i in range(0, n, B):
            batch = collate_graphs(graphs[i:i + B], layout)
            positions += batch.input_ids.numel()
            real += int(batch.attention_mask.sum())
        dt = time.perf_counter() - t
        batch_positions[layout] = positions
        rows.append({"phase": f"collate {layout} (B={B})", "chunks": n, "seconds": dt, "chunks/s": n / dt,
                     "note": f"padding {1 - real / positions:.1%} of {positions} positions"})
    print_table(rows, "graph building and collation")

    ratio = rep["tokens_packed"] / rep["tokens_dense"]
    batch_ratio = batch_positions["packed"] / batch_positions["dense"]
    summary = {k: rep[k] for k in ("graphs", "chunks_with_leaves", "injections", "injections_per_relation",
                                   "tokens_dense", "tokens_packed")}
    summary |= {"packed_dense_token_ratio": ratio, "packed_dense_batch_ratio": batch_ratio,
                "alpha": args.alpha, "min_relation_count": args.min_relation_count, "batch_size": B,
                "documents": len(docs), "best_score_per_triple_quantiles":
                    rep["injection"]["best_score_per_triple_quantiles"],
                "triples_above_alpha": rep["injection"]["triples_above_alpha"]}
    print(f"\ntokens packed/dense: {ratio:.4f} per graph, {batch_ratio:.4f} over batches of {B}")
    print(f"injections: {rep['injections']} in {rep['chunks_with_leaves']} of {rep['graphs']} chunks; "
          f"per relation {rep['injections_per_relation']}")
    write_json("graphs", rows, args.out, summary=summary)


if __name__ == "__main__":
    main()
