"""experiments/self_training.py's pseudo-labelled texts go to the models of the categories they have
a mention of (among those asked), beside what ``ner.part_sources`` already lends."""

from __future__ import annotations

import sys
from pathlib import Path

from graphmert.corpus.document import Document, Mention

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
from self_training import pseudo_extra  # noqa: E402

GENE, DISEASE, CHEMICAL = "biolink:Gene", "biolink:Disease", "biolink:ChemicalEntity"


def _doc(doc_id: str, *types: str) -> Document:
    text = " ".join(f"w{i}" for i in range(len(types))) or "nothing"
    mentions = [Mention(start=3 * i, end=3 * i + 2, text=f"w{i}", type=t, ids=[]) for i, t in enumerate(types)]
    return Document(id=doc_id, text=text, mentions=mentions)


def test_pseudo_documents_join_the_categories_they_mention():
    silver = _doc("silver", "GeneOrGeneProduct")
    pseudo = [_doc("a", "Gene", "Gene"), _doc("b", "Disease", "Chemical"), _doc("c")]
    out = pseudo_extra(pseudo, [GENE, DISEASE, CHEMICAL], {GENE: [silver]})
    assert [d.id for d in out[GENE]] == ["silver", "a"]          # lent documents first, each once
    assert [d.id for d in out[DISEASE]] == ["b"] and [d.id for d in out[CHEMICAL]] == ["b"]
    assert "c" not in {d.id for docs in out.values() for d in docs}   # no mention: no model's


def test_only_the_categories_asked_for_take_pseudo_documents():
    silver = _doc("silver", "GeneOrGeneProduct")
    pseudo = [_doc("a", "Gene"), _doc("b", "Disease")]
    out = pseudo_extra(pseudo, [DISEASE, CHEMICAL], {GENE: [silver]})
    assert [d.id for d in out[GENE]] == ["silver"]               # part_sources' documents stay
    assert [d.id for d in out[DISEASE]] == ["b"] and CHEMICAL not in out
