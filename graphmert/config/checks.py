"""The constraints between keys, checked in one place (:func:`_check_cross`, run by
:func:`graphmert.config.build`); a single key's type, range and choices are checked by
:mod:`graphmert.config.options`."""

from __future__ import annotations

import re

from graphmert.config.extract import CALIBRATION_SETTINGS, NAME_CATEGORIES, TYPER_CHOICES, ExtractConfig
from graphmert.config.kg import KGConfig
from graphmert.config.ner import FLAG_SETS
from graphmert.config.options import ConfigError, field_choices
from graphmert.config.sections import Config


def _check_cross(cfg: Config) -> None:
    """Constraints between keys, in one place."""
    m = cfg.model
    m.validate()
    if m.position_embedding == "learned" and cfg.graph.num_roots > m.max_position_embeddings:
        raise ConfigError(f"model.max_position_embeddings: {m.max_position_embeddings} is smaller than "
                          f"graph.num_roots ({cfg.graph.num_roots}) with learned positions")
    if m.leaf_slot_embedding and cfg.graph.num_leaves > m.max_leaf_slots:
        raise ConfigError(f"model.max_leaf_slots: {m.max_leaf_slots} is smaller than graph.num_leaves "
                          f"({cfg.graph.num_leaves}) with the leaf-slot embedding on")
    if cfg.corpus.chunk_overlap >= cfg.graph.num_roots - 2:
        raise ConfigError(f"corpus.chunk_overlap: {cfg.corpus.chunk_overlap} must be smaller than "
                          f"graph.num_roots - 2 ({cfg.graph.num_roots - 2})")
    if cfg.corpus.repeat_title and cfg.corpus.chunk_mode != "document":
        raise ConfigError(f"corpus.repeat_title: needs corpus.chunk_mode 'document' (a chunk of "
                          f"{cfg.corpus.chunk_mode!r} mode holds several documents' text, not one title)")
    if cfg.train.ensemble_size > 1 and m.leaf_query != "fixed":
        raise ConfigError(f"train.ensemble_size: {cfg.train.ensemble_size} models need model.leaf_query "
                          f"'fixed' (extraction averages the members' answers to its query groups)")
    if cfg.train.member_processes > 1 and cfg.train.nproc > 1:
        raise ConfigError(f"train.member_processes: {cfg.train.member_processes} members at once cannot each "
                          f"run on train.nproc {cfg.train.nproc} processes; set one of them to 1")
    if cfg.train.min_lr > cfg.train.lr:
        raise ConfigError(f"train.min_lr: {cfg.train.min_lr} must not exceed train.lr ({cfg.train.lr})")
    _check_scopes(cfg.extract.tail_scope_by_category, "extract.tail_scope_by_category",
                  field_choices(ExtractConfig, "tail_scope"))
    _check_scopes(cfg.kg.candidate_scope_by_category, "kg.candidate_scope_by_category",
                  field_choices(KGConfig, "candidate_scope"))
    _check_vocabularies(cfg.ner.vocabularies)
    _check_dictionary_flags(cfg.ner)
    if not _TAXON_ID.fullmatch(cfg.extract.default_gene_species):
        raise ConfigError(f"extract.default_gene_species: expected an NCBITaxon id such as NCBITaxon:9606, "
                          f"got {cfg.extract.default_gene_species!r}")
    titles = [cfg.kg.candidate_scope, *cfg.kg.candidate_scope_by_category.values()]
    if "title" in titles and cfg.corpus.chunk_mode != "document":
        raise ConfigError(f"kg.candidate_scope 'title' needs corpus.chunk_mode 'document' (a "
                          f"{cfg.corpus.chunk_mode!r} chunk holds several documents' titles)")
    _check_typer(cfg.extract)
    _check_control_settings(cfg.extract)
    check_outside_scope(cfg.extract)
    _check_calibration(cfg)
    odd = [c for c in cfg.extract.abbreviation_veto if c not in cfg.ner.categories]
    if odd:
        raise ConfigError(f"extract.abbreviation_veto: {odd} are not categories the recognizer finds "
                          f"(ner.categories: {cfg.ner.categories})")
    odd = [c for c in cfg.extract.name_mentions if c not in NAME_CATEGORIES or c not in cfg.ner.categories]
    if odd:
        raise ConfigError(f"extract.name_mentions: {odd} are not among {list(NAME_CATEGORIES)} and the "
                          f"categories the recognizer finds (ner.categories: {cfg.ner.categories})")
    taxon = cfg.extract.kg_gene_species
    if taxon is not None and not re.fullmatch(r"NCBITaxon:\d+", taxon):
        raise ConfigError(f"extract.kg_gene_species: {taxon!r} is not an NCBI Taxonomy id (the species "
                          f"of the seed KG's genes); write e.g. NCBITaxon:9606 for human")
    if cfg.train.mask_token_fraction + cfg.train.random_token_fraction > 1.0:
        raise ConfigError(f"train.random_token_fraction: {cfg.train.random_token_fraction} + "
                          f"train.mask_token_fraction ({cfg.train.mask_token_fraction}) exceed 1")


