"""A stage's declared config (``Stage(sections=...)``) covers the keys its modules read.

A stage reruns when its ``config_hash`` changes: the resolved values of the sections and keys it
declares, and its code fingerprint, which leaves out the config dataclasses' fields
(:data:`pipelines.fingerprint.VALUES`). A key a stage reads but does not declare therefore reruns
nothing when it, or its default, changes. This test reads every ``cfg.<section>.<key>`` in the
``pipelines.stages`` modules' code (less docstrings and comments) and asks that a stage running the
module declares it, or that :data:`UNDECLARED` says why the key cannot change the stage's outputs.
Library code is reached through whole sections (the extract stage declares ``extract``; ``ner``
keys are split between the ner and link stages by :mod:`pipelines.stages.ner_documents`), which this
test does not trace.
"""

from __future__ import annotations

import re

from pipelines import fingerprint
from pipelines.stages import STAGES

READ = re.compile(r"\bcfg\.([a-z_]+)\.([a-z_]+)\b")

# keys a stage module reads without its stage declaring them, and why no output depends on them
UNDECLARED = {
    "corpus.skip_bad_records": "a bad record stops the stage unless skipped: no output exists that "
                               "the other value would have written differently",
    "ner.paths": "the extract stage finds the recognizer's and the linker's documents through them; "
                 "their outputs, upstream of it, change with them",
    "ner.vocabularies": "the ner stage reads them only for ner.dictionary_flags, and hashes their "
                        "files then (Stage.source_files)",
    "train.seed": "the extract stage initialises its untrained control with the train stage's seed, "
                  "which the train stage declares: a new seed retrains, and the new model reruns extract",
    "train.device": "where the model runs, not what it computes (the extract fits' cache key holds it)",
    "train.resume": "whether an interrupted training goes on from its checkpoint or starts over: "
                    "the same model either way",
    "pipeline.merge_partitions": "how many Dask partitions merge the extract shards: the merged "
                                 "files are the same",
}


def _not_covered(reads: set[str], sections: list[str]) -> list[str]:
    """The keys of ``reads`` that no declared section or key of ``sections`` covers."""
    return sorted(k for k in reads if not any(k == s or k.startswith(s + ".") for s in sections))


def _undeclared_reads() -> dict[str, list[str]]:
    """Module → the ``cfg.<section>.<key>`` it reads that no stage running it declares."""
    closures = {name: fingerprint.module_closure(s.run.__module__) for name, s in STAGES.items()}
    modules = {m: p for c in closures.values() for m, p in c.items() if m.startswith("pipelines.stages.")}
    out = {}
    for module, path in sorted(modules.items()):
        declared = [s for name, c in closures.items() if module in c for s in STAGES[name].sections]
        reads = {f"{a}.{b}" for a, b in READ.findall(fingerprint.code_of(path).decode("utf-8"))}  # no comments
        out[module] = _not_covered(reads, declared)
    return out


def test_every_config_key_a_stage_module_reads_is_declared_or_said_not_to_change_an_output():
    undeclared = _undeclared_reads()
    unexplained = {m: [k for k in keys if k not in UNDECLARED] for m, keys in undeclared.items()}
    assert not any(unexplained.values()), (
        f"stage modules read config keys no stage running them declares: {unexplained}; add each to "
        f"its Stage(sections=...) or, if no output depends on it, to UNDECLARED with the reason")
    read = {k for keys in undeclared.values() for k in keys}
    assert set(UNDECLARED) == read, f"UNDECLARED names keys no stage module reads undeclared: " \
                                    f"{sorted(set(UNDECLARED) - read)}"


def test_the_check_sees_a_read_no_stage_declares():
    text = "def run(ctx):\n    cfg = ctx.cfg\n    return cfg.model.hidden_size, cfg.extract.top_k\n"
    reads = {f"{a}.{b}" for a, b in READ.findall(text)}
    assert reads == {"model.hidden_size", "extract.top_k"}
    assert _not_covered(reads, list(STAGES["extract"].sections)) == ["model.hidden_size"]
