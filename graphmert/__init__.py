"""GraphMERT: distil biomedical knowledge graphs from abstracts and a seed KG.

The library is pure: no Dask, no CLI parsing, no global state. Orchestration lives in ``pipelines``.
"""

__version__ = "0.1.0"