def calibration_settings(cfg: Config) -> dict:
    """The values of ``cfg``'s :data:`~graphmert.config.extract.CALIBRATION_SETTINGS`, by dotted key:
    what ``extract.calibration_fitted_with`` records of the run a map was fitted on."""
    return {key: getattr(getattr(cfg, key.split(".")[0]), key.split(".")[1]) for key in CALIBRATION_SETTINGS}


def _check_calibration(cfg: Config) -> None:
    """``extract.calibration`` is [] or a monotone map [a, b]; where ``extract.calibration_fitted_with``
    records what it was fitted with, every calibration setting has this config's value. A map without
    that record (set by hand, or saved in a run of an older version) is not compared."""
    cal, fitted = cfg.extract.calibration, cfg.extract.calibration_fitted_with
    if cal and (len(cal) != 2 or not cal[0] > 0):
        raise ConfigError(f"extract.calibration: {cal} must be [] or [a, b] with a > 0 (Platt scaling "
                          f"sigmoid(a logit(c) + b), monotone only when a > 0)")
    if not cal or not fitted:
        return
    missing = [k for k in CALIBRATION_SETTINGS if k not in fitted]
    unknown = [k for k in fitted if k not in CALIBRATION_SETTINGS]
    if missing or unknown:
        raise ConfigError(f"extract.calibration_fitted_with: must give the value of every calibration "
                          f"setting the map {cal} was fitted with"
                          + (f"; missing {missing}" if missing else "")
                          + (f"; not calibration settings: {unknown}" if unknown else "")
                          + " (`graphmert calibrate --run-dir RUN` prints both keys)")
    now = calibration_settings(cfg)
    differ = [k for k in CALIBRATION_SETTINGS if fitted[k] != now[k]]
    if differ:
        said = ", ".join(f"{k}={fitted[k]!r} (this config: {now[k]!r})" for k in differ)
        raise ConfigError(f"extract.calibration: the map {cal} was fitted with {said}, so it would misstate "
                          f"how often a triple holds; refit it on a run of this config with gold "
                          f"(`graphmert calibrate --run-dir RUN`), or set 'extract.calibration=[]'")


def category_pair(key: str, option: str = "extract.tail_scope_by_category") -> frozenset[str]:
    """A key of a scope-per-category-pair ``option``, ``"Disease|SequenceVariant"`` (the ``biolink:``
    prefix optional) → {biolink:Disease, biolink:SequenceVariant}."""
    parts = [p.strip() for p in str(key).split("|")]
    if len(parts) != 2 or not all(parts):
        raise ConfigError(f"{option}: key {key!r} is not a category pair; write "
                          f"two Biolink categories joined by '|', e.g. 'Disease|SequenceVariant'")
    return frozenset(p if p.startswith("biolink:") else f"biolink:{p}" for p in parts)


_TAXON_ID = re.compile(r"NCBITaxon:\d+")
_TERM_CATEGORIES = ("biolink:Disease", "biolink:ChemicalEntity", "biolink:Gene")


def _check_vocabularies(sources: list) -> None:
    """Each ``ner.vocabularies`` entry names a file, a gene table its taxon, a terms table its
    categories and prefix."""
    for i, v in enumerate(sources):
        key = f"ner.vocabularies[{i}]"
        if not v.path:
            raise ConfigError(f"{key}.path: empty; name the {v.kind} file")
        if v.kind == "gene_table" and not (v.taxon and _TAXON_ID.fullmatch(v.taxon)):
            raise ConfigError(f"{key}.taxon: a gene_table needs the NCBITaxon id of its genes "
                              f"(e.g. NCBITaxon:10116), got {v.taxon!r}")
        if v.kind == "terms":
            bad = [c for c in v.categories if c not in _TERM_CATEGORIES] or ([] if v.categories else ["none"])
            if bad:
                raise ConfigError(f"{key}.categories: {bad} not allowed; choose from {list(_TERM_CATEGORIES)}")
            if not v.prefix.endswith(":"):
                raise ConfigError(f"{key}.prefix: {v.prefix!r} must end with ':' (a CURIE prefix)")


