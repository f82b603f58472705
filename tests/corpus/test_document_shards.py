"""Document Parquet shards: a round trip keeps every field, a linked mention's cross-references
included; shards written before ``Mention.xrefs`` existed still read."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from graphmert.corpus.document import (Abbreviation, Document, Mention, Relation, read_documents,
                                       write_documents)


def _docs() -> list[Document]:
    text = "Metformin (MET) lowers glucose in type 2 diabetes."
    return [Document(id="1", text=text, title="T", source="x.PubTator", metadata={"year": 2020},
                     mentions=[Mention(0, 9, "Metformin", "Chemical", ["MESH:D008687"], ["DRUGBANK:DB00331"]),
                               Mention(34, 49, "type 2 diabetes", "Disease", ["MESH:D003924"]),
                               Mention(11, 14, "MET", "Gene", [])],
                     relations=[Relation("Negative_Correlation", "MESH:D008687", "MESH:D003924", "No")],
                     sentences=[(0, len(text))], abbreviations=[Abbreviation(11, 14, 0, 9)]),
            Document(id="2", text="Nothing here.")]


def test_round_trip_keeps_xrefs(tmp_path):
    write_documents(_docs(), tmp_path / "d.parquet")
    back = list(read_documents(tmp_path / "d.parquet"))
    assert back == _docs()
    assert back[0].mentions[0].xrefs == ["DRUGBANK:DB00331"] and back[0].mentions[1].xrefs == []


def test_shards_without_xrefs_read_with_none(tmp_path):
    write_documents(_docs(), tmp_path / "d.parquet")
    table = pq.read_table(tmp_path / "d.parquet")
    old = pa.struct([f for f in table.schema.field("mentions").type.value_type if f.name != "xrefs"])
    mentions = pa.array([[{k: v for k, v in m.items() if k != "xrefs"} for m in row]
                         for row in table.column("mentions").to_pylist()], type=pa.list_(old))
    pq.write_table(table.set_column(table.schema.get_field_index("mentions"), "mentions", mentions),
                   tmp_path / "old.parquet")                 # a shard written before the field
    back = list(read_documents(tmp_path / "old.parquet"))
    assert [m.xrefs for m in back[0].mentions] == [[], [], []]
    assert [m.ids for m in back[0].mentions] == [m.ids for m in _docs()[0].mentions]


def test_entity_xrefs_gather_the_linked_mentions_cross_references():
    from graphmert.corpus.document import entity_xrefs

    a, b = _docs()
    b.mentions = [Mention(0, 7, "Nothing", "Chemical", ["MESH:D008687"], ["DRUGBANK:DB00331", "CHEBI:6801"]),
                  Mention(8, 12, "here", "Disease", ["DOID:9352"], ["DOID:9352"])]     # itself: dropped
    assert entity_xrefs([a, b]) == {"MESH:D008687": ("DRUGBANK:DB00331", "CHEBI:6801")}
    assert entity_xrefs([]) == {}


def test_shards_joined_as_arrow_are_the_bytes_write_documents_writes(tmp_path):
    """The extract stage joins its parts' recognised-document shards with cut_parquet (Arrow
    batches, no Document objects): the same file as write_documents over the shards' documents,
    nested mentions, sentences and an empty shard included (row groups across files:
    tests/extract/test_sorted_merge.py)."""
    from graphmert.corpus.document import SCHEMA
    from graphmert.io import cut_parquet

    docs = [Document(id=f"{i}-{d.id}", text=d.text, mentions=d.mentions, sentences=d.sentences)
            for i in range(7) for d in _docs()]
    shards = []
    for k, (a, b) in enumerate([(0, 3), (3, 4), (4, 4), (4, 14)]):      # uneven, one empty
        shards.append(tmp_path / f"part-{k}.parquet")
        write_documents(docs[a:b], shards[-1])
    write_documents(read_documents(shards), tmp_path / "python.parquet")
    cut_parquet(shards, SCHEMA, None, lambda _: tmp_path / "arrow.parquet")
    assert (tmp_path / "arrow.parquet").read_bytes() == (tmp_path / "python.parquet").read_bytes()
