"""The HTML report: every plot and table present, images are real PNGs, evidence highlighted and
escaped, sample selection, training curves only when given."""

from __future__ import annotations

import base64
from html.parser import HTMLParser

from graphmert.config import ExportConfig
from graphmert.export.report import ReportStats, highlight_evidence, write_report
from graphmert.extract.triples import Evidence

from .helpers import HOSTILE_TEXT, ev, hostile_triples, make_triples

PLOTS = ["plot-relations", "plot-confidence", "plot-documents", "plot-entities"]
TABLES = ["table-summary", "table-relations", "table-samples"]
METRICS = [{"split": "train", "step": s, "loss": 5.0 / s, "mlm_loss": 3.0 / s, "mnm_loss": 2.0 / s}
           for s in range(1, 11)] + \
          [{"split": "eval", "step": s, "loss": 6.0 / s, "mlm_acc": 0.1 * s / 5, "mnm_acc": 0.2 * s / 5,
            "leaf_majority_acc": 0.1} for s in (5, 10)] + [{"split": "eval", "step": 11, "loss": None}]


class _Page(HTMLParser):
    """Collects images, tables (with their body rows), sections, marks and scripts."""

    def __init__(self) -> None:
        super().__init__()
        self.images: dict[str, str] = {}
        self.tables: dict[str, int] = {}
        self.sections: list[str] = []
        self.marks: list[tuple[str, str]] = []
        self.scripts = 0
        self._table = None
        self._in_tbody = False
        self._mark = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.images[a["id"]] = a["src"]
        elif tag == "table":
            self._table = a["id"]
            self.tables[self._table] = 0
        elif tag == "tbody":
            self._in_tbody = True
        elif tag == "tr" and self._in_tbody:
            self.tables[self._table] += 1
        elif tag == "section":
            self.sections.append(a["id"])
        elif tag == "mark":
            self._mark = [a["class"], ""]
        elif tag in ("script", "link", "iframe"):
            self.scripts += 1

    def handle_endtag(self, tag):
        if tag == "tbody":
            self._in_tbody = False
        elif tag == "mark":
            self.marks.append(tuple(self._mark))
            self._mark = None

    def handle_data(self, data):
        if self._mark is not None:
            self._mark[1] += data


def _page(path) -> _Page:
    p = _Page()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def _is_png(src: str) -> bool:
    prefix = "data:image/png;base64,"
    return src.startswith(prefix) and base64.b64decode(src[len(prefix):]).startswith(b"\x89PNG\r\n\x1a\n")


def test_report_has_every_plot_and_table(tmp_path):
    triples = make_triples()
    counts = write_report(triples, tmp_path / "report.html", ExportConfig(), metrics=METRICS)
    page = _page(tmp_path / "report.html")
    assert set(page.images) == set(PLOTS) | {"plot-training"}
    assert all(_is_png(src) for src in page.images.values())
    assert set(page.tables) == set(TABLES)
    assert page.tables["table-relations"] == 5 and page.tables["table-samples"] == len(triples)
    assert page.tables["table-summary"] == 9
    assert page.sections == ["summary", "relations", "confidence", "documents", "entities",
                             "training", "samples"]
    assert page.scripts == 0                                # self-contained, nothing fetched
    assert counts == {"triples": 6, "documents": 5, "entities": 8, "relations": 5, "samples": 6,
                      "plots": 5}
    # evidence highlighted: head and tail spans of the samples
    assert ("head", "TCF7L2") in page.marks and ("tail", "type 2 diabetes") in page.marks
    assert ("head", "Insulin resistance") in page.marks
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "biolink:associated_with" in html and "biolink:affects" in html


def test_no_training_section_without_metrics_and_empty_input_renders(tmp_path):
    write_report(make_triples(), tmp_path / "a.html", ExportConfig(), metrics=None)
    page = _page(tmp_path / "a.html")
    assert set(page.images) == set(PLOTS) and "training" not in page.sections
    counts = write_report([], tmp_path / "b.html", ExportConfig(), metrics=[])
    page = _page(tmp_path / "b.html")
    assert set(page.images) == set(PLOTS) and all(_is_png(s) for s in page.images.values())
    assert page.tables["table-samples"] == 0 and counts["triples"] == 0


def test_hostile_text_is_escaped(tmp_path):
    triples = hostile_triples()
    triples[0].evidence[0] = Evidence(doc_id="d", chunk_id="c", sentence=HOSTILE_TEXT, sentence_start=10,
                                      head_start=10 + 3, head_end=10 + 7)
    write_report(triples, tmp_path / "r.html", ExportConfig(), metrics=None)
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<b>" not in html and "\x00" not in html and "\x1b" not in html
    page = _page(tmp_path / "r.html")
    assert page.scripts == 0 and page.tables["table-samples"] == 3
    assert ("head", "said") in page.marks


def test_highlight_evidence_spans():
    e = ev("d", "Metformin activates AMPK in liver.", "Metformin", "AMPK")
    assert highlight_evidence(e) == ('<mark class="head">Metformin</mark> activates '
                                     '<mark class="tail">AMPK</mark> in liver.')
    # tail before head, and a tail outside the sentence (left unmarked)
    e2 = ev("d", "AMPK is activated by metformin.", "metformin", "AMPK")
    assert highlight_evidence(e2).startswith('<mark class="tail">AMPK</mark>')
    e3 = Evidence(doc_id="d", chunk_id="c", sentence="abc <x>", sentence_start=0, head_start=0, head_end=1,
                  tail_start=50, tail_end=60)
    assert highlight_evidence(e3) == '<mark class="head">a</mark>bc &lt;x&gt;'
    # overlapping spans: only the head is marked
    e4 = Evidence(doc_id="d", chunk_id="c", sentence="abcdef", sentence_start=0, head_start=0, head_end=4,
                  tail_start=2, tail_end=6)
    assert highlight_evidence(e4) == '<mark class="head">abcd</mark>ef'


def test_samples_take_relations_in_turn_best_first():
    stats = ReportStats(samples=4)
    triples = make_triples()
    for t in triples:
        stats.add(t)
    picked = stats.sample_triples()
    assert len(picked) == 4
    assert [t.relation for t in picked[:2]] == ["associated_with", "treats"]
    assert picked[0].head_name == "TCF7L2"                  # best of the most frequent relation
    stats = ReportStats(samples=10)
    for t in triples:
        stats.add(t)
    names = [t.head_name for t in stats.sample_triples() if t.relation == "associated_with"]
    assert names == ["TCF7L2", "KCNJ11"]
    assert sum(stats.confidence_bins) == len(triples) and stats.confidence_bins[18] == 1   # 0.91
