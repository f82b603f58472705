"""A focused KGX validator against the pinned Biolink model (``biolink-model==4.4.6``, test extra).

Why not the field's own validator: ``kgx`` 2.6 (``kgx.validator.Validator``, built on ``bmt.Toolkit``)
installs ``linkml``, ``pandas`` 3 and more (a virtualenv of ~730 MB against ~110 MB for
``biolink-model`` alone), and ``bmt.Toolkit(schema=<local biolink_model.yaml>)`` still downloads
``predicate_mapping.yaml`` from GitHub when it is constructed, so it fails offline. This module
reads the schema YAML shipped inside the ``biolink-model`` wheel with ``linkml_runtime``'s
``SchemaView`` (a dependency of ``biolink-model``) and the wheel's KGX prefix map, nothing else.

Rules (each broken one is one message ``FILE:LINE: COLUMN: what``):

* every column is a Biolink slot (``id``, ``category``, ``subject``, … are slots too);
* node ``category``: Biolink classes (``biolink:Gene``) descended from ``named thing``, neither
  abstract nor mixin;
* edge ``predicate`` and ``qualified_predicate``: Biolink slots descended from ``related to``
  (through ``is_a`` and mixins, as ``bmt`` walks them), not abstract and not mixins — except
  :data:`EDGE_MIXINS`;
* a slot whose range is an enum (``knowledge_level``, ``agent_type``, ``object_aspect_qualifier``,
  ``object_direction_qualifier``, …) holds a permissible value; ``float`` / ``integer`` ranges hold
  numbers;
* ``primary_knowledge_source`` (and ``aggregator_knowledge_source``) are ``infores:`` CURIEs;
* ``id``, ``subject``, ``object`` are CURIEs whose prefix is in the Biolink prefix map or in
  ``local_prefixes`` (the export's own ``graphmert:`` prefix is not a Biolink prefix; callers pass
  the bindings the export declares for it); ``publications`` are such CURIEs or absolute IRIs;
  ``subject`` / ``object`` are node ids;
* ``subject``, ``predicate``, ``object``, ``knowledge_level``, ``agent_type`` and
  ``primary_knowledge_source`` are present on every edge (Translator requires the last three);
* multi-valued slots are JSON lists (TSV: ``|``-separated), single-valued ones are not, and a JSON
  value is never empty (a qualifier that does not apply is left out; an empty TSV cell is absent).

Known deviation, not checked: ``original_predicate`` has the range ``uriorcurie`` in Biolink, but
GraphMERT writes the model's bare relation name there (``upregulates``), as the export documents.
"""

from __future__ import annotations

import csv
import functools
import importlib.metadata
import importlib.resources
import json
import re
from pathlib import Path
from typing import Any, Iterable, Iterator

from linkml_runtime.utils.formatutils import camelcase
from linkml_runtime.utils.schemaview import SchemaView

BIOLINK_VERSION = "4.4.6"
# Mixin predicates an edge may carry: Biolink 4.4.6 marks ``treats`` a mixin, yet its definition
# says how ``treats`` *edges* are to be asserted or predicted (knowledge_level prediction), and it
# has no non-mixin parent to use instead; ``interacts with`` (also a mixin) asks for a child instead.
EDGE_MIXINS = frozenset({"treats"})
REQUIRED_EDGE = ("subject", "predicate", "object", "knowledge_level", "agent_type",
                 "primary_knowledge_source")
INFORES = re.compile(r"^infores:[a-z0-9][a-z0-9._-]*$")
_CURIE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.\-]*):(\S+)$")
_IRI = re.compile(r"^https?://\S+$")
_UNCHECKED = frozenset({"original_predicate"})       # see "Known deviation" above


