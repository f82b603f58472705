#!/usr/bin/env python3
"""Build the embedded GraphMERT demo data: a small diabetes / metabolic-disease corpus and seed KG.

Everything here was written for the project (Apache-2.0, like the rest of it); no text is taken from
any dataset. The script is the single source of truth for the files next to it:

    corpus.jsonl    one abstract-like document per line; entity mentions with exact offsets
    kg_nodes.tsv    KGX-style node table:  id, name, category, synonyms ('|'-separated)
    kg_edges.tsv    KGX-style edge table:  subject, predicate, object, primary_knowledge_source,
                    publications ('|'-separated demo doc ids that mention both ends)

How the data is written down:

* ``NODES``      -- (CURIE, name, Biolink category, synonyms). Names and synonyms form the lexicon.
* ``FACTS``      -- per predicate, lines ``head: tail; tail; ...`` using node *names*.
* ``HELD_OUT``   -- facts that the texts state but the seed KG deliberately lacks (for extraction
                    to rediscover); never written to ``kg_edges.tsv``.
* ``DOCUMENTS``  -- (title, abstract) literal strings. Mentions are *not* marked by hand: every
                    occurrence of every node name or synonym is found by leftmost-longest lexicon
                    matching, so offsets are exact by construction.

Lexicon matching rules: a surface form that contains an upper-case letter (gene symbols, "T2D",
"Donohue syndrome") matches case-sensitively, an all-lower-case one case-insensitively; a match
may not touch a letter, digit, underscore or hyphen on either side ("insulin-treated" is not
"insulin"); overlapping candidates are resolved leftmost first, then longest.

Usage::

    python data/demo/build_demo.py            # (re)write the three files next to this script
    python data/demo/build_demo.py --check    # exit 1 if the files are not what it would write
    python data/demo/build_demo.py --stats    # print the counts table used in data/README.md

The output is byte-for-byte deterministic. Only the standard library is used.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
SOURCE = "graphmert:demo"
FILES = ("corpus.jsonl", "kg_nodes.tsv", "kg_edges.tsv")
NODE_COLUMNS = ("id", "name", "category", "synonyms")
EDGE_COLUMNS = ("subject", "predicate", "object", "primary_knowledge_source", "publications")

# Biolink category -> the corpus mention type.
CATEGORY_TYPE = {
    "biolink:Disease": "Disease",
    "biolink:PhenotypicFeature": "Phenotype",
    "biolink:Drug": "Chemical",
    "biolink:ChemicalEntity": "Chemical",
    "biolink:Gene": "Gene",
}

# predicate -> allowed (subject type, object type) pairs (mention types, see CATEGORY_TYPE).
SCHEMA = {
    "associated_with": {("Gene", "Disease")},
    "treats": {("Chemical", "Disease")},
    "binds": {("Chemical", "Gene")},
    "upregulates": {("Disease", "Gene"), ("Chemical", "Gene")},
    "downregulates": {("Disease", "Gene"), ("Chemical", "Gene")},
    "presents": {("Disease", "Phenotype")},
    "isa": {("Disease", "Disease"), ("Chemical", "Chemical")},
    "causes": {("Disease", "Disease")},
}

# Length limits the documents are written to (title + abstract words; abstract sentences).
WORDS = (120, 250)
SENTENCES = (4, 8)

_D, _P, _DR, _CH, _G = ("biolink:Disease", "biolink:PhenotypicFeature", "biolink:Drug",
                        "biolink:ChemicalEntity", "biolink:Gene")

# --------------------------------------------------------------------------------------------------
# Nodes: (CURIE, name, category, synonyms). MeSH descriptors/supplementary concepts for diseases,
# phenotypes and chemicals; NCBI Gene ids for human genes. Names are short on purpose: a node's
# name is the tail string injected as leaves (at most 7 WordPiece tokens).
# --------------------------------------------------------------------------------------------------

NODES: list[tuple[str, str, str, tuple[str, ...]]] = [
    # ---- diseases ----
    ("MESH:D003920", "diabetes", _D, ("diabetes mellitus",)),
    ("MESH:D003924", "type 2 diabetes", _D, ("type 2 diabetes mellitus", "T2D", "T2DM")),
    ("MESH:D003922", "type 1 diabetes", _D, ("type 1 diabetes mellitus", "T1D")),
    ("MESH:D016640", "gestational diabetes", _D, ("gestational diabetes mellitus", "GDM")),
    ("MESH:D011236", "prediabetes", _D, ("prediabetic state",)),
    ("MESH:D009765", "obesity", _D, ()),
    ("MESH:D024821", "metabolic syndrome", _D, ("MetS", "insulin resistance syndrome")),
    ("MESH:D007333", "insulin resistance", _D, ()),
    ("MESH:D065626", "nonalcoholic fatty liver disease", _D,
     ("non-alcoholic fatty liver disease", "NAFLD", "nonalcoholic steatohepatitis", "NASH")),
    ("MESH:D005234", "fatty liver", _D, ("hepatic steatosis",)),
    ("MESH:D008107", "liver diseases", _D, ("liver disease",)),
    ("MESH:D008103", "liver cirrhosis", _D, ("cirrhosis",)),
    ("MESH:D006528", "hepatocellular carcinoma", _D, ("HCC",)),
    ("MESH:D003928", "diabetic nephropathy", _D,
     ("diabetic kidney disease", "DKD", "diabetic nephropathies")),
    ("MESH:D003930", "diabetic retinopathy", _D, ()),
    ("MESH:D003929", "diabetic neuropathy", _D,
     ("diabetic peripheral neuropathy", "diabetic polyneuropathy", "diabetic neuropathies")),
    ("MESH:D017719", "diabetic foot", _D, ("diabetic foot ulcer", "diabetic foot ulcers")),
    ("MESH:D016883", "diabetic ketoacidosis", _D, ("DKA",)),
    ("MESH:D048909", "diabetes complications", _D, ("diabetic complications",)),
    ("MESH:D008269", "macular edema", _D, ("diabetic macular edema",)),
    ("MESH:D006973", "hypertension", _D, ("high blood pressure",)),
    ("MESH:D050171", "dyslipidemia", _D, ("dyslipidemias", "dyslipidaemia")),
    ("MESH:D006937", "hypercholesterolemia", _D, ("familial hypercholesterolemia",)),
    ("MESH:D015228", "hypertriglyceridemia", _D, ()),
    ("MESH:D002318", "cardiovascular disease", _D, ("cardiovascular diseases", "CVD")),
    ("MESH:D003324", "coronary artery disease", _D, ("CAD",)),
    ("MESH:D050197", "atherosclerosis", _D, ()),
    ("MESH:D009203", "myocardial infarction", _D, ()),
    ("MESH:D020521", "stroke", _D, ()),
    ("MESH:D006333", "heart failure", _D, ()),
    ("MESH:D014652", "vascular diseases", _D, ()),
    ("MESH:D012164", "retinal diseases", _D, ()),
    ("MESH:D051436", "chronic kidney disease", _D, ("CKD", "chronic renal insufficiency")),
    ("MESH:D007676", "end-stage renal disease", _D, ("ESRD", "end-stage kidney disease")),
    ("MESH:D007674", "kidney diseases", _D, ("kidney disease",)),
    ("MESH:D011085", "polycystic ovary syndrome", _D, ("PCOS",)),
    ("MESH:D000140", "lactic acidosis", _D, ()),
    ("MESH:D044903", "congenital hyperinsulinism", _D, ()),
    ("MESH:D056731", "Donohue syndrome", _D, ("leprechaunism",)),
    ("MESH:D052496", "familial partial lipodystrophy", _D, ()),
    ("MESH:D020181", "obstructive sleep apnea", _D, ("OSA",)),
    ("MESH:D010195", "pancreatitis", _D, ("acute pancreatitis",)),
    # ---- phenotypes ----
    ("MESH:D006943", "hyperglycemia", _P, ()),
    ("MESH:D007003", "hypoglycemia", _P, ()),
    ("MESH:D006946", "hyperinsulinemia", _P, ("hyperinsulinism",)),
    ("MESH:D011141", "polyuria", _P, ()),
    ("MESH:D059606", "polydipsia", _P, ("excessive thirst",)),
    ("MESH:D015430", "weight gain", _P, ()),
    ("MESH:D015431", "weight loss", _P, ()),
    ("MESH:D005221", "fatigue", _P, ()),
    ("MESH:D056128", "abdominal obesity", _P, ("central obesity", "visceral obesity")),
    ("MESH:D000419", "albuminuria", _P, ("microalbuminuria",)),
    ("MESH:D011507", "proteinuria", _P, ()),
    ("MESH:D004487", "edema", _P, ("peripheral edema",)),
    ("MESH:D009437", "neuropathic pain", _P, ("neuralgia",)),
    ("MESH:D010292", "paresthesia", _P, ("paresthesias",)),
    ("MESH:D006987", "numbness", _P, ("hypesthesia",)),
    ("MESH:D014786", "blurred vision", _P, ("vision disorders", "visual disturbance")),
    ("MESH:D001766", "blindness", _P, ("vision loss",)),
    ("MESH:D009325", "nausea", _P, ()),
    ("MESH:D014839", "vomiting", _P, ()),
    ("MESH:D015746", "abdominal pain", _P, ()),
    ("MESH:D003681", "dehydration", _P, ()),
    ("MESH:D007662", "ketosis", _P, ()),
    ("MESH:D004417", "dyspnea", _P, ("shortness of breath",)),
    ("MESH:D006628", "hirsutism", _P, ()),
    ("MESH:D007249", "inflammation", _P, ()),
    # ---- drugs ----
    ("MESH:D008687", "metformin", _DR, ()),
    ("MESH:D007328", "insulin", _DR, ()),
    ("MESH:D000069036", "insulin glargine", _DR, ()),
    ("MESH:D061268", "insulin lispro", _DR, ()),
    ("MESH:D061267", "insulin aspart", _DR, ()),
    ("MESH:D000068900", "sitagliptin", _DR, ()),
    ("MESH:D000069896", "linagliptin", _DR, ()),
    ("MESH:D000069450", "liraglutide", _DR, ()),
    ("MESH:C000591245", "semaglutide", _DR, ()),
    ("MESH:D000077270", "exenatide", _DR, ()),
    ("MESH:C570240", "empagliflozin", _DR, ()),
    ("MESH:C529054", "dapagliflozin", _DR, ()),
    ("MESH:D000068896", "canagliflozin", _DR, ()),
    ("MESH:D000077205", "pioglitazone", _DR, ()),
    ("MESH:D000077154", "rosiglitazone", _DR, ()),
    ("MESH:D005905", "glibenclamide", _DR, ("glyburide",)),
    ("MESH:C057619", "glimepiride", _DR, ()),
    ("MESH:D005907", "gliclazide", _DR, ()),
    ("MESH:D020909", "acarbose", _DR, ()),
    ("MESH:D000069059", "atorvastatin", _DR, ()),
    ("MESH:D019821", "simvastatin", _DR, ()),
    ("MESH:D000068718", "rosuvastatin", _DR, ()),
    ("MESH:D000069438", "ezetimibe", _DR, ()),
    ("MESH:D011345", "fenofibrate", _DR, ()),
    ("MESH:D017706", "lisinopril", _DR, ()),
    ("MESH:D019808", "losartan", _DR, ()),
    ("MESH:D000068756", "valsartan", _DR, ()),
    ("MESH:D001241", "aspirin", _DR, ("acetylsalicylic acid",)),
    ("MESH:D000077403", "orlistat", _DR, ()),
    # ---- drug classes and endogenous chemicals ----
    ("MESH:D007004", "hypoglycemic agents", _CH,
     ("glucose-lowering drugs", "glucose-lowering agents", "antidiabetic drugs")),
    ("MESH:D001645", "biguanides", _CH, ("biguanide",)),
    ("MESH:D045162", "thiazolidinediones", _CH, ("thiazolidinedione", "glitazones")),
    ("MESH:D013453", "sulfonylureas", _CH, ("sulfonylurea",)),
    ("MESH:D054873", "DPP-4 inhibitors", _CH,
     ("DPP-4 inhibitor", "dipeptidyl peptidase-4 inhibitors", "gliptins")),
    ("MESH:D000077203", "SGLT2 inhibitors", _CH,
     ("SGLT2 inhibitor", "sodium-glucose cotransporter 2 inhibitors", "gliflozins")),
    ("MESH:D000097789", "GLP-1 receptor agonists", _CH, ("GLP-1 receptor agonist",)),
    ("MESH:D019161", "statins", _CH, ("statin", "HMG-CoA reductase inhibitors")),
    ("MESH:D058607", "fibrates", _CH, ("fibrate", "fibric acids")),
    ("MESH:D000806", "ACE inhibitors", _CH,
     ("ACE inhibitor", "angiotensin-converting enzyme inhibitors")),
    ("MESH:D047228", "angiotensin receptor blockers", _CH,
     ("angiotensin receptor blocker", "angiotensin II receptor blockers", "ARBs")),
    ("MESH:D000960", "lipid-lowering drugs", _CH, ("hypolipidemic agents",)),
    ("MESH:D000959", "antihypertensive agents", _CH, ("antihypertensive drugs",)),
    ("MESH:D005947", "glucose", _CH, ("blood glucose",)),
    ("MESH:D052216", "GLP-1", _CH, ("glucagon-like peptide 1", "glucagon-like peptide-1")),
    ("MESH:D006442", "HbA1c", _CH, ("glycated hemoglobin", "hemoglobin A1c")),
    ("MESH:D008078", "LDL cholesterol", _CH, ("LDL-C", "low-density lipoprotein cholesterol")),
    ("MESH:D014280", "triglycerides", _CH, ("triglyceride",)),
    # ---- genes (human, NCBI Gene) ----
    ("NCBIGene:3630", "INS", _G, ("insulin gene",)),
    ("NCBIGene:3643", "INSR", _G, ("insulin receptor",)),
    ("NCBIGene:3667", "IRS1", _G, ("IRS-1", "insulin receptor substrate 1")),
    ("NCBIGene:6517", "SLC2A4", _G, ("GLUT4", "glucose transporter 4")),
    ("NCBIGene:5468", "PPARG", _G,
     ("PPAR-gamma", "peroxisome proliferator-activated receptor gamma")),
    ("NCBIGene:5465", "PPARA", _G,
     ("PPAR-alpha", "peroxisome proliferator-activated receptor alpha")),
    ("NCBIGene:10891", "PPARGC1A", _G, ("PGC-1alpha",)),
    ("NCBIGene:6934", "TCF7L2", _G, ("transcription factor 7-like 2",)),
    ("NCBIGene:3767", "KCNJ11", _G, ("Kir6.2",)),
    ("NCBIGene:6833", "ABCC8", _G, ("SUR1", "sulfonylurea receptor 1")),
    ("NCBIGene:2645", "GCK", _G, ("glucokinase",)),
    ("NCBIGene:6927", "HNF1A", _G, ("HNF-1alpha", "hepatocyte nuclear factor 1 alpha")),
    ("NCBIGene:3172", "HNF4A", _G, ("HNF-4alpha", "hepatocyte nuclear factor 4 alpha")),
    ("NCBIGene:169026", "SLC30A8", _G, ("ZnT8",)),
    ("NCBIGene:54901", "CDKAL1", _G, ()),
    ("NCBIGene:3952", "LEP", _G, ("leptin",)),
    ("NCBIGene:3953", "LEPR", _G, ("leptin receptor",)),
    ("NCBIGene:9370", "ADIPOQ", _G, ("adiponectin",)),
    ("NCBIGene:79068", "FTO", _G, ("fat mass and obesity-associated",)),
    ("NCBIGene:4160", "MC4R", _G, ("melanocortin 4 receptor", "melanocortin-4 receptor")),
    ("NCBIGene:2740", "GLP1R", _G, ("GLP-1 receptor", "glucagon-like peptide-1 receptor")),
    ("NCBIGene:1803", "DPP4", _G, ("DPP-4", "dipeptidyl peptidase-4", "CD26")),
    ("NCBIGene:6524", "SLC5A2", _G, ("SGLT2", "sodium-glucose cotransporter 2")),
    ("NCBIGene:7124", "TNF", _G, ("TNF-alpha", "tumor necrosis factor alpha")),
    ("NCBIGene:3569", "IL6", _G, ("IL-6", "interleukin-6")),
    ("NCBIGene:1401", "CRP", _G, ("C-reactive protein",)),
    ("NCBIGene:6347", "CCL2", _G, ("MCP-1", "monocyte chemoattractant protein-1")),
    ("NCBIGene:5054", "SERPINE1", _G, ("PAI-1", "plasminogen activator inhibitor-1")),
    ("NCBIGene:5562", "PRKAA1", _G, ("AMPK", "AMP-activated protein kinase")),
    ("NCBIGene:5105", "PCK1", _G, ("PEPCK", "phosphoenolpyruvate carboxykinase")),
    ("NCBIGene:2538", "G6PC", _G, ("glucose-6-phosphatase",)),
    ("NCBIGene:6720", "SREBF1", _G, ("SREBP-1c",)),
    ("NCBIGene:3156", "HMGCR", _G, ("HMG-CoA reductase",)),
    ("NCBIGene:3949", "LDLR", _G, ("LDL receptor",)),
    ("NCBIGene:255738", "PCSK9", _G, ()),
    ("NCBIGene:345", "APOC3", _G, ("apolipoprotein C-III",)),
    ("NCBIGene:4023", "LPL", _G, ("lipoprotein lipase",)),
    ("NCBIGene:29881", "NPC1L1", _G, ()),
    ("NCBIGene:1636", "ACE", _G, ("angiotensin-converting enzyme",)),
    ("NCBIGene:185", "AGTR1", _G, ("angiotensin II type 1 receptor", "AT1 receptor")),
    ("NCBIGene:7422", "VEGFA", _G, ("VEGF", "vascular endothelial growth factor")),
    ("NCBIGene:7040", "TGFB1", _G, ("TGF-beta1", "transforming growth factor beta 1")),
    ("NCBIGene:80339", "PNPLA3", _G, ()),
    ("NCBIGene:53345", "TM6SF2", _G, ()),
    ("NCBIGene:5742", "PTGS1", _G, ("COX-1", "cyclooxygenase-1")),
    ("NCBIGene:5406", "PNLIP", _G, ("pancreatic lipase",)),
    ("NCBIGene:8972", "MGAM", _G, ("maltase-glucoamylase",)),
]

# --------------------------------------------------------------------------------------------------
# Seed-KG facts, by predicate: "head: tail; tail; ..." with node names (one head per line).
# --------------------------------------------------------------------------------------------------

FACTS: dict[str, str] = {
    "associated_with": """
        TCF7L2: type 2 diabetes; gestational diabetes
        KCNJ11: diabetes; type 2 diabetes; congenital hyperinsulinism
        ABCC8: diabetes; type 2 diabetes; congenital hyperinsulinism
        GCK: diabetes; type 2 diabetes; congenital hyperinsulinism
        HNF1A: diabetes; type 2 diabetes
        HNF4A: diabetes; type 2 diabetes; congenital hyperinsulinism
        INS: type 1 diabetes; diabetes
        INSR: Donohue syndrome; insulin resistance
        IRS1: type 2 diabetes; insulin resistance
        PPARG: type 2 diabetes; familial partial lipodystrophy; insulin resistance; obesity
        PPARGC1A: type 2 diabetes; obesity
        FTO: obesity; type 2 diabetes
        MC4R: obesity; type 2 diabetes
        LEP: obesity
        LEPR: obesity
        ADIPOQ: type 2 diabetes; metabolic syndrome; insulin resistance; obesity
        ADIPOQ: coronary artery disease
        TNF: insulin resistance; obesity; type 2 diabetes
        IL6: type 2 diabetes; metabolic syndrome; insulin resistance
        CRP: cardiovascular disease; metabolic syndrome; coronary artery disease; type 2 diabetes
        SLC2A4: insulin resistance; type 2 diabetes
        GLP1R: type 2 diabetes
        DPP4: type 2 diabetes
        SLC30A8: type 1 diabetes
        CDKAL1: gestational diabetes
        PNPLA3: nonalcoholic fatty liver disease; liver cirrhosis; hepatocellular carcinoma
        TM6SF2: liver cirrhosis
        SREBF1: nonalcoholic fatty liver disease
        HMGCR: hypercholesterolemia
        LDLR: hypercholesterolemia; coronary artery disease
        PCSK9: hypercholesterolemia; coronary artery disease
        APOC3: hypertriglyceridemia; coronary artery disease
        LPL: hypertriglyceridemia
        ACE: hypertension; diabetic nephropathy
        AGTR1: hypertension
        VEGFA: diabetic retinopathy; macular edema
        TGFB1: diabetic nephropathy
        CCL2: diabetic nephropathy
        SERPINE1: metabolic syndrome; obesity
    """,
    "treats": """
        metformin: type 2 diabetes; prediabetes; gestational diabetes
        insulin: type 1 diabetes; type 2 diabetes; gestational diabetes; diabetes
        insulin: diabetic ketoacidosis
        insulin glargine: type 1 diabetes; type 2 diabetes
        insulin lispro: type 1 diabetes; type 2 diabetes
        insulin aspart: type 1 diabetes
        sitagliptin: type 2 diabetes
        linagliptin: type 2 diabetes
        liraglutide: type 2 diabetes; obesity
        semaglutide: type 2 diabetes; obesity
        exenatide: type 2 diabetes
        empagliflozin: type 2 diabetes
        dapagliflozin: type 2 diabetes; chronic kidney disease
        canagliflozin: type 2 diabetes; diabetic nephropathy
        pioglitazone: type 2 diabetes; nonalcoholic fatty liver disease
        rosiglitazone: type 2 diabetes
        glibenclamide: type 2 diabetes; diabetes; gestational diabetes
        glimepiride: type 2 diabetes
        gliclazide: type 2 diabetes
        acarbose: type 2 diabetes; prediabetes
        atorvastatin: hypercholesterolemia; dyslipidemia; coronary artery disease
        simvastatin: hypercholesterolemia; coronary artery disease
        rosuvastatin: hypercholesterolemia; dyslipidemia
        ezetimibe: hypercholesterolemia
        fenofibrate: hypertriglyceridemia; dyslipidemia
        lisinopril: hypertension; diabetic nephropathy; heart failure
        losartan: hypertension; diabetic nephropathy
        valsartan: hypertension; heart failure
        aspirin: coronary artery disease; myocardial infarction; stroke
        orlistat: obesity
    """,
    "binds": """
        insulin: INSR
        insulin glargine: INSR
        insulin lispro: INSR
        insulin aspart: INSR
        sitagliptin: DPP4
        linagliptin: DPP4
        GLP-1: GLP1R
        liraglutide: GLP1R
        semaglutide: GLP1R
        exenatide: GLP1R
        empagliflozin: SLC5A2
        dapagliflozin: SLC5A2
        canagliflozin: SLC5A2
        pioglitazone: PPARG
        rosiglitazone: PPARG
        glibenclamide: ABCC8; KCNJ11
        glimepiride: ABCC8; KCNJ11
        gliclazide: ABCC8
        acarbose: MGAM
        atorvastatin: HMGCR
        simvastatin: HMGCR
        rosuvastatin: HMGCR
        ezetimibe: NPC1L1
        fenofibrate: PPARA
        lisinopril: ACE
        losartan: AGTR1
        valsartan: AGTR1
        aspirin: PTGS1
        orlistat: PNLIP
        glucose: SLC2A4; SLC5A2; GCK
        LDL cholesterol: LDLR
        triglycerides: LPL
    """,
    "upregulates": """
        obesity: LEP; TNF; IL6; CRP; SERPINE1; CCL2
        type 2 diabetes: CRP; IL6; TNF; DPP4
        metabolic syndrome: CRP; SERPINE1
        nonalcoholic fatty liver disease: SREBF1; TNF
        diabetic nephropathy: TGFB1; VEGFA
        diabetic retinopathy: VEGFA; IL6
        metformin: PRKAA1
        pioglitazone: ADIPOQ; SLC2A4
        rosiglitazone: ADIPOQ; SLC2A4
        atorvastatin: LDLR; PCSK9
        simvastatin: LDLR
        fenofibrate: LPL
        insulin: SREBF1; SERPINE1
        liraglutide: INS
        exenatide: INS
        semaglutide: INS
        glucose: INS; TGFB1; VEGFA
        atherosclerosis: CCL2
    """,
    "downregulates": """
        obesity: ADIPOQ; SLC2A4; PPARGC1A; INSR
        type 2 diabetes: ADIPOQ; SLC2A4; PPARGC1A; IRS1; INS
        metabolic syndrome: ADIPOQ
        nonalcoholic fatty liver disease: ADIPOQ; PPARA
        polycystic ovary syndrome: ADIPOQ; SLC2A4
        insulin resistance: SLC2A4; IRS1
        type 1 diabetes: INS
        metformin: PCK1; G6PC; SREBF1
        insulin: PCK1; G6PC
        atorvastatin: CRP
        rosuvastatin: CRP
        pioglitazone: TNF; CRP; IL6
        rosiglitazone: TNF
        liraglutide: CRP
        semaglutide: CRP
        fenofibrate: APOC3
    """,
    "presents": """
        diabetes: hyperglycemia; polyuria; polydipsia
        type 2 diabetes: hyperglycemia; polyuria; polydipsia; fatigue; blurred vision
        type 2 diabetes: hyperinsulinemia
        type 1 diabetes: hyperglycemia; polyuria; polydipsia; weight loss; ketosis
        gestational diabetes: hyperglycemia
        prediabetes: hyperglycemia
        obesity: weight gain; hyperinsulinemia
        metabolic syndrome: abdominal obesity; hyperinsulinemia; hyperglycemia
        insulin resistance: hyperinsulinemia
        diabetic nephropathy: albuminuria; proteinuria; edema
        diabetic neuropathy: neuropathic pain; paresthesia; numbness
        diabetic retinopathy: blurred vision; blindness
        diabetic ketoacidosis: ketosis; dehydration; nausea; vomiting; abdominal pain; hyperglycemia
        congenital hyperinsulinism: hypoglycemia; hyperinsulinemia
        Donohue syndrome: hyperinsulinemia; hyperglycemia
        familial partial lipodystrophy: hyperinsulinemia
        nonalcoholic fatty liver disease: fatigue
        polycystic ovary syndrome: hirsutism; hyperinsulinemia; weight gain
        heart failure: dyspnea; edema; fatigue
        lactic acidosis: nausea; vomiting; abdominal pain
        chronic kidney disease: edema; proteinuria; fatigue
    """,
    "isa": """
        type 2 diabetes: diabetes
        type 1 diabetes: diabetes
        gestational diabetes: diabetes
        prediabetes: diabetes
        Donohue syndrome: diabetes
        diabetic ketoacidosis: diabetes complications
        diabetic nephropathy: diabetes complications; kidney diseases
        diabetic neuropathy: diabetes complications
        diabetic retinopathy: diabetes complications; retinal diseases
        diabetic foot: diabetic neuropathy; diabetes complications
        metabolic syndrome: insulin resistance
        nonalcoholic fatty liver disease: fatty liver
        fatty liver: liver diseases
        liver cirrhosis: liver diseases
        hypercholesterolemia: dyslipidemia
        hypertriglyceridemia: dyslipidemia
        hypertension: vascular diseases
        atherosclerosis: vascular diseases
        chronic kidney disease: kidney diseases
        end-stage renal disease: chronic kidney disease
        metformin: biguanides
        pioglitazone: thiazolidinediones
        rosiglitazone: thiazolidinediones
        sitagliptin: DPP-4 inhibitors
        linagliptin: DPP-4 inhibitors
        empagliflozin: SGLT2 inhibitors
        dapagliflozin: SGLT2 inhibitors
        canagliflozin: SGLT2 inhibitors
        liraglutide: GLP-1 receptor agonists
        semaglutide: GLP-1 receptor agonists
        exenatide: GLP-1 receptor agonists
        glibenclamide: sulfonylureas
        glimepiride: sulfonylureas
        gliclazide: sulfonylureas
        insulin glargine: insulin
        insulin lispro: insulin
        insulin aspart: insulin
        insulin: hypoglycemic agents
        acarbose: hypoglycemic agents
        biguanides: hypoglycemic agents
        thiazolidinediones: hypoglycemic agents
        DPP-4 inhibitors: hypoglycemic agents
        SGLT2 inhibitors: hypoglycemic agents
        GLP-1 receptor agonists: hypoglycemic agents
        sulfonylureas: hypoglycemic agents
        atorvastatin: statins
        simvastatin: statins
        rosuvastatin: statins
        fenofibrate: fibrates
        statins: lipid-lowering drugs
        fibrates: lipid-lowering drugs
        ezetimibe: lipid-lowering drugs
        lisinopril: ACE inhibitors
        losartan: angiotensin receptor blockers
        valsartan: angiotensin receptor blockers
        ACE inhibitors: antihypertensive agents
        angiotensin receptor blockers: antihypertensive agents
    """,
    "causes": """
        type 2 diabetes: diabetic nephropathy; diabetic retinopathy; diabetic neuropathy
        type 2 diabetes: coronary artery disease; stroke; cardiovascular disease; heart failure
        type 2 diabetes: chronic kidney disease
        type 1 diabetes: diabetic ketoacidosis; diabetic nephropathy; diabetic retinopathy
        type 1 diabetes: diabetic neuropathy
        diabetes: cardiovascular disease
        obesity: type 2 diabetes; hypertension; nonalcoholic fatty liver disease; dyslipidemia
        metabolic syndrome: type 2 diabetes; cardiovascular disease
        insulin resistance: type 2 diabetes; nonalcoholic fatty liver disease
        prediabetes: type 2 diabetes
        gestational diabetes: type 2 diabetes
        hypertension: stroke; chronic kidney disease; heart failure; coronary artery disease
        dyslipidemia: atherosclerosis
        hypercholesterolemia: coronary artery disease; atherosclerosis
        atherosclerosis: coronary artery disease; stroke; myocardial infarction
        coronary artery disease: myocardial infarction
        diabetic nephropathy: end-stage renal disease; chronic kidney disease
        diabetic neuropathy: diabetic foot
        diabetic retinopathy: macular edema
        nonalcoholic fatty liver disease: liver cirrhosis
        liver cirrhosis: hepatocellular carcinoma
        chronic kidney disease: end-stage renal disease
        hypertriglyceridemia: pancreatitis
    """,
}

# Stated in the texts, deliberately absent from the seed KG: what extraction should find anew.
HELD_OUT: dict[str, str] = {
    "treats": """
        fenofibrate: diabetic retinopathy
        empagliflozin: heart failure
        dapagliflozin: heart failure
        semaglutide: nonalcoholic fatty liver disease
        metformin: polycystic ovary syndrome
    """,
    "associated_with": """
        TM6SF2: nonalcoholic fatty liver disease
        SLC30A8: type 2 diabetes
        CDKAL1: type 2 diabetes
        GCK: gestational diabetes
    """,
    "causes": """
        obesity: obstructive sleep apnea; gestational diabetes
        nonalcoholic fatty liver disease: hepatocellular carcinoma
        type 2 diabetes: nonalcoholic fatty liver disease
    """,
    "upregulates": """
        diabetic nephropathy: CCL2
    """,
}

# --------------------------------------------------------------------------------------------------
# Documents: (title, abstract). Written for the project; numbers are illustrative, not real trials.
# --------------------------------------------------------------------------------------------------

DOCUMENTS: list[tuple[str, str]] = [
    (  # 001
        "Metformin suppresses hepatic gluconeogenesis through AMP-activated protein kinase in type "
        "2 diabetes",
        "Metformin is the most widely prescribed first-line drug for type 2 diabetes (T2D), yet "
        "its molecular mode of action is still debated. We examined primary human hepatocytes and "
        "liver biopsies from 48 patients with T2D before and after 12 weeks of treatment. "
        "Metformin increased the phosphorylation and activity of AMPK and lowered the expression "
        "of the gluconeogenic enzymes PEPCK and glucose-6-phosphatase. These changes were "
        "accompanied by reduced hepatic glucose output and lower fasting glucose. Expression of "
        "SREBP-1c, a driver of de novo lipogenesis, also decreased. HbA1c fell by 1.1 percentage "
        "points on average and no patient developed hypoglycemia. Our results support the view "
        "that metformin lowers hepatic glucose production in T2D at least partly through AMPK "
        "activation and repression of PCK1 and G6PC transcription.",
    ),
    (  # 002
        "Common variants in TCF7L2 and risk of type 2 diabetes: a case-control study",
        "Genome-wide association studies have identified transcription factor 7-like 2 (TCF7L2) as "
        "the strongest common genetic risk locus for type 2 diabetes. We genotyped 3,214 cases and "
        "4,087 controls of European ancestry for the rs7903146 variant. Each copy of the T allele "
        "was associated with 1.4-fold higher odds of type 2 diabetes after adjustment for age, sex "
        "and body mass index. Carriers showed lower insulin secretion during an oral glucose "
        "tolerance test, whereas insulin resistance did not differ between genotypes. The same "
        "allele was enriched in women with a history of gestational diabetes. These findings "
        "confirm that TCF7L2 is associated with type 2 diabetes mainly through impaired beta cell "
        "function rather than through obesity or reduced insulin sensitivity.",
    ),
    (  # 003
        "Empagliflozin reduces cardiovascular death and heart failure hospitalization in type 2 "
        "diabetes",
        "SGLT2 inhibitors lower blood glucose by blocking renal glucose reabsorption in the "
        "proximal tubule. In this randomized trial, 6,850 adults with type 2 diabetes and "
        "established cardiovascular disease received empagliflozin or placebo on top of standard "
        "care. Over a median follow-up of three years, empagliflozin reduced the composite of "
        "cardiovascular death, nonfatal myocardial infarction and nonfatal stroke. Hospitalization "
        "for heart failure fell by roughly one third, and the benefit appeared within months, "
        "before any meaningful change in HbA1c. Genital mycotic infections were more common with "
        "the drug, while diabetic ketoacidosis remained rare. Empagliflozin, a selective inhibitor "
        "of SGLT2, protects patients with type 2 diabetes against cardiovascular events, and the "
        "early effect suggests that it can treat heart failure directly.",
    ),
    (  # 004
        "Dapagliflozin in chronic kidney disease and heart failure with and without diabetes",
        "Background: Dapagliflozin inhibits the sodium-glucose cotransporter 2 (SGLT2) in the "
        "kidney and was developed as a glucose-lowering drug. Methods: We pooled two randomized "
        "trials that enrolled 4,120 patients with chronic kidney disease (CKD) and 4,460 patients "
        "with heart failure and reduced ejection fraction, about half of whom had type 2 diabetes. "
        "Results: Dapagliflozin slowed the decline in estimated glomerular filtration rate and "
        "reduced progression to end-stage renal disease in patients with CKD. In heart failure, "
        "the drug lowered the risk of worsening heart failure or cardiovascular death by 26 "
        "percent. The effects were similar in patients with and without diabetes. Conclusions: "
        "Dapagliflozin treats CKD and heart failure independently of its action on blood glucose.",
    ),
    (  # 005
        "Liraglutide for weight management in adults with obesity",
        "Glucagon-like peptide-1 (GLP-1) is an incretin hormone that stimulates insulin secretion "
        "and promotes satiety. Liraglutide is a long-acting GLP-1 receptor agonist that binds the "
        "GLP-1 receptor in the pancreas and the brain. In a 56-week trial, 3,120 adults with "
        "obesity were assigned to liraglutide 3.0 mg daily or placebo together with lifestyle "
        "counselling. Mean weight loss was 8.0 percent with liraglutide and 2.6 percent with "
        "placebo, and fewer participants on the drug progressed from prediabetes to type 2 "
        "diabetes. High-sensitivity C-reactive protein also declined. Nausea and vomiting were the "
        "most frequent adverse events and were mostly transient. Liraglutide is an effective "
        "treatment for obesity and improves several cardiometabolic risk factors, including blood "
        "pressure and fasting insulin.",
    ),
    (  # 006
        "Once-weekly semaglutide improves glycemic control and liver fat in type 2 diabetes",
        "Semaglutide is a GLP-1 receptor agonist with a half-life of about one week that binds "
        "GLP1R with high affinity. We randomly assigned 420 patients with type 2 diabetes "
        "inadequately controlled on metformin to semaglutide or sitagliptin for 40 weeks. "
        "Semaglutide lowered HbA1c by 1.6 percentage points and body weight by 6 kg, clearly more "
        "than sitagliptin. In a magnetic resonance substudy of participants with nonalcoholic "
        "fatty liver disease (NAFLD), liver fat content fell by 40 percent and resolution of "
        "nonalcoholic steatohepatitis was more frequent with semaglutide. C-reactive protein "
        "declined in parallel. These data indicate that semaglutide treats type 2 diabetes and may "
        "also be used to treat NAFLD.",
    ),
    (  # 007
        "Sitagliptin prolongs incretin action by inhibiting dipeptidyl peptidase-4",
        "Dipeptidyl peptidase-4 (DPP-4) rapidly cleaves GLP-1, so that the active hormone survives "
        "only minutes in plasma. Sitagliptin is an oral DPP-4 inhibitor that binds the catalytic "
        "site of DPP4. In 250 patients with type 2 diabetes, sitagliptin doubled the concentration "
        "of active GLP-1 after a mixed meal, increased glucose-dependent insulin secretion and "
        "suppressed glucagon. After 24 weeks, HbA1c was 0.7 percentage points lower than with "
        "placebo. Body weight did not change, and the incidence of hypoglycemia was similar to "
        "placebo because the insulinotropic effect of GLP-1 fades when glucose is normal. Unlike "
        "sulfonylureas, sitagliptin does not stimulate insulin release when blood glucose is low. "
        "Sitagliptin is a weight-neutral option for type 2 diabetes with a low risk of "
        "hypoglycemia.",
    ),
    (  # 008
        "Pioglitazone improves insulin sensitivity and steatohepatitis through PPAR-gamma "
        "activation",
        "Pioglitazone is a thiazolidinedione that binds and activates the nuclear receptor PPARG. "
        "We treated 110 patients with type 2 diabetes and biopsy-proven nonalcoholic "
        "steatohepatitis with pioglitazone or placebo for 18 months. Pioglitazone improved insulin "
        "resistance, raised circulating adiponectin by more than twofold and increased GLUT4 "
        "expression in adipose tissue. Hepatic steatosis, inflammation and ballooning improved, "
        "and serum TNF-alpha and C-reactive protein decreased. Plasma triglycerides and free fatty "
        "acids also fell, reflecting reduced lipolysis in adipose tissue. Weight gain of about 3 "
        "kg and peripheral edema were the main adverse effects, and the drug should be avoided in "
        "patients with heart failure. Pioglitazone therefore treats both type 2 diabetes and "
        "NAFLD, largely by restoring adiponectin signalling.",
    ),
    (  # 009
        "Activating KCNJ11 and ABCC8 mutations cause neonatal diabetes responsive to sulfonylureas",
        "The pancreatic beta cell ATP-sensitive potassium channel is formed by Kir6.2, encoded by "
        "KCNJ11, and the sulfonylurea receptor 1 (SUR1), encoded by ABCC8. Activating mutations in "
        "either gene keep the channel open and prevent insulin release, causing diabetes in the "
        "first months of life. We followed 62 infants with such mutations who were switched from "
        "insulin injections to oral glibenclamide. Glibenclamide binds SUR1 and closes the "
        "channel, and 55 patients stopped insulin with a fall in HbA1c from 8.1 to 6.4 percent. "
        "Inactivating mutations in the same genes have the opposite effect and cause congenital "
        "hyperinsulinism with severe hypoglycemia. Genetic testing of KCNJ11 and ABCC8 should be "
        "offered to every child diagnosed with diabetes before six months of age.",
    ),
    (  # 010
        "HNF1A mutations define a monogenic diabetes that responds to low-dose sulfonylureas",
        "Heterozygous mutations in hepatocyte nuclear factor 1 alpha (HNF1A) cause an autosomal "
        "dominant form of diabetes that is often misdiagnosed as type 1 diabetes. In a crossover "
        "trial, 36 patients with HNF1A mutations received gliclazide and metformin in random "
        "order. Fasting glucose fell 5.2-fold more with gliclazide than with metformin, reflecting "
        "marked sensitivity to sulfonylureas. Many patients who had been treated with insulin for "
        "years could stop injections. A common low-frequency HNF1A variant also raised the risk of "
        "type 2 diabetes in the general population. Mutations in the related gene HNF1B cause a "
        "different syndrome in which diabetes is combined with kidney disease. Recognizing HNF1A "
        "diabetes allows inexpensive treatment with a sulfonylurea in place of insulin.",
    ),
    (  # 011
        "Glucokinase mutations, mild fasting hyperglycemia and pregnancy outcomes",
        "Glucokinase (GCK) acts as the glucose sensor of the beta cell and sets the threshold for "
        "insulin secretion. Heterozygous inactivating GCK mutations cause a stable, mild fasting "
        "hyperglycemia that rarely needs treatment, whereas activating mutations lead to "
        "congenital hyperinsulinism. We screened 1,200 pregnant women with gestational diabetes "
        "(GDM) and found a GCK mutation in 1.1 percent, so that GCK is associated with gestational "
        "diabetes in a recognizable subgroup. In these women insulin did not change fetal growth "
        "unless the fetus had not inherited the mutation. Common variants near GCK were also "
        "linked to type 2 diabetes. Testing for GCK in lean women with GDM and a family history of "
        "diabetes can prevent unnecessary treatment.",
    ),
    (  # 012
        "The FTO locus, adiposity and type 2 diabetes",
        "Variants in the first intron of the fat mass and obesity-associated (FTO) gene show the "
        "strongest common association with obesity in children and adults. In 38,000 participants, "
        "each risk allele was associated with 1.2 kg higher body weight and 1.3-fold higher odds "
        "of obesity. The same allele increased the risk of type 2 diabetes, but the association "
        "disappeared after adjustment for body mass index, indicating that FTO acts through "
        "adiposity. Carriers reported greater energy intake rather than lower physical activity. "
        "Physical activity attenuated the effect of the FTO genotype on weight gain by about 30 "
        "percent. FTO variants had no independent effect on insulin secretion or on hypertension. "
        "FTO is therefore associated with obesity and, indirectly, with type 2 diabetes.",
    ),
    (  # 013
        "Loss-of-function MC4R variants in severe early-onset obesity",
        "The melanocortin 4 receptor (MC4R) integrates signals from leptin and proopiomelanocortin "
        "(POMC) neurons in the hypothalamus to control appetite. We sequenced MC4R in 2,000 "
        "children with severe obesity and identified loss-of-function mutations in 5.8 percent. "
        "Carriers had hyperphagia, increased linear growth and marked hyperinsulinemia compared "
        "with obese children without mutations. Rare POMC mutations produced a similar syndrome "
        "with adrenal insufficiency. Heterozygous MC4R variants were also associated with type 2 "
        "diabetes in adults, mediated by higher body weight. Setmelanocortin, an MC4R agonist, "
        "reduced hunger and body weight in carriers of POMC and LEPR mutations in a small "
        "open-label study. MC4R deficiency is the most common monogenic cause of obesity, and the "
        "pathway is a target for new anti-obesity drugs.",
    ),
    (  # 014
        "Leptin and leptin receptor deficiency: lessons from monogenic obesity",
        "Leptin is secreted by adipocytes in proportion to fat mass and signals through the leptin "
        "receptor in the hypothalamus. Children with homozygous mutations in LEP or LEPR develop "
        "severe obesity within the first months of life, with intense hunger, hyperinsulinemia and "
        "hypogonadism. Daily injections of recombinant leptin reversed the weight gain of children "
        "with LEP deficiency, but had no effect in patients with LEPR mutations. Leptin treatment "
        "also improved insulin resistance and hyperglycemia in patients with lipodystrophy, in "
        "whom leptin is deficient. In common obesity the picture is reversed: circulating leptin "
        "is high, because obesity upregulates LEP expression in adipose tissue, yet the brain "
        "responds poorly. This state of leptin resistance explains why leptin treatment fails in "
        "most people with obesity.",
    ),
    (  # 015
        "Adiponectin links visceral obesity to insulin resistance and the metabolic syndrome",
        "Adiponectin is an insulin-sensitizing hormone produced by adipocytes and encoded by "
        "ADIPOQ. In a cohort of 2,450 middle-aged adults, plasma adiponectin was lower in "
        "participants with obesity, type 2 diabetes or the metabolic syndrome (MetS), and it fell "
        "with every additional component of the syndrome. Low adiponectin predicted incident "
        "insulin resistance and coronary artery disease over eight years of follow-up. Visceral "
        "obesity was the strongest determinant, and adipose ADIPOQ mRNA was reduced in obese "
        "participants. Each standard deviation increase in adiponectin was associated with a 30 "
        "percent lower risk of type 2 diabetes. Treatment with rosiglitazone or pioglitazone "
        "restored adiponectin levels. ADIPOQ is associated with MetS and insulin resistance, and "
        "obesity downregulates its expression in adipose tissue.",
    ),
    (  # 016
        "Adipose tissue inflammation impairs insulin signalling in obesity",
        "Obesity is accompanied by a chronic low-grade inflammation of adipose tissue. We "
        "collected subcutaneous and visceral fat from 90 lean and obese individuals. Expression of "
        "TNF, IL6 and CCL2 was three to five times higher in obese participants and correlated "
        "with macrophage infiltration. In cultured adipocytes, tumor necrosis factor alpha reduced "
        "tyrosine phosphorylation of insulin receptor substrate 1 and blocked insulin-stimulated "
        "glucose uptake. Circulating IL-6 was associated with insulin resistance independently of "
        "body fat. In a subgroup of 20 participants, weight loss of 10 percent reduced TNF and IL6 "
        "expression and improved insulin sensitivity. These data indicate that obesity upregulates "
        "TNF, IL-6 and MCP-1 in adipose tissue and that TNF-alpha contributes directly to insulin "
        "resistance through IRS-1.",
    ),
    (  # 017
        "C-reactive protein, the metabolic syndrome and cardiovascular risk",
        "C-reactive protein (CRP) is an acute-phase protein produced by the liver in response to "
        "IL-6. Among 6,300 women followed for ten years, those with the metabolic syndrome had "
        "higher CRP and higher plasminogen activator inhibitor-1 (PAI-1) than women without it. "
        "Both the metabolic syndrome and a CRP above 3 mg per liter independently predicted "
        "cardiovascular disease, and women with both had a fourfold risk of coronary artery "
        "disease. Abdominal obesity was the strongest correlate of CRP, because adipose tissue is "
        "a major source of IL-6. Statin therapy with rosuvastatin lowered CRP and LDL cholesterol, "
        "and the reduction in events was largest when both fell. CRP is associated with the "
        "metabolic syndrome and with cardiovascular disease, and its measurement adds information "
        "to standard risk scores.",
    ),
    (  # 018
        "Insulin receptor signalling and GLUT4 translocation in skeletal muscle",
        "Insulin binds the insulin receptor (INSR) on muscle and fat cells and activates its "
        "tyrosine kinase. The receptor phosphorylates insulin receptor substrate 1 (IRS1) and "
        "IRS2, which recruit phosphoinositide 3-kinase and activate AKT2. AKT2 then triggers the "
        "translocation of the glucose transporter GLUT4 from intracellular vesicles to the plasma "
        "membrane, allowing glucose to enter the cell. Insulin also suppresses the hepatic genes "
        "PCK1, G6PC and IGFBP1 through AKT2-dependent exclusion of FOXO1 from the nucleus. In "
        "muscle biopsies from 40 patients with insulin resistance, IRS-1 protein and SLC2A4 mRNA "
        "were reduced by about 40 percent. The phosphatase PTP1B, which dephosphorylates INSR, was "
        "increased in the same samples. Defects in IRS1, AKT2 and GLUT4 are therefore associated "
        "with insulin resistance and type 2 diabetes.",
    ),
    (  # 019
        "Exercise restores GLUT4 and PGC-1alpha in the muscle of patients with type 2 diabetes",
        "Skeletal muscle accounts for most insulin-stimulated glucose disposal, and its GLUT4 "
        "content is reduced in type 2 diabetes and in obesity. We enrolled 32 sedentary patients "
        "with T2D in a 12-week supervised training programme. At baseline, SLC2A4 and PPARGC1A "
        "expression were lower than in matched controls without diabetes. Training activated "
        "AMP-activated protein kinase, increased GLUT4 protein by 45 percent and restored "
        "PGC-1alpha expression. Insulin sensitivity improved by 30 percent, and HbA1c decreased by "
        "0.6 percentage points without any change in medication. Muscle AMPK activation after "
        "exercise increases glucose uptake independently of insulin, which explains why exercise "
        "remains effective in insulin resistance. Exercise thus counteracts the downregulation of "
        "SLC2A4 and PPARGC1A that accompanies type 2 diabetes.",
    ),
    (  # 020
        "Clinical presentation of type 1 diabetes in children and adolescents",
        "Type 1 diabetes (T1D) results from autoimmune destruction of the insulin-producing beta "
        "cells, so that the insulin gene is no longer expressed in most islets. We reviewed 640 "
        "children with newly diagnosed T1D at three centres. Polyuria and polydipsia were present "
        "in more than 90 percent, and weight loss in 70 percent. Several children had "
        "hyperglycemia for weeks before diagnosis, with fatigue and blurred vision. One in four "
        "children presented with diabetic ketoacidosis (DKA), with ketosis, dehydration and "
        "vomiting. Autoantibodies against ZnT8, the zinc transporter encoded by SLC30A8, were "
        "found in 62 percent, and INS promoter variants modified the risk of T1D. All children "
        "required lifelong insulin therapy, and earlier diagnosis could prevent many cases of DKA.",
    ),
    (  # 021
        "Vascular endothelial growth factor drives vision loss in diabetic retinopathy",
        "Diabetic retinopathy is the leading cause of blindness in working-age adults. Chronic "
        "hyperglycemia damages retinal capillaries, leading to ischemia and the release of "
        "vascular endothelial growth factor (VEGF). We measured VEGF and IL-6 in the aqueous "
        "humour of 120 patients; both were several times higher in proliferative diabetic "
        "retinopathy than in controls. A common VEGFA promoter variant was associated with "
        "diabetic retinopathy and with diabetic macular edema. Intravitreal injections of "
        "antibodies against VEGF reduced macular thickness and improved visual acuity in most "
        "eyes. Tight control of blood glucose and blood pressure slows the progression of diabetic "
        "retinopathy, and fenofibrate gave additional benefit in patients with type 2 diabetes. "
        "Diabetic retinopathy thus upregulates VEGFA, and blocking VEGF is now the standard "
        "treatment for macular edema.",
    ),
    (  # 022
        "Fenofibrate slows the progression of diabetic retinopathy",
        "Fenofibrate is a fibrate that activates PPAR-alpha and is used to treat "
        "hypertriglyceridemia and mixed dyslipidemia. In a randomized trial of 9,600 patients with "
        "type 2 diabetes, fenofibrate lowered triglycerides by 25 percent, reduced apolipoprotein "
        "C-III and raised lipoprotein lipase activity. Unexpectedly, the need for laser treatment "
        "of diabetic retinopathy was reduced by one third. In a substudy with retinal photographs, "
        "fenofibrate slowed the progression of existing diabetic retinopathy, an effect that was "
        "not explained by changes in plasma lipids. In experimental models, fenofibrate reduced "
        "retinal inflammation and the vascular leakage induced by VEGF. Fenofibrate can therefore "
        "be used to treat diabetic retinopathy in patients with type 2 diabetes, in addition to "
        "its lipid effects.",
    ),
    (  # 023
        "Symptoms and consequences of diabetic peripheral neuropathy",
        "Diabetic neuropathy affects up to half of all people with long-standing diabetes. We "
        "examined 800 patients with type 2 diabetes in primary care. Numbness and paresthesia of "
        "the feet were reported by 38 percent, and 21 percent had neuropathic pain that disturbed "
        "sleep. Loss of protective sensation was the strongest predictor of diabetic foot ulcers "
        "over five years. Autonomic involvement caused diabetic gastroparesis in a smaller group. "
        "Patients with neuropathic pain were treated with duloxetine or pregabalin, which halved "
        "pain scores in most, but numbness did not improve. Duration of diabetes and HbA1c were "
        "the main risk factors. Diabetic neuropathy is a frequent complication of type 2 diabetes "
        "and the main cause of the diabetic foot.",
    ),
    (  # 024
        "Angiotensin receptor blockade protects the kidney in diabetic nephropathy",
        "Diabetic nephropathy, also called diabetic kidney disease (DKD), is the leading cause of "
        "end-stage renal disease worldwide. Its hallmark is albuminuria, which progresses to overt "
        "proteinuria, edema and declining filtration. We randomized 1,480 patients with type 2 "
        "diabetes and DKD to losartan or placebo on top of conventional antihypertensive drugs. "
        "Losartan reduced albuminuria by 35 percent and the risk of doubling of serum creatinine "
        "or ESRD by 25 percent. In a parallel trial the ACE inhibitor lisinopril had a similar "
        "effect. In both trials, the reduction in albuminuria within six months predicted the "
        "later renal benefit and lower cardiovascular disease. Blockade of the renin-angiotensin "
        "system with losartan or lisinopril treats diabetic nephropathy and delays progression to "
        "end-stage renal disease.",
    ),
    (  # 025
        "Renal inflammation and fibrosis in diabetic kidney disease",
        "Hyperglycemia activates several pathways in the kidney that promote inflammation and "
        "fibrosis. We analysed kidney biopsies from 64 patients with diabetic nephropathy and 20 "
        "controls. Expression of TGF-beta1 was increased fourfold in glomeruli, and VEGF was "
        "increased in podocytes. Glomerular TGF-beta1 staining was strongest in patients with "
        "heavy proteinuria, hypertension and a long duration of type 2 diabetes. Monocyte "
        "chemoattractant protein-1 (MCP-1) was strongly expressed in tubules and correlated with "
        "macrophage infiltration and albuminuria. Urinary MCP-1 predicted the decline in kidney "
        "function over three years. In experimental models of diabetes, blocking MCP-1 reduced "
        "albuminuria and glomerular injury. Thus diabetic nephropathy upregulates CCL2 together "
        "with TGFB1 and VEGFA, and CCL2 may be a target for new treatments of DKD.",
    ),
    (  # 026
        "Blood pressure control in patients with diabetes",
        "Hypertension is present in two thirds of adults with type 2 diabetes and greatly "
        "increases the risk of stroke, heart failure and chronic kidney disease. We reviewed 14 "
        "trials that compared antihypertensive regimens in people with diabetes. ACE inhibitors "
        "such as ramipril and enalapril, and angiotensin receptor blockers such as valsartan and "
        "telmisartan, reduced cardiovascular disease as much as other classes and also reduced "
        "albuminuria. Among ACE inhibitors, lisinopril was the most frequently used agent. Genetic "
        "variants in ACE and AGTR1, the gene for the angiotensin II type 1 receptor, were "
        "associated with hypertension. Lowering systolic pressure below 140 mmHg reduced stroke by "
        "30 percent. Treating hypertension is one of the most effective ways to prevent "
        "complications of diabetes.",
    ),
    (  # 027
        "Atorvastatin lowers LDL cholesterol and cardiovascular events in type 2 diabetes",
        "Dyslipidemia in type 2 diabetes is marked by high triglycerides, low HDL cholesterol and "
        "small dense LDL particles. In a placebo-controlled trial, 2,840 patients with type 2 "
        "diabetes and no prior coronary artery disease received atorvastatin 10 mg daily. "
        "Atorvastatin, an inhibitor of HMG-CoA reductase, lowered LDL cholesterol by 40 percent "
        "and reduced major cardiovascular events by 37 percent. Hepatic LDL receptor expression "
        "rises when HMGCR is inhibited, which explains most of the effect; plasma PCSK9 also "
        "increased. CRP decreased by 20 percent. Atorvastatin did not change HbA1c, fasting "
        "glucose or HDL cholesterol during the four-year trial. Atorvastatin effectively treats "
        "dyslipidemia and prevents coronary artery disease in patients with type 2 diabetes.",
    ),
    (  # 028
        "Statin therapy and the risk of new-onset diabetes",
        "Statins are the cornerstone of treatment for hypercholesterolemia and the prevention of "
        "atherosclerosis. Statins block HMG-CoA reductase in the liver and thereby upregulate LDL "
        "receptor expression. In a meta-analysis of 13 trials with 91,000 participants, statin "
        "therapy was associated with a 9 percent higher risk of developing type 2 diabetes. The "
        "risk was greater with intensive doses of rosuvastatin or atorvastatin than with "
        "pravastatin or simvastatin and was concentrated in people with prediabetes. Statins "
        "modestly increase fasting glucose and HbA1c. Rosuvastatin also lowered C-reactive protein "
        "by a third in the largest trial. However, one case of diabetes was outweighed by about "
        "five prevented cases of myocardial infarction or stroke. The small diabetogenic effect "
        "should not discourage statin use in people with high cardiovascular risk.",
    ),
    (  # 029
        "PNPLA3 and TM6SF2 variants and the spectrum of nonalcoholic fatty liver disease",
        "Nonalcoholic fatty liver disease ranges from simple hepatic steatosis to steatohepatitis, "
        "cirrhosis and hepatocellular carcinoma. We genotyped 1,720 patients with biopsy-proven "
        "NAFLD and 3,400 controls. The PNPLA3 I148M variant was associated with NAFLD, with "
        "advanced fibrosis and with liver cirrhosis. The TM6SF2 E167K variant was also associated "
        "with NAFLD and with higher liver fat, although carriers had lower plasma LDL cholesterol. "
        "Obesity and type 2 diabetes amplified the effect of PNPLA3 on fibrosis. In follow-up, "
        "NAFLD caused hepatocellular carcinoma in 2.1 percent of patients, and PNPLA3 carriers "
        "accounted for most cases. Weight loss, pioglitazone and semaglutide improved steatosis in "
        "carriers and non-carriers alike. PNPLA3 and TM6SF2 genotypes could help to identify "
        "patients with NAFLD who need surveillance for HCC.",
    ),
    (  # 030
        "Insulin resistance and lipogenesis in the pathogenesis of fatty liver",
        "Insulin resistance is the central defect that leads to nonalcoholic fatty liver disease. "
        "In adipose tissue, impaired insulin action increases lipolysis and the flow of free fatty "
        "acids to the liver. At the same time, hyperinsulinemia drives hepatic de novo lipogenesis "
        "through SREBP-1c. We studied 75 adults with obesity; those with NAFLD had higher hepatic "
        "SREBF1 and TNF expression and lower plasma adiponectin than those without. Plasma free "
        "fatty acids correlated with liver fat and with hepatic insulin resistance. Patients with "
        "type 2 diabetes had the most advanced disease, suggesting that type 2 diabetes causes "
        "NAFLD to progress. A 10 percent weight loss normalized liver fat and lowered hepatic "
        "SREBF1 expression in most participants.",
    ),
    (  # 031
        "Components and consequences of the metabolic syndrome",
        "The metabolic syndrome is a cluster of abdominal obesity, hypertension, dyslipidemia and "
        "hyperglycemia that shares insulin resistance as its underlying mechanism. In a "
        "population-based cohort of 5,100 adults, 27 percent met the criteria. Participants with "
        "the syndrome had higher fasting insulin, triglycerides and C-reactive protein. "
        "Hyperinsulinemia was present in 70 percent of participants with the syndrome, and "
        "plasminogen activator inhibitor-1 was elevated. During ten years of follow-up, the "
        "metabolic syndrome tripled the risk of type 2 diabetes and doubled the risk of "
        "cardiovascular disease. Adiponectin was reduced in proportion to the number of "
        "components. Central obesity was the component most strongly linked to incident diabetes. "
        "Lifestyle treatment of the metabolic syndrome is therefore a key strategy to prevent type "
        "2 diabetes.",
    ),
    (  # 032
        "Gestational diabetes and the future risk of type 2 diabetes",
        "Gestational diabetes mellitus (GDM) is hyperglycemia first recognized during pregnancy. "
        "In a cohort of 18,000 pregnancies, maternal obesity caused gestational diabetes far more "
        "often than normal weight, with a threefold higher risk. Women with GDM were treated with "
        "diet, and when needed with insulin, metformin or glibenclamide; all three achieved "
        "similar glucose control. Women treated with glibenclamide had more neonatal hypoglycemia "
        "than those treated with insulin. Within ten years after delivery, 35 percent of women "
        "with GDM developed type 2 diabetes. Breastfeeding and weight loss after delivery lowered "
        "the risk of later type 2 diabetes. Variants in TCF7L2 and CDKAL1 were associated with "
        "gestational diabetes. GDM identifies young women who need long-term screening and "
        "prevention of type 2 diabetes.",
    ),
    (  # 033
        "Prevention of type 2 diabetes in adults with prediabetes",
        "Prediabetes, defined by impaired fasting glucose or an HbA1c between 5.7 and 6.4 percent, "
        "progresses to type 2 diabetes in about 5 to 10 percent of people each year. We randomized "
        "3,200 adults with prediabetes to an intensive lifestyle programme, metformin or placebo. "
        "Over three years, lifestyle change reduced the incidence of type 2 diabetes by 58 percent "
        "and metformin by 31 percent. Weight loss was the main driver of benefit in the lifestyle "
        "group. In a smaller trial, acarbose, which binds intestinal maltase-glucoamylase and "
        "slows carbohydrate digestion, also delayed progression to type 2 diabetes. Participants "
        "with hyperglycemia in both fasting and post-load tests benefited most. Both lifestyle "
        "intervention and metformin treat prediabetes and reduce the burden of type 2 diabetes.",
    ),
    (  # 034
        "Hypoglycemia with sulfonylureas compared with DPP-4 inhibitors",
        "Sulfonylureas stimulate insulin release by binding the sulfonylurea receptor 1 on beta "
        "cells, independently of the glucose concentration. In 4,500 patients with type 2 diabetes "
        "on metformin, glimepiride or gliclazide was compared with the DPP-4 inhibitor "
        "linagliptin. HbA1c fell similarly in all groups. Hypoglycemia occurred in 18 percent of "
        "patients on glimepiride, 9 percent on gliclazide and 2 percent on linagliptin. Glipizide, "
        "a short-acting sulfonylurea, caused fewer episodes than glimepiride in a separate cohort. "
        "Weight gain of about 2 kg was seen only with sulfonylureas. Older age and chronic kidney "
        "disease were the main risk factors for hypoglycemia with sulfonylureas. Glimepiride and "
        "gliclazide remain effective treatments for type 2 diabetes, but linagliptin offers a "
        "safer profile in older patients.",
    ),
    (  # 035
        "Basal insulin glargine in type 2 diabetes not controlled with oral agents",
        "Many people with type 2 diabetes eventually need insulin as beta cell function declines. "
        "We added insulin glargine once daily to metformin in 760 patients with HbA1c above 8 "
        "percent. Insulin glargine binds the insulin receptor with kinetics close to those of "
        "human insulin but is absorbed slowly and without a peak. After 24 weeks, 58 percent "
        "reached an HbA1c below 7 percent, and nocturnal hypoglycemia was less frequent than with "
        "NPH insulin. Mean weight gain was 1.8 kg, lower than with twice-daily premixed insulin. "
        "When mealtime insulin lispro was needed, it was added to the largest meal. Insulin "
        "glargine is an effective first injectable treatment for type 2 diabetes.",
    ),
    (  # 036
        "Metformin in women with polycystic ovary syndrome",
        "Polycystic ovary syndrome (PCOS) affects about one in ten women of reproductive age and "
        "is closely linked to insulin resistance. Hyperinsulinemia increases ovarian androgen "
        "production, leading to hirsutism and irregular cycles, and many women report weight gain. "
        "Plasma adiponectin is lower in PCOS than in weight-matched controls. PCOS also increases "
        "the risk of gestational diabetes and of type 2 diabetes later in life. In a randomized "
        "trial of 320 women with PCOS, metformin for six months restored ovulation in 45 percent, "
        "lowered fasting insulin and reduced the conversion to type 2 diabetes. Metformin lowered "
        "hirsutism scores only slightly, and weight loss remained important. These results show "
        "that metformin treats polycystic ovary syndrome, especially in women with obesity.",
    ),
    (  # 037
        "Metformin, lactic acidosis and kidney function",
        "Lactic acidosis is a rare but serious complication of metformin treatment that occurs "
        "mostly when the drug accumulates. We reviewed 120 cases reported over 15 years. Most "
        "patients had chronic kidney disease or acute kidney injury, heart failure or sepsis. "
        "Nausea, vomiting and abdominal pain were the most common presenting symptoms, followed by "
        "dyspnea. Metformin raises lactate production by inhibiting hepatic gluconeogenesis from "
        "lactate, so accumulation in kidney failure is dangerous. Mortality was 25 percent. The "
        "risk was very low in patients with an estimated filtration rate above 45 mL per minute. "
        "Metformin can be used safely in mild and moderate CKD, but the dose should be reduced and "
        "treatment stopped during acute illness.",
    ),
    (  # 038
        "HNF4A mutations: from neonatal hyperinsulinism to diabetes in adolescence",
        "Hepatocyte nuclear factor 4 alpha (HNF4A) regulates HNF1A, and together they control "
        "genes of glucose metabolism such as GLUT2 in the beta cell. We followed 54 carriers of "
        "heterozygous HNF4A mutations from birth. Half of them were born with macrosomia because "
        "of fetal hyperinsulinemia, and 15 percent had transient congenital hyperinsulinism with "
        "hypoglycemia in the neonatal period. Later in life the same patients developed "
        "progressive insulin deficiency, and diabetes was diagnosed at a median age of 19 years. "
        "Like patients with HNF1A mutations, they were sensitive to sulfonylureas, and low-dose "
        "gliclazide replaced insulin in most. A common HNF4A variant was also associated with type "
        "2 diabetes. HNF4A is associated with both congenital hyperinsulinism and diabetes.",
    ),
    (  # 039
        "Insulin receptor mutations and extreme insulin resistance",
        "Mutations in INSR, the gene that encodes the insulin receptor, cause a spectrum of "
        "syndromes with extreme insulin resistance. The most severe form, Donohue syndrome, also "
        "called leprechaunism, presents in infancy with growth retardation, marked "
        "hyperinsulinemia and episodes of both fasting hypoglycemia and postprandial "
        "hyperglycemia. Hyperglycemia after meals reflected the failure of insulin to stimulate "
        "glucose uptake through GLUT4 in muscle. We describe 12 patients with biallelic INSR "
        "mutations. Residual receptor function measured in cultured cells predicted survival. "
        "Treatment with recombinant IGF-1 improved glucose control in some infants. Most infants "
        "with Donohue syndrome died within the first two years of life. Milder heterozygous INSR "
        "variants were associated with insulin resistance in adults with acanthosis and "
        "hyperandrogenism.",
    ),
    (  # 040
        "The PPARG Pro12Ala variant, insulin sensitivity and lipodystrophy",
        "Peroxisome proliferator-activated receptor gamma (PPARG) is the master regulator of "
        "adipocyte differentiation and the molecular target of thiazolidinediones such as "
        "rosiglitazone and pioglitazone. The common Pro12Ala variant of PPARG improves insulin "
        "sensitivity and reduces the risk of type 2 diabetes by about 20 percent. Carriers of the "
        "Ala allele had lower fasting insulin and a better response to pioglitazone. In contrast, "
        "rare dominant-negative PPARG mutations cause familial partial lipodystrophy with loss of "
        "limb fat, severe insulin resistance and hyperinsulinemia. Loss of PPARG function reduces "
        "adipocyte storage capacity, so that lipids accumulate in liver and muscle. In 9 such "
        "patients, rosiglitazone raised adiponectin and GLUT4 expression and lowered HbA1c. PPARG "
        "is associated with type 2 diabetes, obesity and familial partial lipodystrophy.",
    ),
    (  # 041
        "Incretin physiology and GLP-1 receptor agonists",
        "GLP-1 is secreted by intestinal L cells after a meal and binds the GLP-1 receptor (GLP1R) "
        "on beta cells. Receptor activation enhances glucose-stimulated insulin secretion, "
        "increases transcription of the insulin gene and suppresses glucagon. Because DPP-4 "
        "degrades the native hormone within minutes, stable GLP-1 receptor agonists were "
        "developed. Exenatide, the first of these, binds GLP1R and in islets from donors with type "
        "2 diabetes increased INS mRNA by 60 percent. High glucose itself also upregulates INS "
        "transcription. Liraglutide and semaglutide followed, with longer half-lives, and added "
        "weight loss to glycemic control in type 2 diabetes and obesity. GLP1R variants were "
        "associated with fasting glucose, with type 2 diabetes and with the response to GLP-1 "
        "receptor agonists.",
    ),
    (  # 042
        "SLC30A8 and CDKAL1: beta cell genes identified by association studies",
        "Genome-wide association studies identified many loci for type 2 diabetes that act through "
        "the beta cell. We replicated two of them in 9,800 cases and 11,200 controls. The SLC30A8 "
        "risk allele, which alters the zinc transporter ZnT8 in insulin granules, was associated "
        "with type 2 diabetes with an odds ratio of 1.15. Rare truncating SLC30A8 variants, in "
        "contrast, protected against type 2 diabetes. CDKAL1 variants were associated with type 2 "
        "diabetes and reduced the first-phase insulin response. Both genes are highly expressed in "
        "pancreatic islets, and the risk alleles reduced proinsulin processing and insulin "
        "secretion in carriers without diabetes. Neither locus was associated with obesity. "
        "SLC30A8 and CDKAL1 influence type 2 diabetes risk through insulin secretion.",
    ),
    (  # 043
        "Obesity as a cause of hypertension and obstructive sleep apnea",
        "Obesity raises blood pressure through sympathetic activation, sodium retention and "
        "activation of the renin-angiotensin system. In a cohort of 3,900 adults, each 5 unit "
        "increase in body mass index raised the incidence of hypertension by 40 percent. Obesity "
        "also caused obstructive sleep apnea (OSA): 41 percent of participants with severe obesity "
        "had moderate or severe OSA, compared with 6 percent of lean participants. OSA in turn "
        "worsened hypertension and insulin resistance through intermittent hypoxia. Weight gain of "
        "10 percent increased the apnea index by one third, and weight loss reversed it. Obesity "
        "also increased the risk of type 2 diabetes fivefold and of nonalcoholic fatty liver "
        "disease threefold. Obesity is a preventable cause of hypertension, OSA and type 2 "
        "diabetes.",
    ),
    (  # 044
        "Euglycemic diabetic ketoacidosis during treatment with SGLT2 inhibitors",
        "SGLT2 inhibitors lower blood glucose by increasing urinary glucose excretion, which also "
        "shifts metabolism towards fat oxidation and ketone production. We describe 38 patients "
        "who developed diabetic ketoacidosis while taking canagliflozin, dapagliflozin or "
        "empagliflozin. In 70 percent, blood glucose was below 250 mg per deciliter, which delayed "
        "the diagnosis. Nausea, vomiting, abdominal pain and dehydration were the usual symptoms, "
        "and ketosis was severe. Insulin and intravenous fluids resolved ketosis within 24 hours "
        "in all patients. Most cases followed surgery, reduced insulin doses or prolonged fasting. "
        "Patients with type 1 diabetes who took these drugs off-label accounted for a quarter of "
        "cases. DKA should be considered in any unwell patient who takes an SGLT2 inhibitor, even "
        "when glucose is normal.",
    ),
    (  # 045
        "Canagliflozin and renal outcomes in type 2 diabetes and nephropathy",
        "Canagliflozin is an SGLT2 inhibitor that binds SGLT2 in the proximal tubule and lowers "
        "the renal threshold for glucose. We randomized 4,400 patients with type 2 diabetes and "
        "diabetic kidney disease, all receiving an ACE inhibitor or angiotensin receptor blocker, "
        "to canagliflozin or placebo. After 2.6 years, canagliflozin reduced the risk of end-stage "
        "kidney disease, doubling of creatinine or renal death by 30 percent. Albuminuria "
        "decreased by a third, and hospitalization for heart failure was less frequent. The "
        "benefit was independent of the reduction in HbA1c and blood pressure. Canagliflozin "
        "slightly increased the risk of genital infections, and the higher rate of amputation seen "
        "in an earlier trial was not confirmed. Canagliflozin treats diabetic nephropathy and adds "
        "protection to renin-angiotensin blockade.",
    ),
    (  # 046
        "Heart failure, a neglected complication of type 2 diabetes",
        "Type 2 diabetes doubles the risk of heart failure, independently of coronary artery "
        "disease and hypertension. In 12,000 patients with T2D followed for eight years, 11 "
        "percent developed heart failure, which presented with dyspnea, edema and fatigue. "
        "Myocardial insulin resistance, hypertension and coronary artery disease all contribute to "
        "the process. Treatment with enalapril or valsartan reduced hospitalization, as in "
        "patients without diabetes. Pioglitazone increased fluid retention and should be avoided, "
        "whereas SGLT2 inhibitors reduced hospitalization for heart failure. Among SGLT2 "
        "inhibitors, dapagliflozin and empagliflozin reduced worsening heart failure even in "
        "patients without diabetes, and both are now used to treat heart failure. Heart failure "
        "deserves the same attention as other cardiovascular disease in people with type 2 "
        "diabetes.",
    ),
    (  # 047
        "Severe hypertriglyceridemia and acute pancreatitis",
        "Triglyceride levels above 1,000 mg per deciliter cause acute pancreatitis in about 10 "
        "percent of patients. We studied 210 adults with severe hypertriglyceridemia, many of whom "
        "had poorly controlled type 2 diabetes, obesity or a high alcohol intake. Rare variants in "
        "LPL and common variants in APOC3 were associated with hypertriglyceridemia, and carriers "
        "presented at a younger age. Fenofibrate and gemfibrozil activate PPAR-alpha, increase "
        "lipoprotein lipase and lower triglycerides by 40 to 50 percent. Fenofibrate also reduced "
        "plasma apolipoprotein C-III, which speeds the clearance of triglyceride-rich "
        "lipoproteins. Intensive glucose control with insulin further reduced triglycerides in "
        "patients with diabetes. In follow-up, recurrent pancreatitis occurred mainly in patients "
        "who stopped fibrate treatment or continued to drink alcohol.",
    ),
    (  # 048
        "LDLR and PCSK9 in familial hypercholesterolemia and coronary risk",
        "Familial hypercholesterolemia is caused by mutations in LDLR, APOB or PCSK9 and leads to "
        "premature coronary artery disease. Among 1,850 patients with a clinical diagnosis, an "
        "LDLR mutation was found in 72 percent and a gain-of-function PCSK9 mutation in 2 percent. "
        "Carriers of an LDLR mutation had a threefold higher risk of coronary artery disease than "
        "non-carriers with the same LDL cholesterol. Loss-of-function PCSK9 variants, in contrast, "
        "lowered LDL cholesterol and protected against coronary artery disease. Statins upregulate "
        "the LDL receptor, but they also raise PCSK9, which limits their effect in heterozygous "
        "patients. Most patients reached their target with simvastatin or atorvastatin combined "
        "with ezetimibe, which blocks intestinal cholesterol absorption by binding NPC1L1. "
        "Hypercholesterolemia causes atherosclerosis from childhood, so early treatment is "
        "essential.",
    ),
    (  # 049
        "Aspirin for the prevention of cardiovascular events in diabetes",
        "Aspirin irreversibly inhibits COX-1 in platelets and reduces thromboxane production. In a "
        "trial of 15,400 adults with diabetes and no known cardiovascular disease, aspirin 100 mg "
        "daily reduced serious vascular events by 12 percent but increased major bleeding by 29 "
        "percent. Gastrointestinal bleeding accounted for most of the harm, particularly in older "
        "patients. In patients with established coronary artery disease, aspirin prevented "
        "myocardial infarction and ischemic stroke with a clear net benefit. Atherosclerosis "
        "progresses faster in diabetes because of hyperglycemia and dyslipidemia. Statins and "
        "blood pressure control, rather than aspirin, provide most of the benefit in primary "
        "prevention of cardiovascular disease. Aspirin should be reserved for secondary prevention "
        "in most people with diabetes.",
    ),
    (  # 050
        "Neuropathy, ischemia and the diabetic foot",
        "The diabetic foot results from diabetic neuropathy, peripheral artery disease and minor "
        "trauma. We followed 1,100 patients with type 2 diabetes attending a foot clinic. "
        "Neuropathy was assessed with a monofilament and a tuning fork at every visit. Diabetic "
        "peripheral neuropathy with loss of sensation was present in 80 percent of those who "
        "developed diabetic foot ulcers, and numbness or paresthesia was often the only symptom. "
        "Ulcers healed within 12 weeks in 60 percent, but 8 percent required amputation. Infection "
        "and ischemia were present in half of the ulcers that led to amputation. Poor glucose "
        "control, smoking and chronic kidney disease predicted amputation. Regular foot "
        "examination and protective footwear prevent most ulcers in patients with neuropathy.",
    ),
    (  # 051
        "Pharmacological treatment of obesity: orlistat and GLP-1 receptor agonists",
        "Anti-obesity drugs are recommended when lifestyle change alone does not achieve "
        "sufficient weight loss. Orlistat binds pancreatic lipase in the gut lumen and blocks the "
        "absorption of about 30 percent of dietary fat. In a four-year trial, orlistat produced a "
        "weight loss of 5.8 kg and reduced progression to type 2 diabetes in people with "
        "prediabetes, but gastrointestinal side effects limited its use. Orlistat also lowered LDL "
        "cholesterol, because less dietary fat and cholesterol is absorbed. Weekly semaglutide "
        "achieved a mean weight loss of 15 percent, and liraglutide about 8 percent. Weight loss "
        "of this size improves hypertension, dyslipidemia and NAFLD. Both GLP-1 receptor agonists "
        "and orlistat treat obesity, with semaglutide the most effective option to date.",
    ),
    (  # 052
        "Circulating IL-6, TNF-alpha and C-reactive protein in type 2 diabetes",
        "Low-grade systemic inflammation precedes and accompanies type 2 diabetes. In a nested "
        "case-control study within a cohort of 27,000 adults, baseline IL-6 and C-reactive protein "
        "were higher in the 188 people who later developed type 2 diabetes. The associations were "
        "attenuated but not abolished by adjustment for body mass index. IL6 promoter variants "
        "were associated with type 2 diabetes and with insulin resistance. Patients with "
        "established T2D showed further increases in IL-6, CRP and TNF-alpha. Obesity, which "
        "upregulates CRP through IL-6 from adipose tissue, explained about half of the increase. "
        "Treatment with pioglitazone lowered TNF-alpha and CRP within 12 weeks, whereas "
        "liraglutide and semaglutide reduced CRP. Type 2 diabetes thus upregulates IL6, TNF and "
        "CRP.",
    ),
    (  # 053
        "Rapid-acting insulin analogues in type 1 diabetes",
        "People with type 1 diabetes depend on insulin from diagnosis. Rapid-acting analogues such "
        "as insulin lispro and insulin aspart are absorbed faster than regular human insulin and "
        "better match the rise in glucose after meals. In 540 adults with T1D using multiple daily "
        "injections, insulin aspart lowered postprandial glucose and reduced severe hypoglycemia "
        "by 28 percent compared with human insulin. Continuous glucose monitoring showed that time "
        "in range improved by two hours per day. Insulin lispro gave similar results in children. "
        "Insulin glargine was used as basal insulin in both groups. Both analogues bind the "
        "insulin receptor with an affinity close to that of human insulin. Insulin aspart and "
        "insulin lispro are standard mealtime insulins in type 1 diabetes.",
    ),
    (  # 054
        "Dipeptidyl peptidase-4 activity in obesity and type 2 diabetes",
        "DPP-4, also known as CD26, is expressed on many cell types and released by adipose "
        "tissue. We measured plasma DPP-4 activity in 300 adults. Activity was 25 percent higher "
        "in patients with type 2 diabetes than in controls and correlated with HbA1c and visceral "
        "obesity. DPP4 expression in adipose tissue was associated with insulin resistance. "
        "Treatment with vildagliptin or sitagliptin inhibited more than 90 percent of circulating "
        "activity and raised active GLP-1 twofold. DPP-4 inhibitors are weight neutral and rarely "
        "cause hypoglycemia. Linagliptin, which is excreted mainly in bile, needs no dose "
        "adjustment in chronic kidney disease. Type 2 diabetes upregulates DPP4, which may partly "
        "explain the reduced incretin effect seen in the disease.",
    ),
    (  # 055
        "Presenting symptoms of newly diagnosed type 2 diabetes in primary care",
        "Type 2 diabetes often develops slowly and may remain undiagnosed for years. We reviewed "
        "the records of 2,300 adults with newly diagnosed type 2 diabetes mellitus. Fatigue was "
        "the most frequent complaint, followed by polyuria, polydipsia and blurred vision. Weight "
        "loss despite normal appetite was reported mainly by younger patients with very high "
        "glucose. Only 40 percent had any symptom of hyperglycemia, and one in five already had "
        "diabetic retinopathy, diabetic nephropathy or neuropathy at diagnosis. Fasting "
        "hyperinsulinemia was common in those with a short history. HbA1c at diagnosis was above 9 "
        "percent in a quarter of patients. Screening of people with obesity, hypertension or a "
        "history of gestational diabetes detected the disease earlier.",
    ),
    (  # 056
        "Monogenic diabetes: genes, clinical features and treatment",
        "Monogenic diabetes accounts for 1 to 3 percent of all diabetes and is often misclassified "
        "as type 1 diabetes or type 2 diabetes. We reviewed 410 patients referred for genetic "
        "testing over a decade. Heterozygous GCK mutations caused stable mild hyperglycemia that "
        "needed no treatment, while HNF1A and HNF4A mutations caused progressive diabetes that "
        "responded well to gliclazide. Neonatal diabetes was due to activating KCNJ11 or ABCC8 "
        "mutations in 58 percent and to INS mutations in 14 percent. Most patients with KCNJ11 or "
        "ABCC8 mutations switched from insulin to glibenclamide. Inactivating mutations in the "
        "same channel genes, and in HNF4A, were found in infants with congenital hyperinsulinism. "
        "The common E23K variant of KCNJ11 also modestly increases the risk of type 2 diabetes. A "
        "genetic diagnosis changed treatment in more than half of the patients.",
    ),
    (  # 057
        "Common and rare genetic variants in human obesity",
        "Obesity is highly heritable, with twin studies attributing 40 to 70 percent of the "
        "variation in body mass index to genetic factors. Rare loss-of-function mutations in LEP, "
        "LEPR and MC4R cause severe early-onset obesity through disruption of hypothalamic "
        "appetite control. Common variants in FTO and near MC4R have smaller effects but are "
        "carried by a large part of the population. In a cohort of 12,000 adults, a genetic risk "
        "score based on these loci predicted obesity and, through adiposity, type 2 diabetes and "
        "hypertension. Adipose tissue from participants with obesity produced more leptin and "
        "PAI-1 and less adiponectin, and the insulin receptor content of adipocytes was reduced. "
        "The PPARG Pro12Ala variant modified the effect of the risk score on insulin resistance. "
        "These genes explain only a small part of the heritability of obesity.",
    ),
    (  # 058
        "Microvascular complications in long-standing type 1 diabetes",
        "People with type 1 diabetes are exposed to hyperglycemia from childhood and are at high "
        "risk of microvascular disease. We followed 1,440 adults with T1D for a median of 22 "
        "years. Diabetic retinopathy developed in 54 percent and caused blindness in 2 percent, "
        "diabetic nephropathy with persistent albuminuria developed in 18 percent, and diabetic "
        "neuropathy with numbness or neuropathic pain in 31 percent. Intensive insulin therapy, "
        "using insulin glargine with insulin lispro or an insulin pump, lowered HbA1c by 1.5 "
        "percentage points and reduced all three complications by 35 to 75 percent. The benefit "
        "persisted for years after the groups converged, a phenomenon called metabolic memory. "
        "Severe hypoglycemia was three times more frequent with intensive therapy. Type 1 diabetes "
        "causes diabetic retinopathy, nephropathy and neuropathy, and early glucose control "
        "prevents them.",
    ),
    (  # 059
        "Natural history of nonalcoholic fatty liver disease: from steatosis to liver cancer",
        "Nonalcoholic fatty liver disease (NAFLD) affects a quarter of adults worldwide and most "
        "people with obesity or type 2 diabetes. In a cohort of 2,200 patients with biopsy-proven "
        "NAFLD followed for 12 years, 9 percent progressed to liver cirrhosis, mostly those with "
        "steatohepatitis and advanced fibrosis at baseline. Hepatocellular carcinoma arose in 1.8 "
        "percent, and in a quarter of these cases cirrhosis was absent, showing that NAFLD can "
        "cause HCC directly. Carriers of PNPLA3 or TM6SF2 risk alleles progressed faster. Fatigue "
        "was the most common symptom, although most patients had no complaints. Weight loss of at "
        "least 10 percent, pioglitazone and semaglutide improved steatohepatitis in randomized "
        "trials. NAFLD is therefore a leading cause of cirrhosis and liver cancer in the era of "
        "obesity.",
    ),
    (  # 060
        "Chronic kidney disease in type 2 diabetes: presentation and renoprotection",
        "Chronic kidney disease (CKD) develops in about 40 percent of people with type 2 diabetes, "
        "usually as diabetic nephropathy. Early CKD is silent, so that albuminuria must be "
        "screened for every year; later, patients present with proteinuria, edema and fatigue. "
        "Among 3,600 patients in a diabetes registry, the ACE insertion/deletion polymorphism was "
        "associated with diabetic nephropathy and faster loss of kidney function. Blood pressure "
        "control with losartan or lisinopril, which block the angiotensin II type 1 receptor and "
        "angiotensin-converting enzyme respectively, slowed progression to end-stage renal "
        "disease. Adding dapagliflozin or canagliflozin reduced the risk further by about 30 "
        "percent. Metformin remained safe down to moderate CKD with dose reduction. Combined "
        "renoprotection can halve the number of patients with diabetic nephropathy who reach ESRD.",
    ),
]


# --------------------------------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------------------------------


class DemoDataError(ValueError):
    """The data written in this file is inconsistent (names, schema, lengths, duplicates)."""


class Node(NamedTuple):
    id: str
    name: str
    category: str
    synonyms: tuple[str, ...]

    @property
    def type(self) -> str:
        return CATEGORY_TYPE[self.category]


def parse_facts(block: str, where: str) -> list[tuple[str, str]]:
    """``"head: t1; t2"`` lines -> ``[(head, t1), (head, t2)]`` (node names, in order)."""
    out: list[tuple[str, str]] = []
    for lineno, line in enumerate(block.strip().splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        head, sep, tails = line.partition(":")
        if not sep or not tails.strip():
            raise DemoDataError(f"{where} line {lineno}: expected 'head: tail; tail', got {line!r}")
        for tail in tails.split(";"):
            out.append((head.strip(), tail.strip()))
    return out


def load_nodes() -> list[Node]:
    nodes = [Node(i, n, c, tuple(s)) for i, n, c, s in NODES]
    seen_ids: set[str] = set()
    for n in nodes:
        if n.id in seen_ids:
            raise DemoDataError(f"node {n.id}: duplicate id")
        seen_ids.add(n.id)
        if n.category not in CATEGORY_TYPE:
            raise DemoDataError(f"node {n.id}: category {n.category!r} is not one of "
                                f"{sorted(CATEGORY_TYPE)}")
        for s in (n.name, *n.synonyms):
            if not s or any(ch in s for ch in "\t\n|;:"):
                raise DemoDataError(f"node {n.id}: bad name or synonym {s!r}")
    return nodes


def lexicon(nodes: list[Node]) -> list[tuple[re.Pattern[str], str]]:
    """One (pattern, node id) per surface form. Forms with an upper-case letter match exactly,
    all-lower-case forms ignore case; no form may touch a word character or hyphen. A form may
    name only one node, compared ignoring case."""
    owner: dict[str, str] = {}
    out: list[tuple[re.Pattern[str], str]] = []
    for n in nodes:
        for s in (n.name, *n.synonyms):
            if owner.setdefault(s.lower(), n.id) != n.id:
                raise DemoDataError(f"surface form {s!r} names both {owner[s.lower()]} and {n.id}")
            flags = 0 if any(ch.isupper() for ch in s) else re.IGNORECASE
            out.append((re.compile(r"(?<![\w-])" + re.escape(s) + r"(?![\w-])", flags), n.id))
    return out


def find_mentions(text: str, lex: list[tuple[re.Pattern[str], str]],
                  nodes_by_id: dict[str, Node]) -> list[dict]:
    """Every lexicon occurrence in ``text``, leftmost first then longest, non-overlapping."""
    cands = [(m.start(), m.end(), nid) for pat, nid in lex for m in pat.finditer(text)]
    cands.sort(key=lambda c: (c[0], -(c[1] - c[0]), c[2]))
    chosen: list[dict] = []
    last_end = -1
    for start, end, nid in cands:
        if start < last_end:
            continue
        chosen.append({"start": start, "end": end, "text": text[start:end],
                       "type": nodes_by_id[nid].type, "id": nid})
        last_end = end
    return chosen


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9])", text.strip()) if s]


def build_documents(nodes: list[Node]) -> list[dict]:
    by_id = {n.id: n for n in nodes}
    lex = lexicon(nodes)
    docs: list[dict] = []
    titles: set[str] = set()
    for i, (title, abstract) in enumerate(DOCUMENTS, 1):
        doc_id = f"demo:{i:03d}"
        if title in titles:
            raise DemoDataError(f"{doc_id}: duplicate title {title!r}")
        titles.add(title)
        text = title + " " + abstract
        if not text.isascii() or "  " in text or text != text.strip():
            raise DemoDataError(f"{doc_id}: text must be ASCII without doubled or edge spaces")
        n_words, n_sents = len(text.split()), len(_sentences(abstract))
        if not WORDS[0] <= n_words <= WORDS[1]:
            raise DemoDataError(f"{doc_id}: {n_words} words, want {WORDS[0]}..{WORDS[1]}")
        if not SENTENCES[0] <= n_sents <= SENTENCES[1]:
            raise DemoDataError(f"{doc_id}: {n_sents} abstract sentences, "
                                f"want {SENTENCES[0]}..{SENTENCES[1]}")
        docs.append({"doc_id": doc_id, "title": title, "abstract": abstract,
                     "entities": find_mentions(text, lex, by_id)})
    return docs


def resolve_facts(blocks: dict[str, str], nodes: list[Node],
                  what: str) -> list[tuple[str, str, str]]:
    """Predicate blocks of node names -> (subject id, predicate, object id), schema-checked."""
    by_name = {n.name: n for n in nodes}
    out: list[tuple[str, str, str]] = []
    for pred, block in blocks.items():
        if pred not in SCHEMA:
            raise DemoDataError(f"{what}: unknown predicate {pred!r}; allowed: {sorted(SCHEMA)}")
        for head, tail in parse_facts(block, f"{what}[{pred}]"):
            for name in (head, tail):
                if name not in by_name:
                    raise DemoDataError(f"{what}[{pred}]: {name!r} is not a node name")
            s, o = by_name[head], by_name[tail]
            if (s.type, o.type) not in SCHEMA[pred]:
                raise DemoDataError(f"{what}[{pred}]: {head} ({s.type}) -> {tail} ({o.type}) "
                                    f"violates the schema {sorted(SCHEMA[pred])}")
            if s.id == o.id:
                raise DemoDataError(f"{what}[{pred}]: self loop on {head!r}")
            out.append((s.id, pred, o.id))
    dupes = [t for t, c in Counter(out).items() if c > 1]
    if dupes:
        raise DemoDataError(f"{what}: duplicate triples {dupes}")
    return out


def build() -> dict[str, bytes]:
    """All three files as bytes (pure: no file is read or written)."""
    nodes = load_nodes()
    docs = build_documents(nodes)
    edges = resolve_facts(FACTS, nodes, "FACTS")
    held_out = resolve_facts(HELD_OUT, nodes, "HELD_OUT")

    mentioned_in: dict[str, set[str]] = {}
    for d in docs:
        for e in d["entities"]:
            mentioned_in.setdefault(e["id"], set()).add(d["doc_id"])

    overlap = set(edges) & set(held_out)
    if overlap:
        raise DemoDataError(f"HELD_OUT facts are also in FACTS: {sorted(overlap)}")
    for s, p, o in held_out:
        if not mentioned_in.get(s, set()) & mentioned_in.get(o, set()):
            raise DemoDataError(f"HELD_OUT {s} {p} {o}: no document mentions both ends")

    node_lines = ["\t".join(NODE_COLUMNS)]
    for n in nodes:
        node_lines.append("\t".join((n.id, n.name, n.category, "|".join(n.synonyms))))
    edge_lines = ["\t".join(EDGE_COLUMNS)]
    for s, p, o in edges:
        pubs = sorted(mentioned_in.get(s, set()) & mentioned_in.get(o, set()))
        edge_lines.append("\t".join((s, p, o, SOURCE, "|".join(pubs))))
    corpus_lines = [json.dumps(d, ensure_ascii=False) for d in docs]
    return {
        "corpus.jsonl": ("\n".join(corpus_lines) + "\n").encode("utf-8"),
        "kg_nodes.tsv": ("\n".join(node_lines) + "\n").encode("utf-8"),
        "kg_edges.tsv": ("\n".join(edge_lines) + "\n").encode("utf-8"),
    }


def write(out_dir: Path, files: dict[str, bytes]) -> None:
    """Write each file atomically (temporary name in the same folder, then rename)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=out_dir)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(tmp, 0o644)            # mkstemp creates 0600; these are shared data files
            os.replace(tmp, out_dir / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def stats(files: dict[str, bytes]) -> str:
    """The counts of data/README.md as a Markdown table."""
    docs = [json.loads(line) for line in files["corpus.jsonl"].decode().splitlines()]
    nodes = [line.split("\t") for line in files["kg_nodes.tsv"].decode().splitlines()[1:]]
    edges = [line.split("\t") for line in files["kg_edges.tsv"].decode().splitlines()[1:]]
    ents = [e for d in docs for e in d["entities"]]
    mentioned = {e["id"] for e in ents}
    words = [len((d["title"] + " " + d["abstract"]).split()) for d in docs]
    rows: list[tuple[str, object]] = [
        ("documents", len(docs)),
        ("words per document, title included (min / mean / max)",
         f"{min(words)} / {sum(words) / len(words):.0f} / {max(words)}"),
        ("entity mentions", len(ents)),
    ]
    rows += [(f"mentions of type {t}", c)
             for t, c in sorted(Counter(e["type"] for e in ents).items())]
    rows += [("distinct entities mentioned", len(mentioned)), ("KG nodes", len(nodes))]
    rows += [(f"nodes of category {cat}", c)
             for cat, c in sorted(Counter(n[2] for n in nodes).items())]
    rows += [("KG nodes never mentioned in the corpus", sum(n[0] not in mentioned for n in nodes)),
             ("KG edges", len(edges))]
    rows += [(f"edges with predicate {p}", sum(e[1] == p for e in edges)) for p in SCHEMA]
    rows += [
        ("edges whose subject is mentioned in the corpus", sum(e[0] in mentioned for e in edges)),
        ("edges whose two ends share a document", sum(bool(e[4]) for e in edges)),
        ("edges whose two ends share two or more documents", sum("|" in e[4] for e in edges)),
        ("held-out facts (stated in text, absent from the KG)",
         len(resolve_facts(HELD_OUT, load_nodes(), "HELD_OUT"))),
    ]
    return "\n".join(["| quantity | count |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE, help="output folder (default: this folder)")
    ap.add_argument("--check", action="store_true",
                    help="compare with the files in --out and write nothing; exit 1 if they differ")
    ap.add_argument("--stats", action="store_true", help="print the counts table, write nothing")
    args = ap.parse_args(argv)
    files = build()
    if args.stats:
        print(stats(files))
        return 0
    if args.check:
        stale = [n for n, data in files.items()
                 if not (args.out / n).is_file() or (args.out / n).read_bytes() != data]
        for n in stale:
            print(f"{args.out / n}: out of date; run {Path(__file__).name} to regenerate",
                  file=sys.stderr)
        return 1 if stale else 0
    write(args.out, files)
    for n, data in files.items():
        print(f"wrote {args.out / n} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
