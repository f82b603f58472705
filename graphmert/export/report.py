"""The run report: one self-contained HTML page (plots inlined as PNG data URIs, no scripts).

Sections, each with a stable ``id`` (tests and links rely on them):

* ``summary`` — table: triples, documents, entities, relations, evidence events, mean confidence,
  run and checkpoint ids, software version;
* ``relations`` — plot (``plot-relations``) and table (``table-relations``): triples per relation,
  its Biolink predicate and mean confidence;
* ``confidence`` — histogram of triple confidences (``plot-confidence``, 20 bins on [0, 1]);
* ``documents`` — histogram of triples per supporting document (``plot-documents``);
* ``entities`` — the ``export.report_top_entities`` entities in most triples (``plot-entities``);
* ``training`` — loss and held-out accuracy against the step (``plot-training``), only when training
  metrics (``RUN/train/metrics.jsonl`` records) are given;
* ``samples`` — table ``table-samples``: up to ``export.report_samples`` triples, best confidence
  first, taken in turn from each relation, with the evidence sentence and the head (``mark.head``)
  and tail (``mark.tail``) spans highlighted; a tail the text does not name (lexicon and token
  tails, :func:`graphmert.extract.triples.is_stated`) is marked as predicted.

Statistics are accumulated triple by triple (:class:`ReportStats`), so a report over a corpus-size
extraction holds counters and the sample candidates, not the triples.
"""

from __future__ import annotations

import base64
import heapq
import html
import io
import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from graphmert import __version__
from graphmert.config import ExportConfig
from graphmert.export.terms import ExportTerms, clean_text
from graphmert.extract.triples import Evidence, Triple, is_stated, sentence_spans, triple_key
from graphmert.io import atomic_write_text

__all__ = ["ReportStats", "render_report", "write_report", "highlight_evidence", "CONFIDENCE_BINS"]

CONFIDENCE_BINS = 20


@dataclass
class ReportStats:
    """Counters over a stream of triples (:meth:`add`) and the best sample candidates per relation."""

    samples: int
    triples: int = 0
    evidence: int = 0
    confidence_sum: float = 0.0
    relations: Counter = field(default_factory=Counter)
    relation_confidence: Counter = field(default_factory=Counter)
    confidence_bins: list[int] = field(default_factory=lambda: [0] * CONFIDENCE_BINS)
    per_document: Counter = field(default_factory=Counter)
    entities: Counter = field(default_factory=Counter)
    entity_names: dict = field(default_factory=dict)
    runs: Counter = field(default_factory=Counter)
    checkpoints: Counter = field(default_factory=Counter)
    _heaps: dict = field(default_factory=lambda: defaultdict(list))
    _tick: Any = field(default_factory=itertools.count)

    def add(self, t: Triple) -> None:
        c = float(t.confidence)
        self.triples += 1
        self.evidence += int(t.evidence_count)
        self.confidence_sum += c if c == c else 0.0
        self.relations[t.relation] += 1
        self.relation_confidence[t.relation] += c if c == c else 0.0
        b = min(CONFIDENCE_BINS - 1, max(0, int(c * CONFIDENCE_BINS))) if c == c else 0
        self.confidence_bins[b] += 1
        for d in sorted(set(t.documents) | {e.doc_id for e in t.evidence}):
            self.per_document[d] += 1
        hk, _, tk = triple_key(t)
        for key, name in ((hk, t.head_name), (tk, t.tail_name)):
            self.entities[key] += 1
            self.entity_names.setdefault(key, name)
        self.runs[t.run_id] += 1
        self.checkpoints[t.checkpoint_id] += 1
        if self.samples:
            heap = self._heaps[t.relation]
            item = (c if c == c else -1.0, -next(self._tick), t)   # ties: the earlier triple wins
            if len(heap) < self.samples:
                heapq.heappush(heap, item)
            elif item[:2] > heap[0][:2]:
                heapq.heapreplace(heap, item)

    def sample_triples(self) -> list[Triple]:
        """Best first within each relation; relations in turn (most frequent relation first)."""
        queues = [[it[2] for it in sorted(self._heaps[r], key=lambda it: it[:2], reverse=True)]
                  for r, _ in self.relations.most_common() if r in self._heaps]
        out: list[Triple] = []
        for rnd in itertools.zip_longest(*queues):
            out.extend(t for t in rnd if t is not None)
        return out[: self.samples]


# --------------------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------------------


def _figure(width: float = 7.0, height: float = 3.6):
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=90)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _integer_axis(axis) -> None:
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="gray")
    ax.set_xticks([])
    ax.set_yticks([])


