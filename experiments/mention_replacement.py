"""Mention replacement for the gene recognizer (docs/experiments/recognizer-training.md, "mention
replacement"): copies of the BioRED-train training documents (the 82 held-out ones left out) whose
gene mentions name other genes, written as PubTator for ``experiments/recognizer.py --add``.

    .venv/bin/python experiments/mention_replacement.py --names vocabulary --out build/aug/genes1.PubTator
    .venv/bin/python experiments/mention_replacement.py --names training --out build/aug/genes_train1.PubTator

Each distinct gene text of a document gets one replacement (one sense per document), drawn from
``--names``: ``vocabulary``, a random protein-coding human or mouse gene of NCBI Gene (its symbol half
the time, else a synonym or its full name; LOC, Gm, RIKEN and open-reading-frame symbols and
uncharacterised genes left out), or ``training``, a gene text another training document annotates
(Dai and Adel's mention replacement). Other mentions keep their text and ids; the copies' gene
mentions carry no id, which the recognizer does not read.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from _study import recognizer_documents, require_shared  # noqa: E402
from strip_annotations import title_abstract  # noqa: E402

from graphmert.kg.schema import mention_category  # noqa: E402

GENE = "biolink:Gene"
_OBSCURE = re.compile(r"LOC\d|Gm\d|C\d+orf\d|.*Rik$")


def vocabulary_names() -> list[tuple[str, list[str], str]]:
    """(symbol, synonyms, full name) of the protein-coding human and mouse genes of NCBI Gene."""
    names = []
    for species in ("Homo_sapiens", "Mus_musculus"):
        path = require_shared("reference_vocabularies", "genes", f"{species}.gene_info.gz")
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for row in csv.reader(fh, delimiter="\t"):
                if row[0].startswith("#") or row[9] != "protein-coding" or _OBSCURE.match(row[2]) \
                        or "uncharacterized" in row[8] or "predicted" in row[8]:
                    continue
                names.append((row[2], [s for s in row[4].split("|") if s != "-"], row[8]))
    return names


def picker(kind: str, docs: list, rng: random.Random):
    """A function giving one replacement gene text at a time (module docstring)."""
    if kind == "training":
        pool = sorted({m.text for d in docs for m in d.mentions if mention_category(m.type) == GENE})
        return lambda: rng.choice(pool)
    names = vocabulary_names()

    def pick() -> str:
        symbol, synonyms, full = rng.choice(names)
        r = rng.random()
        if r < 0.7 and synonyms and r >= 0.5:
            return rng.choice(synonyms)
        return full if r >= 0.7 and full != "-" else symbol
    return pick


def replaced_lines(doc, copy: int, pick) -> list[str]:
    """The PubTator lines of ``doc``'s copy number ``copy`` with its gene mentions replaced."""
    title, _ = title_abstract(doc)
    chosen: dict[str, str] = {}
    pieces, mentions, at, title_end = [], [], 0, len(title)
    for m in sorted(doc.mentions, key=lambda m: m.start):
        if m.start < at:                                # a mention overlapping the one before: dropped
            continue
        gene = mention_category(m.type) == GENE
        text = chosen.setdefault(m.text.lower(), pick()) if gene else m.text
        pieces.append(doc.text[at:m.start])
        start = sum(map(len, pieces))
        pieces.append(text)
        mentions.append(f"\t{start}\t{start + len(text)}\t{text}\t{m.type}\t{'0' if gene else ','.join(m.ids)}")
        title_end += len(text) - (m.end - m.start) if m.end <= len(title) else 0
        at = m.end
    pieces.append(doc.text[at:])
    text, did = "".join(pieces), f"aug{copy}-{doc.id}"
    head, body = (text[:title_end], text[title_end + 1:]) if title else ("", text)
    return [f"{did}|t|{head}", f"{did}|a|{body}", *(did + m for m in mentions), ""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--names", choices=("vocabulary", "training"), required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    docs = [d for d in recognizer_documents(["biored_train"])["train"] if d.metadata.get("source") == "biored_train"]
    pick = picker(a.names, docs, random.Random(a.seed))
    lines = [line for k in range(a.copies) for d in docs for line in replaced_lines(d, k, pick)]
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {a.out}: {a.copies * len(docs)} documents")


if __name__ == "__main__":
    main()
