"""Chapter 2 benchmark: the cost of one pair, forward passes and derivations separately.

For ``n_pairs`` random pairs of positions in toy sentences of 8–15 tokens, the full-profile
default MLM and the full toy vocabulary (a 228 × 228 grid, 2V + 1 = 457 model rows per
pair), time

* the forward passes: all pairs batched through ``joints.iter_pair_conditionals`` (the
  chapter's path: one ``lm.logits`` call per sentence length), and each pair on its own
  (``joints.pair_conditionals``), which must give the same conditionals — on the full grid
  (457 rows per pair, already a full batch) and with top-20 candidates (41 rows per pair,
  where batching across pairs pays);
* each derivation (independent, MRF, MRF-local, HCB, AG) and the metrics, per pair;
* the exact true joint (``Grammar.pair_joints``), per pair;
* AG to the same tolerance (every log-probability of the joint within 1e-5 of the fixed point),
  plain iteration against the default solver (SQUAREM then Newton in log space) and SQUAREM
  alone with its own stopping rule: updates, seconds and the error reached (:func:`ag_solvers`).

Each figure is the median of three runs, after one warm-up pass. Wall-clock and CPU seconds
are both reported; on a machine shared with other work the CPU seconds are the better guide
(torch's two threads make CPU seconds exceed wall seconds for the forward passes).

Also the regime map's cost per rung of the model ladder (:func:`regime_map_cost`), AG's Newton
step with its block-structured solve against the dense one it replaced (:func:`newton_solve`), and
the cost of a joint of three tokens and of a whole four-word sentence (:func:`k_sites`).

    python -m benchmarks.ch2            # prints the figures as JSON
"""
from __future__ import annotations

import json
import time

import numpy as np


def _timed(fn, repeats: int = 3):
    """``fn()``'s result and its median wall-clock and CPU seconds over ``repeats`` runs."""
    walls, cpus = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return out, float(np.median(walls)), float(np.median(cpus))


def run(n_pairs: int = 8, profile: str = "full", seed: int = 0) -> dict:
    """Time per pair of every stage of chapter 2 at the toy vocabulary; returns the figures."""
    from mlmbook import joints as J
    from mlmbook.models import load_mlm
    from mlmbook.toy import Grammar

    grammar = Grammar.load("toy")
    lm = load_mlm("toy", profile=profile, seed=seed)
    rng = np.random.default_rng(seed)
    sents = [s for s in grammar.sample(20 * n_pairs, seed=seed) if len(s) >= 8][:n_pairs]
    items = []
    for s in sents:
        ids, _ = lm.encode_words(s.words)
        a, b = sorted(rng.choice(len(s) - 1, size=2, replace=False))
        items.append((s.words, ids, int(a), int(b)))
    queries = [(ids, a, b) for _, ids, a, b in items]
    out = {"model": lm.name, "pairs timed": n_pairs, "vocabulary (grid side)": len(J.default_candidates(lm)),
           "model rows per pair": 2 * len(J.default_candidates(lm)) + 1,
           "mean sentence length (tokens)": float(np.mean([len(w) for w, *_ in items]))}

    J.pair_conditionals(lm, *queries[0])                                  # warm up the model
    pcs, wall, cpu = _timed(lambda: J.pair_conditionals_batch(lm, queries))
    out["forward passes, batched over pairs: wall s per pair"] = wall / n_pairs
    out["forward passes, batched over pairs: CPU s per pair"] = cpu / n_pairs
    single, wall1, cpu1 = _timed(lambda: [J.pair_conditionals(lm, *q) for q in queries])
    out["forward passes, one pair per call: wall s per pair"] = wall1 / n_pairs
    out["forward passes, one pair per call: CPU s per pair"] = cpu1 / n_pairs
    diff = max(float(np.abs(x.log_a_given_b - y.log_a_given_b).max()) for x, y in zip(pcs, single))
    out["batched vs one pair per call: max |difference| of log q"] = diff

    cands = J.topk_candidates(lm, queries, k=20)                        # few rows per pair: batching pays
    _, wall, _ = _timed(lambda: J.pair_conditionals_batch(lm, queries, cands))
    _, wall1, _ = _timed(lambda: [J.pair_conditionals(lm, *q, c) for q, c in zip(queries, cands)])
    out["top-20 candidates (41 rows per pair), batched: wall ms per pair"] = 1000 * wall / n_pairs
    out["top-20 candidates, one pair per call: wall ms per pair"] = 1000 * wall1 / n_pairs

    methods = {"naive": J.naive, "mrf": J.mrf, "mrf_local": J.mrf_local, "hcb": J.hcb,
               "ag": J.ag}
    for name, fn in methods.items():
        res, wall, cpu = _timed(lambda fn=fn: [fn(pc) for pc in pcs])
        out[f"derivation {J.METHODS[name]}: CPU ms per pair"] = 1000 * cpu / n_pairs
        if name == "ag":
            out["AG iterations per pair (median)"] = float(np.median([r.iterations for r in res]))
    joints = [J.derive_all(pc) for pc in pcs]
    gold = [J.gold_index(pc, ids[a], ids[b]) for pc, (_, ids, a, b) in zip(pcs, items)]
    truths, wall, cpu = _timed(lambda: J.truth_joints(grammar, [(w, a, b) for w, _, a, b in items]))
    out["true joint (inside-outside): CPU ms per pair"] = 1000 * cpu / n_pairs
    _, wall, cpu = _timed(lambda: [J.evaluate_pair(pc, g, P, joints=jt)
                                   for pc, g, P, jt in zip(pcs, gold, truths, joints)])
    out["metrics of all methods (given the joints): CPU ms per pair"] = 1000 * cpu / n_pairs
    _, wall, cpu = _timed(lambda: [J.evaluate_pair(pc, g, P) for pc, g, P in zip(pcs, gold, truths)])
    out["derivations + metrics (evaluate_pair): CPU ms per pair"] = 1000 * cpu / n_pairs
    out.update(ag_solvers(pcs))
    return out


