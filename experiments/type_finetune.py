"""A relation-type head trained with the encoder: does fine-tuning the encoder on BioRED train's typed
pairs make it type the slice's pairs better than the word-feature relation typer?
(docs/experiments/pair-heads.md, "A type head trained with the encoder")

    .venv/bin/python experiments/type_finetune.py --config configs/biored.yaml --run-dir runs/tune \\
        [--epochs 4] [--lr 1e-4] [--head-lr 1e-3] [--batch 16] [--seeds 0 1 2] [override ...]

RUN is a run trained with the slice held out (configs/biored.yaml shows the command; the slice
overrides go after the options, as for tune_extraction.py).

**Why a pass without leaves.** In a training or extraction graph each question's relation r is fused
into its masked leaves by H-GAT, one graph hop from the head's roots, so the pair's root states
carry r itself. A type head on those states learns to read the question back, not the words, and
nothing asks the encoder to type pairs. Here every chunk is encoded as text alone: its roots, with
the entity-type and salience embeddings of its mentions, and no leaf.

**The head.** For every (head mention, candidate entity) of the extractor's questions whose document
pair has a gold type among the asked relations (graphmert.extract.pair_heads's pair vector, less the
query state)::

    x(h, c) = [h̄ ‖ ē_c ‖ b̄_c] ∈ R^{3H},   P(r | h, c) = softmax_r(W x + b)

h̄ the head mention's mean state, ē_c the candidate's mean state over its mentions in the chunk, b̄_c
the mean state of the roots between the head mention and c's nearest mention. A document pair sums
log P over its rows. Trained by cross-entropy on the typer's documents (BioRED train less the slice),
with the run's seed-0 model as the starting encoder:

* ``frozen``: the encoder fixed, the head alone trained (the ablation);
* ``fine-tuned``: the encoder trained with the head.

Scored on the slice's gold pairs that have a row (the two entities share a chunk): type accuracy,
beside the relation typer's choice among the same asked relations on the same pairs.
"""

from __future__ import annotations

import copy
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tune_extraction import split_overrides, study_parser, tuning_questions  # noqa: E402
from _study import print_table, write_json  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.corpus.windowing import chunk_documents  # noqa: E402
from graphmert.eval.gold import GoldSet  # noqa: E402
from graphmert.graph.candidates import between_span  # noqa: E402
from graphmert.graph.collate import collate_graphs  # noqa: E402
from graphmert.model.candidates import span_means  # noqa: E402
from pipelines.holdout import held_out_documents  # noqa: E402
from pipelines.stages.extract import typer_documents  # noqa: E402


def type_rows(ex, plans, docs) -> list[tuple]:
    """Per chunk plan with rows: (plan, [(head root, head end, candidate entity index, pair key, type)]),
    one row per (head mention, candidate) whose document pair has a gold type among the asked relations."""
    gold = {(d, pr): ty for d, pr, ty in GoldSet.from_documents(docs).typed if ty in ex.relations}
    out = []
    for p in plans:
        seen, rows = set(), []
        for q in p.queries:
            for c in q.candidates:
                key = (p.doc.id, frozenset((q.head, c)))
                if key in gold and (q.root, c) not in seen:
                    seen.add((q.root, c))
                    rows.append((q.root, q.end, p.entities.index[c], key, gold[key]))
        if rows:
            out.append((p, rows))
    return out


def encode(ex, model, block, device):
    """A block of (plan, rows) encoded as text alone (each chunk's roots and entity table, no leaf):
    (hidden [B, L, H], head mention spans [P, 2], between spans [P, 2], the flat positions of the
    candidates' mention tokens [T] and the row of each [T]), positions flat into B·L."""
    graphs = [ex._graph(p, []) for p, _ in block]                       # roots and entity table, no leaf
    batch = collate_graphs(graphs, "packed").to(device)
    L = batch.input_ids.shape[1]
    head, between, tokens, owner = [], [], [], []
    for b, (p, rows) in enumerate(block):
        m = p.entities.table.mentions
        for root, end, ent, _, _ in rows:
            own = m[m[:, 2] == ent, :2]
            lo, hi = between_span(own, root, end)
            head.append((b * L + root, b * L + end))
            between.append((b * L + lo, b * L + hi))
            at = [b * L + t for a, e in own for t in range(a, e)]
            tokens += at
            owner += [len(head) - 1] * len(at)
    return (model(batch).hidden, torch.tensor(head, device=device), torch.tensor(between, device=device),
            torch.tensor(tokens, device=device), torch.tensor(owner, device=device))