def _barh(pairs: list[tuple[str, int]], title: str, xlabel: str, empty: str) -> str:
    fig = _figure(7.0, max(2.4, 0.28 * len(pairs) + 1.2))
    ax = fig.subplots()
    if pairs:
        names = [" ".join(clean_text(p[0]).split()) for p in pairs]
        labels = [n if len(n) <= 40 else n[:39] + "…" for n in names][::-1]
        ax.barh(range(len(pairs)), [p[1] for p in pairs][::-1], color="tab:blue")
        ax.set_yticks(range(len(pairs)), labels, fontsize=8)
        ax.set_xlabel(xlabel)
        _integer_axis(ax.xaxis)
    else:
        _empty(ax, empty)
    ax.set_title(title)
    return _png(fig)


def _plot_confidence(stats: ReportStats) -> str:
    fig = _figure()
    ax = fig.subplots()
    if stats.triples:
        width = 1.0 / CONFIDENCE_BINS
        ax.bar([i * width for i in range(CONFIDENCE_BINS)], stats.confidence_bins, width=width,
               align="edge", color="tab:orange", edgecolor="white")
        ax.set_xlim(0, 1)
        ax.set_xlabel("confidence")
        ax.set_ylabel("triples")
        _integer_axis(ax.yaxis)
    else:
        _empty(ax, "no triples")
    ax.set_title("confidence of the triples")
    return _png(fig)


def _plot_documents(stats: ReportStats) -> str:
    fig = _figure()
    ax = fig.subplots()
    if stats.per_document:
        counts = Counter(stats.per_document.values())
        xs = sorted(counts)
        ax.bar(xs, [counts[x] for x in xs], color="tab:green")
        ax.set_xlabel("triples per document")
        ax.set_ylabel("documents")
        _integer_axis(ax.xaxis)
        _integer_axis(ax.yaxis)
    else:
        _empty(ax, "no documents")
    ax.set_title("triples per supporting document")
    return _png(fig)


def _series(records: list[Mapping[str, Any]], split: str, key: str) -> tuple[list, list]:
    pts = [(r["step"], r[key]) for r in records
           if r.get("split") == split and isinstance(r.get(key), (int, float)) and "step" in r]
    return [p[0] for p in pts], [p[1] for p in pts]


def _plot_training(records: list[Mapping[str, Any]]) -> str:
    fig = _figure(10.0, 3.6)
    ax_loss, ax_acc = fig.subplots(1, 2)
    for split, style in (("train", "-"), ("eval", "o-")):
        for key, color in (("loss", "black"), ("mlm_loss", "tab:blue"), ("mnm_loss", "tab:orange")):
            xs, ys = _series(records, split, key)
            if xs:
                ax_loss.plot(xs, ys, style, color=color, label=f"{split} {key}", markersize=3,
                             alpha=0.5 if split == "train" else 1.0)
    for key, color in (("mlm_acc", "tab:blue"), ("mnm_acc", "tab:orange"),
                       ("leaf_majority_acc", "tab:gray")):
        xs, ys = _series(records, "eval", key)
        if xs:
            ax_acc.plot(xs, ys, "o-", color=color, label=f"held-out {key}", markersize=3)
    for ax, title in ((ax_loss, "loss"), (ax_acc, "held-out accuracy")):
        ax.set_title(title)
        ax.set_xlabel("step")
        if ax.has_data():
            ax.legend(fontsize=7)
        else:
            _empty(ax, "no records")
    return _png(fig)


# --------------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------------


def _esc(text: Any) -> str:
    return html.escape(clean_text(str(text)), quote=True)


def highlight_evidence(e: Evidence) -> str:
    """The evidence sentence as HTML with the head (and the tail, when it is a mention in the quote,
    :func:`~graphmert.extract.heads.evidence_passage`) wrapped in ``<mark class="head">`` /
    ``<mark class="tail">``. Spans that fall outside the sentence or overlap are left unmarked
    (:func:`~graphmert.extract.triples.sentence_spans`)."""
    s = e.sentence
    head, tail = sentence_spans(e)
    spans = [(cls, *span) for cls, span in (("head", head), ("tail", tail)) if span is not None]
    out, pos = [], 0
    for cls, a, b in sorted(spans, key=lambda x: x[1]):
        out.append(_esc(s[pos:a]))
        out.append(f'<mark class="{cls}">{_esc(s[a:b])}</mark>')
        pos = b
    out.append(_esc(s[pos:]))
    return "".join(out)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;
