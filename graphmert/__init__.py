"""GraphMERT: distil biomedical knowledge graphs from abstracts and a seed KG.

The library is pure: no Dask, no CLI parsing, and its modules change no process-wide setting when
imported. Their module-level state is the registries of swappable parts (:mod:`graphmert.registry`),
filled as the modules are imported. A process-wide setting that a function needs is changed only
while it runs (the :mod:`csv` field-size limit while a KG or cross-reference table is read, warning
filters while spaCy builds or runs a pipeline), but for the global random generators that training
seeds (torch's in the trainer; Python's, numpy's and torch's through spaCy when the entity
recognizer trains). Orchestration lives in ``pipelines``.
"""

__version__ = "0.1.0"
