"""KGX export: Biolink node and edge tables as TSV and JSON Lines (https://github.com/biolink/kgx).

Files (names fixed here, never taken from data): ``kg_nodes.tsv``, ``kg_edges.tsv``,
``kg_nodes.jsonl``, ``kg_edges.jsonl``. Columns:

* nodes: ``id`` (CURIE), ``name``, ``category`` (Biolink CURIE), ``xref`` (the entity's other ids,
  :attr:`~graphmert.export.rdf.RunInfo.xrefs`; empty for most);
* edges: ``id`` (``graphmert:association/…``, the RDF association), ``subject``, ``predicate`` (Biolink
  CURIE), ``object``, the qualifier slots of :data:`~graphmert.export.terms.QUALIFIERS`
  (``qualified_predicate``, ``object_aspect_qualifier``, ``object_direction_qualifier``: from
  ``export.predicate_qualifiers``, e.g. ``upregulates`` → ``biolink:causes`` /
  ``activity_or_abundance`` / ``increased``), ``original_predicate`` (the model's relation name),
  ``knowledge_level`` (``prediction``: :data:`graphmert.extract.triples.KNOWLEDGE_LEVEL`),
  ``agent_type`` (``text_mining_agent``), ``primary_knowledge_source``
  (``export.knowledge_source``), ``publications`` (``PMID:…`` or document IRIs),
  ``has_confidence_score``, ``evidence_count``, ``supporting_text`` (distinct evidence sentences,
  at most ``export.max_supporting_text``). Every column is a Biolink slot.

JSON Lines keeps multi-valued fields (``category``, ``xref``, ``publications``, ``supporting_text``)
as lists and numbers as numbers. A qualifier that does not apply to an edge, or a node without
xrefs, is left out of its JSON line and empty in its TSV row (KGX reads an empty TSV cell as
absent). TSV follows KGX: tab-separated, no quoting, ``|`` between the values of a multi-valued
field; so inside a TSV value tabs and line breaks become spaces, and a ``|`` inside one
supporting sentence is written as ``¦`` (U+00A6). The JSON Lines files keep the text unchanged
(after :func:`~graphmert.export.terms.clean_text`).

Edges are streamed; nodes (one per distinct entity, first name and category seen) are held in
memory and written sorted by id at the end.
"""

from __future__ import annotations

import json
import re
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Iterable, Iterator

from graphmert.export.rdf import RunInfo, documents, supporting_texts
from graphmert.export.terms import QUALIFIERS, ExportTerms, clean_text
from graphmert.extract.triples import KNOWLEDGE_LEVEL, Triple, triple_key
from graphmert.io import atomic_path

__all__ = ["NODE_COLUMNS", "EDGE_COLUMNS", "KGX_FILES", "kgx_edge", "kgx_nodes", "tsv_row", "json_line",
           "write_kgx", "write_kgx_nodes", "read_kgx_jsonl"]

NODE_COLUMNS = ("id", "name", "category", "xref")
EDGE_COLUMNS = ("id", "subject", "predicate", "object", *QUALIFIERS, "original_predicate",
                "knowledge_level", "agent_type", "primary_knowledge_source", "publications",
                "has_confidence_score", "evidence_count", "supporting_text")
KGX_FILES = {"nodes_tsv": "kg_nodes.tsv", "edges_tsv": "kg_edges.tsv",
             "nodes_jsonl": "kg_nodes.jsonl", "edges_jsonl": "kg_edges.jsonl"}

_TSV_SPACE = re.compile(r"[\t\n\r]+")


def kgx_edge(t: Triple, terms: ExportTerms, run: RunInfo) -> dict[str, Any]:
    """One KGX edge record (JSON-ready: lists for multi-valued fields; qualifiers only where the
    relation has them, right after ``object``)."""
    _, head = terms.entity(t.head_id, t.head_name)
    _, tail = terms.entity(t.tail_id, t.tail_name)
    run_key = terms.run_key(t.run_id, t.checkpoint_id, run.config_hash)
    hk, _, tk = triple_key(t)
    assoc = terms.association(run_key, hk, t.relation, tk)
    return {
        "id": "graphmert:" + assoc[len(terms.namespace):],
        "subject": head,
        "predicate": terms.predicate_curie(t.relation),
        "object": tail,
        **dict(terms.qualifiers(t.relation)),
        "original_predicate": clean_text(t.relation),
        "knowledge_level": KNOWLEDGE_LEVEL,
        "agent_type": "text_mining_agent",
        "primary_knowledge_source": terms.cfg.knowledge_source,
        "publications": [terms.document(d)[1] for d in documents(t)],
        "has_confidence_score": float(t.confidence),
        "evidence_count": int(t.evidence_count),
        "supporting_text": supporting_texts(t, terms.cfg.max_supporting_text),
    }


