"""Entity linking on gold mention spans, and the choice of the fuzzy threshold (issue #19).

    .venv/bin/python experiments/linking.py [--thresholds 0.5,0.6,...] [--no-abbreviations]
        [--extra-sources SOURCE ...] [--kg-gene-species TAXON] [--strict-gene-species] [--name-tables]
        [--vocabularies [--species-cues]] [--no-american] [--also-gold PUBTATOR] [--out F]

The linker (:class:`graphmert.ner.linking.EntityLinker`) is built from the gold-annotated documents
of the shared abstracts corpus (the sources ``ner.sources`` of configs/biored-raw.yaml: BioRED train,
BC5CDR train + dev, NCBI disease train) minus a held-out 20% of the BioRED-train documents (``sha256(doc id) mod 100 < 20``),
the shared seed KG and its three cross-reference tables (``--vocabularies``: and the ``terms``
vocabularies of configs/biored-raw.yaml's ``ner.vocabularies``, MeSH 2024 descriptors). ``--extra-sources`` adds the corpus's
documents of other sources to the dictionary (``tmvar3_pubtator``: PubTator's silver ids). Every
gold mention of the held-out documents is then linked from its text and type alone (all gold ids
removed; abbreviations from scispaCy's detector, as the corpus stage fills them), for each fuzzy
threshold:

* accuracy per category: the primary id is one of the gold mention's ids (mentions with gold ids);
* coverage by ``how`` (share of those mentions);
* document-level normalisation P/R/F1: per document, the set of (category, primary id) predicted
  against the set of (category, first gold id), micro-averaged over documents.

The chosen threshold is the one with the best held-out document F1 (ties: the higher threshold). At
that threshold, the held-out gold gene mentions are then broken down by species (an id in the
human-only seed KG, or another species' id) and by how the linker linked them, and the disease and
chemical misses by their first gold id (a MeSH supplementary concept, ``MESH:C...``, which no shared
vocabulary names; an id a look-up can answer; another) and by how the linker answered.
The same table on BioRED dev gold spans, and its misses by first gold id at the chosen threshold,
are printed for report only: they never choose anything; so is the table of ``--also-gold``'s file
(BC5CDR test: chemicals and diseases only, less the documents the linker learnt from).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _study import held_out_biored_train, require_shared, write_json  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.corpus.document import Document  # noqa: E402
from graphmert.corpus.nlp import TextAnalyzer  # noqa: E402
from graphmert.corpus.readers import read_corpus  # noqa: E402
from graphmert.kg.hetionet import read_hetionet_disgenet_mesh  # noqa: E402
from graphmert.kg.schema import mention_category  # noqa: E402
from graphmert.ner.corpus import annotated_documents  # noqa: E402
from graphmert.ner.linking import EntityLinker  # noqa: E402

CATEGORIES = {"biolink:Gene": "gene", "biolink:Disease": "disease", "biolink:ChemicalEntity": "chemical"}
HOWS = ("dictionary", "kg", "reference", "terms", "abbreviation", "composite", "fuzzy", "none")
CONFIG = Path(__file__).resolve().parents[1] / "configs" / "biored-raw.yaml"   # the linker's ner settings
XREF_TABLES = ("doid_to_mesh.tsv", "drugbank_to_mesh.tsv", "umls_to_mesh_disgenet.tsv")
NAME_TABLES = ("upstream/disgenet_v3.0_curated_gene_disease_associations.txt.gz",)   # gene full names
THRESHOLDS = (0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.01)


def unlinked_copy(doc: Document) -> Document:
    return replace(doc, mentions=[replace(m, ids=[]) for m in doc.mentions])


def evaluate(linker: EntityLinker, gold: list[Document], blank: list[Document]) -> dict:
    """Accuracy per category, coverage by how and document-level P/R/F1 (see the module docstring)."""
    right, total, hows = Counter(), Counter(), Counter()
    tp = n_pred = n_gold = 0
    for g, b in zip(gold, blank):
        pred_set, gold_set = set(), set()
        for m, r in zip(g.mentions, linker.link_mentions(b)):
            cat = mention_category(m.type)
            if cat not in CATEGORIES:
                continue
            if r.ids:
                pred_set.add((cat, r.ids[0]))
            if not m.ids:
                continue
            gold_set.add((cat, m.ids[0]))
            total[cat] += 1
            hows[r.how] += 1
            ok = bool(r.ids) and r.ids[0] in m.ids
            right[cat] += ok
            right[("how", r.how)] += ok
        tp += len(pred_set & gold_set)
        n_pred += len(pred_set)
        n_gold += len(gold_set)
    return _row(right, total, hows, tp, n_pred, n_gold)


def _row(right: Counter, total: Counter, hows: Counter, tp: int, n_pred: int, n_gold: int) -> dict:
    n = sum(total.values())
    linked = n - hows["none"]
    p, r = tp / max(n_pred, 1), tp / max(n_gold, 1)
    # None for a category the gold has no mention of (BC5CDR annotates no genes), not 0
    row = {f"acc {name}": right[cat] / total[cat] if total[cat] else None for cat, name in CATEGORIES.items()}
    row["acc all"] = sum(right[c] for c in CATEGORIES) / max(n, 1)
    row["prec linked"] = sum(right[c] for c in CATEGORIES) / max(linked, 1)
    row.update({h: hows[h] / max(n, 1) for h in HOWS})
    row["fuzzy acc"] = right[("how", "fuzzy")] / max(hows["fuzzy"], 1)
    row["composite acc"] = right[("how", "composite")] / max(hows["composite"], 1)
    row.update({"doc P": p, "doc R": r, "doc F1": 2 * p * r / max(p + r, 1e-12), "mentions": n})
    return row


def vocabularies() -> list:
    """configs/biored-raw.yaml's ``ner.vocabularies`` (NCBI Gene per species, orthologs, MeSH
    descriptors), their relative paths resolved from the repository root as the pipeline's are."""
    root = CONFIG.parents[1]
    return [replace(v, path=str(root / v.path)) for v in load_config(CONFIG).ner.vocabularies]