def _check_dictionary_flags(ner) -> None:
    """``ner.dictionary_flags``: known sets, each with a source in ``ner.vocabularies``, and the hashed
    embedding, which the flags are one more table of."""
    for name in ner.dictionary_flags:
        if name not in FLAG_SETS:
            raise ConfigError(f"ner.dictionary_flags: {name!r} is not a flag set; choose from {list(FLAG_SETS)}")
        if not any(v.kind in FLAG_SETS[name] for v in ner.vocabularies):
            raise ConfigError(f"ner.dictionary_flags: {name!r} needs a ner.vocabularies source of kind "
                              f"{' or '.join(FLAG_SETS[name])}")
    if ner.dictionary_flags and ner.embed != "hash":
        raise ConfigError(f"ner.dictionary_flags: needs ner.embed 'hash' (the flags are one more hashed "
                          f"table of its embedding), not {ner.embed!r}")


def _check_scopes(by_category: dict[str, str], name: str, choices: tuple) -> None:
    """A scope-per-category-pair option (``name``): category-pair keys, scope values."""
    for key, scope in by_category.items():
        category_pair(key, name)
        if scope not in choices:
            raise ConfigError(f"{name}.{key}: {scope!r} is not allowed; choose from {list(choices)}")


def check_outside_scope(ex: "ExtractConfig") -> None:
    """The soft scope (``outside_scope_weight`` > 0) and the band (``outside_min_confidence``) are two
    ways to answer the candidates outside the scope: at most one may be set."""
    if ex.outside_min_confidence is not None and ex.outside_scope_weight > 0:
        raise ConfigError(f"extract.outside_min_confidence ({ex.outside_min_confidence}, the band) and "
                          f"extract.outside_scope_weight ({ex.outside_scope_weight}, a soft scope) "
                          f"both weigh the candidates outside the scope: set one")


def _check_typer(ex: "ExtractConfig") -> None:
    """A relation typer asked for (``relation_choice`` typer / typer_score, ``typer_min_relation``), or
    a relatedness head (``related_head_weight``), needs ``typer_files`` to be fitted on: an error
    when the config is read, not after training. The type head blends with the typer's choice."""
    asks = [f"extract.relation_choice {ex.relation_choice!r}"] if ex.relation_choice in TYPER_CHOICES else []
    asks += [f"extract.typer_min_relation {ex.typer_min_relation}"] if ex.typer_min_relation > 0 else []
    asks += [f"the {c!r} control (extract.controls)" for c in ("lexical", "lexical_document") if c in ex.controls]
    asks += [f"extract.lexical_weight {ex.lexical_weight}"] if ex.lexical_weight > 0 else []
    asks += [f"extract.related_head_weight {ex.related_head_weight}"] if ex.related_head_weight > 0 else []
    asks += [f"extract.cross_chunk_pairs {ex.cross_chunk_pairs}"] if ex.cross_chunk_pairs else []
    for key in ex.cross_chunk_pairs:
        category_pair(key, "extract.cross_chunk_pairs")
    if ex.type_head_weight > 0 and ex.relation_choice != "typer":
        raise ConfigError(f"extract.type_head_weight {ex.type_head_weight} blends the type head "
                          f"with the typer's choice: it needs extract.relation_choice 'typer', not "
                          f"{ex.relation_choice!r}")
    if asks and not ex.typer_files:
        raise ConfigError(f"{asks[0]} needs extract.typer_files: gold files with typed document-level "
                          f"relations to fit the relation typer or the pair heads on (e.g. BioRED train)")


def _check_control_settings(ex: "ExtractConfig") -> None:
    """``control_tails_per_query`` and ``control_min_confidence`` name controls that run
    (``extract.controls``), with a k of at least 1 and a threshold in [0, 1]; which controls take
    which setting is checked where the rankers are defined (graphmert.extract.pairs)."""
    for option, values in (("control_tails_per_query", ex.control_tails_per_query),
                           ("control_min_confidence", ex.control_min_confidence)):
        for name, value in values.items():
            if name not in ex.controls:
                raise ConfigError(f"extract.{option}.{name}: {name!r} is not one of extract.controls "
                                  f"({ex.controls})")
            if option == "control_tails_per_query" and value < 1:
                raise ConfigError(f"extract.{option}.{name}: {value!r} is out of range; must be >= 1")
            if option == "control_min_confidence" and not 0.0 <= value <= 1.0:
                raise ConfigError(f"extract.{option}.{name}: {value!r} is out of range; must be in [0, 1]")