class BiolinkModel:
    """The parts of the pinned Biolink model the checks need, read once."""

    def __init__(self) -> None:
        root = importlib.resources.files("biolink_model")
        sv = SchemaView(str(root / "schema" / "biolink_model.yaml"))
        self.version = str(sv.schema.version)
        self.prefixes: dict[str, str] = json.loads(
            (root / "prefixmaps" / "biolink-model-prefix-map.json").read_text(encoding="utf-8"))
        self.classes = {camelcase(n) for n, c in sv.all_classes().items()
                        if "named thing" in sv.class_ancestors(n, mixins=True)
                        and not c.abstract and not c.mixin}
        self.slots: dict[str, Any] = {}
        self.predicates: set[str] = set()
        enums = {n: set(e.permissible_values) for n, e in sv.all_enums().items()}
        self.enums: dict[str, set[str]] = {}
        for name, slot in sv.all_slots().items():
            key = name.replace(" ", "_")
            self.slots[key] = slot
            if slot.range in enums:
                self.enums[key] = enums[slot.range]
            if "related to" in sv.slot_ancestors(name, mixins=True) and not slot.abstract \
                    and (not slot.mixin or name in EDGE_MIXINS):
                self.predicates.add(key)


@functools.lru_cache(maxsize=1)
def biolink() -> BiolinkModel:
    """The pinned model; fails loudly when the installed ``biolink-model`` is another version."""
    installed = importlib.metadata.version("biolink-model")
    if installed != BIOLINK_VERSION:
        raise RuntimeError(f"biolink-model {installed} is installed; the export is validated against "
                           f"{BIOLINK_VERSION} (pyproject.toml, test extra)")
    return BiolinkModel()


# --------------------------------------------------------------------------------------------------
# Reading KGX files into records
# --------------------------------------------------------------------------------------------------


def read_tsv(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, record) per data row of a KGX TSV: empty cells left out, multi-valued Biolink slots
    split on ``|`` (so records compare with JSON Lines ones)."""
    model = biolink()
    with open(path, encoding="utf-8", newline="") as f:
        rows = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(rows)
        for i, row in enumerate(rows, 2):
            if len(row) != len(header):
                yield i, {"__width__": f"{len(row)} cells under {len(header)} columns"}
                continue
            rec: dict[str, Any] = {}
            for col, cell in zip(header, row):
                if cell == "":
                    continue
                slot = model.slots.get(col)
                rec[col] = cell.split("|") if slot is not None and slot.multivalued else cell
            yield i, rec


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if line.strip():
                yield i, json.loads(line)


def columns(path: str | Path) -> list[str]:
    """The header of a TSV file, or the union of the keys of a JSON Lines file."""
    path = Path(path)
    if path.suffix == ".tsv":
        with open(path, encoding="utf-8") as f:
            return f.readline().rstrip("\n").split("\t")
    keys: dict[str, None] = {}
    for _, rec in read_jsonl(path):
        keys.update(dict.fromkeys(rec))
    return list(keys)


# --------------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------------


def _curie_error(value: Any, local: dict[str, str], iri_ok: bool = False) -> str | None:
    if not isinstance(value, str):
        return f"{value!r} is not a string"
    if iri_ok and _IRI.match(value):
        return None
    m = _CURIE.match(value)
    if m is None:
        return f"{value!r} is not a CURIE"
    if m.group(1) not in biolink().prefixes and m.group(1) not in local:
        return f"{value!r}: prefix {m.group(1)!r} is neither a Biolink prefix nor declared by the export"
    return None


def _value_error(col: str, value: Any, local: dict[str, str]) -> str | None:
    """What is wrong with one (single) value of column ``col``, or None."""
    model = biolink()
    if value == "" or value is None:
        return "empty value (leave the column out instead)"
    if col in ("predicate", "qualified_predicate"):
        name = value[len("biolink:"):] if isinstance(value, str) and value.startswith("biolink:") else None
        if name not in model.predicates:
            return f"{value!r} is not a Biolink predicate (descendant of related_to, not abstract/mixin)"
        return None
    if col == "category":
        ok = isinstance(value, str) and value.startswith("biolink:") and value[8:] in model.classes
        return None if ok else f"{value!r} is not a Biolink class descended from NamedThing"
    if col in ("primary_knowledge_source", "aggregator_knowledge_source"):
        ok = isinstance(value, str) and INFORES.match(value)
        return None if ok else f"{value!r} is not an infores: CURIE"
    if col in ("id", "subject", "object"):
        return _curie_error(value, local)
    if col == "publications":
        return _curie_error(value, local, iri_ok=True)
    if col in model.enums:
        return None if value in model.enums[col] else \
            f"{value!r} is not in {model.slots[col].range} {sorted(model.enums[col])}"
    rng = model.slots[col].range
    if rng in ("float", "double", "integer") and not _is_number(value, rng == "integer"):
        return f"{value!r} is not a{'n integer' if rng == 'integer' else ' number'}"
    return None


def _is_number(value: Any, integer: bool) -> bool:
    """A JSON number (an int when ``integer``) or TSV text that parses as one."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return isinstance(value, int) or not integer
    try:
        (int if integer else float)(value)
    except (TypeError, ValueError):
        return False
    return True


