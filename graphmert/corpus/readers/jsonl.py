"""JSON Lines: one document object per line (the schema of the shared abstracts corpus).

::

    {"doc_id": "10491763",              # or "id"
     "title": "...", "abstract": "...",  # or "text" (then "title" is optional)
     "entities": [{"start": 0, "end": 27, "text": "...", "type": "GeneOrGeneProduct", "id": "3175"}],
     "relations": [{"type": "Association", "head": "3175", "tail": "D003924", "novel": "No"}],
     ...}                                # every other field goes into Document.metadata

Offsets index into ``title + " " + abstract`` (the PubTator convention). An entity ``id`` may be a
multi-id string (``"3172,3651"``, ``"D014786|D006311"``), a list of ids, a number, or empty/``-1``.
Blank lines are ignored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from graphmert.corpus.document import Document, Mention, Relation, normalize_ids
from graphmert.corpus.readers.base import (
    READERS, Location, ReadContext, ReadRecord, RecordProblem, join_title_abstract, open_text,
    read_mentions,
)

__all__ = ["read_jsonl"]

_CONSUMED = {"doc_id", "id", "title", "abstract", "text", "entities", "relations"}


def _str_field(obj: dict, key: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RecordProblem(f"field {key!r} must be a string, got {type(value).__name__}")
    return value


def _raw_ids(value: Any) -> list[str]:
    """An entity's ``id`` field as a list of raw id strings."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v is not None]
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return [str(value)]
    raise RecordProblem(f"entity id must be a string, a number or a list, got {type(value).__name__}")


def _entity(e: Any, text: str) -> tuple[Mention, list[tuple[str, list[str]]]]:
    """The mention, and (raw id, its normalised ids) for each raw id it names."""
    if not isinstance(e, dict):
        raise RecordProblem(f"expected an object, got {type(e).__name__}")
    for key in ("start", "end"):
        if not isinstance(e.get(key), int) or isinstance(e.get(key), bool):
            raise RecordProblem(f"{key!r} must be an integer, got {e.get(key)!r}")
    etype = e.get("type") or ""
    if not isinstance(etype, str):
        raise RecordProblem(f"'type' must be a string, got {etype!r}")
    raws = [(raw, normalize_ids(raw, etype)) for raw in _raw_ids(e.get("id"))]
    ids = raws[0][1] if len(raws) == 1 else list(dict.fromkeys(i for _, norm in raws for i in norm))
    mtext = e.get("text")
    if mtext is None:
        mtext = text[e["start"]:e["end"]]
    return Mention(start=e["start"], end=e["end"], text=str(mtext), type=etype, ids=ids), raws


def _record(obj: Any, path: Path, n: int, ctx: ReadContext) -> ReadRecord | None:
    where = Location(str(path), n)
    if not isinstance(obj, dict):
        ctx.bad(where, f"expected a JSON object, got {type(obj).__name__}")
        return None
    id_key = "doc_id" if obj.get("doc_id") not in (None, "") else "id"
    if obj.get(id_key) in (None, ""):
        ctx.bad(where, "record has no 'doc_id' (or 'id')")
        return None
    doc_id = str(obj[id_key])
    where = where.with_record(f"document {doc_id}")
    try:
        title = _str_field(obj, "title")
        text = _str_field(obj, "text") if "text" in obj else join_title_abstract(
            title, _str_field(obj, "abstract"))
        entities = obj.get("entities") or []
        relations = obj.get("relations") or []
        if not isinstance(entities, list) or not isinstance(relations, list):
            raise RecordProblem("'entities' and 'relations' must be lists")
    except RecordProblem as e:
        ctx.bad(where, str(e))
        return None

    mentions, mention_where, ids = read_mentions(
        ((where.with_record(f"document {doc_id}, entity {k + 1}"), e) for k, e in enumerate(entities)),
        lambda e: _entity(e, text), ctx)

    out_rel: list[Relation] = []
    for k, r in enumerate(relations):
        rel_where = where.with_record(f"document {doc_id}, relation {k + 1}")
        if not isinstance(r, dict) or not all(isinstance(r.get(x), (str, int)) for x in
                                              ("type", "head", "tail")):
            ctx.bad(rel_where, "relation must be an object with 'type', 'head' and 'tail'")
            continue
        head, tail = ids.resolve(str(r["head"])), ids.resolve(str(r["tail"]))
        if head is None or tail is None:
            ctx.bad(rel_where, f"relation refers to an unlinked id "
                               f"({r['head'] if head is None else r['tail']!r})")
            continue
        novel = r.get("novel")
        out_rel.append(Relation(type=str(r["type"]), head=head, tail=tail,
                                novel=None if novel is None else str(novel)))

    metadata = {k: v for k, v in obj.items() if k not in _CONSUMED}
    if id_key == "doc_id" and "id" in obj:
        metadata["id"] = obj["id"]
    doc = Document(id=doc_id, text=text, title=title, mentions=mentions, relations=out_rel,
                   source=str(path), metadata=metadata)
    return ReadRecord(doc, where, mention_where)


@READERS.register("jsonl")
def read_jsonl(path: Path, ctx: ReadContext) -> Iterator[ReadRecord]:
    """Documents of a JSON Lines file, one line at a time."""
    with open_text(path, ctx) as f:
        for n, line in f:
            if line is None or not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                ctx.bad(Location(str(path), n, e.colno), f"invalid JSON: {e.msg}")
                continue
            rec = _record(obj, path, n, ctx)
            if rec is not None:
                yield rec
