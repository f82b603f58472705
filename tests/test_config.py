"""Config system: defaults once, YAML overrides, dotted overrides, validation errors that name keys."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import yaml

from graphmert.config import (Config, ConfigError, build, describe, load_config, save_config,
                              section_hash, to_dict)
from graphmert.config.checks import calibration_settings

ROOT = Path(__file__).resolve().parents[1]


def test_defaults_are_the_papers():
    cfg = build()
    assert (cfg.graph.num_roots, cfg.graph.num_leaves) == (128, 7)
    assert (cfg.model.num_layers, cfg.model.hidden_size, cfg.model.num_heads,
            cfg.model.intermediate_size) == (12, 512, 8, 2048)
    assert cfg.model.decay_lambda == 0.6 and cfg.kg.alpha == 0.55 and cfg.extract.beta == 0.67
    assert cfg.train.lr == 4e-4 and cfg.train.min_lr == 1e-5 and cfg.train.warmup_steps == 500
    assert cfg.tokenizer.vocab_size == 30522


def test_yaml_then_dotted_overrides(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("model:\n  hidden_size: 256\n  num_heads: 4\ncorpus:\n  paths: [a.txt]\n")
    cfg = load_config(p, ["model.hidden_size=128", "corpus.paths=[b.txt,c.txt]", "train.lr=1e-3"])
    assert cfg.model.hidden_size == 128 and cfg.model.num_heads == 4
    assert cfg.corpus.paths == ["b.txt", "c.txt"]
    assert cfg.train.lr == pytest.approx(1e-3)
    # untouched keys keep their single default
    assert cfg.model.num_layers == Config().model.num_layers


def test_int_is_accepted_for_float():
    assert build({"train": {"epochs": 3}}).train.epochs == 3.0


@pytest.mark.parametrize("data, fragment", [
    ({"modle": {}}, "modle: unknown section"),
    ({"model": {"hidden": 3}}, "model.hidden: unknown key"),
    ({"model": {"hidden_size": "big"}}, "model.hidden_size: expected an integer"),
    ({"model": {"hgat": "yes"}}, "model.hgat: expected true/false"),
    ({"model": {"decay_lambda": 1.5}}, "model.decay_lambda: 1.5 is out of range"),
    ({"model": {"decay_lambda": 0.0}}, "model.decay_lambda: 0.0 is out of range; must be > 0"),
    ({"graph": {"layout": "sparse"}}, "graph.layout: 'sparse' is not allowed; choose from ['dense', 'packed']"),
    ({"model": {"hidden_size": 100, "num_heads": 8}}, "model.hidden_size: 100 is not divisible"),
    ({"corpus": {"paths": "a.txt"}}, "corpus.paths: expected a list"),
    ({"train": {"batch_size": 0}}, "train.batch_size: 0 is out of range; must be >= 1"),
    ({"train": {"entity_mask_probability": 1.5}}, "train.entity_mask_probability: 1.5 is out of range"),
])
def test_errors_name_the_key(data, fragment):
    with pytest.raises(ConfigError) as e:
        build(data)
    assert fragment in str(e.value)


def test_unknown_key_lists_allowed_keys_and_names_a_close_one():
    allowed = sorted(f.name for f in dataclasses.fields(Config().graph))
    with pytest.raises(ConfigError) as e:
        build({"graph": {"roots": 3}})
    assert str(e.value) == f"graph.roots: unknown key; did you mean 'num_roots'? allowed keys of 'graph': {allowed}"
    with pytest.raises(ConfigError) as e:
        build({"extract": {"tails_per_qury": 3}})
    assert "extract.tails_per_qury: unknown key; did you mean 'tails_per_query'? allowed" in str(e.value)
    with pytest.raises(ConfigError, match=r"^extrct: unknown section; did you mean 'extract'\? allowed sections"):
        build({"extrct": {"tails_per_query": 3}})
    with pytest.raises(ConfigError) as e:                  # nothing close: the list alone
        build({"graph": {"zzz": 3}})
    assert str(e.value) == f"graph.zzz: unknown key; allowed keys of 'graph': {allowed}"


def test_yaml_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: {hidden_size: 12, oops: 1}\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: model.oops: unknown key"):
        load_config(bad)
    broken = tmp_path / "broken.yaml"
    broken.write_text("model: [unclosed\n")
    with pytest.raises(ConfigError, match="broken.yaml: invalid YAML"):
        load_config(broken)
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        load_config(None, ["model.hidden_size"])


def test_yaml_is_read_safely(tmp_path):
    p = tmp_path / "evil.yaml"
    p.write_text("model: !!python/object/apply:os.system ['echo hacked']\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_config(p)


def test_saved_config_round_trips(tmp_path):
    cfg = load_config(None, ["model.hidden_size=64", "model.num_heads=4", "corpus.paths=[x]"])
    path = save_config(cfg, tmp_path / "run" / "config.yaml")
    again = load_config(path)
    assert to_dict(again) == to_dict(cfg)
    assert section_hash(again.model) == section_hash(cfg.model)
    assert section_hash(again.model) != section_hash(build().model)


def test_every_shipped_config_is_valid():
    files = sorted((ROOT / "configs").rglob("*.yaml"))
    assert files, "configs/ has no YAML files"
    for f in files:
        load_config(f)  # every key a config sets must exist and validate
        assert yaml.safe_load(f.read_text()), f"{f} overrides nothing"


def test_describe_lists_every_key_once():
    rows = describe()
    keys = [r[0] for r in rows]
    assert len(keys) == len(set(keys))
    n_fields = sum(len(dataclasses.fields(f.default_factory())) for f in dataclasses.fields(Config))
    assert len(keys) == n_fields


def test_every_key_has_a_help_text():
    """``graphmert info --keys`` shows each key's help: none may be blank."""
    blank = [key for key, _type, _default, help_text in describe() if not help_text.strip()]
    assert not blank, f"config keys without a help text: {blank}"


