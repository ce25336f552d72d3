r"""The landscape :math:`E = -\log p` that heat-bath Glauber dynamics climbs: heights of moves, the
critical depth, barriers between basins, and the path over a barrier. At temperature :math:`T` the
Gibbs sampler of :math:`p^{1/T}` on a :class:`~mlmbook.glauber.exact.Frame` moves between neighbours
:math:`x, y` (one site apart, on the *line* :math:`\ell` of states that differ only there) with
stationary flow :math:`\asymp e^{-h(x,y)/T}`, where the move's *height* is :math:`h(x, y) = E(x) +
E(y) - \min_{z \in \ell} E(z)`. Every quantity here is a minimax over paths of those heights,
computed by Kruskal's algorithm over the moves sorted by height.
"""
from __future__ import annotations

from collections import deque
from typing import NamedTuple

import numpy as np

from .exact import Frame

__all__ = ["critical_depth", "barrier_path", "BarrierPath"]


def critical_depth(log_p, frame: Frame, return_trap: bool = False):
    r"""Critical depth :math:`\Gamma` of the energy landscape :math:`E = -\log p` for heat-bath
    Glauber dynamics on a :class:`Frame`. The depth of a local minimum is the least possible maximum
    of the height :math:`h` (module text) along a path to a state of lower energy, minus its own
    energy; :math:`\Gamma` is the largest depth over all minima but the ground state. As :math:`T
    \to 0` the spectral gap behaves like :math:`e^{-\Gamma/T}` (Holley & Stroock; Catoni), so
    :math:`\log t_\text{rel} \approx \Gamma / T`: the Arrhenius law. States with :math:`p = 0` are
    left out.

    Parameters
    ----------
    log_p : (S,) log-probabilities of the frame's states, in frame order
    frame : :class:`Frame` (or any object with ``sites`` and ``families(a)``)
    return_trap : also return the deepest trap: the index of its minimum and the move
        ``(x, y)`` (state indices) at the top of its cheapest way out

    Returns
    -------
    float, or ``(depth, minimum, (x, y))`` with ``return_trap`` (``minimum`` is -1 when
    there is a single well)
    """
    E, (h, u, v) = _moves(log_p, frame)
    parent = np.arange(len(E))
    bottom = np.arange(len(E))  # each component's lowest state
    depth, trap = 0.0, (-1, (-1, -1))
    for k in np.argsort(h, kind="stable"):
        ru, rv = _root(parent, u[k]), _root(parent, v[k])
        if ru == rv:
            continue
        if E[bottom[ru]] > E[bottom[rv]]:
            ru, rv = rv, ru  # ru holds the lower minimum
        if h[k] - E[bottom[rv]] > depth:
            depth, trap = float(h[k] - E[bottom[rv]]), (int(bottom[rv]), (int(u[k]), int(v[k])))
        parent[rv] = ru
    return (depth, *trap) if return_trap else depth


def _root(parent: np.ndarray, x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def _moves(log_p, frame):
    """Energies and every single-site move ``(h, u, v)`` between states of positive probability."""
    E = -np.asarray(log_p, dtype=np.float64)
    hs, us, vs = [], [], []
    for a in range(len(frame.sites)):
        fam = frame.families(a)
        e = E[fam]                                                          # (F, m)
        low = e.min(axis=1, keepdims=True)
        iu, iv = np.triu_indices(fam.shape[1], 1)
        with np.errstate(invalid="ignore"):  # inf - inf on forbidden lines
            h = e[:, iu] + e[:, iv] - low
        ok = np.isfinite(h)
        hs.append(h[ok]), us.append(fam[:, iu][ok]), vs.append(fam[:, iv][ok])
    return E, tuple(np.concatenate(z) for z in (hs, us, vs))


class BarrierPath(NamedTuple):
    """The cheapest way over a barrier: its height above the start (nats), the states of a path that
    attains it (start first, the first state of the target last) and the saddle move ``(x, y)`` at
    its top."""
    gamma: float
    states: list
    saddle: tuple


def barrier_path(log_p, frame: Frame, source: int, target) -> BarrierPath:
    r"""Height of the cheapest way from state ``source`` into the set ``target``, above ``source``,
    with a path that attains it:

    .. math::
        \Gamma(s \to B) = \min_{\text{paths } s \to B}\; \max_{(x,y) \in \text{path}} h(x, y)
        \;-\; E(s).

    As :math:`T \to 0` the mean time for the tempered Gibbs sampler started at the bottom :math:`s`
    of its basin to reach :math:`B` grows like :math:`e^{\Gamma(s\to B)/T}` (the Arrhenius law of
    the escape). The path runs in the minimum spanning forest of the moves (by height); its highest
    move is the saddle, the one that joined ``source``'s component to the target's. ``gamma`` is
    ``inf`` (and the path empty) if no path reaches ``target``.
    """
    E, (h, u, v) = _moves(log_p, frame)
    tgt = np.zeros(len(E), bool)
    tgt[list(target)] = True
    source = int(source)
    if tgt[source]:
        return BarrierPath(0.0, [source], (source, source))
    parent = np.arange(len(E))
    hit = tgt.copy()  # per root: holds a target state
    tree: dict = {}
    for k in np.argsort(h, kind="stable"):
        ru, rv = _root(parent, u[k]), _root(parent, v[k])
        if ru == rv:
            continue
        parent[rv] = ru
        hit[ru] |= hit[rv]
        tree.setdefault(int(u[k]), []).append(int(v[k]))
        tree.setdefault(int(v[k]), []).append(int(u[k]))
        if hit[_root(parent, source)]:
            break
    else:
        return BarrierPath(float("inf"), [], (-1, -1))
    back, todo = {source: source}, deque([source])  # breadth-first in the forest to a target
    while not tgt[todo[0]]:
        x = todo.popleft()
        for y in tree.get(x, []):
            if y not in back:
                back[y] = x
                todo.append(y)
    path = [todo[0]]
    while path[-1] != source:
        path.append(back[path[-1]])
    return BarrierPath(float(h[k] - E[source]), path[::-1], (int(u[k]), int(v[k])))
