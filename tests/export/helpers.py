"""Small fixed triples for the export tests: a clean set and a hostile one."""

from __future__ import annotations

import re
from pathlib import Path

from graphmert.config import ExportConfig
from graphmert.export.rdf import RunInfo
from graphmert.extract.triples import Evidence, Triple

ROOT = Path(__file__).resolve().parents[2]
RUN = RunInfo(config_hash="cfg0123456789abc", software_version="0.1.0",
              started_at="2026-01-31T12:00:00Z")


def ev(doc: str, sentence: str, head: str, tail: str | None = None, conf: float = 0.5,
       offset: int = 100, chunk: str = "c0") -> Evidence:
    """Evidence whose head/tail spans are found in ``sentence`` (document offset ``offset``)."""
    h = sentence.index(head)
    t = sentence.index(tail) if tail else -1
    return Evidence(doc_id=doc, chunk_id=chunk, sentence=sentence, sentence_start=offset,
                    head_start=offset + h, head_end=offset + h + len(head),
                    tail_start=offset + t if tail else -1,
                    tail_end=offset + t + len(tail) if tail else -1, confidence=conf)


def make_triples() -> list[Triple]:
    """Six merged triples: two genes associated with T2D, a drug, minted entities, a relation
    mapped to biolink:affects, and one relation missing from the predicate map."""
    s1 = "TCF7L2 is associated with type 2 diabetes in Europeans."
    s2 = "Variants in TCF7L2 raise the risk of type 2 diabetes."
    s3 = "KCNJ11 variants are associated with type 2 diabetes."
    s4 = "Metformin remains the first-line drug for type 2 diabetes."
    s5 = "Insulin resistance causes beta cell failure over time."
    s6 = "Metformin activates AMPK in hepatocytes."
    s7 = "Metformin was compared with sitagliptin."
    common = dict(checkpoint_id="ckpt-a", run_id="run-1")
    return [
        Triple("NCBIGene:6934", "TCF7L2", "biolink:Gene", "associated_with", "MESH:D003924",
               "type 2 diabetes", "biolink:Disease", "mention", 0.91, 0.85, 2,
               ["12345678", "demo:002"],
               [ev("12345678", s1, "TCF7L2", "type 2 diabetes", 0.91),
                ev("demo:002", s2, "TCF7L2", "type 2 diabetes", 0.79)], **common),
        Triple("NCBIGene:3767", "KCNJ11", "biolink:Gene", "associated_with", "MESH:D003924",
               "type 2 diabetes", "biolink:Disease", "mention", 0.75, 0.75, 1, ["23456789"],
               [ev("23456789", s3, "KCNJ11", "type 2 diabetes", 0.75)], **common),
        Triple("MESH:D008687", "metformin", "biolink:ChemicalEntity", "treats", "MESH:D003924",
               "type 2 diabetes", "biolink:Disease", "lexicon", 0.88, 0.88, 1, ["12345678"],
               [ev("12345678", s4, "Metformin", "type 2 diabetes", 0.88, offset=300)], **common),
        Triple("", "Insulin resistance", "", "causes", "", "beta cell failure", "", "phrase",
               0.42, 0.42, 1, ["demo:003"], [ev("demo:003", s5, "Insulin resistance", None, 0.42)],
               **common),
        Triple("MESH:D008687", "metformin", "Chemical", "upregulates", "NCBIGene:5562", "AMPK",
               "Gene", "mention", 0.6, 0.6, 1, ["34567890"],
               [ev("34567890", s6, "Metformin", "AMPK", 0.6)], **common),
        Triple("MESH:D008687", "metformin", "biolink:ChemicalEntity", "Comparison_x", "MESH:C000000",
               "sitagliptin", "biolink:ChemicalEntity", "mention", 0.3, 0.3, 1, ["34567890"],
               [ev("34567890", s7, "Metformin", "sitagliptin", 0.3)], **common),
    ]


HOSTILE_TEXT = ('He said "no" \\ then\nleft\r\n<script>alert(1)</script> & é 中文 🧬 '
                'ctl:\x00\x07\x1b\x7f\x85\u2028| end')


def hostile_triples() -> list[Triple]:
    """Text with quotes, backslashes, newlines, <>, non-ASCII and control characters; ids with
    spaces, ``../``, quotes and ``<>``; documents named like paths."""
    return [
        Triple("bad id with spaces", 'Name "quoted" <b>\\', "biolink:Gene", 'rel"<>\nx',
               "../../etc/passwd", "tail\x00name\x1b", "not-a-category", "phrase", 0.5, 0.5, 2,
               ["../../../tmp/evil", "a b"],
               [Evidence("../../../tmp/evil", "c0", HOSTILE_TEXT, 0, 0, 2),
                Evidence("a b", "c1", "plain sentence", 0, 0, 5)],
               checkpoint_id="ck\npt", run_id="../run 1"),
        Triple('MESH:"><x', "x", "", "treats", "..", "dots", "", "phrase", 1e-5, 1e-5, 1,
               ["..", "PMID: 42"], [Evidence("..", "c", "s", 0, 0, 1)], run_id="../run 1"),
        Triple("http://example.org/a b", "iri with space", "", "treats", "https://ok.example/x",
               "ok iri", "", "phrase", 0.9, 0.9, 1, ["1"], [], run_id="../run 1"),
    ]


def sparql_from_docs(marker: str = "query: genes-t2d", doc: str = "README.md") -> str:
    """The SPARQL block that follows ``<!-- marker -->`` in ``doc`` (README.md or docs/EXPORT.md)."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    m = re.search(r"<!--\s*" + re.escape(marker) + r"\s*-->\s*```sparql\n(.*?)```", text, re.S)
    assert m, f"{doc} has no ```sparql block after <!-- {marker} -->"
    return m.group(1)


def config(**over) -> ExportConfig:
    return ExportConfig(**over)