def test_base_chain_is_read_first_and_overridden(tmp_path):
    (tmp_path / "a.yaml").write_text("model: {hidden_size: 64, num_heads: 4}\ntrain: {epochs: 3}\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.yaml").write_text("base: ../a.yaml\nmodel: {hidden_size: 32}\n")
    cfg = load_config(tmp_path / "sub" / "b.yaml", ["train.epochs=5"])
    assert (cfg.model.hidden_size, cfg.model.num_heads, cfg.train.epochs) == (32, 4, 5)
    assert "base" not in to_dict(cfg)


@pytest.mark.parametrize("text, fragment", [
    ("base: missing.yaml\n", "missing.yaml does not exist"),
    ("base: [a.yaml]\n", "expected the path of another config file"),
    ("base: c.yaml\n", "a cycle"),
    ("base: d.yaml\n", "d.yaml: model.oops: unknown key"),
])
def test_base_errors_name_the_file(tmp_path, text, fragment):
    (tmp_path / "c.yaml").write_text("base: c.yaml\n")
    (tmp_path / "d.yaml").write_text("model: {oops: 1}\n")
    (tmp_path / "x.yaml").write_text(text)
    with pytest.raises(ConfigError, match=fragment):
        load_config(tmp_path / "x.yaml")


def test_a_variant_may_change_one_side_of_a_rule_that_ties_two_keys(tmp_path):
    """A control's own k may be set by a variant whose base lists the controls; a control the merged
    config does not run is still an error naming the variant."""
    (tmp_path / "a.yaml").write_text("extract: {controls: [salience, lexical], typer_files: [train.PubTator]}\n")
    (tmp_path / "b.yaml").write_text("base: a.yaml\nextract: {control_tails_per_query: {lexical: 6}}\n")
    assert load_config(tmp_path / "b.yaml").extract.control_tails_per_query == {"lexical": 6}
    (tmp_path / "c.yaml").write_text("base: a.yaml\nextract: {control_tails_per_query: {random: 2}}\n")
    with pytest.raises(ConfigError, match=r"c\.yaml: extract\.control_tails_per_query\.random: 'random' is not "
                                          r"one of extract\.controls"):
        load_config(tmp_path / "c.yaml")