def miss_breakdown(linker: EntityLinker, gold: list[Document]) -> list[dict]:
    """Gold disease and chemical mentions the linker gets wrong, by the kind of their first gold id
    (a MeSH supplementary concept, ``MESH:C...``, which no shared vocabulary names; a descriptor the
    linker knows, or does not) and by how the linker answered (``none``: unlinked)."""
    known = linker.known_ids()
    counts: Counter = Counter()
    missed_ids: dict[tuple[str, str], set[str]] = {}
    for g in gold:
        for m, r in zip(g.mentions, linker.link_mentions(unlinked_copy(g))):
            cat = mention_category(m.type)
            if cat not in ("biolink:Disease", "biolink:ChemicalEntity") or not m.ids:
                continue
            gid = m.ids[0]
            kind = ("MeSH C id" if gid.startswith("MESH:C") else "known id" if gid in known
                    else "unknown id")
            counts[(CATEGORIES[cat], kind, "all")] += 1
            if not (r.ids and r.ids[0] in m.ids):
                counts[(CATEGORIES[cat], kind, r.how)] += 1
                missed_ids.setdefault((CATEGORIES[cat], kind), set()).add(gid)
    return [{"category": c, "first gold id": k, "mentions": counts[(c, k, "all")],
             "missed": sum(counts[(c, k, h)] for h in HOWS), "missed ids": len(missed_ids.get((c, k), ())),
             **{f"missed {h}": counts[(c, k, h)] for h in HOWS}}
            for c in ("disease", "chemical") for k in ("MeSH C id", "known id", "unknown id")
            if counts[(c, k, "all")]]


def frequent_errors(linker: EntityLinker, gold: list[Document], n: int) -> list[dict]:
    """The ``n`` most frequent wrong links of held-out gold disease and chemical mentions: the
    mention's text, its first gold id, the linker's answer (or none) and how it answered."""
    counts: Counter = Counter()
    for g in gold:
        for m, r in zip(g.mentions, linker.link_mentions(unlinked_copy(g))):
            cat = mention_category(m.type)
            if cat in ("biolink:Disease", "biolink:ChemicalEntity") and m.ids and not (r.ids and r.ids[0] in m.ids):
                counts[(CATEGORIES[cat], m.text, m.ids[0], r.ids[0] if r.ids else "-", r.how)] += 1
    return [{"category": c, "mention": t, "gold": g, "linked": p, "how": h, "count": k}
            for (c, t, g, p, h), k in counts.most_common(n)]


SPECIES = {"NCBITaxon:9606": "human", "NCBITaxon:10090": "mouse", "NCBITaxon:10116": "rat"}


