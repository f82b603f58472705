"""A gazetteer of consistently annotated names on top of a held-out recognizer (issue #19; measured,
not shipped: docs/NER.md, "Ablation: a gazetteer of consistently annotated names").

    .venv/bin/python benchmarks/recognizer.py --variant shipped --save build/rec     # 12 min, once
    .venv/bin/python benchmarks/gazetteer.py --recognizer build/rec/shipped           # a few seconds

For every gold surface form s of a category c in the recognizer's training documents (those of
``benchmarks/recognizer.py``: ``ner.sources`` less the 82 held-out BioRED-train documents)::

    annotated(s, c) = its gold mentions;  occurs(s, c) = its whole-token, exact-case occurrences
                                          in the documents that annotate c at all

A form is a mention wherever it occurs outside the recognised ones when annotated ≥ n and
annotated / occurs ≥ r. Each (n, r) is scored on the held-out documents, from the raw text, with
``graphmert evaluate``'s strict-span recognition scores, against the recognizer alone (with one
sense per document, as shipped). Tokens are runs of word characters or single other characters.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import held_out_biored_train, print_table, require_shared, write_json  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.corpus.document import Document, Mention  # noqa: E402
from graphmert.corpus.readers import read_corpus  # noqa: E402
from graphmert.eval.entities import MICRO, recognition_scores  # noqa: E402
from graphmert.kg.schema import mention_category  # noqa: E402
from graphmert.ner.corpus import annotated_documents  # noqa: E402
from graphmert.ner.recognizer import LABELS, Recognizer  # noqa: E402
from recognizer import CONFIG  # noqa: E402

TOKEN = re.compile(r"\w+|[^\w\s]")
MAX_TOKENS = 8


def windows(text: str) -> list[tuple[int, int, str]]:
    """(start, end, text) of every run of 1..MAX_TOKENS tokens."""
    toks = [(m.start(), m.end()) for m in TOKEN.finditer(text)]
    return [(toks[i][0], toks[j][1], text[toks[i][0]:toks[j][1]])
            for i in range(len(toks)) for j in range(i, min(i + MAX_TOKENS, len(toks)))]


def form_counts(docs: list[Document]) -> tuple[Counter, Counter]:
    """annotated(s, c) and occurs(s, c) of the module docstring."""
    annotated: Counter = Counter()
    for d in docs:
        annotated.update((m.text, mention_category(m.type)) for m in d.mentions
                         if mention_category(m.type) in LABELS and d.text[m.start:m.end] == m.text)
    cats: dict[str, set[str]] = {}
    for form, cat in annotated:
        cats.setdefault(form, set()).add(cat)
    occurs: Counter = Counter()
    for d in docs:
        annotates = {mention_category(m.type) for m in d.mentions}
        occurs.update((t, c) for _, _, t in windows(d.text) for c in cats.get(t, ()) if c in annotates)
    return annotated, occurs


def gazetteer(annotated: Counter, occurs: Counter, n: int, r: float) -> dict[str, str]:
    """Form → its most annotated category, for the forms kept at (n, r)."""
    best: dict[str, tuple[int, str]] = {}
    for (form, cat), k in annotated.items():
        if k >= n and k / max(occurs[(form, cat)], k) >= r and (form not in best or k > best[form][0]):
            best[form] = (k, cat)
    return {form: cat for form, (_, cat) in best.items()}


def with_gazetteer(doc: Document, forms: dict[str, str]) -> Document:
    """``doc`` plus a mention for every occurrence of ``forms`` outside its mentions (longest first)."""
    taken = [(m.start, m.end) for m in doc.mentions]
    added = []
    hits = [w for w in windows(doc.text) if w[2] in forms]
    for s, e, t in sorted(hits, key=lambda w: (w[0] - w[1], w[0])):          # longest, then earliest
        if not any(a < e and s < b for a, b in taken):
            taken.append((s, e))
            added.append(Mention(start=s, end=e, text=t, type=LABELS[forms[t]]))
    return replace(doc, mentions=sorted(doc.mentions + added, key=lambda m: (m.start, m.end)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recognizer", type=Path, required=True,
                    help="a recognizer saved by benchmarks/recognizer.py --save (trained without the "
                         "held-out documents)")
    ap.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    a = ap.parse_args()
    corpus = read_corpus([require_shared("biomed_abstracts_corpus", "abstracts.jsonl.gz")])
    docs = list(annotated_documents(corpus, load_config(CONFIG).ner.sources))
    is_held = [held_out_biored_train(d) for d in docs]
    held = [d for d, h in zip(docs, is_held) if h]
    annotated, occurs = form_counts([d for d, h in zip(docs, is_held) if not h])
    recognizer = Recognizer.load(a.recognizer)
    found = list(recognizer.recognize([replace(d, mentions=[]) for d in held], propagate=True))

    def row(name: str, forms: int | None, predicted: list[Document]) -> dict:
        s = recognition_scores(predicted, held)
        out = {"gazetteer": name, "forms": forms}
        out.update({f"{LABELS[c]} F1": round(s[c]["f1"], 3) for c in LABELS})
        out.update({"micro P": round(s[MICRO]["precision"], 3), "micro R": round(s[MICRO]["recall"], 3),
                    "micro F1": round(s[MICRO]["f1"], 4)})
        return out

    rows = [row("none (recognizer + one sense per document)", None, found)]
    for n in (1, 2, 3, 5):
        for r in (0.5, 0.7, 0.8, 0.9):
            forms = gazetteer(annotated, occurs, n, r)
            rows.append(row(f"n >= {n}, r >= {r}", len(forms), [with_gazetteer(d, forms) for d in found]))
    print_table(rows, f"recognition on {len(held)} held-out BioRED-train documents, with a gazetteer")
    if a.out:
        write_json("gazetteer", rows, a.out, recognizer=str(a.recognizer))


if __name__ == "__main__":
    main()
