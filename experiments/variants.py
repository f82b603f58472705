"""The rule-based variant finder (graphmert/ner/variants.py) against BioRED's variant mentions.

    .venv/bin/python experiments/variants.py            # a few seconds

Over BioRED train (where the patterns were chosen) and dev (reported, never tuned on), with the
documents' gold annotations as the reference:
- mentions: strict span P / R / F1 against the gold ``SequenceVariant`` mentions;
- ids: of the found mentions whose span is a gold mention, how many carry its id;
- entities: of the documents' gold variant ids, how many some found mention carries (what pair
  extraction needs), split by the gold id's kind (dbSNP or tmVar key).
As in extraction (``extract.variant_mentions``), the variants come from :func:`add_variants` over
the document's other mentions, here its gold gene, disease and chemical mentions: a variant never
overlaps one of them.

A second table, over train only, asks whether some keys could be trusted
(``extract.variant_keys`` keeps or drops them all): of the found variants whose span is a gold
mention and whose key is made from the text (no rs id), how many have a dbSNP id as gold, the key
itself, or another key; over all documents and over those with a cue of :data:`CUES`; and how many
of the dbSNP ones another train document maps the same key to (a key → rs table learnt from the
other documents, each left out in turn). A third table splits them by the key's kind,
its level and type ("p|SUB", "c|DEL", "p|FS", ...): could the kinds whose key is mostly the gold id
keep it while ``extract.variant_keys`` is off? (Measured on the raw slice, 2026-12-07: no;
docs/experiments/entity-rules.md.)
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _study import print_table, require_shared, write_json  # noqa: E402

from graphmert.eval.gold import load_gold  # noqa: E402
from graphmert.kg.schema import mention_category  # noqa: E402
from graphmert.ner.variants import VARIANT_TYPE, add_variants  # noqa: E402

VARIANT = mention_category(VARIANT_TYPE)


def score(name: str, path: Path) -> dict:
    gold = load_gold(path)
    found_spans = gold_spans = hit = right_id = 0
    entities: Counter = Counter()
    for doc in gold.documents.values():
        truth = {(m.start, m.end): m.ids for m in doc.mentions if mention_category(m.type) == VARIANT}
        others = replace(doc, mentions=[m for m in doc.mentions if mention_category(m.type) != VARIANT])
        found = [m for m in add_variants(others).mentions if m.type == VARIANT_TYPE]
        ids = {m.ids[0] for m in found}
        found_spans += len(found)
        gold_spans += len(truth)
        for m in found:
            if (m.start, m.end) in truth:
                hit += 1
                right_id += m.ids[0] in truth[(m.start, m.end)]
        for eid in {i for m_ids in truth.values() for i in m_ids}:
            kind = "dbSNP" if eid.startswith("dbSNP:") else "tmVar key"
            entities[(kind, "gold")] += 1
            entities[(kind, "found")] += eid in ids
    p, r = hit / max(1, found_spans), hit / max(1, gold_spans)
    row = {"split": name, "documents": len(gold.documents), "gold mentions": gold_spans,
           "found": found_spans, "P": round(p, 3), "R": round(r, 3),
           "F1": round(2 * p * r / max(1e-9, p + r), 3), "right id": round(right_id / max(1, hit), 3)}
    for kind in ("dbSNP", "tmVar key"):
        row[f"{kind} entities found"] = f"{entities[(kind, 'found')]} / {entities[(kind, 'gold')]}"
    return row


# cues a document's text may give about its variants' ids: a study of known polymorphisms (dbSNP ids)
# or a report of new mutations (keys)
CUES = {"all documents": lambda text: True,
        "no 'polymorphism' or 'SNP'": lambda text: not re.search(r"polymorphism|\bSNPs?\b", text, re.I),
        "'novel'": lambda text: "novel" in text.lower()}


def _keyed_hits(path: Path) -> list[tuple[str, str, str, list[str]]]:
    """(document id, its text, the key's id, the gold ids) of each found variant whose span is a gold
    variant mention and whose id is a key made from the text, not a dbSNP id."""
    hits = []
    for doc in load_gold(path).documents.values():
        truth = {(m.start, m.end): m.ids for m in doc.mentions if mention_category(m.type) == VARIANT}
        others = replace(doc, mentions=[m for m in doc.mentions if mention_category(m.type) != VARIANT])
        for m in add_variants(others).mentions:
            if m.type == VARIANT_TYPE and (m.start, m.end) in truth and not m.ids[0].startswith("dbSNP:"):
                hits.append((doc.id, doc.text, m.ids[0], truth[(m.start, m.end)]))
    return hits


def _taught(hits: list) -> dict[tuple[str, str], set[str]]:
    """(key, dbSNP id) → the documents whose gold gives a variant with that key that dbSNP id."""
    taught: dict[tuple[str, str], set[str]] = {}
    for d, _, key, ids in hits:
        for i in ids:
            if i.startswith("dbSNP:"):
                taught.setdefault((key, i), set()).add(d)
    return taught


def _key_row(sel: list, taught: dict) -> dict:
    """The second and third tables' columns over the keyed hits ``sel``."""
    rs = [h for h in sel if h[3][0].startswith("dbSNP:")]
    keyed = [key in ids for _, _, key, ids in sel if not ids[0].startswith("dbSNP:")]
    right = sum(keyed)
    learnt = sum(any(taught.get((key, i), set()) - {d} for i in ids) for d, _, key, ids in rs)
    return {"documents": len({h[0] for h in sel}), "variants": len(sel),
            "gold dbSNP id": len(rs), "gold = its key": right, "gold another key": len(keyed) - right,
            "key right": round(right / max(1, len(sel)), 3), "dbSNP id another document teaches": learnt}


def key_cues(path: Path) -> list[dict]:
    """The second table (module docstring): one row per cue of :data:`CUES`."""
    hits = _keyed_hits(path)
    taught = _taught(hits)
    return [{"cue": cue, **_key_row([h for h in hits if test(h[1])], taught)} for cue, test in CUES.items()]


def _kind(key: str) -> str:
    """A tmVar key's level and type: "tmVar:p|SUB|R|215|W" → "p|SUB"."""
    return "|".join(key.removeprefix("tmVar:").split("|")[:2])


def key_kinds(path: Path) -> list[dict]:
    """The third table (module docstring): one row per key kind, most variants first."""
    hits = _keyed_hits(path)
    taught = _taught(hits)
    kinds = Counter(_kind(h[2]) for h in hits)
    return [{"kind": kind, **_key_row([h for h in hits if _kind(h[2]) == kind], taught)}
            for kind, _ in kinds.most_common()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="the JSON rows (default: experiments/results/)")
    a = ap.parse_args()
    rows = [score("train (chosen on)", require_shared("biored", "Train.PubTator")),
            score("dev (report only)", require_shared("biored", "Dev.PubTator"))]
    print_table(rows, "Rule-based variant finder against BioRED's SequenceVariant mentions")
    cues = key_cues(require_shared("biored", "Train.PubTator"))
    print_table(cues, "train: found variants with a key made from the text, by their gold id")
    kinds = key_kinds(require_shared("biored", "Train.PubTator"))
    print_table(kinds, "train: the same variants by their key's kind")
    write_json("variants", rows + cues + kinds, a.out)


if __name__ == "__main__":
    main()
