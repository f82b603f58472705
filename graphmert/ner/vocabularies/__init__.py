"""Reference vocabularies and the surface keys they are indexed by: what the entity linker
(:mod:`graphmert.ner.linking`) looks names up in, and what the recognizer's dictionary flags
(:mod:`graphmert.ner.dictionary`) are read from. A package of its own, below both, so that a
stage's code fingerprint holds only what it reads: a change to the linker's look-up code rebuilds
the linker and never retrains the recognizer; a change here reruns both.

* :mod:`~graphmert.ner.vocabularies.surface` — :func:`~graphmert.ner.vocabularies.surface.normalize_surface`,
  :func:`~graphmert.ner.vocabularies.surface.surface_key` and the word runs tried as seed-KG names;
* :mod:`~graphmert.ner.vocabularies.tables` — reading the cross-reference and names tables (TSV);
* :mod:`~graphmert.ner.vocabularies.terms` — reference term tables (``ner.vocabularies`` of kind
  ``terms``: MeSH descriptors' names and entry terms);
* :mod:`~graphmert.ner.vocabularies.genes` — reference gene vocabularies (NCBI Gene per species,
  HomoloGene and RGD orthologs) and their look-up, with name variants;
* :mod:`~graphmert.ner.vocabularies.errors` — :class:`VocabularyError`, which a bad file raises
  (the linker's :class:`~graphmert.ner.linking.LinkerError` is the same class).
"""
