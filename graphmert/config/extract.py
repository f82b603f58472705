"""Section ``extract``: triple extraction (DESIGN §8), and the values other sections and the checks
name it by."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from graphmert.config.options import opt

# relation_choice values that ask the relation typer (graphmert.extract.relation_typer)
TYPER_CHOICES = ("typer", "typer_score")
# the categories whose seed-KG names extract.name_mentions may make mentions: those the entity linker
# counts in its training documents (graphmert.ner.linking.EntityLinker.kg_name)
NAME_CATEGORIES = ("biolink:ChemicalEntity", "biolink:Disease", "biolink:Gene")
# the settings that turn the models' answers into graphmert's reported confidence, or choose the
# pairs a calibration map is fitted on: a map (extract.calibration) holds only under the values it was
# fitted with, which extract.calibration_fitted_with records and graphmert.config.checks compares.
# The models themselves (model.*, train.* but the ensemble) and the recognizer are not compared: a map
# is refitted after retraining them, and metrics.md's calibration table shows a misfit wherever gold exists
CALIBRATION_SETTINGS = ("train.ensemble_size", "extract.ranker", "extract.evidence", "extract.lexical_weight",
                        "extract.related_head_weight", "extract.one_relation_per_pair",
                        "extract.relation_choice", "extract.tails_per_query", "extract.min_confidence",
                        "extract.typer_min_relation", "extract.text_entities", "extract.tail_scope",
                        "extract.cross_chunk_pairs")


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
                               "relation the model saw injected in training, as its checkpoint "
                               "records them)")
    top_k: int = opt(20, min=1, help="top-k tokens kept per leaf slot (reported; 'paper' mode tails)")
    batch_size: int = opt(64, min=1, help="query graphs per forward pass")
    leaves_per_forward: int = opt(256, min=1, help="masked leaves per forward pass at most (a graph with "
                                  "more runs alone): bounds the [leaves, vocabulary] log-probabilities "
                                  "a forward holds, and so an extraction worker's memory (model.leaf_query "
                                  "'tail' models; 256 was the fastest on a CPU, a GPU may want more)")
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
                                   "sense per document), and again after the entity rules")
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
                                   "Biolink categories (biolink:Disease, biolink:ChemicalEntity, "
                                   "biolink:Gene) whose "
                                   "seed-KG names become mentions where they occur outside the "
                                   "recognised mentions, if the linker's training documents annotate "
                                   "them at least name_ratio of the times they contain them, or never "
                                   "contain them (graphmert.ner.gazetteer)")
    gene_name_labels: bool = opt(False, help="documents the ner stage's recognizer annotates: a "
                                 "chemical mention (recognised, or a seed-KG name extract.name_mentions "
                                 "added) that names a protein-coding gene of ner.vocabularies no "
                                 "training document annotates as a chemical, or that the training "
                                 "documents or the seed KG name as a gene only, is a gene mention "
                                 "(graphmert.ner.gazetteer)")
    protein_heads: bool = opt(False, help="documents the ner stage's recognizer annotates: a chemical "
                              "mention whose last word names a kind of protein ('amylase', 'calcium "
                              "channels', 'sulfonylurea receptor') and that no training document "
                              "annotates as a chemical is a gene mention (graphmert.ner.gazetteer)")
    route_trim: bool = opt(False, help="documents the ner stage's recognizer annotates: a chemical "
                           "mention that starts with a route word ('oral galactose') starts after it, "
                           "unless training annotates the whole text as a chemical ('oral contraceptives'; "
                           "graphmert.ner.gazetteer.route_trim)")
    greek_suffix: bool = opt(False, help="documents the ner stage's recognizer annotates: a gene "
                             "mention directly followed by a Greek letter as a word ('NRG-1 beta') ends "
                             "after it (graphmert.ner.gazetteer.greek_suffix)")
    name_extension: bool = opt(False, help="documents the ner stage's recognizer annotates: a "
                               "recognised mention takes the span of the longest name around it, up to "
                               "3 words on each side, that the linker's training documents or the seed "
                               "KG give its category ('retinopathy' -> 'retinopathy of prematurity'; "
                               "graphmert.ner.gazetteer.name_extension)")
    gene_extension: bool = opt(False, help="documents the ner stage's recognizer annotates: a "
                               "chemical mention inside a longer name, up to 3 words on each side, that "
                               "the linker's training documents or the seed KG give genes is a gene "
                               "mention over that name ('dopamine' -> 'dopamine beta-hydroxylase'; "
                               "graphmert.ner.gazetteer.gene_extension)")
    residue_chemicals: bool = opt(False, help="documents the ner stage's recognizer annotates: a "
                                  "chemical mention that is an amino acid written as a residue of a "
                                  "protein change ('tyrosine to histidine', 'asparagine 86') is no mention "
                                  "(graphmert.ner.variants.residue_chemicals)")
    sentence_cut: bool = opt(False, help="documents the ner stage's recognizer annotates: a recognised "
                             "mention that runs across a sentence end ('Serpina 3g. EPO/EPOR') is cut "
                             "there into mentions of the same label (graphmert.ner.span_cuts)")
    slash_split: bool = opt(False, help="documents the ner stage's recognizer annotates: a gene mention "
                            "'A/B' whose parts the linker links exactly to two genes, and whose whole "
                            "it does not, is two gene mentions ('EPO/EPOR'; not 'ERK1/2'; "
                            "graphmert.ner.span_cuts)")
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
    known_terms_only: bool = opt(False, help="documents the ner stage's recognizer annotates: a "
                                 "reference term (ner.vocabularies of kind terms) links a mention only "
                                 "to an id that the seed KG or the linker's training documents give the "
                                 "mention's category; false: to any id the term names (MeSH has no tree "
                                 "numbers, so 'testis' links as a disease; graphmert.ner.linking)")
    default_gene_species: str = opt("NCBITaxon:9606", help="documents the ner stage's recognizer "
                                    "annotates: the species of a gene mention whose sentence and "
                                    "document name none, for the reference gene look-ups "
                                    "(ner.vocabularies); it also wins a tie between the species a "
                                    "document names")
    variant_mentions: bool = opt(False, help="documents the ner stage's recognizer annotates: the "
                                 "sequence variants a rule-based finder reads in the text ('R215W', "
                                 "'c.643C>T', 'rs1800795') become mentions too, with tmVar-style ids, "
                                 "where no recognised mention lies (graphmert.ner.variants)")
    variant_keys: bool = opt(True, help="with variant_mentions: a variant no rs id names keeps the "
                             "tmVar key made from its text as its id; false: it is a mention without "
                             "an id (the key names that change in every gene, and BioRED gives most "
                             "such variants an rs id the project cannot look up)")
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
                                   "supervised word-feature baseline, and 'lexical_document', a "
                                   "regression over its score and the document's counts, need typer_files")
    control_tails_per_query: dict[str, int] = opt(
        factory=dict, help="tails_per_query of each control named here (e.g. {salience: 2}); a "
                           "control not named uses tails_per_query. Not 'candidates', which keeps all")
    control_min_confidence: dict[str, float] = opt(
        factory=dict, help="min_confidence of each control named here whose score is a probability "
                           "(untrained, lexical, lexical_document); such a control not named uses "
                           "min_confidence")
    stack_c: float = opt(0.1, min=0.0, min_exclusive=True, help="the lexical_document control: inverse L2 "
                         "strength of its regression (chosen on the tuning slice by "
                         "experiments/pair_stack.py)")
    stack_folds: int = opt(5, min=2, help="the lexical_document control: folds of the typer's documents "
                           "across which the word score it reads there is cross-fitted "
                           "(graphmert.extract.lexical_document)")
    cross_chunk_pairs: list[str] = opt(
        factory=list, help="'fixed' leaf-query models: unordered category pairs (e.g. "
                           "'Disease|SequenceVariant') whose entity pairs that no chunk holds together "
                           "are scored by a document-feature regression fitted on typer_files and kept "
                           "at cross_chunk_min_probability, in every extracting system "
                           "(graphmert.extract.cross_chunk). Needs typer_files")
    cross_chunk_min_probability: float = opt(
        0.35, min=0.0, max=1.0, help="the regression's probability a pair of cross_chunk_pairs needs to "
                                    "be kept (chosen by cross-validation over BioRED train: "
                                    "experiments/cross_chunk.py)")
    calibration: list[float] = opt(
        factory=list, help="Platt scaling of graphmert's reported confidences, [a, b]: each triple's "
                           "confidence c becomes sigmoid(a logit(c) + b), fitted where gold exists (a "
                           "held-out slice) by `graphmert calibrate`; a > 0 keeps the order, and the "
                           "thresholds (min_confidence, control_min_confidence) read the model's "
                           "confidence before the map, so the triples kept do not change. [] "
                           "(default): the confidences as the model "
                           "gives them (graphmert.extract.calibrate)")
    calibration_fitted_with: dict[str, Any] = opt(
        factory=dict, help="the settings extract.calibration was fitted with (each key of "
                           "CALIBRATION_SETTINGS, graphmert/config/extract.py, and its value), as "
                           "`graphmert calibrate` prints them: with a map set, a value that differs from "
                           "this config's is an error, since the map would misstate how often a triple "
                           "holds (refit it, or set 'extract.calibration=[]'); {} (a map set by hand): "
                           "not compared")
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
                            "mentions (chosen by experiments/relation_typer.py)")
    typer_apart: bool = opt(False, help="relation typer: also learn from the gold pairs whose entities "
                            "share no sentence, from their mention words and the document's words, and "
                            "type such a pair from them (off: from its category pair alone)")
    typer_shared: bool = opt(False, help="relation typer: give each type row's between and window "
                             "words a second copy shared by every category pair, so that a cue word "
                             "learnt on one pair types another (feature augmentation; graphmert.extract."
                             "relation_typer)")
    typer_roles: bool = opt(False, help="relation typer: add to each type row what the whole abstract "
                            "says of each entity of the pair: the word before each of its mentions and "
                            "the word attached after it ('X-induced', 'with X'), keyed by its category "
                            "and the category pair (graphmert.extract.relation_typer)")
    typer_c: float = opt(1.0, min=0.0, min_exclusive=True, help="relation typer: inverse L2 "
                         "strength of its logistic regressions (chosen by experiments/relation_typer.py)")
    type_head_weight: float = opt(0.0, min=0.0, max=1.0,
                                  help="with relation_choice 'typer', type the model rankers' pairs by "
                                       "(1-b) log P_typer + b log P_head, P_head the relation-type head "
                                       "over the model's pair states, fitted on typer_files with the "
                                       "encoder frozen (graphmert.extract.pair_heads); 0: the typer "
                                       "alone; 1: the model alone. The controls keep the typer")
    type_head_c: float = opt(0.01, min=0.0, min_exclusive=True, help="type head: inverse L2 "
                             "strength of its logistic regression (chosen by experiments/pair_heads.py)")
    related_head_weight: float = opt(0.0, min=0.0, max=1.0,
                                     help="pool the model rankers' score s (after lexical_weight) with "
                                          "the relatedness head's probability r that the document relates "
                                          "the pair, read from the model's pair states and fitted on "
                                          "typer_files with the encoder frozen (graphmert.extract."
                                          "pair_heads): s^(1-v) r^v. 0: off. Needs typer_files")
    related_head_c: float = opt(0.001, min=0.0, min_exclusive=True, help="relatedness head: inverse L2 "
                                "strength of its logistic regression (chosen by experiments/pair_heads.py)")
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