def gene_errors(linker: EntityLinker, gold: list[Document], n: int) -> list[dict]:
    """The ``n`` most frequent wrong links of held-out gold gene mentions: the mention's text, its
    first gold id and that gene's species (the reference vocabulary's, "other" for a gene none of its
    files names), the linker's answer and its species (or none), how it answered, and the species
    the linker read for the mention (:meth:`~graphmert.ner.linking.EntityLinker.mention_species`)."""
    def species(gene: str) -> str:
        return SPECIES.get(linker.gene_taxon(gene) or "", "other")

    counts: Counter = Counter()
    for g in gold:
        blank = unlinked_copy(g)
        for m, r, sp in zip(g.mentions, linker.link_mentions(blank), linker.mention_species(blank)):
            if mention_category(m.type) == "biolink:Gene" and m.ids and not (r.ids and r.ids[0] in m.ids):
                linked = f"{r.ids[0]} ({species(r.ids[0])})" if r.ids else "-"
                counts[(m.text, f"{m.ids[0]} ({species(m.ids[0])})", linked, r.how,
                        SPECIES.get(sp or "", sp or "-"))] += 1
    return [{"mention": t, "gold": g, "linked": p, "how": h, "species read": s, "count": k}
            for (t, g, p, h, s), k in counts.most_common(n)]


def gene_breakdown(linker: EntityLinker, gold: list[Document], kg) -> list[dict]:
    """Gold gene mentions with ids by the species of their first id and by how the linker linked
    them: mentions, how many right, accuracy. The species is the reference vocabulary's (human, mouse,
    rat, or "other" for a gene none of its files names) with ``--vocabularies``; without, whether an
    id is a seed-KG gene (the KG is human-only) or "other species"."""
    counts: Counter = Counter()
    for g in gold:
        for m, r in zip(g.mentions, linker.link_mentions(unlinked_copy(g))):
            if mention_category(m.type) != "biolink:Gene" or not m.ids:
                continue
            if linker.has_reference_genes:
                sp = SPECIES.get(linker.gene_taxon(m.ids[0]) or "", "other")
            else:
                sp = "human (seed KG)" if any(i in kg.nodes for i in m.ids) else "other species"
            for key in ((sp, r.how), (sp, "all")):
                counts[key] += 1
                counts[key + ("right",)] += bool(r.ids) and r.ids[0] in m.ids
    groups = dict.fromkeys(sp for sp, *_ in counts)
    return [{"gold id": sp, "how": how, "mentions": counts[(sp, how)], "right": counts[(sp, how, "right")],
             "accuracy": counts[(sp, how, "right")] / counts[(sp, how)]}
            for sp in sorted(groups) for how in (*HOWS, "all") if counts[(sp, how)]]


def species_cue_documents(linker: EntityLinker, docs: list[Document]) -> list[dict]:
    """The BioRED-train documents whose text names a xenograft host or a Cre allele (the species cues
    of :mod:`graphmert.ner.linking.species`), with their gold gene mentions by the species of their
    first id (the reference vocabularies'): what those cues were chosen on."""
    from graphmert.ner.linking.species import _CRE_ALLELES, _HOSTS

    rows = []
    for d in docs:
        cues = [name for name, pattern in (("xenograft host", _HOSTS), ("Cre allele", _CRE_ALLELES))
                if d.metadata.get("source") == "biored_train" and pattern.search(d.text)]
        if cues:
            taxa = Counter(SPECIES.get(linker.gene_taxon(m.ids[0]) or "", "other") for m in d.mentions
                           if mention_category(m.type) == "biolink:Gene" and m.ids)
            rows.append({"cue": ", ".join(cues), "document": d.id, "held out": held_out_biored_train(d),
                         **{sp: taxa[sp] for sp in ("human", "mouse", "rat", "other")}})
    return sorted(rows, key=lambda r: (r["cue"], r["document"]))


def _cell(v: object) -> str:
    return f"{v:.3f}" if isinstance(v, float) else "–" if v is None else str(v)


