"""The evaluation report: the metrics.json payload and a Markdown table of it.

``RUN/evaluate/metrics.json`` (DESIGN §10) has the shape::

    {
      "systems": {
        "<name>": {                                   # "graphmert" and each baseline, in run order
          "untyped":  {"all": PRF, "seed_known": PRF, "novel": PRF},
          "typed":    {"all": PRF, "seed_known": PRF, "novel": PRF},
          "validity": float | null,
          "linked_only": PRF | null,                  # untyped, all: triples with an unlinked end left out
          "settings": str | null                      # the selection it ran at, e.g. "k=4, t=0.3"
        }, ...
      },
      "differences": {                                # optional: graphmert − each other system
        "<name>": {"untyped": DIFF, "typed": DIFF}, ...
      },
      "documents": int, "gold_pairs": int, "unknown_relation_ids": int, ...   # plain counts (extra)
    }

where PRF = ``{"precision", "recall", "f1", "tp", "predicted", "gold"}`` (:func:`~graphmert.eval.
metrics.prf`). The Markdown table has one row per system: untyped P / R / F1, typed P / R / F1,
untyped F1 on seed-known and on novel pairs, validity, the untyped F1 over the triples whose two ends
are linked (:func:`~graphmert.eval.metrics.pair_sets`: the headline counts every triple), to 3
decimals ("–" where undefined), and the settings the system selected its triples at (its k and
threshold: every ranker runs at its own).
The optional ``"differences"`` (DIFF: :func:`~graphmert.eval.bootstrap.f1_difference`'s paired-bootstrap
interval over the scored documents) follows as its own table (:func:`difference_table`).
An optional ``"entities"`` object (``{"recognition", "normalisation"}``: the scores of
:mod:`graphmert.eval.entities` when extraction recognised the mentions itself, and ``"apart"``, the
same for categories kept out of the micro average) follows as its own
table (:func:`entity_table`). An optional ``"losses"`` object (system →
:func:`~graphmert.eval.losses.pair_losses`: where each gold pair is lost, on recognised documents)
follows as its own tables (:func:`~graphmert.eval.losses.loss_table`). An optional ``"model"``
object of plain numbers (the training run's held-out leaf accuracy and its baseline, injection
counts, …) follows as a two-column table, so every number a run is judged by is in one file.
"""

from __future__ import annotations

from pathlib import Path

from graphmert.eval.calibration import calibration_table
from graphmert.eval.entities import MICRO
from graphmert.eval.losses import loss_table
from graphmert.io import atomic_write_json, atomic_write_text

__all__ = ["metrics_payload", "markdown_table", "difference_table", "entity_table", "write_report"]

_PRF_KEYS = ("precision", "recall", "f1", "tp", "predicted", "gold")
_SPLITS = ("all", "seed_known", "novel")


def _check_scores(name: str, kind: str, scores: object) -> dict:
    if not isinstance(scores, dict) or set(scores) != set(_SPLITS):
        raise ValueError(f"system {name!r}: {kind!r} must map {list(_SPLITS)} to scores; got "
                         f"{sorted(scores) if isinstance(scores, dict) else type(scores).__name__}")
    for split in _SPLITS:
        missing = [k for k in _PRF_KEYS if k not in scores[split]]
        if missing:
            raise ValueError(f"system {name!r}: {kind}.{split} lacks {missing}")
    return {split: {k: scores[split][k] for k in _PRF_KEYS} for split in _SPLITS}