def check_record(rec: dict[str, Any], local: dict[str, str]) -> list[str]:
    """``COLUMN: what`` for every broken rule of one node or edge record."""
    model = biolink()
    out = []
    for col, value in rec.items():
        if col == "__width__":
            out.append(f"row: {value}")
            continue
        slot = model.slots.get(col)
        if slot is None:
            out.append(f"{col}: not a Biolink slot")
            continue
        if col in _UNCHECKED:
            continue
        if isinstance(value, list) != bool(slot.multivalued):
            out.append(f"{col}: {'a list' if isinstance(value, list) else 'one value'} in a "
                       f"{'multi' if slot.multivalued else 'single'}-valued slot")
            continue
        for v in value if isinstance(value, list) else [value]:
            err = _value_error(col, v, local)
            if err:
                out.append(f"{col}: {err}")
    return out


def validate(nodes: Iterable[tuple[int, dict[str, Any]]], edges: Iterable[tuple[int, dict[str, Any]]],
             local_prefixes: dict[str, str], names: tuple[str, str] = ("nodes", "edges")) -> list[str]:
    """Every rule of the module docstring over (line, record) pairs of nodes and edges; returns the
    messages (``NAME:LINE: COLUMN: what``), empty when the files are valid."""
    errors = []
    ids = set()
    for line, rec in nodes:
        ids.add(rec.get("id"))
        errors += [f"{names[0]}:{line}: {e}" for e in check_record(rec, local_prefixes)]
        if "category" not in rec:
            errors.append(f"{names[0]}:{line}: category: missing")
    for line, rec in edges:
        errors += [f"{names[1]}:{line}: {e}" for e in check_record(rec, local_prefixes)]
        errors += [f"{names[1]}:{line}: {c}: missing" for c in REQUIRED_EDGE if c not in rec]
        errors += [f"{names[1]}:{line}: {c}: {rec[c]!r} is not a node id"
                   for c in ("subject", "object") if c in rec and rec[c] not in ids]
    return errors


def validate_folder(folder: str | Path, local_prefixes: dict[str, str]) -> list[str]:
    """Both KGX forms in ``folder`` (``kg_nodes.tsv`` + ``kg_edges.tsv``, and the ``.jsonl`` pair)."""
    folder = Path(folder)
    errors = []
    for ext, read in (("tsv", read_tsv), ("jsonl", read_jsonl)):
        n, e = folder / f"kg_nodes.{ext}", folder / f"kg_edges.{ext}"
        if ext == "tsv":     # a column empty in every row is still a column
            errors += [f"{p.name}:1: {c}: not a Biolink slot" for p in (n, e) for c in columns(p)
                       if c not in biolink().slots]
        errors += validate(read(n), read(e), local_prefixes, (n.name, e.name))
    return errors
