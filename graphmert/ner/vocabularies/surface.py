"""Surface normalisation: the look-up form and key of a mention text, the markers a fuzzy match must
keep, MeSH's inverted names read back, and the word runs tried as seed-KG names
(:mod:`graphmert.ner.linking`)."""

from __future__ import annotations

import re
import unicodedata

NAME_MAX_WORDS = 6            # the longest word run tried as a seed-KG name
_RUN_WORD = re.compile(r"[A-Za-z0-9]+")
_RUN_JOIN = re.compile(r"[ -]|, ")

_GREEK = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ζ": "zeta", "η": "eta",
    "θ": "theta", "ι": "iota", "κ": "kappa", "λ": "lambda", "μ": "mu", "ν": "nu", "ξ": "xi",
    "ο": "omicron", "π": "pi", "ρ": "rho", "σ": "sigma", "ς": "sigma", "τ": "tau", "υ": "upsilon",
    "φ": "phi", "χ": "chi", "ψ": "psi", "ω": "omega",
}
_MARKS = str.maketrans("", "", "®™©")
_QUOTES = str.maketrans({"’": "'", "‘": "'", "`": "'", "´": "'", "′": "'"})
_POSSESSIVE = re.compile(r"'s\b")
_SEPARATORS = re.compile(r"[\s\-‐‑‒–—―−/_]+")
_EDGE = " .,;:!?\"'*"
_BRACKETS = (("(", ")"), ("[", "]"), ("{", "}"))


def _encloses(s: str, o: str, c: str) -> bool:
    """Whether the first character ``o`` of ``s`` is closed by its last character ``c``."""
    depth = 0
    for i, ch in enumerate(s):
        depth += (ch == o) - (ch == c)
        if depth == 0 and i < len(s) - 1:
            return False
    return depth == 0


def _trim(s: str) -> str:
    """Strip surrounding punctuation, enclosing brackets and unbalanced edge brackets, repeatedly."""
    prev = None
    while s != prev:
        prev = s
        s = s.strip(_EDGE)
        for o, c in _BRACKETS:
            if s.startswith(o) and s.endswith(c) and _encloses(s, o, c):
                s = s[1:-1]
            elif s.startswith(o) and s.count(o) > s.count(c):
                s = s[1:]
            elif s.endswith(c) and s.count(c) > s.count(o):
                s = s[:-1]
    return s


def fold_text(text: str) -> str:
    """``text`` NFKC-normalised and case-folded, trade marks dropped, Greek letters spelled out,
    quotes straightened, possessive "'s" and apostrophes removed: the character folding of
    :func:`normalize_surface`, which then also trims and joins words by one space."""
    s = unicodedata.normalize("NFKC", text.translate(_MARKS)).casefold()
    s = "".join(_GREEK.get(c, c) for c in s).translate(_QUOTES)
    return _POSSESSIVE.sub("", s).replace("'", "")


def fold_key(text: str) -> str:
    """:func:`fold_text` without separators (spaces, hyphens and dashes, "/", "_"): a word's share of
    a :func:`surface_key`. For a run of words that starts and ends with a letter or digit, the
    concatenation of its tokens' fold keys is the run's :func:`surface_key`
    (:mod:`graphmert.ner.dictionary` keys runs of tokens so)."""
    return _SEPARATORS.sub("", fold_text(text))


def normalize_surface(text: str) -> str:
    """The look-up form of a surface string (see :mod:`graphmert.ner.linking`); words joined by one
    space."""
    return " ".join(_trim(_SEPARATORS.sub(" ", fold_text(text))).split())


def surface_key(text: str) -> str:
    """:func:`normalize_surface` without spaces: the key of every exact table."""
    return normalize_surface(text).replace(" ", "")


