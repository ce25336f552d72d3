r"""Tempered Glauber dynamics on a masked LM: the sampler, couplings and the influence estimate.

One Glauber step picks a site :math:`i`, masks it and redraws it from the MLM's conditional at
temperature :math:`T`, :math:`\pi_{i,T}(v \mid x_{-i}) \propto \exp(\ell_i(v \mid x_{-i}) / T)`
with :math:`\ell_i` the MLM's logits at :math:`i`, over an optional candidate set (renormalised).
If the conditionals come from a joint :math:`p` and :math:`T = 1`, this is the Gibbs sampler of
:cite:t:`geman1984stochastic`: :math:`p` is stationary and the random-scan chain reversible; for
an MLM neither is guaranteed. A *step* updates one site per chain, a *sweep* is n steps; every
step is one batched ``lm.logits`` call (LM head only at the redrawn site).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch

from ..queries import progress_bar as _progress

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["GlauberSampler", "Coupling", "CoupleSettings", "influence"]


def _bar(n: int, progress: bool | None, desc: str):
    return _progress(range(n), total=n, desc=desc, show=(n >= 500 if progress is None else progress))


def _inverse_cdf(p: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Token where each row's CDF (over token-id order) first exceeds u·total; -1 for rows without
    mass."""
    cdf = torch.cumsum(p, dim=-1)
    idx = torch.searchsorted(cdf, (u * cdf[:, -1]).unsqueeze(1), right=True).squeeze(1)
    idx = idx.clamp_(max=p.shape[1] - 1)
    return torch.where(cdf[:, -1] > 0, idx, torch.full_like(idx, -1))


class Coupling(NamedTuple):
    times: np.ndarray  # (C,) first step at which the pair agrees everywhere (max_steps if censored)
    censored: np.ndarray  # (C,) True if the pair never met within max_steps
    final_a: torch.Tensor
    final_b: torch.Tensor
    traj_a: torch.Tensor | None  # (R, C, n) if record_every was given
    traj_b: torch.Tensor | None


@dataclass(frozen=True)
class CoupleSettings:
    """Options of :meth:`GlauberSampler.coupled_run`: record both copies every ``record_every``
    steps (None: never); stop once every pair has met (``stop_when_met``); ``freeze_met`` stops
    simulating met pairs (their randomness is still drawn, so the others are unchanged), and
    ``final_a``/``final_b`` then hold each pair's meeting state."""
    record_every: int | None = None
    stop_when_met: bool = True
    freeze_met: bool = False