def test_a_variant_replaces_a_mapping_option_whole_and_dotted_overrides_set_one_key(tmp_path):
    """A variant that runs fewer controls gives their settings without the dropped one (a mapping
    option replaces its base's value, as a list does); a dotted override sets one key of it."""
    (tmp_path / "a.yaml").write_text("extract: {controls: [salience, lexical], typer_files: [t.PubTator],\n"
                                     "  control_tails_per_query: {salience: 2, lexical: 3}, tails_per_query: 4}\n")
    (tmp_path / "b.yaml").write_text("base: a.yaml\nextract: {controls: [salience],\n"
                                     "  control_tails_per_query: {salience: 5}}\n")
    ex = load_config(tmp_path / "b.yaml").extract
    assert (ex.controls, ex.control_tails_per_query, ex.tails_per_query) == (["salience"], {"salience": 5}, 4)
    ex = load_config(tmp_path / "a.yaml", ["extract.control_tails_per_query.lexical=6"]).extract
    assert ex.control_tails_per_query == {"salience": 2, "lexical": 6}
    # an empty mapping empties the option (merged, it would change nothing); a section's stays whole
    ex = load_config(tmp_path / "b.yaml", ["extract.control_tails_per_query={}"]).extract
    assert (ex.control_tails_per_query, ex.controls) == ({}, ["salience"])
    assert load_config(tmp_path / "b.yaml", ["extract={}"]).extract == load_config(tmp_path / "b.yaml").extract