def _singular_keys(text: str, key: str) -> list[str]:
    """Keys of the singular of a plural form: only for text ending in a lower-case "s" (acronyms such
    as "ALS" are not plurals) and keys of four or more characters, not ending in "ss".

    English drops "-es" only after a sibilant or an "o" ("abscesses", "boxes", "branches",
    "tomatoes"), where "-s" alone may be right too ("diseases", "headaches"), so both are tried;
    "-ies" is "-y" or "-ie" ("therapies", "calories"); elsewhere only "-s" goes: "Sales" is "sale",
    never "sal", a key that would answer the short form "Sal" (salidroside) with MeSH's Commerce."""
    if not text.rstrip(_EDGE + ")]}").endswith("s") or len(key) < 4 or key.endswith("ss"):
        return []
    out = [key[:-3] + "y"] if key.endswith("ies") else []
    out.append(key[:-1])
    if _SIBILANT_ES.search(key):
        out.append(key[:-2])
    return out


_SIBILANT_ES = re.compile(r"(?:s|x|z|ch|sh|o)es$")    # plurals that may drop "-es" (_singular_keys)


_GREEK_NAMES = "|".join(sorted(set(_GREEK.values()), key=len, reverse=True))
# a roman numeral may carry one letter, naming a subunit or a subtype ("glycoprotein Ib", "IIb/IIIa",
# "type Ia"; read bare, "glycoprotein Ib" matched APP's synonym "glycoprotein"); "via" is a word
_MARKER = re.compile(r"\d+|(?<![a-z])(?!via(?![a-z]))(?:(?:i{1,3}|iv|vi{0,3})[a-d]?|[a-z]|" + _GREEK_NAMES
                     + r")(?![a-z])")


def _markers(form: str) -> list[str]:
    """The tokens a fuzzy match must not change: numbers, single letters, Greek letter names and
    roman numerals, bare or with a letter ("type 1" ≠ "type 2", "IL-6" ≠ "IL-8", "hepatitis b" ≠
    "hepatitis c", "glycoprotein Ib" ≠ "glycoprotein"), sorted."""
    return sorted(_MARKER.findall(form))


def _uninverted(name: str) -> str | None:
    """MeSH's inverted names read back: "Leukemia, Myeloid, Acute" → "Acute Myeloid Leukemia"."""
    parts = [p.strip() for p in name.split(", ")]
    if len(parts) < 2 or not all(parts):
        return None
    return " ".join(reversed(parts))


def word_runs(text: str, max_words: int = NAME_MAX_WORDS, join: re.Pattern = _RUN_JOIN
              ) -> list[tuple[int, int]]:
    """(start, end) of every run of 1..``max_words`` ASCII words (letters and digits) of ``text``
    joined by what ``join`` matches (by default a space, a hyphen or ", "): the spans tried as
    seed-KG names (:mod:`graphmert.ner.gazetteer`)."""
    words = list(_RUN_WORD.finditer(text))
    out = []
    for i in range(len(words)):
        for j in range(i, min(i + max_words, len(words))):
            if j > i and not join.fullmatch(text[words[j - 1].end():words[j].start()]):
                break
            out.append((words[i].start(), words[j].end()))
    return out


def run_key(run: str) -> str:
    """:func:`surface_key` of a :func:`word_runs` run, computed directly: for ASCII letters and
    digits joined by " ", "-" or ", " the key is the lower-cased run without spaces and hyphens, so
    the Unicode normalisation of :func:`surface_key` is skipped for the millions of runs the linker
    keys in its training documents (:func:`_name_counts`)."""
    return run.lower().replace(" ", "").replace("-", "")


# words that qualify a disease: MeSH often files the qualified name under the plain one ("chronic
# ITP", "multiple fibroadenomas"; the side and the age at onset: "left homonymous hemianopsia",
# "neonatal apnea"), and a qualified name it knows as its own ("acute myeloid leukemia", "juvenile
# arthritis") is linked exactly before EntityLinker._modifier_links drops anything. Not the mode of
# inheritance: BioRED files "autosomal dominant muscle disorder" under the genetic diseases
# (held-out BioRED train, gold spans: disease accuracy 0.851 either way; raw, one recognizer,
# experiments/raw_entities.py: disease normalisation 0.815 -> 0.819)
_DISEASE_MODIFIERS = frozenset({"acute", "chronic", "multiple", "primary", "secondary", "severe", "mild",
                                "moderate", "recurrent", "isolated", "sporadic", "familial", "progressive",
                                "advanced", "persistent", "transient", "bilateral", "unilateral", "benign",
                                "malignant", "left", "right", "neonatal", "infantile", "juvenile",
                                "early-onset", "late-onset", "adult-onset"})


