"""The book's pipeline: find chapters, execute them (papermill), render the site (jupyter-book),
check it.

==============  =================================================================
module          idea
==============  =================================================================
``chapters``    chapter files, parameters, the build layout
``zoo``         the book's model plan: each chapter's knob and control models, seeds per profile
``prepare``     the toy models a build needs, as training tasks (stacks)
``execute``     executing chapters atomically, the build's schedule (training and chapters), the
                ``build`` command
``failures``    the one-line message of a failed chapter (cell, cause, where to look)
``site``        staging and rendering the site, the notebooks for launch buttons
``pages``       what a reader meets first: chapter cards (measured times), generated tables
``notebooks``   chapters as plain notebooks for Binder/Colab (MyST to Markdown, solutions folded)
``solutions``   the student edition (solutions removed)
``sitecheck``   the rendered site checked in headless Chromium
``record``      numbers a chapter records for its prose and its tests
==============  =================================================================
"""