color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:0.9em;margin:0.5em 0}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
img{max-width:100%;display:block;margin:0.5em 0}
mark.head{background:#cde4ff}mark.tail{background:#ffe3b3}
.muted{color:#777;font-size:0.85em}
"""


def _table(tid: str, header: list[str], rows: list[list[str]], numeric: set[int] = frozenset()) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(r)) + "</tr>\n" for r in rows)
    return f'<table id="{tid}">\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>\n'


def _img(pid: str, src: str, alt: str) -> str:
    return f'<img id="{pid}" src="{src}" alt="{_esc(alt)}">\n'


def _ids(counter: Counter) -> str:
    ids = [k for k, _ in counter.most_common() if k]
    return ", ".join(_esc(k) for k in ids[:3]) + (" …" if len(ids) > 3 else "") or "—"


def render_report(stats: ReportStats, terms: ExportTerms, cfg: ExportConfig,
                  metrics: list[Mapping[str, Any]] | None = None, title: str = "GraphMERT run report") -> str:
    """The HTML page for accumulated ``stats`` (and training ``metrics`` records, when given)."""
    mean = stats.confidence_sum / stats.triples if stats.triples else 0.0
    summary = [["triples", str(stats.triples)], ["supporting documents", str(len(stats.per_document))],
               ["entities", str(len(stats.entities))], ["relations", str(len(stats.relations))],
               ["evidence events", str(stats.evidence)], ["mean confidence", f"{mean:.3f}"],
               ["run ids", _ids(stats.runs)], ["checkpoints", _ids(stats.checkpoints)],
               ["software version", _esc(__version__)]]
    rel_rows = [[_esc(r), _esc(terms.predicate_curie(r)), str(n),
                 f"{stats.relation_confidence[r] / n:.3f}"] for r, n in stats.relations.most_common()]
    top = [(f"{stats.entity_names.get(k) or k} ({k})" if not k.startswith("name:")
            else stats.entity_names.get(k) or k[5:], n)
           for k, n in stats.entities.most_common(cfg.report_top_entities)]
    sample_rows = []
    for t in stats.sample_triples():
        ev = max(t.evidence, key=lambda e: e.confidence) if t.evidence else None
        docs = sorted(set(t.documents) | {e.doc_id for e in t.evidence})
        sample_rows.append([
            _esc(t.head_name) + f'<br><span class="muted">{_esc(t.head_id or "—")}</span>',
            _esc(t.relation),
            _esc(t.tail_name) + f'<br><span class="muted">{_esc(t.tail_id or "—")}</span>'
            + ("" if is_stated(t.tail_source) else '<br><span class="muted">predicted: the text does '
                                                   'not name this tail</span>'),
            f"{float(t.confidence):.3f}", str(int(t.evidence_count)),
            _esc(", ".join(docs[:5]) + (" …" if len(docs) > 5 else "")),
            highlight_evidence(ev) if ev is not None else "—"])
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
        f"<title>{_esc(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<h1>{_esc(title)}</h1>\n",
        '<section id="summary"><h2>Summary</h2>\n',
        _table("table-summary", ["", "value"], [[_esc(a), b] for a, b in summary]), "</section>\n",
        '<section id="relations"><h2>Relations</h2>\n',
        _img("plot-relations", _barh(stats.relations.most_common(), "triples per relation",
                                     "triples", "no triples"), "triples per relation"),
        _table("table-relations", ["relation", "Biolink predicate", "triples", "mean confidence"],
               rel_rows, {2, 3}), "</section>\n",
        '<section id="confidence"><h2>Confidence</h2>\n',
        _img("plot-confidence", _plot_confidence(stats), "confidence histogram"), "</section>\n",
        '<section id="documents"><h2>Triples per document</h2>\n',
        _img("plot-documents", _plot_documents(stats), "triples per document"), "</section>\n",
        '<section id="entities"><h2>Top entities</h2>\n',
        _img("plot-entities", _barh(top, f"top {len(top)} entities", "triples", "no entities"),
             "top entities"), "</section>\n",
    ]
    if metrics:
        parts += ['<section id="training"><h2>Training curves</h2>\n',
                  _img("plot-training", _plot_training(list(metrics)), "training curves"),
                  "</section>\n"]
    parts += ['<section id="samples"><h2>Sample triples</h2>\n',
              '<p class="muted">Best confidence first, relations in turn. In the evidence, '
              '<mark class="head">head</mark> and <mark class="tail">tail</mark> are marked.</p>\n',
              _table("table-samples", ["head", "relation", "tail", "confidence", "evidence",
                                       "documents", "evidence sentence"], sample_rows, {3, 4}),
              "</section>\n</body>\n</html>\n"]
    return "".join(parts)


def write_report(triples: Iterable[Triple], path: str | Path, cfg: ExportConfig,
                 metrics: list[Mapping[str, Any]] | None = None,
                 title: str = "GraphMERT run report") -> dict[str, int]:
    """Accumulate ``triples``, render and write the page atomically; returns the counts shown."""
    terms = ExportTerms(cfg)
    stats = ReportStats(samples=cfg.report_samples)
    for t in triples:
        stats.add(t)
    atomic_write_text(path, render_report(stats, terms, cfg, metrics, title))
    return {"triples": stats.triples, "documents": len(stats.per_document),
            "entities": len(stats.entities), "relations": len(stats.relations),
            "samples": len(stats.sample_triples()), "plots": 4 + (1 if metrics else 0)}
