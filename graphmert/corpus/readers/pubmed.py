"""PubMed / MEDLINE XML (``PubmedArticleSet`` or ``MedlineCitationSet``, ``.xml`` or ``.xml.gz``).

Each ``PubmedArticle`` (or bare ``MedlineCitation``) becomes one document: ``id`` = PMID, ``title`` =
ArticleTitle, text = ``title + " " + abstract`` where the abstract joins its ``AbstractText`` sections
(``"LABEL: text"`` for labelled ones) with single spaces. Inline markup (``<i>``, ``<sup>`` ...) is kept
as its text. MeSH headings, journal, year and DOI go into ``metadata``. There are no mentions.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterator

from graphmert.corpus.document import Document
from graphmert.corpus.readers.base import (
    READERS, Location, ReadContext, ReadRecord, iter_xml_children, join_title_abstract, local_name,
)

__all__ = ["read_pubmed_xml"]

_ARTICLE_TAGS = {"PubmedArticle", "MedlineCitation"}


def _text(el: ET.Element | None) -> str:
    """All text inside ``el`` (inline markup included), whitespace runs collapsed."""
    if el is None:
        return ""
    return " ".join("".join(el.itertext()).split())


def _abstract(citation: ET.Element) -> str:
    sections = []
    for t in citation.iterfind("Article/Abstract/AbstractText"):
        body = _text(t)
        label = t.get("Label")
        if label and body:
            sections.append(f"{label}: {body}")
        elif body:
            sections.append(body)
    return " ".join(sections)


def _metadata(citation: ET.Element, article: ET.Element, pmid: str) -> dict:
    meta: dict = {"pmid": pmid}
    journal = _text(citation.find("Article/Journal/Title"))
    if journal:
        meta["journal"] = journal
    date = citation.find("Article/Journal/JournalIssue/PubDate")
    if date is not None:
        year = date.findtext("Year") or (date.findtext("MedlineDate") or "")[:4]
        if year:
            meta["year"] = year
    headings = citation.findall("MeshHeadingList/MeshHeading/DescriptorName")
    if headings:
        meta["mesh_headings"] = [_text(h) for h in headings]
        if all(h.get("UI") for h in headings):
            meta["mesh_ids"] = [f"MESH:{h.get('UI')}" for h in headings]
    for aid in article.iterfind("PubmedData/ArticleIdList/ArticleId"):
        if aid.get("IdType") == "doi" and aid.text:
            meta["doi"] = aid.text.strip()
    return meta


@READERS.register("pubmed_xml")
def read_pubmed_xml(path: Path, ctx: ReadContext) -> Iterator[ReadRecord]:
    """Documents of a PubMed XML file, one article in memory at a time."""
    n = 0
    for el in iter_xml_children(path, ctx):
        if local_name(el.tag) not in _ARTICLE_TAGS:
            continue                                # DeleteCitation, PubmedBookArticle, ...
        n += 1
        citation = el if local_name(el.tag) == "MedlineCitation" else el.find("MedlineCitation")
        where = Location(str(path), record=f"article {n}")
        pmid = (citation.findtext("PMID") or "").strip() if citation is not None else ""
        if not pmid:
            ctx.bad(where, "article has no MedlineCitation/PMID")
            continue
        where = where.with_record(f"article {n} (PMID {pmid})")
        title = _text(citation.find("Article/ArticleTitle"))
        abstract = _abstract(citation)
        if not title and not abstract:
            ctx.bad(where, "article has neither an ArticleTitle nor an AbstractText")
            continue
        doc = Document(id=pmid, text=join_title_abstract(title, abstract), title=title,
                       source=str(path), metadata=_metadata(citation, el, pmid))
        yield ReadRecord(doc, where)
