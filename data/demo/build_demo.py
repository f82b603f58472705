#!/usr/bin/env python3
"""Build the embedded GraphMERT demo data: a small diabetes / metabolic-disease corpus and seed KG.

Everything here was written for the project (Apache-2.0, like the rest of it); no text is taken from
any dataset. The plain files under ``src/`` are the single source of truth for the files next to
this script, which it generates:

    corpus.jsonl    one abstract-like document per line; entity mentions with exact offsets
    kg_nodes.tsv    KGX-style node table:  id, name, category, synonyms ('|'-separated)
    kg_edges.tsv    KGX-style edge table:  subject, predicate, object, primary_knowledge_source,
                    publications ('|'-separated demo doc ids that mention both ends)

The sources (UTF-8; in the .tsv files, blank lines and lines starting with ``#`` are skipped and
the first other line is the column header):

* ``src/nodes.tsv``     -- id (CURIE), name, Biolink category, synonyms ('|'-separated; the column
                           may be left out when empty). Names and synonyms form the lexicon.
* ``src/facts.tsv``     -- predicate, head, tail: one seed-KG fact per line, by node *name*;
                           kg_edges.tsv keeps their order.
* ``src/held_out.tsv``  -- the same columns: facts that the texts state but the seed KG deliberately
                           lacks (for extraction to rediscover); never written to ``kg_edges.tsv``.
* ``src/abstracts/NNN.txt`` -- document ``demo:NNN``: the title on the first line, the abstract on
                           the lines after it, joined with single spaces (the breaks only wrap it).
                           Mentions are *not* marked by hand: every occurrence of every node name or
                           synonym is found by leftmost-longest lexicon matching, so offsets are
                           exact by construction. Numbers in the texts are illustrative.

Lexicon matching rules: a surface form that contains an upper-case letter (gene symbols, "T2D",
"Donohue syndrome") matches case-sensitively, an all-lower-case one case-insensitively; a match
may not touch a letter, digit, underscore or hyphen on either side ("insulin-treated" is not
"insulin"); overlapping candidates are resolved leftmost first, then longest.

Usage::

    python data/demo/build_demo.py            # (re)write the three files next to this script
    python data/demo/build_demo.py --check    # exit 1 if the files are not what it would write
    python data/demo/build_demo.py --stats    # print the counts table used in data/README.md

The output is byte-for-byte deterministic. Only the standard library is used. Malformed or
inconsistent sources stop it with exit status 2 and a ``file:line: problem`` message.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
NODES = SRC / "nodes.tsv"
FACTS = SRC / "facts.tsv"
HELD_OUT = SRC / "held_out.tsv"
ABSTRACTS = SRC / "abstracts"
SOURCE = "graphmert:demo"
FILES = ("corpus.jsonl", "kg_nodes.tsv", "kg_edges.tsv")
NODE_COLUMNS = ("id", "name", "category", "synonyms")
FACT_COLUMNS = ("predicate", "head", "tail")
EDGE_COLUMNS = ("subject", "predicate", "object", "primary_knowledge_source", "publications")

# Biolink category -> the corpus mention type.
CATEGORY_TYPE = {
    "biolink:Disease": "Disease",
    "biolink:PhenotypicFeature": "Phenotype",
    "biolink:Drug": "Chemical",
    "biolink:ChemicalEntity": "Chemical",
    "biolink:Gene": "Gene",
}

# predicate -> allowed (subject type, object type) pairs (mention types, see CATEGORY_TYPE).
SCHEMA = {
    "associated_with": {("Gene", "Disease")},
    "treats": {("Chemical", "Disease")},
    "binds": {("Chemical", "Gene")},
    "upregulates": {("Disease", "Gene"), ("Chemical", "Gene")},
    "downregulates": {("Disease", "Gene"), ("Chemical", "Gene")},
    "presents": {("Disease", "Phenotype")},
    "isa": {("Disease", "Disease"), ("Chemical", "Chemical")},
    "causes": {("Disease", "Disease")},
}

# Length limits the documents are written to (title + abstract words; abstract sentences).
WORDS = (120, 250)
SENTENCES = (4, 8)


# --------------------------------------------------------------------------------------------------
# Reading the sources
# --------------------------------------------------------------------------------------------------


class DemoDataError(ValueError):
    """The source data is malformed or inconsistent (format, names, schema, lengths, duplicates)."""


def _where(path: Path, lineno: int | None = None) -> str:
    try:
        name = str(path.relative_to(HERE))
    except ValueError:
        name = str(path)
    return name if lineno is None else f"{name}:{lineno}"


def read_tsv(path: Path, columns: tuple[str, ...],
             min_fields: int | None = None) -> Iterator[tuple[str, list[str]]]:
    """Rows of a source table as ``(where, fields)``, ``where`` being ``file:line``. Blank and
    ``#`` lines are skipped; the first other line must be the header. A row may leave out trailing
    fields down to ``min_fields`` (they read as empty)."""
    min_fields = len(columns) if min_fields is None else min_fields
    header = None
    with open(path, encoding="utf-8", newline="") as fh:
        for lineno, line in enumerate(fh, 1):
            where = _where(path, lineno)
            line = line.removesuffix("\n")
            if "\r" in line:
                raise DemoDataError(f"{where}: carriage return (use \\n line endings)")
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split("\t")
            if header is None:
                header = tuple(fields)
                if header != columns:
                    raise DemoDataError(f"{where}: header {header} should be {columns}")
                continue
            if not min_fields <= len(fields) <= len(columns):
                raise DemoDataError(f"{where}: {len(fields)} tab-separated fields, want "
                                    f"{len(columns)} ({', '.join(columns)})")
            for k, f in enumerate(fields):
                if f != f.strip() or (not f and k < min_fields):
                    raise DemoDataError(f"{where}: {columns[k]} is empty or has edge spaces: {f!r}")
            yield where, fields + [""] * (len(columns) - len(fields))
    if header is None:
        raise DemoDataError(f"{_where(path)}: no header line {columns}")


class Node(NamedTuple):
    id: str
    name: str
    category: str
    synonyms: tuple[str, ...]

    @property
    def type(self) -> str:
        return CATEGORY_TYPE[self.category]


def load_nodes(path: Path = NODES) -> list[Node]:
    nodes: list[Node] = []
    seen_ids: set[str] = set()
    for where, (nid, name, category, synonyms) in read_tsv(path, NODE_COLUMNS, min_fields=3):
        node = Node(nid, name, category, tuple(synonyms.split("|")) if synonyms else ())
        if nid in seen_ids:
            raise DemoDataError(f"{where}: duplicate id {nid}")
        seen_ids.add(nid)
        if category not in CATEGORY_TYPE:
            raise DemoDataError(f"{where}: category {category!r} is not one of "
                                f"{sorted(CATEGORY_TYPE)}")
        for s in (name, *node.synonyms):
            if not s or s != s.strip():
                raise DemoDataError(f"{where}: empty name or synonym, or edge spaces: {s!r}")
        nodes.append(node)
    return nodes


def load_documents(folder: Path = ABSTRACTS) -> list[tuple[str, str, str]]:
    """``(doc id, title, abstract)`` from ``NNN.txt`` files numbered 001, 002, ... without gaps."""
    files = sorted(folder.glob("*.txt"))
    if not files:
        raise DemoDataError(f"{_where(folder)}: no NNN.txt files")
    out: list[tuple[str, str, str]] = []
    for i, path in enumerate(files, 1):
        if path.name != f"{i:03d}.txt":
            raise DemoDataError(f"{_where(path)}: expected {i:03d}.txt (files are numbered "
                                f"001, 002, ... without gaps)")
        raw = path.read_text(encoding="utf-8")
        if not raw.endswith("\n") or "\r" in raw:
            raise DemoDataError(f"{_where(path)}: must end with a newline and use \\n line endings")
        lines = raw[:-1].split("\n")
        if len(lines) < 2:
            raise DemoDataError(f"{_where(path)}: want a title line and abstract lines after it")
        for lineno, line in enumerate(lines, 1):
            if not line.isascii() or not re.fullmatch(r"\S+( \S+)*", line):
                raise DemoDataError(f"{_where(path, lineno)}: blank line, tab, edge or doubled "
                                    f"spaces, or non-ASCII text")
        out.append((f"demo:{i:03d}", lines[0], " ".join(lines[1:])))
    return out


# --------------------------------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------------------------------


def lexicon(nodes: list[Node]) -> list[tuple[re.Pattern[str], str]]:
    """One (pattern, node id) per surface form. Forms with an upper-case letter match exactly,
    all-lower-case forms ignore case; no form may touch a word character or hyphen. A form may
    name only one node, compared ignoring case."""
    owner: dict[str, str] = {}
    out: list[tuple[re.Pattern[str], str]] = []
    for n in nodes:
        for s in (n.name, *n.synonyms):
            if owner.setdefault(s.lower(), n.id) != n.id:
                raise DemoDataError(f"{_where(NODES)}: surface form {s!r} names both "
                                    f"{owner[s.lower()]} and {n.id}")
            flags = 0 if any(ch.isupper() for ch in s) else re.IGNORECASE
            out.append((re.compile(r"(?<![\w-])" + re.escape(s) + r"(?![\w-])", flags), n.id))
    return out


def find_mentions(text: str, lex: list[tuple[re.Pattern[str], str]],
                  nodes_by_id: dict[str, Node]) -> list[dict]:
    """Every lexicon occurrence in ``text``, leftmost first then longest, non-overlapping."""
    cands = [(m.start(), m.end(), nid) for pat, nid in lex for m in pat.finditer(text)]
    cands.sort(key=lambda c: (c[0], -(c[1] - c[0]), c[2]))
    chosen: list[dict] = []
    last_end = -1
    for start, end, nid in cands:
        if start < last_end:
            continue
        chosen.append({"start": start, "end": end, "text": text[start:end],
                       "type": nodes_by_id[nid].type, "id": nid})
        last_end = end
    return chosen


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9])", text.strip()) if s]


def build_documents(nodes: list[Node]) -> list[dict]:
    by_id = {n.id: n for n in nodes}
    lex = lexicon(nodes)
    docs: list[dict] = []
    titles: set[str] = set()
    for doc_id, title, abstract in load_documents():
        where = _where(ABSTRACTS / f"{doc_id.split(':')[1]}.txt")
        if title in titles:
            raise DemoDataError(f"{where}: duplicate title {title!r}")
        titles.add(title)
        text = title + " " + abstract
        n_words, n_sents = len(text.split()), len(_sentences(abstract))
        if not WORDS[0] <= n_words <= WORDS[1]:
            raise DemoDataError(f"{where}: {n_words} words, want {WORDS[0]}..{WORDS[1]}")
        if not SENTENCES[0] <= n_sents <= SENTENCES[1]:
            raise DemoDataError(f"{where}: {n_sents} abstract sentences, "
                                f"want {SENTENCES[0]}..{SENTENCES[1]}")
        docs.append({"doc_id": doc_id, "title": title, "abstract": abstract,
                     "entities": find_mentions(text, lex, by_id)})
    return docs


def _facts(path: Path, nodes: list[Node]) -> list[tuple[str, tuple[str, str, str]]]:
    """``(file:line, (subject id, predicate, object id))`` per fact, schema-checked."""
    by_name = {n.name: n for n in nodes}
    out: list[tuple[str, tuple[str, str, str]]] = []
    first: dict[tuple[str, str, str], str] = {}
    for where, (pred, head, tail) in read_tsv(path, FACT_COLUMNS):
        if pred not in SCHEMA:
            raise DemoDataError(f"{where}: unknown predicate {pred!r}; allowed: {sorted(SCHEMA)}")
        for name in (head, tail):
            if name not in by_name:
                raise DemoDataError(f"{where}: {name!r} is not a node name in {_where(NODES)}")
        s, o = by_name[head], by_name[tail]
        if (s.type, o.type) not in SCHEMA[pred]:
            raise DemoDataError(f"{where}: {head} ({s.type}) -> {tail} ({o.type}) "
                                f"violates the schema of {pred}: {sorted(SCHEMA[pred])}")
        if s.id == o.id:
            raise DemoDataError(f"{where}: self loop on {head!r}")
        triple = (s.id, pred, o.id)
        if triple in first:
            raise DemoDataError(f"{where}: duplicate of the fact on {first[triple]}")
        first[triple] = where
        out.append((where, triple))
    return out


def resolve_facts(path: Path, nodes: list[Node]) -> list[tuple[str, str, str]]:
    """A facts file (node names) -> ``(subject id, predicate, object id)`` in file order."""
    return [triple for _, triple in _facts(path, nodes)]


def build() -> dict[str, bytes]:
    """All three files as bytes, from the sources under ``src/`` (nothing is written)."""
    nodes = load_nodes()
    docs = build_documents(nodes)
    edges = resolve_facts(FACTS, nodes)

    mentioned_in: dict[str, set[str]] = {}
    for d in docs:
        for e in d["entities"]:
            mentioned_in.setdefault(e["id"], set()).add(d["doc_id"])

    kg = set(edges)
    for where, (s, p, o) in _facts(HELD_OUT, nodes):
        if (s, p, o) in kg:
            raise DemoDataError(f"{where}: held-out fact is also in {_where(FACTS)}")
        if not mentioned_in.get(s, set()) & mentioned_in.get(o, set()):
            raise DemoDataError(f"{where}: held-out fact, but no document mentions both ends")

    node_lines = ["\t".join(NODE_COLUMNS)]
    for n in nodes:
        node_lines.append("\t".join((n.id, n.name, n.category, "|".join(n.synonyms))))
    edge_lines = ["\t".join(EDGE_COLUMNS)]
    for s, p, o in edges:
        pubs = sorted(mentioned_in.get(s, set()) & mentioned_in.get(o, set()))
        edge_lines.append("\t".join((s, p, o, SOURCE, "|".join(pubs))))
    corpus_lines = [json.dumps(d, ensure_ascii=False) for d in docs]
    return {
        "corpus.jsonl": ("\n".join(corpus_lines) + "\n").encode("utf-8"),
        "kg_nodes.tsv": ("\n".join(node_lines) + "\n").encode("utf-8"),
        "kg_edges.tsv": ("\n".join(edge_lines) + "\n").encode("utf-8"),
    }


def write(out_dir: Path, files: dict[str, bytes]) -> None:
    """Write each file atomically (temporary name in the same folder, then rename)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=out_dir)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(tmp, 0o644)            # mkstemp creates 0600; these are shared data files
            os.replace(tmp, out_dir / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def stats(files: dict[str, bytes]) -> str:
    """The counts of data/README.md as a Markdown table."""
    docs = [json.loads(line) for line in files["corpus.jsonl"].decode().splitlines()]
    nodes = [line.split("\t") for line in files["kg_nodes.tsv"].decode().splitlines()[1:]]
    edges = [line.split("\t") for line in files["kg_edges.tsv"].decode().splitlines()[1:]]
    ents = [e for d in docs for e in d["entities"]]
    mentioned = {e["id"] for e in ents}
    words = [len((d["title"] + " " + d["abstract"]).split()) for d in docs]
    rows: list[tuple[str, object]] = [
        ("documents", len(docs)),
        ("words per document, title included (min / mean / max)",
         f"{min(words)} / {sum(words) / len(words):.0f} / {max(words)}"),
        ("entity mentions", len(ents)),
    ]
    rows += [(f"mentions of type {t}", c)
             for t, c in sorted(Counter(e["type"] for e in ents).items())]
    rows += [("distinct entities mentioned", len(mentioned)), ("KG nodes", len(nodes))]
    rows += [(f"nodes of category {cat}", c)
             for cat, c in sorted(Counter(n[2] for n in nodes).items())]
    rows += [("KG nodes never mentioned in the corpus", sum(n[0] not in mentioned for n in nodes)),
             ("KG edges", len(edges))]
    rows += [(f"edges with predicate {p}", sum(e[1] == p for e in edges)) for p in SCHEMA]
    rows += [
        ("edges whose subject is mentioned in the corpus", sum(e[0] in mentioned for e in edges)),
        ("edges whose two ends share a document", sum(bool(e[4]) for e in edges)),
        ("edges whose two ends share two or more documents", sum("|" in e[4] for e in edges)),
        ("held-out facts (stated in text, absent from the KG)",
         len(resolve_facts(HELD_OUT, load_nodes()))),
    ]
    return "\n".join(["| quantity | count |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE, help="output folder (default: this folder)")
    ap.add_argument("--check", action="store_true",
                    help="compare with the files in --out and write nothing; exit 1 if they differ")
    ap.add_argument("--stats", action="store_true", help="print the counts table, write nothing")
    args = ap.parse_args(argv)
    try:
        files = build()
    except DemoDataError as exc:
        print(f"{Path(__file__).name}: error: {exc}", file=sys.stderr)
        return 2
    if args.stats:
        print(stats(files))
        return 0
    if args.check:
        stale = [n for n, data in files.items()
                 if not (args.out / n).is_file() or (args.out / n).read_bytes() != data]
        for n in stale:
            print(f"{args.out / n}: out of date; run {Path(__file__).name} to regenerate",
                  file=sys.stderr)
        return 1 if stale else 0
    write(args.out, files)
    for n, data in files.items():
        print(f"wrote {args.out / n} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
