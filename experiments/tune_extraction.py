"""Tune the extraction of a query-group model on labelled documents: every ranker × selection setting.

    .venv/bin/python experiments/tune_extraction.py --config configs/biored.yaml --run-dir RUN \\
        [--scopes sentence chunk 'sentence,Disease|SequenceVariant=title'] [--k 1 2 3] \\
        [--thresholds 0.1 0.2 0.3 0.4 0.5] [--outside-weights 0 0.1 0.3 | --outside-thresholds 0.6 0.8] \\
        [--relation-sets R1,R2 R1,R2,R3] [--evidence best noisy_or] \\
        [--relation-choices score prior prior_only typer typer_score] [--lexical-weights 0 0.3 0.5] \
        [override ...]

RUN is a finished run whose model was trained with the tuning documents held out — for BioRED, the
slice of its *train* file (configs/biored.yaml shows the command); the same overrides select those
documents here (``extract.paths``, ``extract.document_fraction``, ``evaluate.gold``). The script loads
the run's checkpoint once (with its ensemble members, ``train.ensemble_size``, whose answers are
averaged as extraction averages them), asks every question once per scope, scores the answers with
the model rankers (``model``, ``likelihood``) and the controls (``candidates``, ``random``, ``nearest``,
``salience``, ``untrained``, ``lexical``, ``lexical_document``: its regression fitted as the extract
stage fits it), pools the model rankers' answers with the lexical score (``extract.lexical_weight``,
optionally one more grid axis over the same answers) and then with the relatedness head's at
``extract.related_head_weight`` (the head fitted as the extract stage fits it, so the model rows are
the shipped system's: an override such as ``extract.related_head_weight=0.7`` sweeps it), and evaluates each
selection setting (``extract.tails_per_query`` × ``extract.min_confidence``; the threshold applies
to probability rankers only), and optionally soft scopes (``extract.outside_scope_weight``, each asked anew) or the outside band's thresholds
(``extract.outside_min_confidence``, one more grid axis over the same answers), extraction relation sets ×
evidence combinations (``extract.evidence``) × typed-relation choices (``extract.relation_choice``),
against the gold, as ``graphmert evaluate`` would: untyped and typed pair F1, and the type accuracy
on the pairs found. It prints the tables and writes
``experiments/results/tune_extraction.json``. Never point it at the evaluation set: whatever wins here
goes into the config, and is then reported once on dev.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _study import print_table, write_json  # noqa: E402

import torch  # noqa: E402

from graphmert.config import ExtractConfig, build, field_choices, load_config  # noqa: E402
from graphmert.corpus.document import read_documents  # noqa: E402
from graphmert.corpus.windowing import chunk_documents  # noqa: E402
from graphmert.corpus.nlp import TextAnalyzer  # noqa: E402
from graphmert.corpus.readers import read_corpus  # noqa: E402
from graphmert.corpus.tokenizer import load_tokenizer  # noqa: E402
from graphmert.eval.gold import load_gold  # noqa: E402
from graphmert.eval.metrics import evaluate_system, pair_sets  # noqa: E402
from graphmert.extract.pairs import CONTROLS, MODEL_RANKERS, PROBABILITY_RANKERS, PairExtractor  # noqa: E402
from graphmert.kg.graph import load_relation_map  # noqa: E402
from graphmert.kg.loaders import load_kg  # noqa: E402
from graphmert.kg.schema import RelationSchema  # noqa: E402
from graphmert.model import build_model  # noqa: E402
from graphmert.model.checkpoint import load_checkpoint  # noqa: E402
from graphmert.extract.relation_typer import RelationTyper  # noqa: E402
from graphmert.extract.lexical_document import fit_stack  # noqa: E402
from graphmert.extract.pair_heads import fit_heads  # noqa: E402
from pipelines.holdout import held_out_documents, in_slice  # noqa: E402
from pipelines.stages.extract import typer_documents  # noqa: E402
from pipelines.stages.train import member_models  # noqa: E402
from graphmert.io import read_json  # noqa: E402


# A config override (section.key=value): taken out of the command line before argparse, so that it
# may follow a list option (--rankers a b 'extract.paths=[...]') without being read as one of its items.
_OVERRIDE = re.compile(r"^[a-z_]+(\.[a-z_0-9]+)+=")


def _extractor(cfg, run: Path, docs, relations=None, models: list[int] | None = None,
               stack: bool = False, heads: bool = False) -> PairExtractor:
    """The extractor of ``run``'s checkpoint and its ensemble members (``models``: the members to
    average, 0 the checkpoint itself and i ≥ 1 member i; None: all of them); with ``heads``, the pair
    heads the config pools in (``extract.type_head_weight``, ``related_head_weight``: the model
    ranker's answers are then the shipped system's), and with ``stack`` the ``lexical_document``
    control's regression, each fitted on ``extract.typer_files`` as the extract stage fits it. The
    other studies (``tuning_questions``) fit their own heads or none."""
    tok = load_tokenizer(run / "tokenizer" / "tokenizer.json")
    rmap = load_relation_map(run / "graphs" / "relation_map.json")
    folders = [run / "train" / "model", *member_models(run / "train", read_json(run / "train" / "manifest.json"))]
    if models is not None and not all(0 <= i < len(folders) for i in models):
        raise SystemExit(f"--models {models}: {run} holds {len(folders)} model(s), numbered 0 to {len(folders) - 1}")
    chosen = [folders[i] for i in (models if models is not None else range(len(folders)))]
    loaded = [load_checkpoint(m, expected_vocab=tok.get_vocab_size(), expected_relations=rmap) for m in chosen]
    (model, info), members = loaded[0], [m for m, _ in loaded[1:]]
    torch.manual_seed(cfg.train.seed)
    untrained = build_model(info["config"], tok.get_vocab_size(), len(rmap))
    held_out = held_out_documents(cfg, (d.id for d in docs))
    kg = load_kg(cfg.kg, held_out)
    schema = RelationSchema.load(run / "graphs" / "relation_schema.json")
    typer = None
    if cfg.extract.typer_files:     # the relation typer, fitted as the extract stage fits it, with the
        typer = RelationTyper.from_config(cfg.extract)       # related-or-not regression for lexical
        typer.related = True
        typer.fit(typer_documents(cfg, held_out))
    ex = PairExtractor(model, tok, kg, schema, rmap, cfg.extract, cfg.graph.num_roots,
                       cfg.graph.num_leaves, relations=relations or cfg.extract.relations,
                       untrained=untrained, typer=typer, members=members)
    heads = heads and (cfg.extract.type_head_weight > 0 or cfg.extract.related_head_weight > 0)
    if typer is None or not (heads or stack):
        return ex
    fit = list(typer_documents(cfg, held_out))
    fit_chunks = list(chunk_documents(fit, tok, cfg.corpus, cfg.graph))
    if heads:
        ex.type_head, ex.related_head = fit_heads(ex, fit, fit_chunks, cfg.extract)
    if stack:
        ex.stack = fit_stack(ex, fit, fit_chunks,
                             lambda: dataclasses.replace(RelationTyper.from_config(cfg.extract), related=True,
                                                         type_regression=False),
                             folds=cfg.extract.stack_folds, c=cfg.extract.stack_c)
    return ex


def tuning_documents(cfg, documents: Path | None = None):
    """The documents ``cfg`` extracts from (``extract.paths`` within ``extract.document_fraction``,
    with sentences, as the extract stage reads them) and their gold (``evaluate.gold``). With
    ``documents`` (an extract stage's ``documents.parquet``), the documents that stage extracted
    from instead: on raw text, the recognised and linked ones."""
    if documents is not None:
        docs = [d for d in read_documents(documents) if in_slice(d.id, cfg.extract.document_fraction)]
        if not docs:
            raise SystemExit(f"{documents}: no document of the slice (extract.document_fraction "
                             f"{cfg.extract.document_fraction})")
    else:
        reader = read_corpus(cfg.extract.paths, format=cfg.extract.format)
        docs = list(TextAnalyzer(sentences=True, abbreviations=cfg.corpus.abbreviations)
                    .annotate(d for d in reader if in_slice(d.id, cfg.extract.document_fraction)))
    return docs, load_gold(cfg.evaluate.gold, format=cfg.evaluate.format).subset(d.id for d in docs)


def study_parser(doc: str) -> argparse.ArgumentParser:
    """The arguments every study of a tuning run takes: --config, --run-dir, --models, --out."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--config", required=True)
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--models", nargs="+", type=int, default=None,
                   help="the ensemble members to average (0: the checkpoint itself; default: all)")
    p.add_argument("--out", type=Path)
    return p


