"""Run one graphmert stage with word vectors in the relation typer's type rows (docs/experiments/
relation-typer.md, "Word vectors on the raw slice").

    .venv/bin/python experiments/typer_vectors_run.py extract --config configs/biored-raw.yaml \\
        --run-dir RUN --force -s synchronous OVERRIDES...          # on a copy without RUN/cache/extract

``experiments/typer_features.py``'s ``vectors`` variant lifted type accuracy by 0.006–0.009 in
cross-validation over BioRED train's gold pairs. This asks whether that reaches raw text: the
50-dimensional skip-gram vectors of :func:`typer_features.word_vectors` (BioRED train, the shared corpus
and ``pubmed_unlabeled``, no BioRED dev document), the mean vector of each type row's between words
and of its window words, keyed by the category pair, added to the type regression's rows only (the
related-or-not regression, which the ``lexical`` score and the hybrid read, is left as shipped).
The stage runs in this process (``-s synchronous``: a Dask worker would not see the patch), and the
run's typer fits must not come from ``RUN/cache/extract``, whose key is the code on disk.
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from typer_features import DIM, word_vectors  # noqa: E402

import graphmert.extract.relation_typer as relation_typer  # noqa: E402
from _study import require_shared  # noqa: E402
from graphmert.corpus.readers import read_corpus  # noqa: E402


def with_vectors(type_rows, vectors: dict[str, np.ndarray]):
    """``RelationTyper._type_rows`` whose rows also hold the mean vector of their between words
    (``vb``) and of their window words (``vw``), keyed by the category pair (copies: the shipped rows
    are shared with the related-or-not regression)."""
    def rows(self, words, head, tail):
        out = []
        for row in type_rows(self, words, head, tail):
            row = Counter(row)
            pair = next(k.removeprefix("pair=") for k in row if k.startswith("pair="))
            sums = defaultdict(lambda: [np.zeros(DIM), 0.0])
            for key, value in list(row.items()):
                group, word = key.split(":", 1)[0], key.rsplit(":", 1)[-1]
                name = "vb" if group == "b" else "vw" if group[:2] in ("l@", "r@") else None
                if name and word in vectors:
                    sums[name][0] += value * vectors[word]
                    sums[name][1] += value
            for name, (total, n) in sums.items():
                row.update({f"{name}:{pair}:{i}": float(x) for i, x in enumerate(total / n)})
            out.append(row)
        return out
    return rows


def main() -> None:
    train = list(read_corpus([require_shared("biored", "Train.PubTator")]))
    dev_ids = {d.id for d in read_corpus([require_shared("biored", "Dev.PubTator")])}
    relation_typer.RelationTyper._type_rows = with_vectors(relation_typer.RelationTyper._type_rows,
                                                           word_vectors(train, dev_ids))
    from pipelines.cli import main as cli

    cli(sys.argv[1:])


if __name__ == "__main__":
    main()
