"""Where a raw-text extraction loses its pairs: recognition, linking or the model (issue #19).

    .venv/bin/python experiments/raw_pairs.py --run-dir runs/biored-raw \
        --gold ../shared/datasets/biored/Dev.PubTator                          # a few seconds

Reads a finished raw-text run (``configs/biored-raw.yaml``: the recognised, linked documents of
``RUN/extract/documents.parquet`` and the extracted triples) and the annotated gold of the same
documents. An entity of a document is *found* when some recognised mention carries its gold id.
The first two tables are :mod:`graphmert.eval.losses`' (what ``metrics.md`` shows for a raw
run): every gold pair in one row (extracted, both ends found but not extracted, or an end
unrecognised or mislinked, by category), and every false extracted pair in one row. Here the pairs
are those whose two ends are linked; the fifth table reads the others.

A third table splits the gene entities of gold pairs that a recognised mention links to a wrong gene
id (the first wrongly linked mention over one of their gold mentions), by the taxa the run's linker
(``RUN/link/linker.json.gz``, or ``RUN/ner/`` for a run made before the link stage; with the run's
``extract.kg_gene_species``) knows: a gold id that no
training document annotates and the seed KG does not name (no learnt table can give it), a gene of
another species, or another gene of the gold's species; then the documents with the most of them
(a species cue read wrong mislinks a whole abstract's genes).

A fourth table says how far linking could go at all: the gold entities whose id is one the run's
linker can answer (:meth:`~graphmert.ner.linking.EntityLinker.known_ids`: its dictionary and the
seed KG; a sequence variant's tmVar key, or a dbSNP id written in the text, which the variant rules
give), by category, and the gold pairs whose both ends are. A perfect recognizer and a perfect
choice among the linker's ids would still find no other pair.

A fifth table reads the triples with an unlinked end (a text node, ``extract.text_entities``), which
every score counts as false pairs: per distinct (document, pair), whether the unlinked end's text
covers a gold entity (a recognised mention with that text and no id overlapping its gold mention)
that, with the other end, makes a gold pair. It says how many right relations linking threw away,
and so what keeping or dropping text nodes costs.

A sixth table splits the extracted and the gold pairs by the kind of id a variant end has: a dbSNP
rs id, a tmVar key (made from the variant's text by the rule, or BioRED's where it has no rs id), or
no variant end; with the extracted pairs' precision in each. It says what pairs with a keyed end are
worth (``extract.variant_keys``).

A seventh table reads the links the ``terms`` step (MeSH descriptors) gives disease and chemical
mentions, on the recognised mentions and on the gold spans of the same documents, each mention
linked again alone with its document: how many name an entity of the gold document, split by
whether the seed KG or the training documents give the descriptor the mention's category (what
``extract.known_terms_only`` keeps; docs/experiments/gene-linking.md).

On a gold-mention run (``configs/biored.yaml``, no recognised documents) every entity is found, and
the table is the model's share alone. Run it on dev to explain a number already reported, not to
choose.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _study import print_table, run_documents, system_files, write_json  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.corpus.document import Document, read_documents  # noqa: E402
from graphmert.eval.gold import GoldSet, load_gold, mention_entity_ids  # noqa: E402
from graphmert.eval.losses import entity_status, pair_losses  # noqa: E402
from graphmert.eval.metrics import pair_sets, triple_documents  # noqa: E402
from graphmert.extract.triples import read_triples  # noqa: E402
from graphmert.kg.schema import mention_category  # noqa: E402
from graphmert.ner.linking import EntityLinker  # noqa: E402
from pipelines.stages import RECOGNIZED_FILE  # noqa: E402
from pipelines.stages.extract_parts import extraction_linker  # noqa: E402
from pipelines.stages.link import LINKER_FILE  # noqa: E402

def _wrong_gene_links(gold: GoldSet, found: dict[str, Document], linker: EntityLinker):
    """(document, gold gene id, kind) of each gene entity of a gold pair that a recognised mention
    over one of its gold mentions links to another gene id, kind as in the third table."""
    in_pairs = {(doc, e) for doc, pair in gold.untyped for e in pair}
    for d, doc in gold.documents.items():
        for eid, st in entity_status(doc, found.get(d)).items():
            if st != "mislinked" or (d, eid) not in in_pairs or not eid.startswith("NCBIGene:"):
                continue
            over = [f.ids[0] for m in doc.mentions if eid in mention_entity_ids(m)
                    for f in found[d].mentions
                    if f.start < m.end and m.start < f.end and f.ids and f.ids[0].startswith("NCBIGene:")]
            if over:
                gold_taxon, taxon = linker.gene_taxon(eid), linker.gene_taxon(over[0])
                yield d, eid, ("gold id unseen in training and the seed KG" if gold_taxon is None
                               else "another gene of the gold's species" if taxon == gold_taxon
                               else "a gene of another species")


def wrong_gene_ids(gold: GoldSet, found: dict[str, Document], linker: EntityLinker) -> Counter:
    """The third table (module docstring): mislinked gene entities of gold pairs by taxon relation."""
    return Counter(kind for _, _, kind in _wrong_gene_links(gold, found, linker))


def wrong_gene_documents(gold: GoldSet, found: dict[str, Document], linker: EntityLinker,
                         top: int = 10) -> list[dict]:
    """The third table by document: the ``top`` documents with the most such gene entities, each
    with how many it holds, how many of them are genes of another species, and the gold pairs with
    one of them. Wrong species come in whole abstracts (one species cue read wrong), which the
    totals do not show."""
    kinds: dict[str, Counter] = {}
    entities: dict[str, set] = {}
    for d, eid, kind in _wrong_gene_links(gold, found, linker):
        kinds.setdefault(d, Counter())[kind] += 1
        entities.setdefault(d, set()).add(eid)
    pairs = Counter(d for d, pair in gold.untyped if d in entities and pair & entities[d])
    order = sorted(kinds, key=lambda d: (-sum(kinds[d].values()), d))[:top]
    return [{"document": d, "gene entities": sum(kinds[d].values()),
             "of another species": kinds[d]["a gene of another species"],
             "gold pairs with one": pairs[d]} for d in order]


def _unlinked_gold_ids(gold_doc: Document, found_doc: Document | None, name: str) -> set[str]:
    """Gold ids under the recognised mentions of ``found_doc`` without an id whose text is ``name``."""
    spans = [(f.start, f.end) for f in (found_doc.mentions if found_doc else [])
             if not f.ids and f.text.lower() == name.lower()]
    return {e for m in gold_doc.mentions if any(a < m.end and m.start < b for a, b in spans)
            for e in mention_entity_ids(m)}


def text_node_pairs(gold: GoldSet, found: dict[str, Document], triples) -> Counter:
    """The fifth table (module docstring): distinct (document, pair) with an unlinked end, by what
    the unlinked end's text covers."""
    seen: dict[tuple, str] = {}
    for t in triples:
        if t.head_id and t.tail_id:
            continue
        for doc in triple_documents(t):
            key = (doc, frozenset((t.head_id or "?" + t.head_name, t.tail_id or "?" + t.tail_name)))
            if key in seen or doc not in gold.documents:
                continue
            ends = [{i} if i else _unlinked_gold_ids(gold.documents[doc], found.get(doc), n)
                    for i, n in ((t.head_id, t.head_name), (t.tail_id, t.tail_name))]
            if not all(ends):
                seen[key] = "no gold entity under the unlinked text"
            elif any((doc, frozenset((a, b))) in gold.untyped for a in ends[0] for b in ends[1] if a != b):
                seen[key] = "a gold pair, were the text linked"
            else:
                seen[key] = "gold entities, not a gold pair"
    return Counter(seen.values())