def ag_solvers(pcs, tol_log: float = 1e-5, max_plain: int = 200_000) -> dict:
    """Updates and seconds to reach ``tol_log`` (max |log p - log p*| over the support), plain vs accelerated.

    The reference p* is the default solver at ``tol=1e-12`` (it agrees with 200 000 plain updates
    to ~1e-10 on these grids). Plain iteration is run update by update until it is within
    ``tol_log`` of p*; the accelerated solvers are timed with their own stopping rules and their
    error is reported.
    """
    from mlmbook import joints as J

    def err(P, ref):
        S = ref > 0
        with np.errstate(divide="ignore"):
            return float(np.abs(np.log(P[S]) - np.log(ref[S])).max())

    rows = {"plain": [], "default (Newton)": [], "squarem": []}
    for pc in pcs:
        ref = J.ag(pc, tol=1e-12).joint
        num = np.exp(pc.log_a_given_b) + np.exp(pc.log_b_given_a)
        pa, pb = np.full(num.shape[0], 1 / num.shape[0]), np.full(num.shape[1], 1 / num.shape[1])
        t0, n = time.process_time(), 0
        while n < max_plain:
            u = num / (1 / pa[:, None] + 1 / pb[None, :])
            pa, pb, n = u.sum(1) / u.sum(), u.sum(0) / u.sum(), n + 1
            if n % 50 == 0 and err(u / u.sum(), ref) <= tol_log:
                break
        rows["plain"].append((n, time.process_time() - t0, err(u / u.sum(), ref)))
        for name, method in (("default (Newton)", "newton"), ("squarem", "squarem")):
            t0 = time.process_time()
            res = J.ag(pc, method=method, tol=1e-8 if method == "newton" else 1e-6)
            rows[name].append((res.iterations, time.process_time() - t0, err(res.joint, ref)))
    out = {}
    for name, r in rows.items():
        r = np.array(r)
        out[f"AG {name}: updates per pair (median)"] = float(np.median(r[:, 0]))
        out[f"AG {name}: CPU s per pair (median)"] = float(np.median(r[:, 1]))
        out[f"AG {name}: max log-prob error (worst pair)"] = float(r[:, 2].max())
    p, d = np.array(rows["plain"]), np.array(rows["default (Newton)"])
    out["AG plain / default: updates (median ratio)"] = float(np.median(p[:, 0] / d[:, 0]))
    out["AG plain / default: CPU seconds (median ratio)"] = float(np.median(p[:, 1] / d[:, 1]))
    return out


def regime_map_cost(profile: str = "quick", n_pairs: int = 12, seed: int = 0) -> dict:
    """CPU seconds of the chapter's regime map per rung (models already cached): loading the rung,
    its KL to the truth (cached after the first build) and ``joints.rung_pairs`` on ``n_pairs`` pairs."""
    from mlmbook import compare
    from mlmbook import joints as J
    from mlmbook.models import ladder, load_mlm
    from mlmbook.toy import Grammar

    grammar = Grammar.load("toy")
    lm = load_mlm("toy", profile=profile, seed=seed)
    sents = [s.words for s in grammar.sample(4 * n_pairs, seed=seed)]
    items = J.choose_pairs(lm, sents, n_pairs, np.random.default_rng(seed))[:n_pairs]
    queries = [(it["ids"], it["A"], it["B"]) for it in items]
    truths = J.truth_joints(grammar, [(it["words"], it["wa"], it["wb"]) for it in items])
    out = {"profile": profile, "pairs per rung": len(queries)}
    for rung in ladder.rungs(profile) + ladder.seed_rungs(profile)[1:]:
        c0 = time.process_time()
        J.rung_pairs(load_mlm(rung), queries, truths)
        out[f"{rung.name} seed {rung.seed}: CPU s"] = time.process_time() - c0 + 0.0
        compare.rung_kl(rung)
    out["all rungs: CPU s"] = sum(v for k, v in out.items() if k.endswith("CPU s"))
    return out


