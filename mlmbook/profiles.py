"""The book's two profiles, named once: every chapter, preset and command reads them here.

=========  ===============  ==========================================================
profile    who              budget (2 CPU cores, no GPU)
=========  ===============  ==========================================================
``quick``  tests and CI     whole book executed and rendered in ≤ 5 min
``full``   ``make book``    ≤ 20 min with models trained from scratch, ≤ 8 min cached
=========  ===============  ==========================================================
"""
PROFILES = ("quick", "full")

__all__ = ["PROFILES"]
