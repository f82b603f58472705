"""Export of extracted triples: RDF (Turtle, N-Triples, JSON-LD, TriG, N-Quads) with Biolink + PROV-O
provenance, KGX node/edge tables, and the HTML run report (docs/EXPORT.md)."""

from graphmert.export.kgx import KGX_FILES, read_kgx_jsonl, write_kgx
from graphmert.export.rdf import RDF_FORMATS, STREAM_FORMATS, RunInfo, build_graph, write_ntriples, write_rdf
from graphmert.export.report import write_report
from graphmert.export.terms import BIOLINK, FORMATS, GRAPHMERT, ExportTerms, check_formats

__all__ = ["BIOLINK", "FORMATS", "GRAPHMERT", "KGX_FILES", "RDF_FORMATS", "STREAM_FORMATS", "RunInfo",
           "ExportTerms", "build_graph", "check_formats", "read_kgx_jsonl", "write_kgx",
           "write_ntriples", "write_rdf", "write_report"]
