"""Synthetic annotated abstracts for the recognizer and the ner stage: template sentences whose
chemical, disease and gene slots are filled from name lists, with gold mentions (and ids) at their
exact offsets. Names and ids are the demo seed KG's, so the linker can resolve them."""

from __future__ import annotations

import random
import re

from graphmert.corpus.document import Document, Mention

CHEMICALS = [("metformin", "MESH:D008687"), ("glucose", "MESH:D005947"), ("statins", "MESH:D019161"),
             ("fibrates", "MESH:D058607"), ("sulfonylureas", "MESH:D013453"),
             ("thiazolidinediones", "MESH:D045162"), ("triglycerides", "MESH:D014280"),
             ("biguanides", "MESH:D001645")]
DISEASES = [("type 2 diabetes", "MESH:D003924"), ("obesity", "MESH:D009765"),
            ("hypertension", "MESH:D006973"), ("dyslipidemia", "MESH:D050171"),
            ("atherosclerosis", "MESH:D050197"), ("prediabetes", "MESH:D011236"),
            ("fatty liver", "MESH:D005234"), ("stroke", "MESH:D020521")]
GENES = [("INS", "NCBIGene:3630"), ("INSR", "NCBIGene:3643"), ("IRS1", "NCBIGene:3667"),
         ("SLC2A4", "NCBIGene:6517"), ("PPARG", "NCBIGene:5468"), ("PPARA", "NCBIGene:5465")]
TEMPLATES = ["Patients given {c} developed {d} with high {g} expression.",
             "In mice, {c}-induced {d} required {g}.",
             "We report {d} after {c} therapy; {g} levels were normal.",
             "Loss of {g} protects against {d} caused by {c}."]
SLOTS = {"c": ("Chemical", CHEMICALS), "d": ("Disease", DISEASES), "g": ("GeneOrGeneProduct", GENES)}


def template_document(doc_id: str, rng: random.Random, genes: bool = True, sentences: int = 2) -> Document:
    """A document of ``sentences`` template sentences with gold mentions (genes unannotated when
    ``genes`` is false: a corpus such as BC5CDR that does not annotate them)."""
    text, mentions = "", []
    for _ in range(sentences):
        text += " " if text else ""
        for piece in re.split(r"(\{[cdg]\})", rng.choice(TEMPLATES)):
            if re.fullmatch(r"\{[cdg]\}", piece):
                mtype, names = SLOTS[piece[1]]
                name, cid = rng.choice(names)
                if genes or piece[1] != "g":
                    mentions.append(Mention(len(text), len(text) + len(name), name, mtype, [cid]))
                text += name
            else:
                text += piece
    return Document(id=doc_id, text=text, title="", mentions=mentions)


def to_pubtator(docs: list[Document]) -> str:
    """PubTator text of ``docs`` (an empty title and the text as the abstract, so offsets are unchanged; a line per mention
    and per relation);
    numeric ids lose their prefix the way PubTator writes them."""
    out = []
    for d in docs:
        out += [f"{d.id}|t|", f"{d.id}|a|{d.text}"]
        for m in d.mentions:
            ids = ",".join(i.split(":", 1)[1] if i.startswith("NCBIGene:") else i for i in m.ids)
            out.append(f"{d.id}\t{m.start}\t{m.end}\t{m.text}\t{m.type}\t{ids}")
        out += [f"{d.id}\t{r.type}\t{r.head}\t{r.tail}" for r in d.relations]
        out.append("")
    return "\n".join(out) + "\n"
