"""The book's profiles, named once: every chapter, preset and command reads them here.

============  ===============  ==========================================================
profile       who              budget
============  ===============  ==========================================================
``quick``     tests and CI     whole book executed and rendered in ≤ 5 min (2 CPU cores)
``full``      ``make book``    ≤ 20 min with models trained from scratch, ≤ 8 min cached (2 cores)
``pilot``     the plans        each primary question's planning SD (:mod:`mlmbook.plans`), from
                               training seeds and sentence samples disjoint from every
                               reference's; ``python -m mlmbook build --profile pilot --no-render``
``extended``  a cluster        sized by power, not by the clock: every primary question sampled
                               so its detectable effect meets its effect of interest at 80 %
                               power; ``python -m mlmbook cost --profile extended --workers N``
                               prints its plan and estimated time on N workers
============  ===============  ==========================================================

``PROFILES`` are those the book is built and budgeted with; ``BUILDABLE`` adds ``pilot`` and
``extended`` (``KNOWN_PROFILES`` is the same set); a chapter or model list that declares no sizes of
its own for a profile falls back to :data:`FALLBACK`'s stand-in, and the plan says so.

**The pilot is disjoint by one offset.** Every seed a profile draws — the training seeds of its
models (:mod:`mlmbook.pipeline.zoo`, :mod:`mlmbook.models.ladder`, :mod:`mlmbook.pipeline.prepare`) and
the chapter's ``seed`` parameter, which seeds its sentence samples and its default model — is the
reference's seed plus :func:`seed_offset` (``PILOT_SEED_OFFSET`` for the pilot, 0 otherwise). The
references use seeds below :data:`PILOT_SEED_OFFSET` (the extended profile's largest table, chapter
4's, trains 37), so no pilot model or sample is one of theirs. The pilot trains the models and uses
the sample sizes of :data:`FALLBACK`'s stand-in (``quick``: a pilot needs a standard deviation, not
a verdict, and must run on a laptop); each chapter may declare pilot sizes of its own.
``FALLBACK[PILOT] = "full"`` would give a pilot of the full profile's models (their SDs fit the full
reference better, at about the cost of a cold full build).
"""
PROFILES = ("quick", "full")
EXTENDED = "extended"
PILOT = "pilot"
BUILDABLE = (*PROFILES, PILOT, EXTENDED)
"""The profiles ``python -m mlmbook build --profile`` accepts."""
KNOWN_PROFILES = (*PROFILES, EXTENDED, PILOT)
FALLBACK = {EXTENDED: "full", PILOT: "quick"}
"""The profile whose sizes stand in where a profile's own are not declared yet."""

PILOT_SEED_OFFSET = 1000
"""Added to every training and sampling seed of the pilot (the references' seeds are all below
it)."""


def seed_offset(profile: str) -> int:
    """What ``profile`` adds to every seed it draws: :data:`PILOT_SEED_OFFSET` for the pilot, else
    0."""
    return PILOT_SEED_OFFSET if profile == PILOT else 0


def with_fallbacks(table: dict) -> dict:
    """``table`` (profile -> setting) with every :data:`FALLBACK` profile it does not declare filled
    in by its stand-in's setting (the same object), in place; returns it."""
    for profile, stand_in in FALLBACK.items():
        if stand_in in table:
            table.setdefault(profile, table[stand_in])
    return table


__all__ = ["PROFILES", "EXTENDED", "PILOT", "BUILDABLE", "KNOWN_PROFILES", "FALLBACK",
           "PILOT_SEED_OFFSET", "seed_offset", "with_fallbacks"]