def kgx_nodes(t: Triple, terms: ExportTerms, run: RunInfo | None = None) -> list[dict[str, Any]]:
    """The head and tail node records of a triple, with an ``xref`` list where ``run.xrefs`` has
    the entity's other ids (absent otherwise)."""
    out = []
    for eid, name, cat in ((t.head_id, t.head_name, t.head_category),
                           (t.tail_id, t.tail_name, t.tail_category)):
        _, curie = terms.entity(eid, name)
        node = {"id": curie, "name": clean_text(name).strip(), "category": [terms.category_curie(cat)]}
        xrefs = run.xrefs.get(eid, ()) if run is not None and eid else ()
        if xrefs:
            node["xref"] = [clean_text(x) for x in xrefs]
        out.append(node)
    return out


def _tsv_value(v: Any) -> str:
    if isinstance(v, list):
        return "|".join(_TSV_SPACE.sub(" ", str(x)).replace("|", "\u00a6").strip() for x in v)
    if isinstance(v, float):
        return repr(v)
    return _TSV_SPACE.sub(" ", clean_text(str(v))).strip()


def tsv_row(record: dict[str, Any], columns: tuple[str, ...]) -> str:
    """One TSV line of ``record`` in ``columns`` order; a column the record lacks is empty."""
    return "\t".join(_tsv_value(record.get(c, "")) for c in columns) + "\n"


def json_line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, allow_nan=True) + "\n"


def write_kgx(shards: Iterable[Iterable[Triple]], folder: str | Path, terms: ExportTerms, run: RunInfo,
              tsv: bool = True, jsonl: bool = True) -> dict[str, int]:
    """Write the KGX files into ``folder`` atomically; returns ``{"nodes": n, "edges": m}``."""
    folder = Path(folder)
    nodes: dict[str, dict[str, Any]] = {}
    edges = 0
    with ExitStack() as stack:
        outs = []
        for kind, on in (("tsv", tsv), ("jsonl", jsonl)):
            if on:
                tmp = stack.enter_context(atomic_path(folder / KGX_FILES[f"edges_{kind}"]))
                f = stack.enter_context(open(tmp, "w", encoding="utf-8", newline="\n"))
                if kind == "tsv":
                    f.write("\t".join(EDGE_COLUMNS) + "\n")
                outs.append((kind, f))
        for shard in shards:
            for t in shard:
                rec = kgx_edge(t, terms, run)
                for kind, f in outs:
                    f.write(tsv_row(rec, EDGE_COLUMNS) if kind == "tsv" else json_line(rec))
                for n in kgx_nodes(t, terms, run):
                    nodes.setdefault(n["id"], n)
                edges += 1
    return {"nodes": write_kgx_nodes(nodes, folder, tsv, jsonl), "edges": edges}


def write_kgx_nodes(nodes: dict[str, dict[str, Any]], folder: str | Path, tsv: bool = True,
                    jsonl: bool = True) -> int:
    """Write node records (id → record) sorted by id as ``kg_nodes.tsv`` / ``kg_nodes.jsonl``
    atomically; returns how many."""
    folder = Path(folder)
    ordered = [nodes[k] for k in sorted(nodes)]
    if tsv:
        with atomic_path(folder / KGX_FILES["nodes_tsv"]) as tmp, \
                open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write("\t".join(NODE_COLUMNS) + "\n")
            f.writelines(tsv_row(n, NODE_COLUMNS) for n in ordered)
    if jsonl:
        with atomic_path(folder / KGX_FILES["nodes_jsonl"]) as tmp, \
                open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.writelines(json_line(n) for n in ordered)
    return len(ordered)


def read_kgx_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Records of a KGX JSON Lines file; a bad line raises ``ValueError`` naming file and line."""
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: line {i}: not JSON ({e})") from None
            if not isinstance(rec, dict) or "id" not in rec:
                raise ValueError(f"{path}: line {i}: expected a JSON object with an 'id'")
            yield rec