def markdown(rows: list[dict], title: str) -> str:
    cols = list(rows[0])
    lines = [f"\n**{title}**\n", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def sweep(linker: EntityLinker, docs: list[Document], thresholds: list[float]) -> list[dict]:
    blank = [unlinked_copy(d) for d in docs]
    rows = []
    for t in thresholds:
        linker.fuzzy_threshold = t
        rows.append({"threshold": "off" if t > 1 else t, **evaluate(linker, docs, blank)})
    return rows


def load_inputs(abbreviations: bool, extra_sources: Sequence[str] = ()
                ) -> tuple[list[Document], list[Document], list[Document], list[Path]]:
    """Training documents, held-out BioRED-train documents, BioRED dev documents, xref tables."""
    corpus = require_shared("biomed_abstracts_corpus", "abstracts.jsonl.gz")
    sources = load_config(CONFIG).ner.sources
    docs = list(annotated_documents(read_corpus([corpus]), [*sources, *extra_sources]))
    held = [d for d in docs if held_out_biored_train(d)]
    dev = list(read_corpus([require_shared("biored", "Dev.PubTator")]))
    if abbreviations:
        analyzer = TextAnalyzer(sentences=False, abbreviations=True)
        held, dev = list(analyzer.annotate(held)), list(analyzer.annotate(dev))
    kg_dir = require_shared("seed_kg_hetionet_disgenet_mesh")
    return docs, held, dev, [kg_dir / t for t in XREF_TABLES]


def also_gold(linker: EntityLinker, path: Path, learnt: set[str], abbreviations: bool) -> list[dict]:
    """:func:`evaluate`'s row on the gold spans of another annotated file (BC5CDR test), at the
    linker's threshold, less the documents whose annotations the linker learnt from (``learnt``: 53
    BioRED-train abstracts are also BC5CDR test's)."""
    gold = [d for d in read_corpus([path]) if d.id not in learnt]
    if abbreviations:
        gold = list(TextAnalyzer(sentences=False, abbreviations=True).annotate(gold))
    return [{"documents": len(gold), **evaluate(linker, gold, [unlinked_copy(d) for d in gold])}]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--thresholds", default=",".join(map(str, THRESHOLDS)),
                    help="comma-separated fuzzy thresholds (a value above 1 turns fuzzy off)")
    ap.add_argument("--no-abbreviations", action="store_true", help="skip the abbreviation detector")
    ap.add_argument("--extra-sources", nargs="+", default=[], metavar="SOURCE",
                    help="corpus sources whose documents also teach the dictionary (tmvar3_pubtator)")
    ap.add_argument("--kg-gene-species", default=None, metavar="TAXON",
                    help="the seed KG's gene taxon (extract.kg_gene_species, e.g. NCBITaxon:9606): genes "
                         "of other species' documents are not linked to KG genes")
    ap.add_argument("--strict-gene-species", action="store_true",
                    help="extract.strict_gene_species: a dictionary gene of another species than the "
                         "document's, with no ortholog, is not linked either")
    ap.add_argument("--known-terms-only", action="store_true",
                    help="a reference term answers only with an id the KG or training give the category "
                         "(extract.known_terms_only)")
    ap.add_argument("--name-tables", action="store_true",
                    help="ner.name_tables: the seed KG folder's DisGeNET gene names as KG gene synonyms")
    ap.add_argument("--vocabularies", action="store_true",
                    help="ner.vocabularies of configs/biored-raw.yaml: reference gene names per species, "
                         "orthologs, MeSH descriptors (disease and chemical names)")
    ap.add_argument("--reference-at", type=int, default=None,
                    help="where the reference gene look-up comes among the exact steps (EntityLinker.reference_at)")
    ap.add_argument("--no-sentence-species", action="store_true",
                    help="a gene mention's species is the document's, never the one its sentence names "
                         "(EntityLinker.sentence_species off)")
    ap.add_argument("--no-initials", action="store_true",
                    help="an unlinked mention spelling a linked mention's initials stays unlinked "
                         "(EntityLinker.initials off)")
    ap.add_argument("--no-abbreviation-species", action="store_true",
                    help="a short form whose long form names a species does not name it where it recurs "
                         "(EntityLinker.abbreviation_species off)")
    ap.add_argument("--no-american", action="store_true",
                    help="a British spelling is not looked up again as the American one (EntityLinker.american off)")
    ap.add_argument("--also-gold", type=Path, default=None, metavar="PUBTATOR",
                    help="also score the gold spans of this annotated file at the chosen threshold, less "
                         "the documents the linker learnt from (report only: BC5CDR test)")
    ap.add_argument("--errors", type=int, default=0, metavar="N",
                    help="also print the N most frequent held-out linking errors: disease and chemical, "
                         "then gene (with the species of the gold id, of the answer and read for the mention)")
    ap.add_argument("--species-cues", action="store_true",
                    help="also list the BioRED-train documents that name a xenograft host or a Cre allele, "
                         "with their gold genes by species (needs --vocabularies)")
    ap.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    a = ap.parse_args()
    thresholds = [float(x) for x in a.thresholds.split(",")]
    t0 = time.perf_counter()
    docs, held, dev, xrefs = load_inputs(not a.no_abbreviations, a.extra_sources)
    kg_dir = require_shared("seed_kg_hetionet_disgenet_mesh")
    names = [kg_dir / t for t in NAME_TABLES] if a.name_tables else []
    kg = read_hetionet_disgenet_mesh(kg_dir)
    vocab = vocabularies() if a.vocabularies else []
    linker = EntityLinker.build(docs, kg, xrefs, name_tables=names,
                                exclude={d.id for d in held}, vocabularies=vocab)
    if a.reference_at is not None:
        linker.reference_at = a.reference_at
    linker.kg_species, linker.strict_species = a.kg_gene_species, a.strict_gene_species
    linker.known_terms_only = a.known_terms_only
    linker.sentence_species, linker.initials = not a.no_sentence_species, not a.no_initials
    linker.abbreviation_species, linker.american = not a.no_abbreviation_species, not a.no_american
    print(f"built in {time.perf_counter() - t0:.1f} s from {linker.stats()['documents']} documents "
          f"({len(held)} BioRED-train documents held out); stats: {linker.stats()}")
    rows = sweep(linker, held, thresholds)
    best = max(rows, key=lambda r: (r["doc F1"], r["threshold"] if r["threshold"] != "off" else 2.0))
    print(markdown(rows, f"held-out BioRED train ({len(held)} docs, gold spans): choose here"))
    print(f"\nchosen fuzzy threshold: {best['threshold']} (held-out doc F1 {best['doc F1']:.4f})")
    linker.fuzzy_threshold = 2.0 if best["threshold"] == "off" else best["threshold"]
    genes = gene_breakdown(linker, held, kg)
    print(markdown(genes, "held-out gold gene mentions at the chosen threshold: by species and how linked"))
    misses = miss_breakdown(linker, held)
    print(markdown(misses, "held-out gold disease and chemical mentions at the chosen threshold: misses by "
                           "first gold id (MeSH C id: a supplementary concept no shared file names; known "
                           "id: one a look-up can answer) and how linked"))
    if a.species_cues:
        print(markdown(species_cue_documents(linker, docs), "BioRED-train documents with a species cue of "
                       "graphmert.ner.linking.species, and their gold gene mentions by species"))
    if a.errors:
        print(markdown(frequent_errors(linker, held, a.errors), f"the {a.errors} most frequent held-out "
                                                                  "disease and chemical linking errors"))
        print(markdown(gene_errors(linker, held, a.errors), f"the {a.errors} most frequent held-out gene "
                                                              "linking errors"))
    dev_misses = miss_breakdown(linker, dev)                       # at the chosen threshold, before the sweep
    dev_rows = sweep(linker, dev, thresholds)
    print(markdown(dev_rows, f"BioRED dev ({len(dev)} docs, gold spans): REPORT ONLY, never tuned on"))
    print(markdown(dev_misses, "BioRED dev disease and chemical misses at the chosen threshold, by first gold "
                               "id: REPORT ONLY"))
    also = also_gold(linker, a.also_gold, {d.id for d in docs}, not a.no_abbreviations) if a.also_gold else []
    if also:
        print(markdown(also, f"{a.also_gold} gold spans at the chosen threshold: REPORT ONLY"))
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")
    if a.out:
        write_json("linking", rows, a.out, chosen_threshold=best["threshold"], dev_report_only=dev_rows,
                   dev_misses_report_only=dev_misses,
                   held_out_genes=genes, held_out_misses=misses, extra_sources=a.extra_sources,
                   kg_gene_species=a.kg_gene_species, strict_gene_species=a.strict_gene_species,
                   name_tables=a.name_tables, abbreviations=not a.no_abbreviations,
                   vocabularies=[v.path for v in vocab], reference_at=linker.reference_at,
                   sentence_species=linker.sentence_species, initials=linker.initials,
                   abbreviation_species=linker.abbreviation_species, american=linker.american,
                   also_gold=str(a.also_gold or ""), also_gold_report_only=also)


if __name__ == "__main__":
    main()
