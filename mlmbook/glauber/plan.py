r"""How much chapter 5 measures in each profile: one :class:`Plan` per profile (:func:`plan`).
The full profile sizes the primary questions (:mod:`mlmbook.glauber.study`) first, as the power
calculation of the growth exponent asks; the quick one runs every step on a few units (tests).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["Plan", "plan", "PROFILES"]


@dataclass(frozen=True)
class Plan:
    """Sizes of chapter 5's experiments in one profile: ``corpus``: sentences sampled from the toy
    language (for the rectangle test and the coupling grid). ``rect_sentences``: sentences of the
    rectangle test, of which the first ``truth_rect_sentences`` the truth also answers. ``frame``:
    ``"small"`` or ``"big"``, the selection frame's candidate lists; ``frame_T``: the temperatures
    of its exact sweep, ascending (must hold 1.0). ``scaling``: ``{n: sentences}``, the exact frames
    of growing length, at ``scaling_T`` (``(1.0, 3.0)``; the questions read both). ``grid_lengths``,
    ``grid_temps``, ``grid_pairs``, ``grid_cap``: the coupling grid's lengths, temperatures, start
    pairs per cell and cap in sweeps; ``influence_sentences``: sentences per length for the
    influence estimate. ``exact_T``: temperatures of the exact escape times in the topic worlds,
    descending; ``check_T``, ``check_chains``, ``check_cap``: the temperatures, chains per
    temperature and cap in steps of the check of the real sampler against a frame's exact chain.
    ``trajectory_T``, ``trajectory_chains``, ``trajectory_sweeps``, ``topic_len``: the semantic
    trajectory over the whole vocabulary. ``kl_sentences``: sentences of the topic world on which
    each ladder rung's KL to the truth is measured. ``topic_words``: the topic frame's candidates
    (subject, verb, object and place, each over farm, neutral and town words)."""
    corpus: int
    rect_sentences: int
    truth_rect_sentences: int
    frame: str
    frame_T: tuple
    scaling: dict
    scaling_T: tuple
    grid_lengths: tuple
    grid_temps: tuple
    grid_pairs: int
    grid_cap: int
    influence_sentences: int
    exact_T: tuple
    check_T: tuple
    check_chains: int
    check_cap: int
    trajectory_T: float
    trajectory_chains: int
    trajectory_sweeps: int
    topic_len: int
    kl_sentences: int
    topic_words: tuple

    @property
    def scaling_units(self) -> int:
        """Sentences (frames) of the exact scaling in all."""
        return sum(self.scaling.values())


PROFILES = {
    "quick": Plan(
        corpus=1500, rect_sentences=40, truth_rect_sentences=12, frame="small",
        frame_T=(0.15, 0.2, 0.3, 0.5, 1.0, 3.0), scaling={4: 2, 5: 2, 6: 2}, scaling_T=(1.0, 3.0),
        grid_lengths=(4, 6, 8), grid_temps=(1.0, 2.5, 7.0), grid_pairs=6, grid_cap=12,
        influence_sentences=3, exact_T=(1.0, 0.8, 0.7, 0.5, 0.4, 0.33, 0.25), check_T=(1.0, 0.65),
        check_chains=16, check_cap=200, trajectory_T=0.8, trajectory_chains=3, trajectory_sweeps=40,
        topic_len=9, kl_sentences=30,
        topic_words=(("farmer", "man", "girl", "teacher"), ("feeds", "sees", "walks"), ("cow", "dog", "cat", "pigeon"),
                     ("barn", "park", "garden", "market"))),
    "full": Plan(
        corpus=2500, rect_sentences=150, truth_rect_sentences=40, frame="big",
        frame_T=(0.1, 0.125, 0.15, 0.2, 0.25, 0.33, 0.5, 0.7, 1.0, 1.4, 2.0, 3.0),
        scaling={4: 16, 5: 16, 6: 16, 7: 16, 8: 16, 9: 16, 10: 8, 11: 8}, scaling_T=(1.0, 3.0),
        grid_lengths=(4, 6, 8, 10, 13), grid_temps=(1.0, 2.5, 7.0, 15.0), grid_pairs=12,
        grid_cap=25, influence_sentences=6, exact_T=(1.0, 0.8, 0.7, 0.5, 0.4, 0.33, 0.25),
        check_T=(1.0, 0.7, 0.5), check_chains=40, check_cap=200, trajectory_T=0.8,
        trajectory_chains=4, trajectory_sweeps=150, topic_len=9, kl_sentences=60,
        topic_words=(("farmer", "shepherd", "man", "girl", "teacher", "doctor"), ("feeds", "sees", "walks"),
                     ("cow", "horse", "dog", "cat", "pigeon", "rat"),
                     ("barn", "field", "park", "garden", "market", "station"))),
}
PROFILES["extended"] = replace(PROFILES["full"], scaling={n: 45 for n in range(4, 12)})
"""The profiles: ``quick`` (tests), ``full`` (the book) and ``extended`` (a cluster: 45 sentences at
every length, the 360 that the committed plan asks for the shape question at high temperature)."""
PROFILES["pilot"] = replace(PROFILES["quick"], rect_sentences=60, scaling={n: 2 for n in range(4, 12)})
"""The plans' pilot (:mod:`mlmbook.plans`): the quick plan, with the full plan's lengths (two
sentences each)."""


def plan(profile: str) -> Plan:
    """The :class:`Plan` of ``profile``."""
    if profile not in PROFILES:
        raise ValueError(f"chapter 5 has no plan for profile {profile!r}; use one of {sorted(PROFILES)}")
    return PROFILES[profile]