def test_raw_text_config_changes_only_what_raw_text_needs():
    raw, biored = load_config(ROOT / "configs" / "biored-raw.yaml"), load_config(ROOT / "configs" / "biored.yaml")
    assert raw.ner.paths and not biored.ner.paths
    for section in ("corpus", "kg", "graph", "model", "train", "evaluate"):
        assert section_hash(getattr(raw, section)) == section_hash(getattr(biored, section)), section
    # the documents, and the mentions the recognizer's documents get beyond its own: one sense per
    # document, abbreviations, KG gene symbols and disease and chemical names, rule-found variants
    # (gold-annotated documents are not recognised, so these change nothing for biored.yaml)
    raw_only = ("propagate_mentions", "abbreviation_mentions", "symbol_mentions", "variant_mentions",
                "strict_gene_species", "gene_name_labels", "protein_heads", "route_trim", "greek_suffix",
                "name_extension", "gene_extension", "residue_chemicals", "sentence_cut", "slash_split",
                "known_terms_only")
    assert all(getattr(raw.extract, k) for k in raw_only)
    assert raw.extract.kg_gene_species == "NCBITaxon:9606"
    assert raw.extract.abbreviation_veto == ["biolink:Disease", "biolink:ChemicalEntity"]
    assert raw.extract.name_mentions == ["biolink:ChemicalEntity", "biolink:Disease", "biolink:Gene"]
    # a variant no rs id names stays unlinked (chosen on the raw slice); gold mentions keep their ids
    assert not raw.extract.variant_keys and biored.extract.variant_keys
    # and the mentions nothing links are skipped rather than kept as text nodes (every triple counts)
    assert not raw.extract.text_entities and biored.extract.text_entities
    # the disease–variant pairs no chunk holds were chosen on gold mentions only
    assert raw.extract.cross_chunk_pairs == [] and biored.extract.cross_chunk_pairs == ["Disease|SequenceVariant"]
    # graphmert's confidences are mapped to how often a triple holds on raw text only (fitted on the raw
    # slice), with the settings it was fitted under, which are this config's (else it would not load)
    assert len(raw.extract.calibration) == 2 and biored.extract.calibration == []
    assert raw.extract.calibration_fitted_with == calibration_settings(raw)
    # the lexical control at its own k and threshold tuned on the raw slice; the other controls' and
    # graphmert's settings are the gold config's, without lexical_document (it ties lexical there)
    assert (raw.extract.control_tails_per_query["lexical"], raw.extract.control_min_confidence["lexical"]) == (6, 0.5)
    assert raw.extract.controls == [c for c in biored.extract.controls if c != "lexical_document"]
    ties = ("controls", "control_tails_per_query", "control_min_confidence")
    for k in ties[1:]:
        assert {c: v for c, v in getattr(raw.extract, k).items() if c != "lexical"} == \
            {c: v for c, v in getattr(biored.extract, k).items() if c not in ("lexical", "lexical_document")}
    assert dataclasses.replace(raw.extract, paths=biored.extract.paths, kg_gene_species=biored.extract.kg_gene_species,
                               abbreviation_veto=biored.extract.abbreviation_veto,
                               name_mentions=biored.extract.name_mentions,
                               text_entities=biored.extract.text_entities,
                               typer_apart=biored.extract.typer_apart, typer_shared=biored.extract.typer_shared,
                               cross_chunk_pairs=biored.extract.cross_chunk_pairs,
                               calibration=biored.extract.calibration,
                               calibration_fitted_with=biored.extract.calibration_fitted_with,
                               variant_keys=biored.extract.variant_keys,
                               **{k: getattr(biored.extract, k) for k in (*raw_only, *ties)}) == biored.extract
    # the relatedness head is inherited: measured on the raw slice too (three draws), it helps there
    assert raw.extract.related_head_weight == biored.extract.related_head_weight > 0
    # the typer's reading of pairs that share no sentence is measured on gold mentions only (it lowers
    # the raw slice's typing)
    assert biored.extract.typer_apart and not raw.extract.typer_apart
    # shared cue words were chosen on gold mentions; on the raw slice they move nothing
    assert biored.extract.typer_shared and not raw.extract.typer_shared


def test_abbreviation_veto_names_categories_the_recognizer_finds():
    with pytest.raises(ConfigError, match=r"extract.abbreviation_veto: \['biolink:Protein'\] are not "
                                          r"categories the recognizer finds"):
        load_config(None, ["extract.abbreviation_veto=[biolink:Disease,biolink:Protein]"])


@pytest.mark.parametrize("categories, odd", [
    ("[biolink:OrganismTaxon]", "['biolink:OrganismTaxon']"),   # the linker counts no species names
    ("[biolink:Disease,biolink:Protein]", "['biolink:Protein']"),
])
def test_name_mentions_are_counted_categories_the_recognizer_finds(categories, odd):
    with pytest.raises(ConfigError, match=rf"extract.name_mentions: {re.escape(odd)} are not among "):
        load_config(None, [f"extract.name_mentions={categories}"])
    with pytest.raises(ConfigError, match=r"extract.name_mentions: \['biolink:Disease'\] are not among "):
        load_config(None, ["extract.name_mentions=[biolink:Disease]", "ner.categories=[biolink:Gene]"])
    assert load_config(None, ["extract.name_mentions=[biolink:Disease]"]).extract.name_ratio == 0.5


@pytest.mark.parametrize("value", ["human", "NCBITaxon:human", "ncbitaxon:9606", "NCBITaxon:9606x"])
def test_kg_gene_species_must_be_a_taxon_id(value):
    with pytest.raises(ConfigError, match=rf"extract.kg_gene_species: '{value}' is not an NCBI Taxonomy id"):
        load_config(None, [f"extract.kg_gene_species={value}"])
    mouse = load_config(None, ["extract.kg_gene_species=NCBITaxon:10090"])
    assert mouse.extract.kg_gene_species == "NCBITaxon:10090"