# a leading hyphenated word that says what a disease comes with or from ("SEPN-related myopathy",
# "HBV-associated hepatocellular carcinoma"): MeSH files it under the disease named after it
_RELATION_SUFFIX = re.compile(r"\S+-(?:related|associated|induced|mediated|dependent)", re.IGNORECASE)


def _is_modifier(word: str) -> bool:
    return word.lower() in _DISEASE_MODIFIERS or _RELATION_SUFFIX.fullmatch(word) is not None


def without_modifiers(text: str) -> str | None:
    """``text`` without its leading qualifying words: those of :data:`_DISEASE_MODIFIERS` and
    hyphenated "X-related", "X-associated", "X-induced" … words ("chronic ITP" → "ITP",
    "primary isolated dystonia" → "dystonia", "SEPN-related myopathy" → "myopathy"), or None when
    it starts with none of them or is nothing else."""
    words = text.split()
    n = 0
    while n < len(words) - 1 and _is_modifier(words[n]):
        n += 1
    return " ".join(words[n:]) if n else None


# British spellings, as American ones: MeSH, NCBI Gene and most training documents write
# "anemia", "edema", "esophagus", "sulfate", where British abstracts write "anaemia", "oedema",
# "oesophagus", "sulphate" (BC5CDR test: "hypoglycaemia", "angio-oedema", "leucopenia",
# "silver sulphadiazine" linked to nothing). Only the letters before which British English writes
# the digraph: "ae" in "haem-", "-aemia", "aetiology", "anaesthesia", "faecal", "paediatric",
# "phaeochromocytoma", "naevus"; "oe" in "oedema", "oesophagus", "oestrogen", "foetal", "diarrhoea",
# "coeliac", "amoebiasis"
_AMERICAN = ((re.compile(r"ae(?=[mtscdov])"), "e"), (re.compile(r"oe(?=[dsatlb])"), "e"),
             (re.compile(r"sulph"), "sulf"), (re.compile(r"\bleuc(?=[oa])"), "leuk"),
             (re.compile(r"\baluminium"), "aluminum"), (re.compile(r"(?<=[a-z]{2})our(?=s?\b)"), "or"),
             (re.compile(r"(?<=[a-z])ogue(?=s?\b)"), "og"))


def american_spelling(text: str) -> str | None:
    """``text`` case-folded (:func:`fold_text`) with British spellings written the American way
    (:data:`_AMERICAN`: "hypoglycaemia" → "hypoglycemia", "angio-oedema" → "angio-edema", "silver
    sulphadiazine" → "silver sulfadiazine", "leucopenia" → "leukopenia", "tumours" → "tumors",
    "analogue" → "analog"), or None when it has none. A look-up tries it only where the text itself
    links exactly to nothing (:meth:`~graphmert.ner.linking.EntityLinker.link`), so a word the rules
    misread ("Aedes" → "edes") matches no key."""
    folded = fold_text(text)
    out = folded
    for pattern, american in _AMERICAN:
        out = pattern.sub(american, out)
    return out if out != folded else None


# head nouns writers use for "disease of X" ("kidney lesions", "cardiac injury", "cerebellar
# anomalies") and "tumour of X" ("prostate tumors"): MeSH names the groups "X Diseases" and
# "X Neoplasms" ("Cardiac Disease" and "Cerebellar Disorders" are entry terms), so such a mention
# nothing else links is tried as "X disease" or "X neoplasms"
_GENERIC_HEADS = {**dict.fromkeys(("lesion", "lesions", "injury", "injuries", "damage", "anomaly", "anomalies",
                                   "abnormality", "abnormalities", "impairment", "impairments", "disorder",
                                   "disorders", "dysfunction", "dysfunctions"), "disease"),
                  **dict.fromkeys(("tumor", "tumors", "tumour", "tumours"), "neoplasms")}