def variant_kind(pair: frozenset[str]) -> str:
    """Which kind of variant id ``pair`` has: "tmVar key", "dbSNP id" (both: the key), or "none"."""
    kinds = {e.split(":", 1)[0] for e in pair}
    return "tmVar key" if "tmVar" in kinds else "dbSNP id" if "dbSNP" in kinds else "none"


def variant_pairs(gold: GoldSet, predicted: set) -> list[dict]:
    """The sixth table (module docstring): extracted and gold pairs by :func:`variant_kind`."""
    rows = []
    for kind in ("none", "dbSNP id", "tmVar key"):
        got = [x for x in predicted if variant_kind(x[1]) == kind]
        right = sum(x in gold.untyped for x in got)
        rows.append({"variant end": kind, "extracted": len(got), "of them gold": right,
                     "precision": right / len(got) if got else 0.0,
                     "in the gold": sum(variant_kind(p) == kind for _, p in gold.untyped)})
    return rows


def reachable(gold: GoldSet, known: frozenset[str]) -> list[dict]:
    """The fourth table (module docstring): gold entities and pairs whose ids some link can give."""
    def can(doc: str, e: str) -> bool:
        return (e in known or e.startswith("tmVar:")
                or (e.startswith("dbSNP:") and e.split(":", 1)[1] in gold.documents[doc].text))

    rows: Counter = Counter()
    for doc, d in gold.documents.items():
        for e in {e for m in d.mentions for e in mention_entity_ids(m)}:
            rows[(gold.category(doc, e).replace("biolink:", "") or "?", can(doc, e))] += 1
    out = [{"gold": f"{cat} entities", "reachable": rows[(cat, True)],
            "of": rows[(cat, True)] + rows[(cat, False)],
            "share": rows[(cat, True)] / (rows[(cat, True)] + rows[(cat, False)])}
           for cat in sorted({c for c, _ in rows})]
    ok = sum(all(can(doc, e) for e in pair) for doc, pair in gold.untyped)
    out.append({"gold": "pairs, both ends", "reachable": ok, "of": len(gold.untyped),
                "share": ok / max(1, len(gold.untyped))})
    return out


TERM_CATEGORIES = ("biolink:Disease", "biolink:ChemicalEntity")


