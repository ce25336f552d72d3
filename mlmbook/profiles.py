"""The book's profiles, named once: every chapter, preset and command reads them here.

============  ===============  ==========================================================
profile       who              budget
============  ===============  ==========================================================
``quick``     tests and CI     whole book executed and rendered in ≤ 5 min (2 CPU cores)
``full``      ``make book``    ≤ 20 min with models trained from scratch, ≤ 8 min cached (2 cores)
``extended``  a cluster        sized by power, not by the clock: every primary question sampled
                               so its detectable effect meets its effect of interest at 80 %
                               power; ``python -m mlmbook cost --profile extended --workers N``
                               prints its plan and estimated time on N workers
============  ===============  ==========================================================

``PROFILES`` are those the book is built and budgeted with; ``KNOWN_PROFILES`` adds
``extended``, whose sample sizes chapters declare as they are sized (a chapter or model list that
declares none yet falls back to the full profile's, and the plan says so).
"""
PROFILES = ("quick", "full")
EXTENDED = "extended"
KNOWN_PROFILES = (*PROFILES, EXTENDED)
FALLBACK = {EXTENDED: "full"}
"""The profile whose sizes stand in where a profile's own are not declared yet."""



def with_fallbacks(table: dict) -> dict:
    """``table`` (profile -> setting) with every :data:`FALLBACK` profile it does not declare filled in by
    its stand-in's setting (the same object), in place; returns it."""
    for profile, stand_in in FALLBACK.items():
        if stand_in in table:
            table.setdefault(profile, table[stand_in])
    return table


__all__ = ["PROFILES", "EXTENDED", "KNOWN_PROFILES", "FALLBACK", "with_fallbacks"]
