"""Evaluation against gold document-level relations: gold sets (:mod:`~graphmert.eval.gold`), pair
metrics (:mod:`~graphmert.eval.metrics`), entity scores (:mod:`~graphmert.eval.entities`), baselines,
the bootstrap, calibration, loss buckets and the report. Import from the submodules: this package
imports none of them, so that what reads one (the recognizer, :mod:`~graphmert.eval.entities`) does not
take the others into its stage's code fingerprint (:mod:`pipelines.fingerprint`)."""