def with_generic_head(text: str) -> str | None:
    """``text`` with its last word, a generic head of :data:`_GENERIC_HEADS`, replaced by the group's
    word ("kidney lesions" → "kidney disease", "prostate tumors" → "prostate neoplasms"), or None
    when it ends otherwise or is that word alone."""
    words = text.split()
    if len(words) < 2 or words[-1].lower() not in _GENERIC_HEADS:
        return None
    return " ".join([*words[:-1], _GENERIC_HEADS[words[-1].lower()]])


# what joins the names of a composite mention ("breast and ovarian cancer", "colorectal, breast and
# gastric cancers", "bipolar or unipolar disorder")
_COORDINATION = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and/or|and|or)\s+")
_MAX_CONJUNCTS = 6


def _conjuncts(text: str) -> list[str]:
    """``text`` cut at the coordinations of :data:`_COORDINATION` outside brackets; [text] when it
    has none, more than :data:`_MAX_CONJUNCTS` parts, or a last part that no "and" or "or" joins: a
    bare comma list ("EGF, PDGF") is more often several mentions a recognizer ran together."""
    cuts, depth, at = [], 0, 0
    for m in _COORDINATION.finditer(text):
        depth += sum(text[at:m.start()].count(o) - text[at:m.start()].count(c) for o, c in _BRACKETS)
        at = m.start()
        if depth == 0:
            cuts.append(m)
    parts, start = [], 0
    for m in cuts:
        parts.append(text[start:m.start()].strip())
        start = m.end()
    parts.append(text[start:].strip())
    joined = bool(cuts) and re.search(r"\b(?:and|or)\b", cuts[-1].group()) is not None
    if not joined or len(parts) > _MAX_CONJUNCTS or not all(parts):
        return [text]
    return parts


# a list or range of numbered names in one word run ("Smad2/3", "p85/PI3K", "PAK1-3", "MEK 1/2")
_SEVERAL = re.compile(r"[^\s/]/[^\s/]|\d\s*[-/]\s*\d")


def names_several(text: str) -> bool:
    """Whether a mention's text names several entities: a coordination ("breast and ovarian cancer":
    :func:`coordinated_forms`), a slash ("Smad2/3", "p85/PI3K") or a numbered range ("PAK1-3").
    A training document may annotate a bare family name ("caspase", "Smad", "cyclooxygenase") with
    the several genes it meant there; another document's family mention names none of them for sure,
    so :meth:`~graphmert.ner.linking.EntityLinker.link` gives such a text one id."""
    return _SEVERAL.search(text) is not None or len(_conjuncts(text)) > 1


def coordinated_forms(text: str) -> list[list[str]]:
    """The full names a composite mention coordinates, per conjunct in text order, each conjunct's
    tries most specific first; [] when ``text`` coordinates nothing.

    Writers share a head or a modifier between the conjuncts: a conjunct before the last takes the
    last one's trailing words ("colorectal and lung cancers" → "colorectal cancers"; "basal and
    squamous cell cancers" → "basal cell cancers", then "basal cancers"), the last takes the first
    one's leading words ("ventricular tachycardia and fibrillation" → "ventricular fibrillation";
    "T-cell leukaemia or lymphoma" → "T-cell lymphoma"); each is also tried alone, last, except a
    single word before the last conjunct, which modifies the shared head ("brainstem and cerebellar
    anomalies" names no "brainstem" disease). The last conjunct must follow "and" or "or". Written
    here, not taken from a library: scispaCy's and spaCy's pipelines have no composite-mention
    splitter, and NCBI's SimConcept is no Python package.
    """
    parts = _conjuncts(text)
    if len(parts) < 2:
        return []
    first, last = parts[0].split(), parts[-1].split()
    out = []
    for i, part in enumerate(parts):
        if i < len(parts) - 1:
            tries = [f"{part} {' '.join(last[-k:])}" for k in range(len(last) - 1, 0, -1)]
            tries += [part] if len(part.split()) > 1 else []
        else:
            tries = [*(f"{' '.join(first[:k])} {part}" for k in range(len(first) - 1, 0, -1)), part]
        out.append(list(dict.fromkeys(tries)))
    return out