def term_links(gold: GoldSet, found: dict[str, Document], linker: EntityLinker) -> Counter:
    """(category, known or not, right or not) → disease and chemical mentions of ``found`` (the gold
    documents' only) that the ``terms`` step links, each linked again without its ids; *known*: the
    link survives :attr:`~graphmert.ner.linking.EntityLinker.known_terms_only`, *right*: an id of it
    is an entity of the gold document. ``linker``'s own setting is restored."""
    setting, out = linker.known_terms_only, Counter()
    try:
        for doc_id, doc in found.items():
            if doc_id not in gold.documents:
                continue
            bare = replace(doc, mentions=[replace(m, ids=[], xrefs=[]) for m in doc.mentions])
            linker.known_terms_only = False
            every = linker.link_mentions(bare)
            linker.known_terms_only = True
            known = linker.link_mentions(bare)
            ids = {e for m in gold.documents[doc_id].mentions for e in mention_entity_ids(m)}
            for m, r, k in zip(doc.mentions, every, known):
                category = mention_category(m.type)
                if r is not None and r.how == "terms" and category in TERM_CATEGORIES:
                    out[(category, k is not None and k.ids == r.ids, bool(ids & set(r.ids)))] += 1
    finally:
        linker.known_terms_only = setting
    return out


def term_rows(counts: Counter, spans: str) -> list[dict]:
    """:func:`term_links`' counts as table rows, one per category and kind of descriptor."""
    return [{"mentions": spans, "category": c.replace("biolink:", ""),
             "descriptor": "the KG or training give it the category" if known else "no source gives it the category",
             "linked": counts[(c, known, True)] + counts[(c, known, False)], "right": counts[(c, known, True)]}
            for c in TERM_CATEGORIES for known in (True, False)]


def run_linker(run: Path) -> EntityLinker | None:
    """The run's linker (``RUN/link/``, or ``RUN/ner/`` for a run made before the link stage) with the
    species settings of the run's extraction, or None when the run has none."""
    saved = next((p for p in (run / s / LINKER_FILE for s in ("link", "ner")) if p.is_file()), None)
    if saved is None:
        return None
    return extraction_linker(EntityLinker.load(saved), load_config(run / "config.yaml").extract)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--gold", required=True, nargs="+")
    p.add_argument("--out", type=Path)
    a = p.parse_args()
    ex = a.run_dir / "extract"
    docs = run_documents(a.run_dir)
    gold = load_gold(a.gold).subset(docs)
    if (ex / RECOGNIZED_FILE).is_file():
        found = {d.id: d for d in read_documents(ex / RECOGNIZED_FILE)}
    else:                                   # a gold-mention run: every gold entity is found
        print(f"{ex / RECOGNIZED_FILE} absent: the run read gold mentions")
        found = dict(gold.documents)
    # linked ends only: the buckets below classify pairs of ids (a text-node triple has none)
    triples = list(read_triples(system_files(a.run_dir, "graphmert")))
    predicted, _ = pair_sets(triples, linked_only=True)
    predicted = {x for x in predicted if x[0] in docs}
    losses = pair_losses(gold, {**gold.documents, **found}, predicted)
    rows = [{"gold pairs": k, "count": n, "share": n / max(1, len(gold.untyped))}
            for k, n in losses["gold_pairs"].items()]
    print_table(rows, f"{a.run_dir}: the {len(gold.untyped)} gold pairs of {len(docs)} documents")
    wrong = losses["false_pairs"]
    rows2 = [{"extracted, not gold": k, "count": n, "share": n / max(1, losses["extracted_pairs"])}
             for k, n in wrong.items()]
    print_table(rows2, f"the {sum(wrong.values())} false of the {losses['extracted_pairs']} extracted pairs")
    nodes = text_node_pairs(gold, found, triples)
    rows5 = [{"extracted pairs with an unlinked end": k, "count": n} for k, n in sorted(nodes.items())]
    print_table(rows5, f"the {sum(nodes.values())} extracted pairs with an unlinked end (all false as scored)")
    rows6 = variant_pairs(gold, predicted)
    print_table(rows6, "extracted and gold pairs by their variant end's id")
    rows3 = []
    linker = run_linker(a.run_dir) if (ex / RECOGNIZED_FILE).is_file() else None
    if linker is not None:
        genes = wrong_gene_ids(gold, found, linker)
        rows3 = [{"gene entities of gold pairs linked to a wrong gene id": k, "count": n}
                 for k, n in sorted(genes.items(), key=lambda kv: -kv[1])]
        print_table(rows3, f"the {sum(genes.values())} gene entities of gold pairs linked to a wrong gene id")
        rows3b = wrong_gene_documents(gold, found, linker)
        print_table(rows3b, "the documents with the most of them")
        rows4 = reachable(gold, linker.known_ids())
        print_table(rows4, "gold entities and pairs whose ids some link can give (the linker's tables; "
                           "variants by rule)")
        rows7 = (term_rows(term_links(gold, found, linker), "recognised")
                 + term_rows(term_links(gold, dict(gold.documents), linker), "gold spans"))
        print_table(rows7, "disease and chemical mentions the terms step links, by what knows the descriptor")
        rows3 = rows3 + rows3b + rows4 + rows7
    write_json("raw_pairs", rows + rows2 + rows5 + rows6 + rows3, a.out, run_dir=str(a.run_dir))


if __name__ == "__main__":
    main()