def tuning_questions(cfg, run: Path, models: list[int] | None = None, wrap=None):
    """(documents, gold, extractor, plans, questions) of the tuning documents of ``cfg``, asked of
    ``run``'s models; ``wrap`` turns the extractor into a study's subclass first."""
    docs, gold = tuning_documents(cfg)
    ex = _extractor(cfg, run, docs, models=models)
    ex = wrap(ex) if wrap is not None else ex
    plans = ex.questions(docs, list(chunk_documents(docs, ex.tok, cfg.corpus, cfg.graph)))
    return docs, gold, ex, plans, [q for pl in plans for q in pl.queries]


def split_overrides(argv: list[str]) -> tuple[list[str], list[str]]:
    """(the arguments for argparse, the config overrides SECTION.KEY=VALUE) of a command line."""
    return [x for x in argv if not _OVERRIDE.match(x)], [x for x in argv if _OVERRIDE.match(x)]


def _choices(name: str) -> tuple[str, ...]:
    """The allowed values of ``extract.<name>``, from its config field (defined once there)."""
    return field_choices(ExtractConfig, name)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True)
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--scopes", nargs="+", default=None,
                   metavar="SCOPE[,CatA|CatB=SCOPE]", help="tail scopes to compare: extract.tail_scope, optionally followed by "
                        "extract.tail_scope_by_category entries, e.g. 'sentence,Disease|SequenceVariant=title' "
                        "(default: the config's own, its per-category scopes included)")
    p.add_argument("--documents", type=Path, default=None, metavar="PARQUET",
                   help="extract from the documents an extract stage wrote (RUN/extract/documents.parquet) "
                        "instead of extract.paths: on raw text, what the recogniser and linker found")
    p.add_argument("--k", nargs="+", type=int, default=[1, 2, 3])
    p.add_argument("--thresholds", nargs="+", type=float, default=[0.1, 0.2, 0.3, 0.4, 0.5])
    p.add_argument("--rankers", nargs="+", default=["model", "likelihood", *CONTROLS])
    p.add_argument("--outside-weights", nargs="+", type=float, default=None, metavar="W",
                   help="extract.outside_scope_weight values to compare at each scope "
                        "(default: the config's)")
    p.add_argument("--outside-thresholds", nargs="+", type=float, default=None, metavar="T",
                   help="extract.outside_min_confidence values (the outside band) to compare at each "
                        "scope, beside the band off (default: the config's); not with --outside-weights")
    p.add_argument("--relation-sets", nargs="+", default=None, metavar="R1,R2,...",
                   help="extraction relation sets to compare (default: the config's extract.relations)")
    p.add_argument("--evidence", nargs="+", default=None, choices=_choices("evidence"),
                   help="evidence combinations to compare (extract.evidence; default: the config's)")
    p.add_argument("--relation-choices", nargs="+", default=None, choices=_choices("relation_choice"),
                   help="typed-relation choices to compare (default: the config's)")
    p.add_argument("--lexical-weights", nargs="+", type=float, default=None, metavar="W",
                   help="extract.lexical_weight values pooling the model rankers with the lexical score "
                        "(default: the config's)")
    p.add_argument("--models", nargs="+", type=int, default=None, metavar="I",
                   help="the ensemble members to average (0: the run's checkpoint, i: member i; default: "
                        "all), e.g. --models 1 for the second seed alone")
    p.add_argument("--out", type=Path)
    p.add_argument("overrides", nargs="*", help="config overrides SECTION.KEY=VALUE, anywhere on the line")
    args, overrides = split_overrides(sys.argv[1:])
    a = p.parse_args(args)
    a.overrides = overrides
    cfg = load_config(a.config, a.overrides)
    docs, gold = tuning_documents(cfg, a.documents)
    rmap = dict(cfg.evaluate.relation_map)
    relation_sets = [x.split(",") for x in a.relation_sets] if a.relation_sets else [cfg.extract.relations]
    choices = list(itertools.product(a.evidence or [cfg.extract.evidence],
                                     a.relation_choices or [cfg.extract.relation_choice]))
    rows = []
    for relations in relation_sets:
        ex = _extractor(cfg, a.run_dir, docs, relations, a.models, stack="lexical_document" in a.rankers,
                        heads=any(r in MODEL_RANKERS for r in a.rankers))
        chunks = list(chunk_documents(docs, ex.tok, cfg.corpus, cfg.graph))
        weights = a.outside_weights or [cfg.extract.outside_scope_weight]
        for scope, weight in itertools.product(a.scopes or [config_scope(cfg.extract)], weights):
            rows += _sweep(ex, cfg, a, docs, chunks, gold, rmap, scope, weight, choices,
                           "+".join(r[:5] for r in relations))
    print_table(rows, f"extraction settings on {len(docs)} documents, {len(gold.untyped)} gold pairs")
    best = {}
    for r in rows:
        key = (r["relations"], r["scope"], r["outside_w"], r["outside_t"], r["ranker"], r["lexical_w"],
               r["evidence"])
        if key not in best or r["F1"] > best[key]["F1"]:
            best[key] = r
    print_table(sorted(best.values(), key=lambda r: -r["F1"]),
                "best untyped setting per (relations, scope, outside weight or band, ranker, lexical weight, "
                "evidence)")
    typed = {}
    for r in rows:
        key = (r["relations"], r["scope"], r["outside_w"], r["outside_t"], r["ranker"], r["lexical_w"],
               r["evidence"], r["choice"])
        if key not in typed or r["typed_F1"] > typed[key]["typed_F1"]:
            typed[key] = r
    print_table(sorted(typed.values(), key=lambda r: -r["typed_F1"])[:20],
                "best typed setting per (relations, scope, outside weight or band, ranker, evidence, "
                "relation choice)")
    write_json("tune_extraction", rows, a.out, run_dir=str(a.run_dir), documents=len(docs),
               gold_pairs=len(gold.untyped), overrides=a.overrides)