class GlauberSampler:
    r"""Many Glauber chains at once, driven by a seeded ``torch.Generator``. Tokens are drawn by
    inverse CDF over token-id order from one uniform per chain and step; a chain whose conditional
    has no mass on its candidate set (only an exact oracle that forbids every candidate in that
    context) keeps its current token.

    Parameters
    ----------
    lm : oracle with ``logits(ids, positions)`` and ``mask_id`` (docs/INTERFACES.md)
    temperature : float > 0, or a sequence of them, one per chain (then every state batch
        given to the sampler must have that many chains): chains at several temperatures
        share each forward pass
    scan : ``"random"`` (site uniform over the free sites, independently per chain) or
        ``"systematic"`` (all chains visit the free sites in order, cyclically)
    frozen : positions never resampled (e.g. the final ".")
    candidates : token ids to sample from (default: the whole vocabulary): one sequence shared
        by every site, or a dict ``{position: ids}`` of per-site sets (positions not in it use
        the whole vocabulary); the conditional is renormalised over the set
    seed : seed of the generator; same seed, same oracle → same chains
    """

    def __init__(self, lm: MaskedLM, temperature=1.0, scan: str = "random", frozen=None,
                 candidates=None, seed: int = 0):
        T = torch.as_tensor(temperature, dtype=torch.float64)
        if T.dim() > 1 or (T <= 0).any():
            raise ValueError("temperature must be positive (a float or one per chain)")
        if scan not in ("random", "systematic"):
            raise ValueError("scan must be 'random' or 'systematic'")
        self.lm, self.scan = lm, scan
        self.T = float(T) if T.dim() == 0 else T
        self.frozen = sorted(set(int(f) for f in (frozen or ())))
        self.per_site = isinstance(candidates, dict)
        if self.per_site:
            self.candidates = {int(k): torch.as_tensor(v, dtype=torch.long) for k, v in candidates.items()}
        else:
            self.candidates = None if candidates is None else torch.as_tensor(candidates, dtype=torch.long)
        self.generator = torch.Generator().manual_seed(seed)
        self._coupling_generator = torch.Generator().manual_seed(seed + 104_729)

    def temperatures(self, C: int) -> torch.Tensor:
        """(C,) temperature of each chain."""
        if isinstance(self.T, float):
            return torch.full((C,), self.T, dtype=torch.float64)
        if len(self.T) != C:
            raise ValueError(f"{len(self.T)} temperatures given for {C} chains")
        return self.T

    def draw(self, C: int, n: int, t: int = 0):
        """The randomness of step ``t`` for C chains of length n: (sites (C,), uniforms (C,))."""
        s = torch.tensor([i for i in range(n) if i not in self.frozen], dtype=torch.long)
        if self.scan == "random":
            site = s[torch.randint(len(s), (C,), generator=self.generator)]
        else:
            site = s[t % len(s)].repeat(C)
        return site, torch.rand(C, generator=self.generator, dtype=torch.float64)

    def probs(self, x: torch.Tensor, site: torch.Tensor, T=None) -> torch.Tensor:
        r"""(C, V) tempered conditionals :math:`\pi_{i,T}(\cdot \mid x_{-i})` at ``site[c]`` of each
        row (float64; ``T`` a float or one per row), from one ``lm.logits`` call; rows without mass
        on the candidates are all zero."""
        rows = torch.arange(len(x))
        q = x.clone()
        q[rows, site] = self.lm.mask_id
        z = self.lm.logits(q, site[:, None])[:, 0, :].detach().cpu().to(torch.float64)
        if self.candidates is not None:
            allowed = torch.ones(z.shape, dtype=torch.bool)
            for i, ids in (self.candidates.items() if self.per_site else [(None, self.candidates)]):
                row = torch.zeros(z.shape[1], dtype=torch.bool)
                row[ids] = True
                allowed[slice(None) if i is None else site == i] = row
            z = z.masked_fill(~allowed, float("-inf"))
        T = torch.as_tensor(self.temperatures(len(x)) if T is None else T, dtype=torch.float64)
        T = T[:, None] if T.dim() == 1 else T
        return torch.softmax(z / T, dim=-1).nan_to_num_(0.0)

    def update(self, x: torch.Tensor, site: torch.Tensor, u: torch.Tensor, T=None) -> torch.Tensor:
        """One step with given randomness: row ``c`` resamples ``site[c]`` by inverse CDF at
        ``u[c]``; ``T``: (C,) temperatures (default :meth:`temperatures`). Returns new states."""
        tok = _inverse_cdf(self.probs(x, site, T), u)
        rows = torch.arange(len(x))
        x = x.clone()
        x[rows, site] = torch.where(tok >= 0, tok, x[rows, site])
        return x

    def run(self, init, n_steps: int, record_every: int = 1, progress: bool | None = None) -> torch.Tensor:
        """Run the chains from ``init`` (C, n) for ``n_steps`` steps: the states at steps 0, r, 2r,
        ... ≤ n_steps (r = ``record_every``), a LongTensor (R, C, n); ``progress`` (default: when
        n_steps ≥ 500) shows a tqdm bar."""
        x = torch.as_tensor(init, dtype=torch.long)
        x = x[None] if x.dim() == 1 else x
        out = [x]
        for t in _bar(n_steps, progress, "Glauber"):
            x = self.update(x, *self.draw(*x.shape, t))
            if (t + 1) % record_every == 0:
                out.append(x)
        return torch.stack(out)

    def coupled_run(self, init_a, init_b, max_steps: int, coupling: str = "cdf", *,
                    settings: CoupleSettings = CoupleSettings(),
                    progress: bool | None = None) -> Coupling:
        r"""Couple pairs of chains: both copies of a pair update the same site at every step.

        ``coupling="cdf"`` (the grand coupling): both copies use the same uniform :math:`u` and
        take the token where their own CDF (over token-id order) first exceeds it.
        ``coupling="maximal"``: copy a draws :math:`X \sim p_a` by inverse CDF at :math:`u` (as
        :meth:`run` would), and copy b keeps :math:`Y = X` with probability :math:`\min(1,
        p_b(X)/p_a(X))`, else draws from the residual :math:`(p_b - p_a)_+`; then :math:`P(X = Y) =
        1 - \|p_a - p_b\|_\mathrm{TV}`, the most any coupling of the two updates can achieve (Levin
        & Peres, Prop. 4.7), while under the grand coupling two slightly different CDFs rarely pick
        the same token of a large vocabulary. Its extra uniforms come from a second generator, so
        copy a is always the chain :meth:`run` gives. Either way each copy is marginally a Glauber
        chain and met pairs stay together (they share one forward row). The coalescence time
        :math:`\tau = \min\{t : a_t = b_t\}` bounds the distance to stationarity: :math:`d(t) \le
        \max_{x,y} P_{x,y}(\tau > t)` (Levin & Peres, Thm 5.4).
        """
        if coupling not in ("cdf", "maximal"):
            raise ValueError("coupling must be 'cdf' or 'maximal'")
        record_every, freeze_met = settings.record_every, settings.freeze_met
        a, b = (torch.as_tensor(v, dtype=torch.long) for v in (init_a, init_b))
        C, n = a.shape
        temps = self.temperatures(C)
        met = (a == b).all(dim=1)
        times = np.where(met.numpy(), 0, max_steps)
        ta, tb = ([a], [b]) if record_every else (None, None)
        for t in _bar(max_steps, progress, "coupling"):
            if settings.stop_when_met and bool(met.all()):
                break
            site, u = self.draw(C, n, t)
            u2 = torch.rand(2, C, generator=self._coupling_generator, dtype=torch.float64)
            apart = torch.nonzero(~met).ravel()
            run_a = apart if freeze_met else torch.arange(C)           # copy-a rows simulated
            k = len(run_a)
            p = self.probs(torch.cat([a[run_a], b[apart]]), torch.cat([site[run_a], site[apart]]),
                           torch.cat([temps[run_a], temps[apart]]))
            pa = p[:k]
            xa = _inverse_cdf(pa, u[run_a])
            if coupling == "cdf":
                xb = _inverse_cdf(p[k:], u[apart])
            else:
                pos = torch.searchsorted(run_a, apart)  # row of each apart pair in pa
                pa_, pb = pa[pos], p[k:]
                x = xa[pos]
                xc = x.clamp(min=0)
                keep = u2[0, apart] * pa_.gather(1, xc[:, None])[:, 0] <= pb.gather(1, xc[:, None])[:, 0]
                resid = _inverse_cdf((pb - pa_).clamp_(min=0), u2[1, apart])
                xb = torch.where(keep | (resid < 0), x, resid)
                xb = torch.where(x < 0, _inverse_cdf(pb, u[apart]), xb)
            a_new, b_new = a.clone(), b.clone()
            a_new[run_a, site[run_a]] = torch.where(xa >= 0, xa, a[run_a, site[run_a]])
            if not freeze_met:
                b_new[met] = a_new[met]                                  # met pairs move together
            b_new[apart, site[apart]] = torch.where(xb >= 0, xb, b[apart, site[apart]])
            a, b = a_new, b_new
            now = (a == b).all(dim=1)
            times[(now & ~met).numpy()] = t + 1
            met |= now
            if record_every and (t + 1) % record_every == 0:
                ta.append(a)
                tb.append(b)
        return Coupling(times, ~met.numpy(), a, b,
                        torch.stack(ta) if ta else None, torch.stack(tb) if tb else None)