def metrics_payload(systems: dict[str, dict], extra: dict | None = None) -> dict:
    """The metrics.json object: ``systems`` (name → untyped, typed, validity) plus ``extra`` counts.

    Each system is an :func:`~graphmert.eval.metrics.evaluate_system` result, optionally with
    ``"validity"`` (``None`` when absent). ``extra`` holds run-level counts (documents, gold_pairs,
    unknown_relation_ids, skipped predictions, ...) and may not use the key ``systems``; e.g.
    ``{**gold.counts(), "triples": n}``.
    """
    extra = dict(extra or {})
    if "systems" in extra:
        raise ValueError("metrics_payload: 'systems' is reserved; rename that extra key")
    out: dict[str, dict] = {}
    for name, result in systems.items():
        out[name] = {"untyped": _check_scores(name, "untyped", result.get("untyped")),
                     "typed": _check_scores(name, "typed", result.get("typed")),
                     "validity": result.get("validity"),
                     "linked_only": result.get("linked_only"), "settings": result.get("settings")}
    return {"systems": out, **extra}


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def markdown_table(payload: dict) -> str:
    """One row per system of ``payload["systems"]``; numbers to 3 decimals."""
    head = ("| system | P | R | F1 | typed P | typed R | typed F1 | F1 seed-known | F1 novel | "
            "validity | F1 linked ends only | settings |")
    rows = [head, "|" + "---|" * 12]
    for name, s in payload["systems"].items():
        u, t = s["untyped"], s["typed"]
        cells = [u["all"]["precision"], u["all"]["recall"], u["all"]["f1"],
                 t["all"]["precision"], t["all"]["recall"], t["all"]["f1"],
                 u["seed_known"]["f1"], u["novel"]["f1"], s.get("validity"),
                 (s.get("linked_only") or {}).get("f1")]
        rows.append("| " + " | ".join([name] + [_fmt(c) for c in cells] + [s.get("settings") or "–"]) + " |")
    if payload.get("differences"):
        rows += ["", difference_table(payload["differences"]).rstrip("\n")]
    if (payload.get("calibration") or {}).get("graphmert"):
        rows += ["", calibration_table("graphmert", payload["calibration"]["graphmert"]).rstrip("\n")]
    entities = payload.get("entities")
    if entities:
        apart = entities.get("apart") or {}
        rows += ["", entity_table(entities["recognition"], entities["normalisation"],
                                  apart.get("recognition"), apart.get("normalisation")).rstrip("\n")]
    for system, losses in (payload.get("losses") or {}).items():
        rows += ["", loss_table(losses, system).rstrip("\n")]
    model = payload.get("model") or {}
    if model:
        rows += ["", "| model | value |", "|---|---|"]
        rows += [f"| {k} | {_value(v)} |" for k, v in model.items()]
    return "\n".join(rows) + "\n"


def difference_table(differences: dict[str, dict]) -> str:
    """Markdown table of graphmert's F1 minus each system's (:func:`~graphmert.eval.bootstrap.f1_difference`
    results, untyped and typed): Δ, its 95% interval and the share of resamples where graphmert does
    not beat the system, under a line naming the resamples and documents."""
    first = next(iter(differences.values()))["untyped"]
    rows = [f"Paired bootstrap over the {first['documents']} scored documents, {first['resamples']} resamples "
            "(graphmert.eval.bootstrap):", "",
            "| graphmert − system | ΔF1 | 95% interval | share Δ ≤ 0 | Δ typed F1 | 95% interval | share Δ ≤ 0 |",
            "|" + "---|" * 7]
    for name, d in differences.items():
        cells = []
        for kind in ("untyped", "typed"):
            x = d[kind]
            cells += [f"{x['delta']:+.3f}", f"[{x['low']:+.3f}, {x['high']:+.3f}]", f"{x['share_not_above']:.3f}"]
        rows.append("| " + " | ".join([name] + cells) + " |")
    return "\n".join(rows) + "\n"


def _value(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4f}"
    if isinstance(v, dict):
        return ", ".join(f"{k} {_value(x)}" for k, x in v.items())
    return "–" if v is None else str(v)


def write_report(directory: str | Path, payload: dict) -> dict[str, Path]:
    """Write ``metrics.json`` and ``metrics.md`` (the table) into ``directory``, each atomically."""
    directory = Path(directory)
    return {"metrics.json": atomic_write_json(directory / "metrics.json", payload),
            "metrics.md": atomic_write_text(directory / "metrics.md", markdown_table(payload))}


def entity_table(rec: dict[str, dict], norm: dict[str, dict], apart_rec: dict[str, dict] | None = None,
                 apart_norm: dict[str, dict] | None = None) -> str:
    """Markdown table of :func:`recognition_scores` and :func:`normalisation_scores` results: one row
    per category of ``rec`` (``micro`` last), numbers to 3 decimals ("–" where ``norm`` lacks the
    row); the mention counts are recognition's (distinct gold / predicted spans). ``apart_rec`` /
    ``apart_norm``: scores of categories kept out of the micro average (the rule-found variants),
    one row each after it, marked "(not in micro)"."""
    head = ("| entities | recognition P | recognition R | recognition F1 | normalisation P | "
            "normalisation R | normalisation F1 | gold mentions | predicted mentions |")
    rows = [head, "|" + "---|" * 9]
    names = [c for c in rec if c != MICRO] + ([MICRO] if MICRO in rec else [])
    for name in names:
        rows.append(_entity_row(name, rec[name], norm.get(name) or {}))
    for name in [c for c in (apart_rec or {}) if c != MICRO]:
        rows.append(_entity_row(f"{name} (not in micro)", apart_rec[name], (apart_norm or {}).get(name) or {}))
    return "\n".join(rows) + "\n"


def _entity_row(name: str, r: dict, n: dict) -> str:
    cells = [_fmt(r["precision"]), _fmt(r["recall"]), _fmt(r["f1"]),
             _fmt(n.get("precision")), _fmt(n.get("recall")), _fmt(n.get("f1")),
             str(r["gold"]), str(r["predicted"])]
    return "| " + " | ".join([name] + cells) + " |"
