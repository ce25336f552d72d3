"""The book's profiles, named once: every chapter, preset and command reads them here.

============  ===============  ==========================================================
profile       who              budget
============  ===============  ==========================================================
``quick``     tests and CI     whole book executed and rendered in ≤ 5 min (2 CPU cores)
``full``      ``make book``    ≤ 20 min with models trained from scratch, ≤ 8 min cached (2 cores)
``pilot``     the plans        each primary question's planning SD (:mod:`mlmbook.plans`)
``extended``  a cluster        every primary question at its planned sample (80 % power); its
                               plan: ``python -m mlmbook cost --profile extended --workers N``
============  ===============  ==========================================================

A chapter or model list that declares no sizes of its own for a profile falls back to
:data:`FALLBACK`'s stand-in (the pilot: ``quick``'s; it needs a standard deviation, not a verdict).
No pilot model or sample is one of the references' (:func:`seed_offset`).
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
"""Added to every training and sampling seed of the pilot (the references' are all below it)."""


def seed_offset(profile: str) -> int:
    """What ``profile`` adds to every seed it draws (:data:`PILOT_SEED_OFFSET` for the pilot)."""
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