def influence(lm: MaskedLM, ids, temperatures, frozen=(), substitutes: str = "top",
              seed: int = 0) -> np.ndarray:
    r"""Estimated Dobrushin influence of one token on the rest of the sentence, per temperature.

    For a sentence :math:`x` (a row of ``ids``, (S, n) token ids), a free site :math:`j` and a
    substitute :math:`v` for :math:`x_j` (the two most likely other tokens of :math:`q(\cdot \mid
    x_{-j})`, or with ``substitutes="random"`` two random tokens it allows),

    .. math::
        c_j(x, v) = \sum_{i \ne j} \big\|\pi_{i,T}(\cdot \mid x_{-i}) -
                    \pi_{i,T}(\cdot \mid x^{j \leftarrow v}_{-i})\big\|_\mathrm{TV},

    If :math:`\alpha = \sup_{x, j, v} c_j(x, v) < 1` (Dobrushin's condition), random-scan
    Glauber dynamics mixes in :math:`O(n \log n)` steps (Levin & Peres, ch. 14). Returned: the
    sampled :math:`\hat\alpha(x) = \max_j \operatorname{mean}_v c_j(x, v)` per sentence and
    temperature, (S, len(temperatures)) from one oracle pass, a typical-case estimate, not a
    certificate. ``frozen`` positions are neither sources nor targets.
    """
    ids = torch.as_tensor(ids, dtype=torch.long)
    S, n = ids.shape
    free = [i for i in range(n) if i not in set(frozen)]
    Ts = torch.as_tensor(np.asarray(temperatures, dtype=np.float64))
    out = np.zeros((S, len(Ts)))
    m = lm.mask_id
    gen = torch.Generator().manual_seed(seed)
    for s, x in enumerate(ids):
        base = x.repeat(len(free), 1)
        base[torch.arange(len(free)), torch.tensor(free)] = m
        lg0 = lm.logits(base, torch.tensor(free)[:, None])[:, 0].double()          # (F, V) at T = 1
        rows, pos, src = [], [], []
        for a, j in enumerate(free):
            if substitutes == "top":
                top = torch.argsort(lg0[a], descending=True)
            else:
                top = torch.randperm(lm.V, generator=gen)
                top = top[torch.isfinite(lg0[a, top])]
            subs = [int(v) for v in top[:3] if int(v) != int(x[j])][:2]
            for v in subs:
                for b, i in enumerate(free):
                    if i != j:
                        r = x.clone()
                        r[j], r[i] = v, m
                        rows.append(r), pos.append(i), src.append((a, b))
        lg = lm.logits(torch.stack(rows), torch.tensor(pos)[:, None])[:, 0].double()
        a_idx, b_idx = torch.tensor(src).T
        for k, T in enumerate(Ts):
            p0 = torch.softmax(lg0 / T, dim=-1).nan_to_num(0.0)
            p1 = torch.softmax(lg / T, dim=-1).nan_to_num(0.0)
            tv_ = 0.5 * (p1 - p0[b_idx]).abs().sum(dim=-1)  # one per row
            col = torch.zeros(len(free)).double().index_add_(0, a_idx, tv_)
            cnt = torch.zeros(len(free)).double().index_add_(0, a_idx, torch.ones_like(tv_))
            c = col / cnt.clamp(min=1) * (len(free) - 1)          # mean over v of the sum over i
            out[s, k] = float(c.max())
    return out

