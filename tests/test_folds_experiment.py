"""experiments/folds.py. ``write``: a fold of a PubTator file by the slice hash; the fold [0, f) is the
slice that ``extract.document_fraction=f`` extracts (:func:`pipelines.holdout.in_slice`), folds of
disjoint ranges partition the file, each kept document reads back with its mentions and relations,
``--fresh-for-entities`` drops the entity studies' documents, and a bad range or an output over the
input is refused with nothing written. ``pool`` is run on finished pipeline runs in
tests/test_pipeline_pairs.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from graphmert.corpus.readers import read_corpus
from pipelines.holdout import in_slice

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))
import folds  # noqa: E402
from _study import held_out  # noqa: E402


def _pubtator(n: int) -> str:
    out = []
    for i in range(n):
        doc = f"{1000 + i}"
        out.append(f"{doc}|t|Aspirin and cancer {i}.\n{doc}|a|Aspirin treats cancer.\n"
                   f"{doc}\t0\t7\tAspirin\tChemical\tD001241\n{doc}\t12\t18\tcancer\tDisease\tD009369\n"
                   f"{doc}\tCID\tD001241\tD009369")
    return "\n\n".join(out) + "\n\n"


def _ids(path: Path) -> list[str]:
    return [d.id for d in read_corpus([path])]


def test_the_first_fold_is_the_slice_and_folds_partition_the_file(tmp_path):
    src = tmp_path / "all.PubTator"
    src.write_text(_pubtator(40), encoding="utf-8")
    every = _ids(src)
    cuts = [0.0, 0.2, 0.55, 1.0]
    parts = []
    for lo, hi in zip(cuts, cuts[1:]):
        out = tmp_path / f"fold-{lo}.PubTator"
        folds.main(["write", str(src), "--lo", str(lo), "--hi", str(hi), "--output", str(out)])
        parts.append(_ids(out))
    assert parts[0] == [d for d in every if in_slice(d, 0.2)]
    assert sorted(sum(parts, [])) == sorted(every) and all(parts)        # disjoint, complete, in order
    kept = {d.id: d for d in read_corpus([tmp_path / "fold-0.2.PubTator"])}
    for d in read_corpus([src]):
        if d.id in kept:
            assert (kept[d.id].text, kept[d.id].mentions, kept[d.id].relations) == (d.text, d.mentions, d.relations)


def test_a_fresh_fold_leaves_out_the_entity_studies_documents(tmp_path):
    src = tmp_path / "all.PubTator"
    src.write_text(_pubtator(60), encoding="utf-8")
    fresh = [folds.block_id(b, "x") for b in folds.fold(src.read_text(encoding="utf-8"), 0.0, 1.0, "x", True)]
    every = _ids(src)
    assert fresh == [d for d in every if not held_out(d)] and len(fresh) < len(every)


@pytest.mark.parametrize("lo, hi", [("0.4", "0.2"), ("-0.1", "0.5"), ("0.5", "1.5")])
def test_a_bad_range_is_refused_and_nothing_is_written(tmp_path, lo, hi):
    src = tmp_path / "all.PubTator"
    src.write_text(_pubtator(5), encoding="utf-8")
    out = tmp_path / "fold.PubTator"
    res = subprocess.run([sys.executable, str(ROOT / "experiments" / "folds.py"), "write", str(src), "--lo", lo,
                          "--hi", hi, "--output", str(out)], capture_output=True, text=True)
    assert res.returncode != 0 and "need 0 <= lo < hi <= 1" in res.stderr and not out.exists()


def test_the_input_is_never_overwritten(tmp_path):
    src = tmp_path / "all.PubTator"
    src.write_text(_pubtator(5), encoding="utf-8")
    with pytest.raises(SystemExit, match="would overwrite the input"):
        folds.main(["write", str(src), "--lo", "0", "--hi", "1", "--output", str(src)])
    assert src.read_text(encoding="utf-8") == _pubtator(5)


def test_a_block_that_is_not_pubtator_names_the_file():
    with pytest.raises(SystemExit, match=r"f\.txt: a block starts with 'no bar here'"):
        folds.fold("no bar here\n\n", 0.0, 1.0, "f.txt")


def test_the_pool_sums_the_runs_counts_and_compares_on_the_pooled_documents(tmp_path, monkeypatch):
    """Two runs of distinct documents: each system's pooled F1 is 2·Σtp / (Σpredicted + Σgold) over
    both runs' documents, not the mean of the runs' F1s; the per-run F1s and graphmert's pooled
    difference to the control are listed."""
    import json

    import numpy as np

    counts = {  # run -> (documents, {system: [D, 3] (tp, predicted, gold)})
        "a": (["1", "2"], {"graphmert": np.array([[2, 4, 3], [1, 1, 2]]), "lexical": np.array([[1, 4, 3], [1, 3, 2]])}),
        "b": (["3"], {"graphmert": np.array([[3, 10, 3]]), "lexical": np.array([[3, 3, 3]])}),
    }
    monkeypatch.setattr(folds, "run_counts", lambda run: (counts[run.name][0], {
        s: {"untyped": c, "typed": c // 2} for s, c in counts[run.name][1].items()}))
    out = tmp_path / "rows.json"
    folds.main(["pool", "--run-dirs", str(tmp_path / "a"), str(tmp_path / "b"), "--resamples", "50",
                "--out", str(out)])
    rows = {r["system"]: r for r in json.loads(out.read_text())["rows"]}
    assert rows["graphmert"]["F1"] == round(2 * 6 / (15 + 8), 3) and rows["lexical"]["F1"] == round(2 * 5 / (10 + 8), 3)
    assert rows["graphmert"]["F1 per run"] == f"{2 * 3 / 10:.3f} {2 * 3 / 13:.3f}"
    assert rows["lexical"]["graphmert − it, Δ [95%]"].startswith(f"{2 * 6 / 23 - 2 * 5 / 18:+.3f} [")
    assert rows["graphmert"]["typed F1"] == round(2 * 2 / (7 + 3), 3)       # the typed counts, halved down
    with pytest.raises(SystemExit, match="scores documents another run scores"):
        folds.main(["pool", "--run-dirs", str(tmp_path / "a"), str(tmp_path / "a")])


def test_the_pool_scores_the_recognised_entities_over_every_runs_documents(tmp_path, monkeypatch):
    """Raw-text runs: recognition and normalisation are scored over both runs' documents at once (as
    :mod:`graphmert.eval.entities` scores one run), not averaged; a run without recognised documents
    (gold mentions) gives no entity table."""
    import json

    import numpy as np

    from graphmert.corpus.document import Document, Mention
    from graphmert.eval.entities import normalisation_scores

    def doc(i, mentions):
        return Document(i, "TNF and IL6 rose.", mentions=[Mention(a, b, t, "GeneOrGeneProduct", ids)
                                                          for a, b, t, ids in mentions])
    tnf, il6 = (0, 3, "TNF", ["NCBIGene:7124"]), (8, 11, "IL6", ["NCBIGene:3569"])
    entities = {  # run -> (recognised, gold): run a gets 1 of 2 ids right, run b 1 of 1 with a wrong one too
        "a": ([doc("1", [tnf])], [doc("1", [tnf, il6])]),
        "b": ([doc("2", [tnf, (8, 11, "IL6", ["NCBIGene:1"])])], [doc("2", [tnf])]),
    }
    monkeypatch.setattr(folds, "run_counts", lambda run: ([{"a": "1", "b": "2"}[run.name]], {
        "graphmert": {"untyped": np.array([[1, 1, 1]]), "typed": np.array([[1, 1, 1]])}}))
    monkeypatch.setattr(folds, "run_entities", lambda run: entities[run.name])
    out = tmp_path / "rows.json"
    folds.main(["pool", "--run-dirs", str(tmp_path / "a"), str(tmp_path / "b"), "--resamples", "20", "--out", str(out)])
    rows = {r["entities"]: r for r in json.loads(out.read_text())["entities"]}
    assert rows["Gene"]["normalisation P"] == round(2 / 3, 4) and rows["Gene"]["normalisation R"] == round(2 / 3, 4)
    every = normalisation_scores([d for f, _ in entities.values() for d in f], [d for _, g in entities.values() for d in g])
    assert rows["micro"]["normalisation F1"] == round(every["micro"]["f1"], 4)
    assert rows["Gene"]["recognition F1"] == round(2 * 2 / (3 + 3), 4)        # 3 spans found, 3 gold, 2 right
    monkeypatch.setattr(folds, "run_entities", lambda run: None if run.name == "b" else entities[run.name])
    folds.main(["pool", "--run-dirs", str(tmp_path / "a"), str(tmp_path / "b"), "--resamples", "20", "--out", str(out)])
    assert json.loads(out.read_text())["entities"] == []
