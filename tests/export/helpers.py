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
        Triple(head_id="NCBIGene:6934", head_name="TCF7L2", head_category="biolink:Gene",
               relation="associated_with", tail_id="MESH:D003924", tail_name="type 2 diabetes",
               tail_category="biolink:Disease", tail_source="mention", confidence=0.91,
               confidence_mean=0.85, evidence_count=2, documents=["12345678", "demo:002"],
               evidence=[ev("12345678", s1, "TCF7L2", "type 2 diabetes", 0.91),
                         ev("demo:002", s2, "TCF7L2", "type 2 diabetes", 0.79)], **common),
        Triple(head_id="NCBIGene:3767", head_name="KCNJ11", head_category="biolink:Gene",
               relation="associated_with", tail_id="MESH:D003924", tail_name="type 2 diabetes",
               tail_category="biolink:Disease", tail_source="mention", confidence=0.75,
               confidence_mean=0.75, evidence_count=1, documents=["23456789"],
               evidence=[ev("23456789", s3, "KCNJ11", "type 2 diabetes", 0.75)], **common),
        Triple(head_id="MESH:D008687", head_name="metformin", head_category="biolink:ChemicalEntity",
               relation="treats", tail_id="MESH:D003924", tail_name="type 2 diabetes",
               tail_category="biolink:Disease", tail_source="lexicon", confidence=0.88,
               confidence_mean=0.88, evidence_count=1, documents=["12345678"],
               evidence=[ev("12345678", s4, "Metformin", "type 2 diabetes", 0.88, offset=300)], **common),
        Triple(head_id="", head_name="Insulin resistance", head_category="", relation="causes",
               tail_id="", tail_name="beta cell failure", tail_category="", tail_source="phrase",
               confidence=0.42, confidence_mean=0.42, evidence_count=1, documents=["demo:003"],
               evidence=[ev("demo:003", s5, "Insulin resistance", None, 0.42)], **common),
        Triple(head_id="MESH:D008687", head_name="metformin", head_category="Chemical",
               relation="upregulates", tail_id="NCBIGene:5562", tail_name="AMPK", tail_category="Gene",
               tail_source="mention", confidence=0.6, confidence_mean=0.6, evidence_count=1,
               documents=["34567890"], evidence=[ev("34567890", s6, "Metformin", "AMPK", 0.6)], **common),
        Triple(head_id="MESH:D008687", head_name="metformin", head_category="biolink:ChemicalEntity",
               relation="Comparison_x", tail_id="MESH:C000000", tail_name="sitagliptin",
               tail_category="biolink:ChemicalEntity", tail_source="mention", confidence=0.3,
               confidence_mean=0.3, evidence_count=1, documents=["34567890"],
               evidence=[ev("34567890", s7, "Metformin", "sitagliptin", 0.3)], **common),
    ]

HOSTILE_TEXT = ('He said "no" \\ then\nleft\r\n<script>alert(1)</script> & é 中文 🧬 '
                'ctl:\x00\x07\x1b\x7f\x85\u2028| end')


def hostile_triples() -> list[Triple]:
    """Text with quotes, backslashes, newlines, <>, non-ASCII and control characters; ids with
    spaces, ``../``, quotes and ``<>``; documents named like paths."""
    return [
        Triple(head_id="bad id with spaces", head_name='Name "quoted" <b>\\', head_category="biolink:Gene",
               relation='rel"<>\nx', tail_id="../../etc/passwd", tail_name="tail\x00name\x1b",
               tail_category="not-a-category", tail_source="phrase", confidence=0.5, confidence_mean=0.5,
               evidence_count=2, documents=["../../../tmp/evil", "a b"],
               evidence=[Evidence(doc_id="../../../tmp/evil", chunk_id="c0", sentence=HOSTILE_TEXT,
                                  sentence_start=0, head_start=0, head_end=2),
                         Evidence(doc_id="a b", chunk_id="c1", sentence="plain sentence", sentence_start=0,
                                  head_start=0, head_end=5)],
               checkpoint_id="ck\npt", run_id="../run 1"),
        Triple(head_id='MESH:"><x', head_name="x", head_category="", relation="treats", tail_id="..",
               tail_name="dots", tail_category="", tail_source="phrase", confidence=1e-5, confidence_mean=1e-5,
               evidence_count=1, documents=["..", "PMID: 42"],
               evidence=[Evidence(doc_id="..", chunk_id="c", sentence="s", sentence_start=0, head_start=0,
                                  head_end=1)],
               run_id="../run 1"),
        Triple(head_id="http://example.org/a b", head_name="iri with space", head_category="",
               relation="treats", tail_id="https://ok.example/x", tail_name="ok iri", tail_category="",
               tail_source="phrase", confidence=0.9, confidence_mean=0.9, evidence_count=1, documents=["1"],
               evidence=[], run_id="../run 1"),
    ]


def sparql_from_docs(marker: str = "query: genes-t2d", doc: str = "README.md") -> str:
    """The SPARQL block after ``<!-- marker -->`` in ``doc`` (README.md: examples/genes-t2d.rq's query)."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    m = re.search(r"<!--\s*" + re.escape(marker) + r"\s*-->\s*```sparql\n(.*?)```", text, re.S)
    assert m, f"{doc} has no ```sparql block after <!-- {marker} -->"
    return m.group(1)


def config(**over) -> ExportConfig:
    return ExportConfig(**over)
