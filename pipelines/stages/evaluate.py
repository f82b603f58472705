"""Evaluate stage: extracted triples vs gold document-level relations, with baselines (DESIGN §9).

Reads the gold (``evaluate.gold``: PubTator or BioC) restricted to the documents extraction read,
the extract stage's merged triples and those of its controls (``extract.controls``: the same
questions ranked without the trained model), the seed KG
(which pairs are already known; the ``seed_kg`` baseline) and the relation schema saved by the graphs
stage (validity; the categories the co-occurrence baseline may pair). Writes
``RUN/evaluate/metrics.json`` (per system: precision/recall/F1, untyped and typed, all/seed-known/
novel, validity, the F1 over linked ends only, the k and threshold it selected at; graphmert's F1
minus each other system's with a paired-bootstrap interval over the scored documents,
:mod:`graphmert.eval.bootstrap`; each extracting system's reliability by confidence, ``calibration``:
precision per confidence bin, the pairs at or above each bin's edge and the expected calibration
error, :mod:`graphmert.eval.calibration`) and ``metrics.md`` (the same as Markdown tables; of the
reliability tables, graphmert's). Every triple counts: one with an unlinked end (a text node) is a
false pair (:func:`graphmert.eval.metrics.pair_sets`).

When extraction recognised the mentions itself (the ner stage; ``RUN/extract/documents.parquet``),
the recognised mentions are scored against the gold ones (recognition and normalisation, a second
table), the baselines pair the recognised, linked mentions rather than the gold ones, and a last
table says where graphmert's gold pairs are lost: an end unrecognised, mislinked, or both found and
the pair not extracted (:mod:`graphmert.eval.losses`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable

from graphmert.config import Config, ConfigError
from graphmert.corpus.document import Document, read_documents
from graphmert.eval.baselines import BASELINES
from graphmert.eval.bootstrap import document_counts, f1_difference
from graphmert.eval.calibration import pair_confidences, reliability
from graphmert.eval.entities import normalisation_scores, recognition_scores
from graphmert.eval.gold import GoldSet, load_gold
from graphmert.eval.losses import pair_losses
from graphmert.eval.metrics import evaluate_system, pair_sets, seed_pairs, triple_documents, validity
from graphmert.eval.report import metrics_payload, write_report
from graphmert.extract.triples import Triple, read_triples
from graphmert.kg.graph import SeedKG
from graphmert.kg.loaders import load_kg
from graphmert.kg.schema import RelationSchema, mention_category
from pipelines.holdout import held_out_documents
from pipelines.stage import Stage, StageContext
from pipelines.stages import DOCUMENTS_FILE, RECOGNIZED_FILE

log = logging.getLogger("graphmert.pipeline")


def _evaluate(ctx: StageContext) -> dict:
    cfg = ctx.cfg
    if not cfg.evaluate.gold:
        raise ConfigError("evaluate.gold: no gold file given; pass --gold FILE (PubTator or BioC) or "
                          "set evaluate.gold in the config")
    full = load_gold(cfg.evaluate.gold, format=cfg.evaluate.format,
                     skip_bad_records=cfg.corpus.skip_bad_records)
    ex_dir = ctx.stage_dir("extract")
    extracted = (ex_dir / DOCUMENTS_FILE).read_text(encoding="utf-8").split()
    gold = full.subset(extracted)
    if not gold.documents:
        log.warning("evaluate: none of the %d extracted documents is in the gold (%s), so nothing is scored "
                    "and every figure is 0; evaluate.gold=[] leaves evaluation out of graphmert run",
                    len(extracted), ", ".join(map(str, cfg.evaluate.gold)))
    main = scan(read_triples([ex_dir / s for s in ctx.upstream["extract"]["shards"]]), gold)
    kg = load_kg(cfg.kg, held_out_documents(cfg, extracted))
    schema = RelationSchema.load(ctx.stage_dir("graphs") / "relation_schema.json")
    seed = seed_pairs(kg)
    rmap = dict(cfg.evaluate.relation_map)

    ex = cfg.extract
    pairs = {"graphmert": pair_sets(main.on_gold, rmap)}          # each system's (untyped, typed) pairs
    systems = {"graphmert": {**_scores(main, pairs["graphmert"], rmap, gold, seed, schema),
                             "settings": settings(ex.tails_per_query, ex.min_confidence)
                             + (f", lexical w={ex.lexical_weight:g}" if ex.lexical_weight > 0 else "")}}
    calibration = {"graphmert": reliability(pair_confidences(main.on_gold, rmap), gold)}
    for name, info in ctx.upstream["extract"].get("controls", {}).items():
        control = scan(read_triples(ex_dir / info["file"]), gold)
        pairs[name] = pair_sets(control.on_gold, rmap)
        calibration[name] = reliability(pair_confidences(control.on_gold, rmap), gold)
        systems[name] = {**_scores(control, pairs[name], rmap, gold, seed, schema),
                         "settings": "all" if name == "candidates"
                         else settings(info.get("tails_per_query"), info.get("min_confidence"))}
    found = recognised_documents(ex_dir, ctx.upstream["extract"], gold)
    seen = as_recognised(gold, found) if found else gold
    for name, found_pairs in baseline_pairs(cfg, seen, kg, schema).items():
        pairs[name] = found_pairs
        scores = evaluate_system(*found_pairs, gold, seed)     # the baselines pair linked mentions only
        systems[name] = {**scores, "validity": None, "linked_only": scores["untyped"]["all"]}
    entities = _entity_scores(gold, found, cfg.ner.categories)
    losses = {"losses": {"graphmert": pair_losses(gold, seen.documents, pairs["graphmert"][0])}} \
        if found else {}            # where recognition, linking and the model lose graphmert's pairs
    differences = _differences(pairs, gold, cfg.evaluate.bootstrap_resamples)
    payload = metrics_payload(systems, {"model": _model_numbers(ctx), **entities, **losses, **gold.counts(),
                                        **({"differences": differences} if differences else {}),
                                        "calibration": calibration,
                                        "triples": main.triples,
                                        "gold_documents_not_extracted": len(full.documents) - len(gold.documents),
                                        "triples_on_gold_documents": len(main.on_gold),
                                        "predictions_outside_gold": main.outside})
    write_report(ctx.out, payload)
    f1 = {name: round(s["untyped"]["all"]["f1"], 4) for name, s in systems.items()}
    return {"documents": payload.get("documents", 0), "gold_pairs": payload.get("gold_pairs", 0),
            "triples": main.triples, "f1_untyped": f1,
            "f1_typed": {n: round(s["typed"]["all"]["f1"], 4) for n, s in systems.items()}}


@dataclass
class Scan:
    """One system's triples read once as a stream: their number, those evidenced on a gold document
    (all that scoring needs: pairs of other documents are not scored), and the (triple, document)
    predictions outside the gold. Memory grows with the gold, not with the corpus extracted from."""

    triples: int
    on_gold: list[Triple]
    outside: int


def scan(triples: Iterable[Triple], gold: GoldSet) -> Scan:
    n = outside = 0
    on_gold = []
    for t in triples:
        n += 1
        docs = triple_documents(t)
        inside = sum(d in gold.documents for d in docs)
        outside += len(docs) - inside
        if inside:
            on_gold.append(t)
    return Scan(triples=n, on_gold=on_gold, outside=outside)


def _scores(s: Scan, pairs: tuple[set, set], rmap: dict[str, str], gold: GoldSet, seed: set,
            schema: RelationSchema) -> dict:
    """A system's row: its ``pairs`` (:func:`~graphmert.eval.metrics.pair_sets` of its triples, every
    triple counted) against the gold, the validity of its triples on gold documents, and the untyped
    scores over the triples whose two ends are linked (the table's "linked ends only")."""
    linked = evaluate_system(*pair_sets(s.on_gold, rmap, linked_only=True), gold)["untyped"]["all"]
    return {**evaluate_system(*pairs, gold, seed), "validity": validity(s.on_gold, schema), "linked_only": linked}


def _differences(pairs: dict[str, tuple[set, set]], gold: GoldSet, resamples: int) -> dict:
    """graphmert's F1 minus each other system's, untyped and typed, with the paired-bootstrap interval
    over the scored documents (:mod:`graphmert.eval.bootstrap`, seed 0); {} with no resamples."""
    if resamples <= 0:
        return {}
    docs = sorted(gold.documents)
    golds = {"untyped": gold.untyped, "typed": gold.typed}
    counts = {name: {k: document_counts(p, golds[k], docs) for k, p in zip(golds, found)}
              for name, found in pairs.items()}
    return {name: {k: f1_difference(counts["graphmert"][k], own[k], resamples) for k in golds}
            for name, own in counts.items() if name != "graphmert"}


def settings(k: int | None, threshold: float | None) -> str | None:
    """A system's selection for the table: "k=4, t=0.3" (no t where it takes no threshold); None
    when unknown (a manifest written before the controls recorded theirs)."""
    if k is None:
        return None
    return f"k={k}" + (f", t={threshold:g}" if threshold is not None else "")


def recognised_documents(extract_dir: Path, extract_manifest: dict, gold: GoldSet) -> list[Document]:
    """The gold documents extraction read, with the mentions the recognizer gave them ([] when it
    gave none): all that is scored, read as a stream from every extracted document."""
    if not extract_manifest.get("recognized_documents"):
        return []
    return [d for d in read_documents(extract_dir / RECOGNIZED_FILE) if d.id in gold.documents]


def baseline_pairs(cfg: Config, seen: GoldSet, kg: SeedKG | None, schema: RelationSchema
                   ) -> dict[str, tuple[set, set]]:
    """Each baseline of ``evaluate.baselines``: its (untyped, typed) pairs over ``seen``, the gold
    with the mentions extraction had (:func:`as_recognised` on recognised documents)."""
    rmap = dict(cfg.evaluate.relation_map)
    return {name: BASELINES.get(name)(seen, kg, schema, rmap) for name in cfg.evaluate.baselines}


def _entity_scores(gold: GoldSet, found: list[Document], categories: list[str]) -> dict:
    """Recognition and normalisation scores of the recognised mentions against the gold ones, over
    the ``ner.categories`` the gold annotates; the other categories extraction found mentions of
    (the variants of ``extract.variant_mentions``, and a category of ``ner.categories`` no scored
    gold document has a mention of: BC5CDR's genes) are scored ``"apart"``, outside the micro
    average. A gold that annotates only some categories cannot judge the others' mentions: were they
    in the micro, every one would count as a false positive."""
    if not found:
        return {}
    docs = list(gold.documents.values())
    annotated = {mention_category(m.type) for d in docs for m in d.mentions}
    categories = [c for c in categories if c in annotated] or categories      # a gold of no mentions: all
    scores = {"recognition": recognition_scores(found, docs, categories),
              "normalisation": normalisation_scores(found, docs, categories)}
    others = sorted({mention_category(m.type) for d in found for m in d.mentions} - set(categories) - {""})
    if others:
        scores["apart"] = {"recognition": recognition_scores(found, docs, others),
                           "normalisation": normalisation_scores(found, docs, others)}
    return {"entities": scores}


def as_recognised(gold: GoldSet, found: list[Document]) -> GoldSet:
    """The gold pairs over the mentions extraction had: on recognised documents the baselines pair
    the recognised, linked mentions (what a raw-text pipeline sees), not the gold ones."""
    seen = GoldSet.from_documents([replace(d, relations=[]) for d in found if d.id in gold.documents])
    categories = {k: c for k, c in gold.categories.items() if k[0] not in seen.documents}
    return replace(gold, documents={**gold.documents, **seen.documents},
                   categories={**categories, **seen.categories})


def _model_numbers(ctx: StageContext) -> dict:
    """What the trained model and its training data were (train and graphs manifests), for the
    report: held-out leaf accuracy against its majority baseline, with and without the copy path
    (``model.leaf_copy``; without it, the MNM decoder alone), candidate accuracy, injections;
    for an ensemble its size and each member's held-out accuracies (by train.seed)."""
    train, graphs = ctx.upstream.get("train", {}), ctx.upstream.get("graphs", {})
    acc, base = train.get("leaf_acc"), train.get("leaf_majority_acc")
    alone = train.get("leaf_acc_no_copy")
    out = {"heldout_leaf_accuracy": acc, "leaf_majority_baseline": base,
           "leaf_accuracy_over_baseline": acc / base if acc is not None and base else None,
           "heldout_leaf_accuracy_no_copy": alone,
           "leaf_accuracy_no_copy_over_baseline": alone / base if alone is not None and base else None,
           "heldout_masked_leaves": train.get("heldout_masked_leaves"),
           "heldout_candidate_accuracy": train.get("candidate_acc"),
           "parameters": train.get("parameters"), "train_steps": train.get("steps"),
           "chunks_with_leaves": graphs.get("chunks_with_leaves"), "injections": graphs.get("injections"),
           "queries_without_tail": graphs.get("queries_without_tail"),
           "injections_per_relation": graphs.get("injections_per_relation")}
    if train.get("members"):        # an ensemble: the rows above are member 0's
        out["ensemble_size"] = train["ensemble_size"]
        out["member_candidate_accuracy"] = {m["seed"]: m["candidate_acc"] for m in train["members"]}
        out["member_leaf_accuracy"] = {m["seed"]: m["leaf_acc"] for m in train["members"]}
    return out


def _sources(cfg: Config) -> list[Path]:
    return [Path(p) for p in cfg.evaluate.gold]


EVALUATE = Stage("evaluate", sections=("evaluate", "kg", "extract.paths", "extract.document_fraction",
                                       "ner.categories"),
                 upstream=("graphs", "train", "extract"), run=_evaluate, source_files=_sources)
