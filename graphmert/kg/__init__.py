"""Seed knowledge graph: the graph and its relation vocabulary (:mod:`~graphmert.kg.graph`), loading
(KGX TSV, RDF, the shared Hetionet/DisGeNET/MeSH folder: :mod:`~graphmert.kg.loaders`), schema and
mention categories (:mod:`~graphmert.kg.schema`), lexicon and head linking, triple scoring, and the
injection algorithm. Import from the submodules: this package imports none of them, so that what
reads one (the model, the category of a mention) does not take the readers, the lexicon's language
tools and the injection into its stage's code fingerprint (:mod:`pipelines.fingerprint`)."""
