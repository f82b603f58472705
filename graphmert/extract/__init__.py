"""Knowledge extraction: a trained GraphMERT reads documents and writes triples (DESIGN §8).

For each chunk of a document:

1. **Heads** — the entity mentions of the chunk: its annotated mentions, else the seed KG's
   lexicon matches, plus optionally the helper LLM's (:mod:`.heads`, :mod:`.llm`).
2. **Candidate relations** — per head, the relations whose schema domain admits the head's type,
   among those the model was trained on (:func:`.heads.candidate_relations`).
3. **Model queries** — per (head, relation) and tail length t, t ``[MASK]`` leaves on the head's
   root carrying the relation; one forward gives log p_q(k, v), the model's distribution over the
   vocabulary in each leaf slot k < t, several heads of a chunk sharing one graph (:mod:`.predict`).
4. **Tails** — where the paper asks an LLM to combine the top-k tokens of the slots, candidate
   tails (the document's entity mentions, KG names whose tokens are in the top-k, noun phrases of
   the chunk, optionally the helper LLM's phrases) are scored by the model's own length-normalised
   likelihood s(c) = (1/t) Σ_k log p_q(k, c_k); the best ``extract.tails_per_query`` per (head,
   relation) that are not the head, lie in ``extract.tail_scope`` and fit the relation's range are
   kept, with confidence exp(s) (:mod:`.tails`, :mod:`.extractor`).
5. **Filters** — confidence threshold, the relation's range type, and similarity β of the triple
   text to its chunk (:mod:`.filters`).
6. **Records** — each surviving triple is a :class:`.triples.Triple` with its
   :class:`.triples.Evidence` (document, chunk, sentence, spans, confidence); triples naming the same
   (head, relation, tail) are merged across chunks and documents and written as Parquet and JSON
   Lines (:mod:`.triples`).

:class:`.extractor.Extractor` runs steps 1–5 as named steps over one query plan. A model trained
with fixed K-leaf query groups (``model.leaf_query = "fixed"``) is asked the way it was trained
instead, choosing among a chunk's entities (:class:`.pairs.PairExtractor`).
"""