def config_scope(ex: ExtractConfig) -> str:
    """The ``--scopes`` item of ``ex``'s own scopes: ``tail_scope`` then its per-category entries."""
    return ",".join([ex.tail_scope, *(f"{pair}={scope}" for pair, scope in ex.tail_scope_by_category.items())])


def _scope_spec(ex: ExtractConfig, spec: str) -> ExtractConfig:
    """``ex`` with the scopes of a ``--scopes`` item: ``SCOPE[,CatA|CatB=SCOPE...]``, checked as the
    config checks them."""
    default, *pairs = spec.split(",")
    by_category = dict(item.split("=", 1) for item in pairs if "=" in item)
    if len(by_category) != len(pairs):
        raise SystemExit(f"--scopes {spec!r}: write SCOPE[,CatA|CatB=SCOPE...]")
    build({"extract": {"tail_scope": default, "tail_scope_by_category": by_category}})
    return dataclasses.replace(ex, tail_scope=default, tail_scope_by_category=by_category)


def _sweep(ex: PairExtractor, cfg, a, docs, chunks, gold, rmap, scope: str, weight: float,
           choices: list[tuple[str, str]], relations: str) -> list[dict]:
    """Every ranker (× lexical weight, for the model rankers) × k × threshold × (evidence, relation
    choice) at one scope and outside weight; one row each.
    ``type_acc`` is the share of correctly found pairs whose type is right too (typed TP / untyped TP)."""
    bands = [None, *a.outside_thresholds] if a.outside_thresholds else [cfg.extract.outside_min_confidence]
    band_on = next((b for b in bands if b is not None), None)    # any band asks the outside candidates
    build({"extract": {"outside_scope_weight": weight, "outside_min_confidence": band_on}})   # checked
    scoped = dataclasses.replace(_scope_spec(cfg.extract, scope), outside_scope_weight=weight,
                                 outside_min_confidence=band_on)
    ex.cfg = scoped                  # with a band, the questions offer the outside candidates too
    plans = ex.questions(docs, chunks)
    queries = [q for pl in plans for q in pl.queries]
    rows = []
    weights = a.lexical_weights or [cfg.extract.lexical_weight]
    for ranker in a.rankers:
        t0 = time.perf_counter()
        alone = ex.answers(plans, queries, ranker, pooled=False)   # band answers: in-scope ones are the hard scope's
        secs = time.perf_counter() - t0
        grid = a.thresholds if ranker in PROBABILITY_RANKERS else [0.0]
        for lw in weights if ranker in MODEL_RANKERS else [0.0]:
            scores = ex.pooled(plans, queries, alone, ranker, weight=lw)
            rows += _decide_grid(ex, scoped, a, plans, queries, scores, ranker, grid, bands, choices, gold, rmap,
                                 dict(relations=relations, scope=scope, outside_w=weight, ranker=ranker,
                                      lexical_w=lw, score_s=round(secs, 1)))
    return rows


def _decide_grid(ex, scoped, a, plans, queries, scores, ranker, grid, bands, choices, gold, rmap,
                 fixed: dict) -> list[dict]:
    """One row per k × threshold × band × (evidence, relation choice) over one ranker's answers."""
    rows = []
    for k, th, band, (evidence, choice) in itertools.product(a.k, grid, bands, choices):
        ex.cfg = dataclasses.replace(scoped, tails_per_query=k, min_confidence=th,
                                     outside_min_confidence=band, evidence=evidence, relation_choice=choice)
        triples = ex.decide(plans, queries, scores, ranker)
        m = evaluate_system(*pair_sets(triples, rmap), gold)
        u, t = m["untyped"]["all"], m["typed"]["all"]
        rows.append({**fixed, "outside_t": "off" if band is None else band,
                     "k": k, "min_conf": th, "evidence": evidence, "choice": choice,
                     "P": u["precision"], "R": u["recall"],
                     "F1": u["f1"], "typed_F1": t["f1"], "type_acc": t["tp"] / u["tp"] if u["tp"] else 0.0})
    return rows


if __name__ == "__main__":
    main()
