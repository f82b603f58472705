"""Graph stage: chunks + seed KG → leafy chain graphs (DESIGN §4, §7).

Injection is global (each triple only in its best chunk, minimum counts per relation), so the stage
builds all graphs in one call and then writes them as shards.
"""

from __future__ import annotations

from pathlib import Path

from graphmert.config import Config
from graphmert.corpus.chunk import read_chunks
from graphmert.corpus.tokenizer import load_tokenizer
from graphmert.graph.builder import build_graphs
from graphmert.graph.io import write_graph_shards
from graphmert.io import atomic_write_json
from graphmert.kg.graph import save_relation_map
from graphmert.kg.loaders import load_kg
from pipelines.stage import Stage, StageContext


class _PhaseBars:
    """Adapts the library's ``progress(phase, done, total)`` callback to one tqdm bar per phase."""

    def __init__(self, ctx: StageContext) -> None:
        self.ctx = ctx
        self.bars: dict = {}

    def __call__(self, phase: str, done: int, total: int) -> None:
        bar = self.bars.get(phase)
        if bar is None:
            bar = self.bars[phase] = self.ctx.progress(total=total, desc=f"graphs: {phase}")
        bar.update(done - bar.n)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


def _graphs(ctx: StageContext) -> dict:
    cfg = ctx.cfg
    tok = load_tokenizer(ctx.stage_dir("tokenizer") / "tokenizer.json")
    chunk_dir = ctx.stage_dir("chunks")
    chunks = list(read_chunks([chunk_dir / s for s in ctx.upstream["chunks"]["shards"]]))
    kg = load_kg(cfg.kg)
    bars = _PhaseBars(ctx)
    try:
        graphs, report = build_graphs(chunks, kg, tok, cfg.kg, cfg.graph, progress=bars)
    finally:
        bars.close()
    shards = write_graph_shards(graphs, ctx.out, cfg.graph.shard_size)
    save_relation_map(kg, ctx.out / "relation_map.json")
    atomic_write_json(ctx.out / "injection_report.json", report)
    keys = ("graphs", "chunks_with_leaves", "injections", "injections_per_relation",
            "tokens_dense", "tokens_packed")
    return {**{k: report[k] for k in keys}, "kg": kg.stats(),
            "shards": [p.name for p in shards]}


def _kg_files(cfg: Config) -> list[Path]:
    if cfg.kg.path:
        return sorted(p for p in Path(cfg.kg.path).iterdir() if p.is_file())
    return [Path(p) for p in (*cfg.kg.nodes, *cfg.kg.edges)]


GRAPHS = Stage("graphs", command="build-graphs", sections=("kg", "graph.num_roots", "graph.num_leaves",
                                         "graph.shard_size"),
               upstream=("tokenizer", "chunks"), run=_graphs, source_files=_kg_files,
               help="Inject seed-KG tails into chunks as leaves: leafy chain graph shards, the "
                    "relation map and an injection report.")
