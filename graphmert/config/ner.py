"""Section ``ner``: entity recognition and linking for documents without annotations (docs/NER.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from graphmert.config.options import opt

VOCABULARY_KINDS = ("gene_info", "gene_table", "homologene", "rgd_orthologs", "terms")
#: ``ner.dictionary_flags``: each flag set and the vocabulary kinds it is read from (graphmert.ner.dictionary)
FLAG_SETS = {"genes": ("gene_info", "gene_table"), "terms": ("terms",)}


@dataclass
class VocabularySource:
    """One reference vocabulary the linker reads (``ner.vocabularies``; docs/NER.md, "Linker").

    Kinds, each a tab-separated file, gzipped or not:

    * ``gene_info`` — NCBI Gene's 16-column ``gene_info`` (``#tax_id GeneID Symbol … Synonyms …
      description type_of_gene … Full_name_from_nomenclature_authority … Other_designations …``);
      every row's species is its ``tax_id``;
    * ``gene_table`` — a header with ``#GeneID``/``GeneID``, ``Symbol`` and ``Synonyms`` (``|``-separated,
      ``-`` for none) columns; the genes' species is ``taxon`` (the shared rat table);
    * ``homologene`` — HomoloGene groups, ``#HID tax_id GeneID Symbol``: the genes of a group are
      orthologs;
    * ``rgd_orthologs`` — RGD's ortholog file: a rat gene and its human and mouse orthologs' NCBI ids;
    * ``terms`` — ``id name terms`` (``|``-separated entry terms), ids prefixed with ``prefix``, names
      for the ``categories`` given (MeSH descriptors: diseases and chemicals).
    """

    kind: str = opt("gene_info", choices=VOCABULARY_KINDS, help="the file's format (see above)")
    path: str = opt("", help="the file, gzipped or not")
    taxon: Optional[str] = opt(None, help="gene_table: the NCBITaxon id of its genes (NCBITaxon:10116)")
    prefix: str = opt("MESH:", help="terms: the CURIE prefix of its bare ids")
    categories: list[str] = opt(factory=lambda: ["biolink:Disease", "biolink:ChemicalEntity"],
                                help="terms: the Biolink categories its names are looked up for")


@dataclass
class NERConfig:
    """Entity recognition and linking for documents without annotations (issue #19, docs/NER.md).

    The ``ner`` stage trains a spaCy NER from the gold mentions of ``ner.paths``, the ``link`` stage
    builds the linker from the same documents, the seed KG and ``ner.vocabularies`` (each stage
    reads only its own keys: pipelines/stages/ner_documents.py); ``extract`` then gives every
    extraction document that has no mentions the recognised, linked ones. Empty ``ner.paths``: no
    recognizer, documents without mentions get lexicon heads.
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
    encoder: str = opt("window", choices=("window", "bilstm"),
                       help="the recognizer's tok2vec context encoder: 'window', spaCy's "
                            "MaxoutWindowEncoder (ner.depth convolutional layers, each reading "
                            "ner.window_size words on each side); 'bilstm', spaCy's TorchBiLSTMEncoder "
                            "(ner.depth bidirectional LSTM layers over the whole document, PyTorch): each "
                            "epoch about 4x faster, but it needs more of them (held-out BioRED train: "
                            "ner.epochs 40, ner.patience 5; docs/experiments/recognizer-training.md)")
    width: int = opt(96, min=8, help="width of the recognizer's tok2vec")
    depth: int = opt(4, min=1, help="layers of the recognizer's tok2vec encoder: convolutional, or "
                     "LSTM with ner.encoder 'bilstm' (1 or 2 there)")
    window_size: int = opt(1, min=1, help="words on each side that each convolutional layer of the "
                           "recognizer's tok2vec reads (ner.encoder 'window')")
    embed_rows: int = opt(2000, min=100, help="rows of each hashed embedding table of the tok2vec "
                          "(word norm, prefix, suffix, shape; 'characters': the lower-case form)")
    vectors: int = opt(0, min=0, help="dimensions of the word vectors the ner stage learns "
                       "(skip-gram word2vec, graphmert.ner.vectors) from the text of every ner.paths "
                       "document it may read, annotated or not, for the recognizer's tok2vec to read "
                       "beside its hashed features; 0: none")
    dictionary_flags: list[str] = opt(factory=list, help="flag sets of ner.vocabularies whose runs the "
                                      "recognizer's tok2vec embeds as a feature beside its hashed ones "
                                      "(graphmert.ner.dictionary): 'genes' (gene names of the gene_info "
                                      "and gene_table sources), 'terms' (names of the terms sources, "
                                      "MeSH's); needs ner.embed 'hash'; empty: none")
    epochs: int = opt(12, min=1, help="most passes over the training documents")
    max_minutes: float = opt(60.0, min=0.0, min_exclusive=True,
                             help="wall-clock cap on training the whole recognizer, a safety net: "
                                  "ner.epochs and ner.patience stop each model, so that neither load "
                                  "nor core speed changes it, and only a model that would train "
                                  "past this cap stops before the epoch that would end past it (a "
                                  "warning; a weaker model). The ner stage trains its models at once, "
                                  "one per worker (pipeline.workers), the largest first")
    patience: int = opt(3, min=1, help="stop after this many epochs without a better selection F1, counted once "
                                      "the model finds anything (F1 > 0): averaged weights start from zero")
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
    vocabularies: list[VocabularySource] = opt(
        factory=list, help="reference vocabularies the linker looks names up in (NCBI Gene per species, "
        "orthologs, MeSH descriptors): a list of {kind: gene_info | gene_table | homologene | "
        "rgd_orthologs | terms, path, taxon (gene_table: its NCBITaxon id), prefix and categories "
        "(terms: the ids' CURIE prefix, MESH:, and the Biolink categories it names)} "
        "(graphmert.config.ner.VocabularySource, docs/NER.md)")
    fuzzy_threshold: float = opt(0.8, min=0.0, max=1.01,
                                 help="character-trigram cosine at or above which an unmatched "
                                      "mention links to its nearest known name of its category; "
                                      "above 1: never (chosen by experiments/linking.py on held-out "
                                      "BioRED train documents)")
