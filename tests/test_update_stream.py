"""`graphmert update` rewrites RUN/extract as a stream: the KG's files and the delta's are merged in
key order (the extract stage writes them so), holding a few triples at a time, never the KG; the
result equals merge_triples over the two lists; a file out of key order is an error naming it."""

from __future__ import annotations

import json
import weakref

import pytest

from graphmert.extract.triples import Triple, drop_documents, merge_triples, read_triples
from pipelines import update
from pipelines.stages import DOCUMENTS_FILE
from pipelines.stages.extract_merge import write_kg

from export.helpers import ev

SENTENCE = "GENE is associated with DISEASE."


def _triples(genes: range, doc: str) -> list[Triple]:
    """One merged triple a gene (gene → disease), evidenced in ``doc``."""
    return merge_triples(
        Triple(head_id=f"NCBIGene:{g}", head_name="GENE", head_category="biolink:Gene",
               relation="associated_with", tail_id="MESH:D1", tail_name="DISEASE",
               tail_category="biolink:Disease", tail_source="mention", confidence=0.5 + g / 1000,
               confidence_mean=0.5 + g / 1000, documents=[doc],
               evidence=[ev(doc, SENTENCE, "GENE", "DISEASE", 0.5 + g / 1000)], run_id="old")
        for g in genes)


def _extract_folder(folder, triples, docs) -> dict:
    folder.mkdir(parents=True)
    shards = write_kg(iter(triples), folder, shard_size=50)
    (folder / DOCUMENTS_FILE).write_text("".join(f"{d}\n" for d in docs))
    manifest = {"stage": "extract", "shards": shards, "triples": len(triples), "documents": len(docs)}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return manifest


@pytest.fixture()
def run(tmp_path):
    """RUN/extract with 300 triples from document a (genes 0..299), and a delta of 200 triples from
    document b (genes 200..399: 100 of them join existing edges)."""
    kg, delta = _triples(range(300), "a"), _triples(range(200, 400), "b")
    manifest = _extract_folder(tmp_path / "extract", kg, ["a"])
    body = _extract_folder(tmp_path / "delta", delta, ["b"])
    return tmp_path, manifest, body, kg, delta


def _alive(monkeypatch) -> dict:
    """Counts the triples read from the files and how many of them are alive at once (at most)."""
    seen = {"read": 0, "alive": 0, "max_alive": 0}

    def gone():
        seen["alive"] -= 1

    def reading(files, *a, **k):
        for t in read_triples(files, *a, **k):
            seen["read"] += 1
            seen["alive"] += 1
            weakref.finalize(t, gone)
            seen["max_alive"] = max(seen["max_alive"], seen["alive"])
            yield t

    monkeypatch.setattr(update, "read_triples", reading)
    return seen


def test_adding_merges_as_a_stream_and_equals_the_merge_of_the_lists(run, monkeypatch):
    run_dir, manifest, body, kg, delta = run
    seen = _alive(monkeypatch)
    record = {"activity": "update-1"}
    update._rewrite(run_dir, 50, manifest, record, "new", delta=(run_dir / "delta", body))
    got = list(read_triples(sorted((run_dir / "extract").glob("triples-*.parquet"))))
    tagged = list(update._tag(delta, "update-1"))
    want = [update.dataclasses.replace(t, run_id="new") for t in merge_triples(kg + tagged)]
    assert got == want and len(got) == 400 and record["triples_after"] == 400
    assert seen["read"] == 500 and seen["max_alive"] <= 4      # never the KG in memory
    m = json.loads((run_dir / "extract" / "manifest.json").read_text())
    assert m["triples"] == 400 and m["triples_per_relation"] == {"associated_with": 400}
    assert (run_dir / "extract" / DOCUMENTS_FILE).read_text().split() == ["a", "b"]


def test_removing_streams_and_equals_drop_documents(run, monkeypatch):
    run_dir, manifest, _, kg, delta = run
    update._rewrite(run_dir, 50, manifest, {"activity": "update-1"}, "new",
                    delta=(run_dir / "delta", run[2]))
    seen = _alive(monkeypatch)
    merged = json.loads((run_dir / "extract" / "manifest.json").read_text())
    update._rewrite(run_dir, 50, merged, {"activity": "update-2"}, "new", removed=frozenset({"a"}))
    got = list(read_triples(sorted((run_dir / "extract").glob("triples-*.parquet"))))
    want = drop_documents([update.dataclasses.replace(t, run_id="new")
                           for t in merge_triples(kg + list(update._tag(delta, "update-1")))], {"a"})
    assert got == want and len(got) == 200 and seen["read"] == 400 and seen["max_alive"] <= 4


def test_a_triple_file_out_of_key_order_is_an_error_naming_it(run):
    run_dir, manifest, body, kg, _ = run
    (run_dir / "extract" / manifest["shards"][0]).unlink()
    from graphmert.extract.triples import write_triples

    write_triples(list(reversed(kg[:50])), run_dir / "extract" / manifest["shards"][0])
    with pytest.raises(update.UpdateError, match=r"triples-00000\.parquet.*: triples not in key order"):
        update._rewrite(run_dir, 50, manifest, {"activity": "update-1"}, "new",
                        delta=(run_dir / "delta", body))
    assert json.loads((run_dir / "extract" / "manifest.json").read_text()) == manifest   # untouched