def newton_solve(n_pairs: int = 8, profile: str = "full", seed: int = 0) -> dict:
    """AG (default solver) per pair with the block-structured Newton step (Schur complement and
    Sherman–Morrison) against the same solver with a dense solve of side K_A + K_B, on the default
    MLM's full grids: seconds and the largest difference of the two joints in log space."""
    import sys

    from mlmbook import joints as J
    from mlmbook import threads
    from mlmbook.models import load_mlm
    from mlmbook.toy import Grammar

    ag_module = sys.modules["mlmbook.joints.ag"]
    grammar = Grammar.load("toy")
    lm = load_mlm("toy", profile=profile, seed=seed)
    items = J.choose_pairs(lm, grammar.sample(10 * n_pairs, seed=seed), n_pairs, np.random.default_rng(seed))
    pcs = J.pair_conditionals_batch(lm, [(it["ids"], it["A"], it["B"]) for it in items])
    fast = ag_module._newton_step

    def dense(B, Cw, da, db, g, F):                                 # the Jacobian formed and solved whole
        na, n = len(da), len(da) + len(db)
        jac = np.zeros((n, n))
        jac[:na, na:], jac[na:, :na] = B, Cw.T
        jac[np.arange(na), np.arange(na)] = da
        jac[np.arange(na, n), np.arange(na, n)] = db
        return np.linalg.solve(jac - g[None, :], -F)

    out = {"pairs": len(pcs)}
    with threads.limited():
        res_fast, wall, cpu = _timed(lambda: [J.ag(pc).joint for pc in pcs])
        out["AG with the block-structured Newton step: CPU ms per pair"] = 1000 * cpu / len(pcs)
        ag_module._newton_step = dense
        try:
            res_dense, wall, cpu = _timed(lambda: [J.ag(pc).joint for pc in pcs])
        finally:
            ag_module._newton_step = fast
        out["AG with a dense Newton solve: CPU ms per pair"] = 1000 * cpu / len(pcs)
    out["max |log difference| of the two joints"] = float(max(np.abs(np.log(a[a > 0]) - np.log(b[a > 0])).max()
                                                            for a, b in zip(res_fast, res_dense)))
    return out


def k_sites(profile: str = "full", seed: int = 0, K: int = 6, K_sentence: int = 5, n: int = 4) -> dict:
    """Seconds per query of chapter 2's joints of several tokens: three words of a sentence on a
    ``K``-candidate grid and a whole four-word sentence on a ``K_sentence`` grid — the model's rows,
    the exact joint, the truth's chain and AG-k."""
    from mlmbook import joints as J
    from mlmbook.models import load_mlm
    from mlmbook.toy import Grammar

    grammar = Grammar.load("toy")
    lm = load_mlm("toy", profile=profile, seed=seed)
    rng = np.random.default_rng(seed)
    out = {}
    three = [(s.words, sorted(rng.choice(len(s.words) - 1, 3, replace=False).tolist()))
             for s in grammar.sample(n, seed=seed)]
    whole = [(s.words, [0, 1, 2, 3]) for s in grammar.sample(400, seed=seed) if len(s.words) == 5][:n]
    for name, k, pool in (("three words", K, three), ("whole sentence", K_sentence, whole)):
        out.update(_k_site_costs(J, lm, grammar, name, k, pool))
    return out


def _k_site_costs(J, lm, grammar, name: str, k: int, pool: list) -> dict:
    """:func:`k_sites`'s figures for one ``pool`` of ``(words, sites)`` queries on a ``k`` grid."""
    out = {}
    qk = [(lm.encode_words(w)[0], sites) for w, sites in pool]
    grids, _, _ = _timed(lambda: J.topk_site_candidates(lm, qk, k), repeats=1)
    scs, wall, cpu = _timed(lambda: J.site_conditionals_batch(lm, qk, grids), repeats=1)
    out[f"{name}: model rows, CPU s per query"] = cpu / len(pool)
    _, wall, cpu = _timed(lambda: [J.site_joint(grammar, w, s, g) for (w, s), g in zip(pool, grids)],
                          repeats=1)
    out[f"{name}: exact joint, CPU s per query"] = cpu / len(pool)
    _, wall, cpu = _timed(lambda: [J.site_chain(grammar, w, s, g) for (w, s), g in zip(pool, grids)],
                          repeats=1)
    out[f"{name}: the truth's chain, CPU s per query"] = cpu / len(pool)
    res, wall, cpu = _timed(lambda: [J.ag_k(sc) for sc in scs], repeats=1)
    out[f"{name}: AG-k, CPU s per query"] = cpu / len(pool)
    out[f"{name}: AG-k updates (median)"] = float(np.median([r[1] for r in res]))
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
    print(json.dumps(regime_map_cost(), indent=2))
    print(json.dumps(newton_solve(), indent=2))
    print(json.dumps(k_sites(), indent=2))