def row_logits(model, linear: nn.Linear, hidden, head, between, tokens, owner):
    """W x + b [P, T] of the rows (module docstring); ē_c is the candidate head's entity state, the
    mean over every token of the candidate's mentions."""
    flat = hidden.reshape(-1, hidden.shape[-1])                                          # [B·L, H]
    cand = model.candidate_head.entity_states(flat, tokens, owner, head.shape[0])       # [P, H]
    x = torch.cat([span_means(hidden, head), cand, span_means(hidden, between)], dim=-1)  # [P, 3H]
    return linear(x)


def train(ex, encoder, fit, relations, *, tune_encoder: bool, epochs: int, lr: float, head_lr: float,
          batch: int, seed: int, device) -> tuple[nn.Module, nn.Linear]:
    """(a copy of ``encoder``, the head) after ``epochs`` passes over the ``fit`` rows, the encoder
    trained too when ``tune_encoder`` (module docstring); ``encoder`` itself is left as it was."""
    torch.manual_seed(seed)
    encoder = copy.deepcopy(encoder).to(device)
    head = nn.Linear(3 * encoder.config.hidden_size, len(relations)).to(device)     # W, b
    groups = [{"params": head.parameters(), "lr": head_lr}]
    if tune_encoder:
        groups.append({"params": encoder.parameters(), "lr": lr})
    else:
        for p in encoder.parameters():
            p.requires_grad_(False)
    opt = torch.optim.AdamW(groups, weight_decay=0.01)
    rng = np.random.default_rng(seed)
    for epoch in range(epochs):
        encoder.train(tune_encoder)
        order = rng.permutation(len(fit))
        total = n = 0
        for start in range(0, len(order), batch):
            block = [fit[i] for i in order[start:start + batch]]
            labels = torch.tensor([relations.index(r[4]) for _, rows in block for r in rows], device=device)
            logits = row_logits(encoder, head, *encode(ex, encoder, block, device))
            loss = nn.functional.cross_entropy(logits, labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total, n = total + loss.item() * len(labels), n + len(labels)
        print(f"  epoch {epoch + 1}: train loss {total / n:.3f}", flush=True)
    return encoder.eval(), head.eval()


@torch.inference_mode()
def pair_log_probs(ex, encoder, head, rows, batch, device) -> dict:
    """(document, pair) → summed log P(r) [T] over its rows."""
    out: dict = {}
    for start in range(0, len(rows), batch):
        block = rows[start:start + batch]
        logp = torch.log_softmax(row_logits(encoder, head, *encode(ex, encoder, block, device)), -1).cpu().numpy()
        keys = [r[3] for _, rs in block for r in rs]
        for k, lp in zip(keys, logp):
            out[k] = out.get(k, 0.0) + lp
    return out


def category_prior(fit_plans, fit, plans) -> dict:
    """(document, pair) → the type most fit pairs of its category pair have: the prior a typer must beat."""
    def categories(ps) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for p in ps:
            out.setdefault(p.doc.id, {}).update(p.entities.categories)
        return out

    def pair_category(cats, key) -> str:
        return "|".join(sorted(cats[key[0]][e] for e in key[1]))

    fit_cats, cats = categories(fit_plans), categories(plans)
    votes: dict[str, Counter] = {}
    for key, ty in {r[3]: r[4] for _, rows in fit for r in rows}.items():
        votes.setdefault(pair_category(fit_cats, key), Counter())[ty] += 1
    keys = {(p.doc.id, frozenset((q.head, c))) for p in plans for q in p.queries for c in q.candidates}
    return {k: votes[pair_category(cats, k)].most_common(1)[0][0] for k in keys if pair_category(cats, k) in votes}


def blended(relations: list[str], typer: dict | None, head: np.ndarray, b: float) -> str:
    """argmax_r (1 − b)·log P_typer(r) + b·log P_head(r), the head's summed row log-probabilities
    renormalised over the relations; the head alone where the typer has no answer or b = 1."""
    head = head - np.logaddexp.reduce(head)
    if typer is None or b >= 1:
        return relations[int(np.argmax(head))]
    return max(relations, key=lambda r: (1 - b) * typer.get(r, -1e9) + b * head[relations.index(r)])


def main() -> None:
    p = study_parser(__doc__)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--lr", type=float, default=1e-4, help="the encoder's learning rate when fine-tuned")
    p.add_argument("--head-lr", type=float, default=1e-3)
    p.add_argument("--batch", type=int, default=16, help="chunks per step")
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--blends", nargs="+", type=float, default=[0.2, 0.3, 0.5],
                   help="b in (1 − b)·log P_typer + b·log P_head (the hybrid; b = 0 is the typer)")
    args, overrides = split_overrides(sys.argv[1:])
    a = p.parse_args(args)
    cfg = load_config(a.config, overrides)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    docs, gold, ex, plans, _ = tuning_questions(cfg, a.run_dir, a.models or [0])
    relations = list(ex.relations)
    fit_docs = list(typer_documents(cfg, held_out_documents(cfg, (d.id for d in docs))))
    fit_plans = ex.questions(fit_docs, list(chunk_documents(fit_docs, ex.tok, cfg.corpus, cfg.graph)))
    fit, slice_rows = type_rows(ex, fit_plans, fit_docs), type_rows(ex, plans, docs)
    truth = {r[3]: r[4] for _, rows in slice_rows for r in rows}
    by_id = {d.id: d for d in docs}
    keys = sorted(truth, key=lambda k: (k[0], sorted(k[1])))
    typer = ex.typer.log_probabilities([(by_id[d], *sorted(pr)) for d, pr in keys])
    typer_lp = {k: lp for k, lp in zip(keys, typer) if lp is not None}
    typer_pick = {k: max(relations, key=lambda r: lp.get(r, -1e9)) for k, lp in typer_lp.items()}
    print(f"fit: {len(fit_docs)} documents, {sum(len(r) for _, r in fit)} rows; slice: {len(docs)} documents, "
          f"{sum(len(r) for _, r in slice_rows)} rows, {len(truth)} gold typed pairs with a row")
    prior = category_prior(fit_plans, fit, plans)
    results = [{"types": "category pair (majority type in the fit pairs)", "seed": "-", "pairs": len(truth),
                "type_acc": round(float(np.mean([prior.get(k) == truth[k] for k in keys])), 4)},
               {"types": "relation typer", "seed": "-", "pairs": len(truth),
                "type_acc": round(float(np.mean([typer_pick.get(k) == truth[k] for k in keys])), 4)}]
    for seed in a.seeds:
        for tune in (False, True):
            t0 = time.perf_counter()
            print(f"{'fine-tuned' if tune else 'frozen'}, seed {seed}", flush=True)
            encoder, head = train(ex, ex.model, fit, relations, tune_encoder=tune, epochs=a.epochs, lr=a.lr,
                                  head_lr=a.head_lr, batch=a.batch, seed=seed, device=device)
            lp = pair_log_probs(ex, encoder, head, slice_rows, a.batch, device)
            name = "fine-tuned encoder + head" if tune else "frozen encoder + head"
            for b in [1.0, *a.blends]:
                pick = {k: blended(relations, typer_lp.get(k), lp[k], b) for k in lp}
                results.append({"types": name if b == 1 else f"typer + {name}, b={b}", "seed": seed,
                                "pairs": len(truth),
                                "type_acc": round(float(np.mean([pick.get(k) == truth[k] for k in keys])), 4),
                                "minutes": round((time.perf_counter() - t0) / 60, 1)})
                print(results[-1], flush=True)
    print_table(results, f"type accuracy on the slice's {len(truth)} gold typed pairs that share a chunk")
    write_json("type_finetune", results, a.out, run_dir=str(a.run_dir), epochs=a.epochs, lr=a.lr,
               head_lr=a.head_lr, batch=a.batch, overrides=overrides)


if __name__ == "__main__":
    main()
