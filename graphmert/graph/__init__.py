"""Leafy chain graphs: the per-chunk structure and its layouts, closed-form distances
(:mod:`~graphmert.graph.layout`), the builder (chunks + seed KG → graphs, :mod:`~graphmert.graph.builder`),
collation into :class:`~graphmert.graph.batch.GraphBatch` (:mod:`~graphmert.graph.collate`), PyG
conversion and Parquet shards (:mod:`~graphmert.graph.io`). Import from the submodules: this package imports none of
them, so that what reads built graphs (the ``train`` stage) does not take the builder, and through it
the seed-KG readers and the corpus's language tools, into its code fingerprint (:mod:`pipelines.fingerprint`)."""
