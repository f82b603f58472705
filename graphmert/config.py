"""Typed configuration: one dataclass per concern, every default defined exactly once.

A run's configuration is built in three layers, each overriding the one before:

1. the dataclass defaults below (the paper's values where the paper has one);
2. a YAML file (``configs/*.yaml``) that only *overrides* — read with ``yaml.safe_load``;
3. dotted command-line overrides in OmegaConf dotlist syntax (``model.hidden_size=256``,
   ``'corpus.paths=[a.txt,b.txt]'``, quoted because zsh globs brackets).

Validation happens in one place (:func:`build`): an unknown key, a value of the wrong type, or a value
outside its allowed range/choices raises :class:`ConfigError` naming the dotted key and what is allowed.
Range and choice constraints are declared next to the default with :func:`opt`.

Names of swappable parts that live in registries (backbones, kernels, readers, scorers) are validated
where the registry is consulted (:mod:`graphmert.registry`), so this module imports from the rest of
the library only :mod:`graphmert.errors` and, inside :func:`save_config`, :mod:`graphmert.io`; neither
imports anything from the library.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional

import yaml

from graphmert.errors import GraphmertError

__all__ = [
    "ConfigError",
    "CorpusConfig",
    "TokenizerConfig",
    "KGConfig",
    "GraphConfig",
    "ModelConfig",
    "TrainConfig",
    "NERConfig",
    "ExtractConfig",
    "EvaluateConfig",
    "ExportConfig",
    "PipelineConfig",
    "Config",
    "opt",
    "build",
    "build_section",
    "load_config",
    "to_dict",
    "save_config",
    "section_hash",
]


class ConfigError(GraphmertError, ValueError):
    """A configuration value is unknown, mistyped or out of range. The message names the key."""


def opt(default: Any = dataclasses.MISSING, *, factory: Any = None, min: float | None = None,
        max: float | None = None, min_exclusive: bool = False, choices: tuple | None = None,
        help: str = "") -> Any:
    """A dataclass field with validation metadata (range, choices) and a help text."""
    meta = {"min": min, "max": max, "min_exclusive": min_exclusive, "choices": choices, "help": help}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


# --------------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------------


@dataclass
class CorpusConfig:
    """Ingestion and chunking of the text corpus."""

    paths: list[str] = opt(factory=list, help="corpus files or folders (a folder of .txt files is one input)")
    format: str = opt("auto", help="reader name, or 'auto' to choose by file suffix")
    skip_bad_records: bool = opt(False, help="count and log bad records instead of failing")
    shard_size: int = opt(1000, min=1, help="documents per Parquet shard")
    sentences: bool = opt(True, help="record sentence boundaries (spaCy blank 'en' + scispaCy tokenizer)")
    abbreviations: bool = opt(True, help="run scispaCy's abbreviation detector")
    chunk_mode: str = opt("document", choices=("document", "concatenate"),
                          help="'document': chunks never cross documents; 'concatenate': the paper's")
    chunk_overlap: int = opt(32, min=0, help="tokens shared by consecutive windows of a long document")
    repeat_title: bool = opt(False, help="'document' mode: every window of a long document starts with "
                             "the document's title (at most half a window), so title entities share a "
                             "chunk with every sentence")


@dataclass
class TokenizerConfig:
    """WordPiece tokenizer: trained on the ingested corpus, or loaded from a path."""

    path: Optional[str] = opt(None, help="existing tokenizer.json or vocab.txt; None trains one")
    vocab_size: int = opt(30522, min=16, help="vocabulary size when training")
    min_frequency: int = opt(2, min=1, help="when training: merge a WordPiece pair only while it "
                             "occurs at least this often")
    lowercase: bool = opt(True, help="lowercase text before tokenising (BERT normaliser)")


@dataclass
class KGConfig:
    """Seed knowledge graph and the injection algorithm (DESIGN §7)."""

    nodes: list[str] = opt(factory=list, help="node tables (KGX TSV, .gz allowed) or RDF files")
    edges: list[str] = opt(factory=list, help="edge tables (KGX TSV, .gz allowed) or RDF files")
    path: Optional[str] = opt(None, help="a seed-KG folder in a named layout "
                              "(e.g. format 'hetionet_disgenet_mesh'); used instead of nodes/edges")
    format: str = opt("auto", help="seed-KG reader name ('kgx_tsv', 'rdf', 'hetionet_disgenet_mesh'), "
                      "or 'auto' by suffix / folder layout")
    include_isa: bool = opt(False, help="hetionet_disgenet_mesh: also load the MeSH 'isa' edges")
    relation_files: list[str] = opt(factory=list, help="corpus files with document-level relations "
                                    "(PubTator / BioC, e.g. BioRED train) added as seed triples in "
                                    "both directions; names and categories come from their mentions")
    relation_files_format: str = opt("auto", help="reader name for kg.relation_files, or 'auto'")
    prefix_map: dict[str, str] = opt(factory=dict, help="extra CURIE prefix → IRI base used to "
                                     "compact RDF IRIs (added to the built-in map)")
    relation_schema: dict[str, list[list[str]]] = opt(
        factory=dict, help="relation → allowed [subject category, object category] pairs; "
        "relations not listed are learned from the KG")
    skip_bad_records: bool = opt(False, help="count and skip bad KG rows instead of failing")
    injection: str = opt("paper", choices=("paper", "cooccurrence"),
                         help="which seed triples become leaves where: 'paper' (each triple once, in "
                              "its most similar chunk; DESIGN §7) or 'cooccurrence' (a triple in "
                              "every chunk that mentions its head and its tail, plus 'no tail' "
                              "questions in relation-annotated documents; graphmert.graph.distant)")
    negative_queries: bool = opt(True, help="cooccurrence: ask the relation-annotated documents' "
                                 "questions that have no tail in the chunk (known negatives)")
    candidate_scope: str = opt("chunk", choices=("sentence", "title", "chunk"),
                               help="cooccurrence: the entities a training question chooses among: "
                                    "its chunk's, or those in the head's sentence (or that sentence "
                                    "and the title), as extract.tail_scope asks; a question whose "
                                    "tails all lie outside becomes a 'none' question in "
                                    "relation-annotated documents and asks the candidate head "
                                    "nothing elsewhere (graphmert.graph.scope)")
    candidate_scope_by_category: dict[str, str] = opt(
        factory=dict, help="candidate_scope per unordered category pair, as "
                           "extract.tail_scope_by_category; other pairs get candidate_scope")
    scorer: str = opt("tfidf", help="triple-to-chunk similarity scorer (registry name)")
    alpha: float = opt(0.55, min=0.0, max=1.0, help="keep candidate injections scoring above alpha")
    min_relation_count: int = opt(100, min=0, help="drop relations with fewer kept triples "
                                  "(cooccurrence: with fewer seed triples)")
    score_band: float = opt(0.01, min=0.0, max=1.0, min_exclusive=True,
                            help="band width for 'best score first, rarer relation first'")
    lexicon_matching: bool = opt(True, help="link unannotated text to KG nodes by name")
    lexicon_min_chars: int = opt(3, min=1, help="ignore KG names/synonyms shorter than this "
                                 "when matching text (all-uppercase names match case-sensitively)")
    max_unknown_tail_fraction: float = opt(
        0.5, min=0.0, max=1.0, help="fail when more than this share of candidate tail names "
        "tokenise entirely to [UNK] (tokenizer/KG mismatch); below it such tails are skipped")


@dataclass
class GraphConfig:
    """Leafy chain graph layout (DESIGN §4)."""

    num_roots: int = opt(128, min=4, help="R: root tokens per chunk including [CLS] and [SEP]")
    num_leaves: int = opt(7, min=1, help="K: leaf slots per root")
    layout: str = opt("packed", choices=("dense", "packed"), help="batch layout")
    shard_size: int = opt(1000, min=1, help="graphs per Parquet shard")


@dataclass
class ModelConfig:
    """The GraphMERT network (DESIGN §5). Defaults are the paper's 80M-parameter encoder.

    Registry names (``backbone``, ``attention_kernel``, ``decay_mode``) are checked where the model is
    built (:func:`graphmert.model.build_model`); :meth:`validate` re-checks ranges and the constraints
    between model keys for configs constructed in code.
    """

    backbone: str = opt("roberta", help="backbone registry name (roberta, ...)")
    hidden_size: int = opt(512, min=1, help="H: hidden size (divisible by num_heads)")
    num_layers: int = opt(12, min=1, help="transformer layers")
    num_heads: int = opt(8, min=1, help="attention heads per layer")
    intermediate_size: int = opt(2048, min=1, help="feed-forward inner size")
    dropout: float = opt(0.1, min=0.0, max=1.0, help="dropout on hidden states")
    attention_dropout: float = opt(0.1, min=0.0, max=1.0, help="dropout on attention probabilities")
    layer_norm_eps: float = opt(1e-12, min=0.0, min_exclusive=True, help="ε of the layer norms")
    attention_kernel: str = opt("sdpa", help="attention kernel registry name: eager, sdpa")
    decay_mode: str = opt("logit_scale", help="attention decay registry name: logit_scale, log_bias, none")
    decay_lambda: float = opt(0.6, min=0.0, max=1.0, min_exclusive=True, help="λ in f(d)=λ^GELU(√d−p)")
    decay_p_init: float = opt(1.0, help="initial p of the decay, one per head")
    position_embedding: str = opt("none", choices=("none", "learned", "rotary"),
                                  help="positions over the root index; leaves share their root's")
    max_position_embeddings: int = opt(514, min=1, help="rows of the learned position table (> roots)")
    rope_theta: float = opt(10000.0, min=0.0, min_exclusive=True, help="rotary base frequency")
    leaf_slot_embedding: bool = opt(False, help="add a learned embedding of the leaf slot (roots: row 0)")
    max_leaf_slots: int = opt(16, min=1, help="leaf-slot embedding rows for leaves (>= graph.num_leaves)")
    hgat: bool = opt(True, help="fuse relation embeddings into leaves with H-GAT")
    leaf_query: str = opt("tail", choices=("tail", "fixed"),
                          help="a masked leaf group is 'tail': as many [MASK] leaves as the tail has "
                               "tokens (the paper; extraction asks once per tail length), or "
                               "'fixed': all K leaves, the tail followed by [SEP] as its end (one "
                               "query scores tails of every length; an empty tail means 'none')")
    entity_type_embedding: bool = opt(False, help="add a learned embedding of the entity type to "
                                      "the roots of entity mentions (graphmert.kg.schema.ENTITY_TYPES)")
    salience_embedding: bool = opt(False, help="add a learned embedding of how often the document "
                                   "mentions the entity (bucketed) to the roots of its mentions")
    leaf_copy: bool = opt(False, help="masked leaves may copy root tokens (a pointer-generator over "
                          "the chunk's roots mixed into the MNM distribution; graphmert.model.copy)")
    candidate_head: bool = opt(False, help="score a query group's candidate tails, the chunk's "
                               "entities, and 'none' (graphmert.model.candidates); needs "
                               "leaf_query 'fixed'")
    locality_features: bool = opt(False, help="candidate_head: two more candidate features, whether "
                                  "the candidate is mentioned in the head's sentence and "
                                  "log(1 + sentence boundaries to its nearest mention) "
                                  "(graphmert.graph.candidates)")
    pair_features: bool = opt(False, help="candidate_head: also score each candidate from the query, "
                              "its state and the mean state of the roots between the head mention and "
                              "its nearest mention, through a perceptron (entity-marker-style relation "
                              "classification; graphmert.model.candidates)")
    relation_dropout: float = opt(0.3, min=0.0, max=1.0, help="dropout on W_r and a_r")
    sbo_head: bool = opt(True, help="SpanBERT span-boundary objective head (training only)")
    sbo_max_span_length: int = opt(10, min=1, help="relative-position rows of the SBO head")
    sbo_decoder: str = opt("tied", choices=("tied", "untied"),
                           help="SBO head's V×H output matrix: 'tied' reuses the token embedding "
                                "(cheaper); 'untied' gives it its own, as the paper's code does "
                                "(+V·H parameters, 15.6M at V=30,522, H=512)")
    initializer_range: float = opt(0.02, min=0.0, help="std of the normal initialisation of "
                                   "weights and embeddings")
    backbone_options: dict[str, Any] = opt(factory=dict, help="backbone-specific settings")

    def validate(self, prefix: str = "model") -> "ModelConfig":
        """Check types, ranges and the constraints between model keys; return self.

        Raises :class:`ConfigError` naming the dotted key. :func:`build` runs the same checks on
        loaded configs; this method is for configs constructed directly in code.
        """
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            key = f"{prefix}.{f.name}"
            value = _coerce(key, getattr(self, f.name), hints[f.name])
            _check_range(key, value, dict(f.metadata))
        if self.hidden_size % self.num_heads:
            raise ConfigError(f"{prefix}.hidden_size: {self.hidden_size} is not divisible by "
                              f"{prefix}.num_heads ({self.num_heads})")
        if self.candidate_head and self.leaf_query != "fixed":
            raise ConfigError(f"{prefix}.candidate_head: needs {prefix}.leaf_query 'fixed' (the head reads "
                              f"the first leaf of a K-leaf query group)")
        if self.locality_features and not self.candidate_head:
            raise ConfigError(f"{prefix}.locality_features: needs {prefix}.candidate_head (they are "
                              f"features of its candidates)")
        if self.pair_features and not self.candidate_head:
            raise ConfigError(f"{prefix}.pair_features: needs {prefix}.candidate_head (they are "
                              f"features of its candidates)")
        if self.position_embedding == "rotary" and (self.hidden_size // self.num_heads) % 2:
            raise ConfigError(f"{prefix}.position_embedding: rotary needs an even head size, got "
                              f"hidden_size/num_heads = {self.hidden_size // self.num_heads}")
        return self


@dataclass
class TrainConfig:
    """Optimisation (DESIGN §6)."""

    seed: int = opt(0, help="seed of parameter initialisation, data order and masking")
    ensemble_size: int = opt(1, min=1, help="models trained one after another on the same graphs, "
                             "with seeds train.seed, train.seed + 1, …; extraction averages their "
                             "answers (model.leaf_query 'fixed' only)")
    lr: float = opt(4e-4, min=0.0, min_exclusive=True, help="peak learning rate (after warm-up)")
    min_lr: float = opt(1e-5, min=0.0, help="floor of the cosine decay (<= lr)")
    warmup_steps: int = opt(500, min=0, help="optimizer steps of linear warm-up to lr")
    weight_decay: float = opt(0.01, min=0.0, help="AdamW decay on weight matrices (not on biases, "
                              "norms or other vectors)")
    adam_beta1: float = opt(0.9, min=0.0, max=1.0, help="AdamW β1")
    adam_beta2: float = opt(0.999, min=0.0, max=1.0, help="AdamW β2")
    adam_eps: float = opt(1e-8, min=0.0, min_exclusive=True, help="AdamW ε")
    grad_clip: float = opt(1.0, min=0.0, help="max global gradient norm; 0 disables clipping")
    batch_size: int = opt(32, min=1, help="sequences per device per micro-batch")
    effective_batch_size: int = opt(256, min=1, help="sequences per optimizer step over all "
                                    "processes (gradient accumulation fills the rest)")
    epochs: float = opt(25.0, min=0.0, min_exclusive=True, help="passes over the training graphs "
                        "(fractions allowed) when max_steps is None")
    max_steps: Optional[int] = opt(None, min=1, help="optimizer steps; None: epochs × steps per epoch")
    mlm_probability: float = opt(0.15, min=0.0, max=1.0, help="share of root tokens masked (spans)")
    mnm_probability: float = opt(0.15, min=0.0, max=1.0, help="chance a filled leaf group is masked")
    span_geometric_p: float = opt(0.2, min=0.0, max=1.0, min_exclusive=True,
                                  help="span length in words ~ Geometric(p), truncated to [1, K]")
    entity_mask_probability: float = opt(
        0.0, min=0.0, max=1.0, help="chance that an entity of a chunk's entity table has every mention "
        "masked whole (MLM targets), so the model must read its context rather than its name; "
        "training only (graphmert.train.masking)")
    mask_token_fraction: float = opt(0.8, min=0.0, max=1.0, help="masked spans/groups shown as [MASK]")
    random_token_fraction: float = opt(0.1, min=0.0, max=1.0,
                                       help="masked spans/groups shown as random tokens (the rest "
                                            "keep their tokens)")
    loss: str = opt("paper", choices=("paper", "separate"),
                    help="paper: one mean over MLM and MNM targets; separate: L_MLM + μ·L_MNM "
                         "(SBO is added to both)")
    mnm_weight: float = opt(1.0, min=0.0, help="μ in L_MLM + μ·L_MNM (separate loss)")
    candidate_weight: float = opt(1.0, min=0.0, help="ν, the weight of the candidate objective "
                                  "(model.candidate_head; graphmert.train.losses)")
    eval_fraction: float = opt(0.05, min=0.0, max=0.5, help="share of documents held out "
                               "(split by a hash of the document id)")
    eval_every: int = opt(200, min=1, help="optimizer steps between held-out evaluations")
    eval_passes: int = opt(1, min=1, help="mask draws per held-out chunk at evaluation")
    checkpoint_every: int = opt(500, min=1, help="optimizer steps between training checkpoints")
    keep_checkpoints: int = opt(2, min=1, help="most recent checkpoints kept on disk")
    resume: bool = opt(True, help="continue from the latest checkpoint of an interrupted run "
                       "with the same inputs and config")
    precision: str = opt("auto", choices=("auto", "bf16", "fp32"),
                         help="auto: bf16 autocast on CUDA, fp32 on CPU")
    num_workers: int = opt(0, min=0, help="DataLoader processes for masking and collation")
    threads: int = opt(0, min=0, help="torch CPU threads per training process; 0 keeps torch's "
                       "default (1 under torchrun). Small models on a busy CPU run fastest with 1")
    device: str = opt("auto", choices=("auto", "cpu", "cuda"),
                      help="auto: CUDA when available, else CPU; cuda fails without it")
    nproc: int = opt(1, min=1, help="processes (torchrun): gloo on CPU, NCCL on CUDA")


@dataclass
class NERConfig:
    """Entity recognition and linking for documents without annotations (issue #19, docs/NER.md).

    The ``ner`` stage trains a spaCy NER from the gold mentions of ``ner.paths`` and builds the
    linker; ``extract`` then gives every extraction document that has no mentions the recognised,
    linked ones. Empty ``ner.paths``: no recognizer, documents without mentions get lexicon heads.
    """

    paths: list[str] = opt(factory=list, help="annotated corpora (any corpus format) whose gold "
                           "mentions train the recognizer and the linker's dictionary; empty: off")
    format: str = opt("auto", help="reader name for ner.paths, or 'auto' by suffix")
    sources: list[str] = opt(factory=list, help="keep only documents whose 'source' field is one of "
                             "these (the shared corpus's biored_train, bc5cdr_train, …; its silver "
                             "tmvar3_pubtator is best left out, or lent to one model by "
                             "ner.part_sources); empty: every document with mentions")
    categories: list[str] = opt(factory=lambda: ["biolink:Gene", "biolink:Disease",
                                                 "biolink:ChemicalEntity"],
                                help="Biolink categories the recognizer finds (mention types map "
                                     "through graphmert.kg.schema.mention_category)")
    separate_categories: list[str] = opt(factory=list, help="categories of ner.categories that get a "
                                         "recognizer of their own, trained only on the documents "
                                         "that annotate them (BC5CDR and NCBI disease annotate no "
                                         "genes); the others share one")
    part_sources: dict[str, list[str]] = opt(
        factory=dict, help="category of ner.categories → further sources of ner.paths whose documents "
        "annotating it train only the recognizer model that finds it, beside ner.sources' documents "
        "({biolink:Gene: [tmvar3_pubtator]}: PubTator's silver genes for the gene model); never a "
        "model's selection slice, never the linker")
    embed: str = opt("hash", choices=("hash", "characters"),
                     help="the recognizer's token embedding: 'hash', spaCy's HashEmbedCNN (hashed "
                          "word norm, prefix, suffix and shape); 'characters', spaCy's CharacterEmbed "
                          "(the word's first and last 4 characters, and its hashed lower-case form)")
    width: int = opt(96, min=8, help="width of the recognizer's tok2vec")
    depth: int = opt(4, min=1, help="convolutional layers of the recognizer's tok2vec")
    window_size: int = opt(1, min=1, help="words on each side that each convolutional layer of the "
                           "recognizer's tok2vec reads")
    embed_rows: int = opt(2000, min=100, help="rows of each hashed embedding table of the tok2vec "
                          "(word norm, prefix, suffix, shape; 'characters': the lower-case form)")
    vectors: int = opt(0, min=0, help="dimensions of the word vectors the ner stage learns "
                       "(skip-gram word2vec, graphmert.ner.vectors) from the text of every ner.paths "
                       "document it may read, annotated or not, for the recognizer's tok2vec to read "
                       "beside its hashed features; 0: none")
    epochs: int = opt(12, min=1, help="most passes over the training documents")
    max_minutes: float = opt(18.0, min=0.0, min_exclusive=True,
                             help="wall-clock training budget of the whole recognizer: the ner stage "
                                  "trains its models at once, one per worker (pipeline.workers), the "
                                  "largest first, and each stops before an epoch that would end past "
                                  "the budget")
    patience: int = opt(3, min=1, help="stop after this many epochs without a better selection F1")
    batch_size: int = opt(16, min=1, help="documents per update")
    dropout: float = opt(0.1, min=0.0, max=1.0, help="dropout during training")
    average_weights: bool = opt(True, help="score and keep each epoch's moving average of the "
                                "recognizer's weights (thinc's, spaCy's use_averages), not the last "
                                "update's (held-out BioRED train: steadier from epoch to epoch; docs/NER.md)")
    selection_fraction: float = opt(0.1, min=0.0, max=1.0, min_exclusive=True,
                                    help="training documents (by a hash of the id) held out to "
                                         "pick the best epoch; never dev")
    seed: int = opt(0, help="random seed (initialisation and shuffling)")
    xref_tables: list[str] = opt(factory=list, help="TSV tables mapping other ids to MeSH (the "
                                 "shared seed KG's doid_to_mesh.tsv, drugbank_to_mesh.tsv, …)")
    name_tables: list[str] = opt(factory=list, help="TSV tables giving seed-KG nodes more names for "
                                 "linking: an id column (id, or geneId: NCBI Gene numbers) and a name "
                                 "column (name, geneName or synonyms; '|' separates names), e.g. the "
                                 "shared seed KG's upstream DisGeNET table of gene names")
    fuzzy_threshold: float = opt(0.8, min=0.0, max=1.01,
                                 help="character-trigram cosine at or above which an unmatched "
                                      "mention links to its nearest known name of its category; "
                                      "above 1: never (chosen by benchmarks/linking.py on held-out "
                                      "BioRED train documents)")


# relation_choice values that ask the relation typer (graphmert.extract.relation_typer)
TYPER_CHOICES = ("typer", "typer_score")
# the categories whose seed-KG names extract.name_mentions may make mentions: those the entity linker
# counts in its training documents (graphmert.ner.linking.EntityLinker.kg_name)
NAME_CATEGORIES = ("biolink:ChemicalEntity", "biolink:Disease")


@dataclass
class ExtractConfig:
    """Triple extraction (DESIGN §8): heads → relations → masked-leaf tail prediction → tails → filters."""

    paths: list[str] = opt(factory=list, help="documents to extract from (any corpus format); "
                           "empty: the run's own ingested corpus")
    format: str = opt("auto", help="reader name for extract.paths, or 'auto' by suffix")
    document_fraction: float = opt(1.0, min=0.0, max=1.0, min_exclusive=True,
                                   help="extract from the documents whose u(id) < this (u: SHA-256 "
                                        "of the id, as train.eval_fraction): a fixed slice, e.g. a "
                                        "tuning slice of a training file; 1 = every document. Their "
                                        "relations never become seed triples")
    checkpoint: Optional[str] = opt(None, help="model checkpoint folder; None: RUN/train/model")
    relations: list[str] = opt(factory=list, help="restrict to these relations (empty: every "
                               "relation the model saw injected in training)")
    top_k: int = opt(20, min=1, help="top-k tokens kept per leaf slot (reported; 'paper' mode tails)")
    batch_size: int = opt(64, min=1, help="query graphs per forward pass")
    pack_queries: bool = opt(True, help="put the queries of several heads of one chunk into one "
                             "graph (one per head root); false: one query per graph")
    tail_mode: str = opt("candidates", choices=("candidates", "paper"),
                         help="candidates: score candidate tails by the model's likelihood; paper: "
                              "the top-k tokens of leaf slot 0 are the tails")
    tail_sources: list[str] = opt(factory=lambda: ["mention", "phrase"],
                                  help="candidate tails: mentions of the document, word n-grams of "
                                       "the chunk, and (off by default) 'lexicon': KG names spelled "
                                       "from the top-k leaf tokens, which the text never states")
    predicted_tail_scale: float = opt(0.5, min=0.0, max=1.0,
                                      help="confidence factor of tails the text does not state "
                                           "(lexicon, paper-mode tokens): they form a lower band; "
                                           "the RDF export names every tail's source (gm:tailSource)")
    max_phrase_words: int = opt(3, min=1, help="longest word n-gram taken as a phrase candidate")
    tail_scope: str = opt("document", choices=("sentence", "title", "chunk", "document"),
                          help="where a mention tail must occur: the head's sentence, that "
                               "sentence or the title, its chunk, or anywhere in the document")
    tail_scope_by_category: dict[str, str] = opt(
        factory=dict, help="tail_scope per unordered category pair, e.g. "
                           "{'Disease|SequenceVariant': title}; other pairs get tail_scope")
    propagate_mentions: bool = opt(False, help="documents the ner stage's recognizer annotates: every "
                                   "other whole-word occurrence of a recognised mention's text in "
                                   "the same document is a mention too, with the same label (one "
                                   "sense per document)")
    abbreviation_mentions: bool = opt(False, help="documents the ner stage's recognizer annotates: "
                                      "every occurrence of an abbreviation's short form is a mention "
                                      "with the label of the recognised mention heading its long "
                                      "form (graphmert.ner.abbreviations)")
    abbreviation_veto: list[str] = opt(factory=list, help="documents the ner stage's recognizer "
                                       "annotates: Biolink categories whose mentions of a short form "
                                       "the document defines as something no recognised mention heads "
                                       "and the linker does not know ('room air (RA)') are dropped "
                                       "(graphmert.ner.abbreviations); not genes, whose long forms the "
                                       "recognizer often misses where it finds the symbol")
    text_entities: bool = opt(True, help="'fixed' leaf-query models: a mention without an id is an "
                              "entity of its own, keyed by its text (a text node: a head and a tail "
                              "with an empty id and its text as the name; graphmert.extract."
                              "text_entities); false: extraction skips unlinked mentions")
    symbol_mentions: bool = opt(False, help="documents the ner stage's recognizer annotates: every "
                                "occurrence of a seed-KG gene symbol with a digit and an upper-case "
                                "letter ('CYP2C19') outside the recognised mentions is a gene mention "
                                "too (graphmert.ner.gazetteer)")
    name_mentions: list[str] = opt(factory=list, help="documents the ner stage's recognizer annotates: "
                                   "Biolink categories (biolink:Disease, biolink:ChemicalEntity) whose "
                                   "seed-KG names become mentions where they occur outside the "
                                   "recognised mentions, if the linker's training documents annotate "
                                   "them at least name_ratio of the times they contain them, or never "
                                   "contain them (graphmert.ner.gazetteer)")
    name_ratio: float = opt(0.5, min=0.0, max=1.0, help="name_mentions: the least share of a seed-KG "
                            "name's occurrences in the training documents that must be annotated")
    kg_gene_species: Optional[str] = opt(
        None, help="documents the ner stage's recognizer annotates: the taxon of the seed KG's genes "
        "(NCBITaxon:9606 for Hetionet); in a document whose species is another, a gene is not linked "
        "to a KG gene by name (graphmert.ner.linking); null: it may be")
    strict_gene_species: bool = opt(False, help="documents the ner stage's recognizer annotates: a gene "
                                    "the linker's training dictionary knows only in another species than "
                                    "the document's, with no ortholog learnt, stays unlinked (a text "
                                    "node), as a seed-KG gene does under kg_gene_species; false: the "
                                    "dictionary's id is kept")
    variant_mentions: bool = opt(False, help="documents the ner stage's recognizer annotates: the "
                                 "sequence variants a rule-based finder reads in the text ('R215W', "
                                 "'c.643C>T', 'rs1800795') become mentions too, with tmVar-style ids, "
                                 "where no recognised mention lies (graphmert.ner.variants)")
    outside_scope_weight: float = opt(0.0, min=0.0, max=1.0,
                                      help="'fixed' leaf-query models: 0 asks only the tails within "
                                           "the scope; w in (0, 1] also offers the chunk's other "
                                           "entities, their odds scaled by w (a log w bias on their "
                                           "logits before the candidate softmax; control scores times "
                                           "w): a soft scope")
    outside_min_confidence: Optional[float] = opt(
        None, min=0.0, max=1.0,
        help="'fixed' leaf-query models: None asks only the tails within the scope; a value also "
             "offers the chunk's other entities (a document-level band): a pair that shares no "
             "scope anywhere in its document is answered by the chunk-wide softmax and kept at or "
             "above this (its own tails_per_query per head and relation), while in-scope answers "
             "stay the scope's. Excludes outside_scope_weight > 0")
    ranking: str = opt("likelihood", choices=("likelihood", "pmi"),
                       help="rank tails by their likelihood, or by it minus the mean over the "
                            "chunk's heads (pointwise mutual information: discounts tails every "
                            "head finds likely)")
    tails_per_query: int = opt(1, min=1, help="best tails kept per (head mention, relation); with a "
                               "'fixed' leaf-query model per (document, head entity, relation)")
    ranker: str = opt("model", choices=("model", "margin", "likelihood"),
                      help="'fixed' leaf-query models: rank candidates by the candidate head "
                           "('model') or by the MNM likelihood of their tokens ('likelihood')")
    controls: list[str] = opt(factory=lambda: ["candidates", "random", "nearest", "salience", "untrained"],
                              help="'fixed' leaf-query models: rankings of the same questions without "
                                   "the trained model, written beside the triples and scored by "
                                   "evaluate (graphmert.extract.pairs.RANKERS); 'lexical', the "
                                   "supervised word-feature baseline, needs typer_files")
    control_tails_per_query: dict[str, int] = opt(
        factory=dict, help="tails_per_query of each control named here (e.g. {salience: 2}); a "
                           "control not named uses tails_per_query. Not 'candidates', which keeps all")
    control_min_confidence: dict[str, float] = opt(
        factory=dict, help="min_confidence of each control named here whose score is a probability "
                           "(untrained, lexical); such a control not named uses min_confidence")
    lexical_weight: float = opt(0.0, min=0.0, max=1.0,
                                help="pool the model rankers' probability p with the relation typer's "
                                     "probability q that the words relate the pair (the lexical "
                                     "control's score): p^(1-w) q^w. 0: the model alone; 1: the "
                                     "lexical ranking at graphmert's settings. Needs typer_files")
    one_relation_per_pair: bool = opt(False, help="'fixed' leaf-query models: keep one relation per "
                                      "(document, unordered entity pair), the best-scoring (for "
                                      "corpora like BioRED, whose relations are typed pairs)")
    evidence: str = opt("best", choices=("best", "noisy_or"),
                        help="'fixed' leaf-query models: a (document, head, relation, tail)'s "
                             "probability from its questions (mentions, chunks; with "
                             "one_relation_per_pair the reverse question too): the best one, or "
                             "their noisy-OR 1 − Π(1 − p)")
    relation_choice: str = opt("score", choices=("score", "prior", "prior_only", "typer", "typer_score"),
                               help="with one_relation_per_pair, a pair's relation: the highest "
                                    "model probability ('score'), that times the share of the "
                                    "relation among seed triples of the pair's two categories "
                                    "('prior'), that share alone ('prior_only', a control), the "
                                    "relation typer's best relation the schema admits ('typer', "
                                    "graphmert.extract.relation_typer, fitted on typer_files), or "
                                    "the typer's probability times the model's ('typer_score')")
    typer_files: list[str] = opt(factory=list, help="gold files with typed document-level relations "
                                 "(e.g. BioRED train) the relation typer is fitted on; documents "
                                 "extraction or evaluation reads are left out (pipelines/holdout.py)")
    typer_window: int = opt(2, min=0, help="relation typer: words kept before and after a pair's "
                            "mentions (chosen by benchmarks/relation_typer.py)")
    typer_c: float = opt(1.0, min=0.0, min_exclusive=True, help="relation typer: inverse L2 "
                         "strength of its logistic regressions (chosen by benchmarks/relation_typer.py)")
    typer_min_relation: float = opt(0.0, min=0.0, max=1.0, help="drop a found pair when the relation "
                                    "typer's probability that the text relates its entities is below "
                                    "this (a pair sharing no sentence is kept); 0: off. Needs "
                                    "typer_files")
    min_confidence: float = opt(0.0, min=0.0, max=1.0, help="drop triples below this confidence "
                                "(geometric-mean probability of the tail tokens)")
    check_range: bool = opt(True, help="drop triples whose tail category is outside the "
                            "relation's range (untyped tails pass and are counted)")
    beta: float = opt(0.67, min=0.0, max=1.0, help="drop triples whose text is less similar than "
                      "this to the chunk (the paper's β; TF-IDF cosines run lower, see configs)")
    similarity_scorer: str = opt("tfidf", help="triple-to-chunk similarity scorer (registry name)")
    require_tail_in_document: bool = opt(False, help="drop tails whose name is not in the document")
    shard_size: int = opt(10000, min=1, help="triples per Parquet shard")
    part_documents: int = opt(200, min=1, help="documents per extraction task (one Dask task each; "
                              "a killed run keeps its finished parts)")
    llm_url: Optional[str] = opt(None, help="OpenAI-compatible base URL (e.g. "
                                 "http://127.0.0.1:8000/v1) of an optional helper LLM; None: off")
    llm_model: str = opt("", help="model name sent to the helper LLM")
    llm_api_key_env: str = opt("OPENAI_API_KEY", help="environment variable holding the API key")
    llm_timeout: float = opt(30.0, min=0.0, min_exclusive=True, help="seconds per LLM request")
    llm_retries: int = opt(2, min=0, help="retries of a failed LLM request (with backoff)")


@dataclass
class EvaluateConfig:
    """Evaluation against gold document-level relations (DESIGN §9)."""

    gold: list[str] = opt(factory=list, help="gold files (PubTator or BioC) with entities and "
                          "relations; empty: no evaluation. Only the documents extraction read "
                          "are scored (extract.document_fraction slices both)")
    format: str = opt("auto", help="reader name for evaluate.gold, or 'auto' by suffix")
    relation_map: dict[str, str] = opt(factory=dict, help="model relation → gold relation type "
                                       "(unmapped relations keep their name)")
    baselines: list[str] = opt(factory=lambda: ["cooccurrence", "seed_kg"],
                               help="baseline systems run on the same documents (registry names)")


@dataclass
class ExportConfig:
    """RDF / KGX export and the HTML report (docs/EXPORT.md). Names are checked by graphmert.export."""

    formats: list[str] = opt(factory=lambda: ["ttl", "nt", "jsonld", "kgx", "store"],
                             help="files to write: ttl, nt, jsonld, kgx (TSV + JSON Lines), trig, nq "
                                  "(trig / nq: one named graph per run), store (an Oxigraph SPARQL "
                                  "database in export/store, loaded from nq or nt)")
    namespace: str = opt("https://w3id.org/graphmert/", help="IRI base of minted IRIs (entities "
                         "without an id, associations, runs, documents that are not PMIDs)")
    predicate_map: dict[str, str] = opt(
        factory=lambda: {
            "associated_with": "biolink:associated_with", "associates": "biolink:associated_with",
            "Association": "biolink:associated_with", "treats": "biolink:treats",
            "palliates": "biolink:ameliorates_condition", "causes": "biolink:causes",
            "binds": "biolink:directly_physically_interacts_with",
            "Bind": "biolink:directly_physically_interacts_with",
            "upregulates": "biolink:affects", "downregulates": "biolink:affects",
            "presents": "biolink:has_phenotype", "isa": "biolink:subclass_of",
            "includes": "biolink:has_member", "resembles": "biolink:similar_to",
            "Positive_Correlation": "biolink:positively_correlated_with",
            "Negative_Correlation": "biolink:negatively_correlated_with",
            "Drug_Interaction": "biolink:pharmacologically_interacts_with",
            "Cotreatment": "biolink:related_to",
            "Comparison": "biolink:related_to", "Conversion": "biolink:related_to"},
        help="seed-KG relation → Biolink predicate CURIE (a YAML value replaces the whole table)")
    predicate_qualifiers: dict[str, dict[str, str]] = opt(
        factory=lambda: {
            "upregulates": {"qualified_predicate": "biolink:causes",
                            "object_aspect_qualifier": "activity_or_abundance",
                            "object_direction_qualifier": "increased"},
            "downregulates": {"qualified_predicate": "biolink:causes",
                              "object_aspect_qualifier": "activity_or_abundance",
                              "object_direction_qualifier": "decreased"}},
        help="relation → {Biolink qualifier slot: value} written on its association and KGX edge, "
             "whatever predicate it maps to (the Biolink 4 qualifier pattern keeps a direction: "
             "'affects' + 'causes' increased activity_or_abundance); slots and values from "
             "graphmert/export/terms.py QUALIFIERS; a YAML value replaces the whole table")
    default_predicate: str = opt("biolink:related_to", help="Biolink predicate of relations "
                                 "missing from export.predicate_map (counted in the manifest)")
    category_map: dict[str, str] = opt(factory=dict, help="category as found in triples → Biolink "
                                       "category CURIE; Biolink CURIEs and corpus mention types "
                                       "(Gene, Chemical, ...) need no entry; unknown → NamedThing")
    prefix_map: dict[str, str] = opt(
        factory=dict,
        help="CURIE prefix → IRI base, overriding the built-in map (graphmert/prefixes.py, the one "
             "the seed-KG RDF reader uses too) per prefix; empty: the built-in map as it is")
    pmid_base: str = opt("http://www.ncbi.nlm.nih.gov/pubmed/",
                         help="IRI base of PubMed ids (all-digit document ids)")
    max_supporting_text: int = opt(5, min=0, help="distinct evidence sentences kept per association")
    max_graph_triples: int = opt(200000, min=0, help="most triples exported as ttl / jsonld / trig "
                                 "(built in memory); larger graphs get nt / nq / kgx only")
    knowledge_source: str = opt("infores:graphmert", help="primary_knowledge_source of every edge "
                                "(KGX column and RDF association): an infores: CURIE, lower case")
    report_samples: int = opt(50, min=0, help="sample triples (with evidence) in the HTML report")
    report_top_entities: int = opt(20, min=1, help="entities in the report's top-entities plot")


@dataclass
class PipelineConfig:
    """Orchestration on Dask (used by pipelines/, never by the library; docs/PIPELINE.md). No key
    here changes any output, so none is part of a stage's config hash."""

    scheduler: str = opt("local", help="'local' (a LocalCluster of worker processes), 'synchronous' "
                         "(every task in the driver process, for debugging) or a scheduler address "
                         "such as tcp://host:8786; DASK_SCHEDULER_ADDRESS and --scheduler override it")
    workers: int = opt(0, min=0, help="LocalCluster worker processes (one thread each); 0 = one "
                       "per core")
    retries: int = opt(2, min=0, help="times a shard task is retried after it raised or its worker "
                       "died")
    connect_timeout: float = opt(10.0, min=0.0, min_exclusive=True,
                                 help="seconds to reach a scheduler address and find a worker there")
    mirror: str = opt("", help="local working copy of a run directory given as an fsspec URL "
                      "(s3://…, gs://…, file://…); '' = $GRAPHMERT_CACHE/runs/<hash of the URL>, "
                      "GRAPHMERT_CACHE defaulting to ~/.cache/graphmert")


@dataclass
class Config:
    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    kg: KGConfig = field(default_factory=KGConfig)
    graph: GraphConfig = field(default_factory=GraphConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    ner: NERConfig = field(default_factory=NERConfig)
    extract: ExtractConfig = field(default_factory=ExtractConfig)
    export: ExportConfig = field(default_factory=ExportConfig)
    evaluate: EvaluateConfig = field(default_factory=EvaluateConfig)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)


# --------------------------------------------------------------------------------------------------
# Building and validating
# --------------------------------------------------------------------------------------------------


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _coerce(key: str, value: Any, tp: Any) -> Any:
    """Check ``value`` against the annotation ``tp``; allow int→float. Raise ConfigError naming key."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _coerce(key, value, a)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(f"{key}: expected {' or '.join(_type_name(a) for a in args)}, got {value!r}")
    if tp is Any:
        return value
    if origin is list:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{key}: expected a list, got {type(value).__name__} {value!r}")
        return [_coerce(f"{key}[{i}]", v, args[0] if args else Any) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping, got {type(value).__name__} {value!r}")
        vt = args[1] if len(args) == 2 else Any
        return {str(k): _coerce(f"{key}.{k}", v, vt) for k, v in value.items()}
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{key}: {value!r} is not allowed; choose from {list(args)}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true/false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
        return value
    raise ConfigError(f"{key}: unsupported type {tp!r}")  # pragma: no cover - programming error


def _check_range(key: str, value: Any, meta: dict) -> None:
    if value is None:
        return
    choices = meta.get("choices")
    if choices is not None and value not in choices:
        raise ConfigError(f"{key}: {value!r} is not allowed; choose from {list(choices)}")
    lo, hi = meta.get("min"), meta.get("max")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if lo is not None and (value < lo or (meta.get("min_exclusive") and value == lo)):
            op = ">" if meta.get("min_exclusive") else ">="
            raise ConfigError(f"{key}: {value!r} is out of range; must be {op} {lo}"
                              + (f" and <= {hi}" if hi is not None else ""))
        if hi is not None and value > hi:
            raise ConfigError(f"{key}: {value!r} is out of range; must be <= {hi}")


def build_section(cls: type, data: dict, prefix: str) -> Any:
    """Validate ``data`` against the dataclass ``cls`` (keys named ``prefix.key`` in errors).

    Used for the top-level sections and for nested typed option blocks (e.g. a backbone's options).
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix}: expected a mapping of keys, got {data!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for k in data:
        if k not in fields:
            raise ConfigError(f"{prefix}.{k}: unknown key; allowed keys of '{prefix}': {sorted(fields)}")
    kwargs = {}
    for name, f in fields.items():
        key = f"{prefix}.{name}"
        if name in data:
            value = _coerce(key, data[name], hints[name])
        elif f.default is not dataclasses.MISSING:
            value = f.default
        else:
            value = f.default_factory()  # type: ignore[misc]
        _check_range(key, value, dict(f.metadata))
        kwargs[name] = value
    return cls(**kwargs)


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
    if cfg.train.min_lr > cfg.train.lr:
        raise ConfigError(f"train.min_lr: {cfg.train.min_lr} must not exceed train.lr ({cfg.train.lr})")
    _check_scopes(cfg.extract.tail_scope_by_category, "extract.tail_scope_by_category",
                  field_choices(ExtractConfig, "tail_scope"))
    _check_scopes(cfg.kg.candidate_scope_by_category, "kg.candidate_scope_by_category",
                  field_choices(KGConfig, "candidate_scope"))
    titles = [cfg.kg.candidate_scope, *cfg.kg.candidate_scope_by_category.values()]
    if "title" in titles and cfg.corpus.chunk_mode != "document":
        raise ConfigError(f"kg.candidate_scope 'title' needs corpus.chunk_mode 'document' (a "
                          f"{cfg.corpus.chunk_mode!r} chunk holds several documents' titles)")
    _check_typer(cfg.extract)
    _check_control_settings(cfg.extract)
    check_outside_scope(cfg.extract)
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


def category_pair(key: str, option: str = "extract.tail_scope_by_category") -> frozenset[str]:
    """A key of a scope-per-category-pair ``option``, ``"Disease|SequenceVariant"`` (the ``biolink:``
    prefix optional) → {biolink:Disease, biolink:SequenceVariant}."""
    parts = [p.strip() for p in str(key).split("|")]
    if len(parts) != 2 or not all(parts):
        raise ConfigError(f"{option}: key {key!r} is not a category pair; write "
                          f"two Biolink categories joined by '|', e.g. 'Disease|SequenceVariant'")
    return frozenset(p if p.startswith("biolink:") else f"biolink:{p}" for p in parts)


def field_choices(cls: type, name: str) -> tuple:
    """The allowed values of option ``name`` of the config section ``cls`` (defined once, in its
    ``opt(choices=...)``)."""
    return next(f for f in dataclasses.fields(cls) if f.name == name).metadata["choices"]


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
    """A relation typer asked for (``relation_choice`` typer / typer_score, ``typer_min_relation``)
    needs ``typer_files`` to be fitted on: an error when the config is read, not after training."""
    asks = [f"extract.relation_choice {ex.relation_choice!r}"] if ex.relation_choice in TYPER_CHOICES else []
    asks += [f"extract.typer_min_relation {ex.typer_min_relation}"] if ex.typer_min_relation > 0 else []
    asks += ["the 'lexical' control (extract.controls)"] if "lexical" in ex.controls else []
    asks += [f"extract.lexical_weight {ex.lexical_weight}"] if ex.lexical_weight > 0 else []
    if asks and not ex.typer_files:
        raise ConfigError(f"{asks[0]} needs extract.typer_files: gold files with typed document-level "
                          f"relations to fit the relation typer on (e.g. BioRED train)")


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


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def parse_overrides(overrides: list[str] | tuple[str, ...]) -> dict:
    """Dotlist overrides (``a.b=1``, ``a.c=[x,y]``) → nested dict, via OmegaConf's parser."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    for o in overrides:
        if "=" not in o:
            raise ConfigError(f"override {o!r}: expected KEY=VALUE, e.g. model.hidden_size=256")
    try:
        conf = OmegaConf.from_dotlist(list(overrides))
        return OmegaConf.to_container(conf, resolve=True)  # type: ignore[return-value]
    except OmegaConfBaseException as e:
        raise ConfigError(f"override could not be parsed: {e}") from None


def build(data: dict | None = None) -> Config:
    """Validate a nested mapping of overrides and return the resolved :class:`Config`."""
    data = data or {}
    if not isinstance(data, dict):
        raise ConfigError(f"top level: expected a mapping of sections, got {type(data).__name__}")
    sections = {f.name: f for f in dataclasses.fields(Config)}
    for k in data:
        if k not in sections:
            raise ConfigError(f"{k}: unknown section; allowed sections: {sorted(sections)}")
    kwargs = {}
    for name, f in sections.items():
        kwargs[name] = build_section(f.default_factory, data.get(name) or {}, name)  # type: ignore[arg-type]
    cfg = Config(**kwargs)
    _check_cross(cfg)
    return cfg


def read_yaml(path: str | Path) -> dict:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: invalid YAML: {e}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections at the top level")
    return data


def read_layers(path: str | Path, _seen: tuple[Path, ...] = ()) -> dict:
    """A config file's mapping over its ``base:`` chain: ``base: other.yaml`` (relative to the file)
    is read first and this file's keys override it, so a variant config names only what it changes."""
    path = Path(path)
    data = read_yaml(path)
    base = data.pop("base", None)
    try:
        build(data)                                  # each file's keys are checked where they are
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None
    if base is None:
        return data
    if not isinstance(base, str) or not base:
        raise ConfigError(f"{path}: base: expected the path of another config file, got {base!r}")
    parent = (path.parent / base).resolve()
    if parent in _seen or parent == path.resolve():
        raise ConfigError(f"{path}: base: {base} leads back to a config already read (a cycle)")
    if not parent.is_file():
        raise ConfigError(f"{path}: base: {parent} does not exist")
    return _merge(read_layers(parent, (*_seen, path.resolve())), data)


def load_config(path: str | Path | None = None, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """Defaults ← YAML file (over its ``base:`` chain) ← dotted overrides, validated. Errors name the
    file and the key."""
    data: dict = {}
    if path is not None:
        data = read_layers(path)
        try:
            build(data)
        except ConfigError as e:
            raise ConfigError(f"{path}: {e}") from None
    if overrides:
        data = _merge(data, parse_overrides(overrides))
    return build(data)


def to_dict(cfg: Any) -> dict:
    return dataclasses.asdict(cfg)


def from_dict(data: dict) -> Config:
    """Rebuild a Config from :func:`to_dict` output (e.g. a saved ``config.yaml`` / ``config.json``)."""
    return build(data)


def save_config(cfg: Config, path: str | Path) -> Path:
    """Write the resolved config as YAML, atomically."""
    from graphmert.io import atomic_write_text

    return atomic_write_text(path, yaml.safe_dump(to_dict(cfg), sort_keys=False))


def section_hash(*sections: Any) -> str:
    """A stable content hash of one or more config sections (dataclasses or plain data)."""
    payload = [to_dict(s) if dataclasses.is_dataclass(s) else s for s in sections]
    blob = json.dumps(payload, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def describe(cls: type = Config) -> list[tuple[str, str, Any, str]]:
    """(dotted key, type, default, help) for every key — used by ``graphmert info --keys``."""
    rows = []
    for sec in dataclasses.fields(cls):
        hints = typing.get_type_hints(sec.default_factory)  # type: ignore[arg-type]
        inst = sec.default_factory()  # type: ignore[misc]
        for f in dataclasses.fields(inst):
            tp = hints[f.name]       # the full annotation: Optional[str], list[str], not "Optional"
            rows.append((f"{sec.name}.{f.name}",
                         tp.__name__ if isinstance(tp, type) else str(tp).replace("typing.", ""),
                         getattr(inst, f.name), f.metadata.get("help", "")))
    return rows
