"""The book's pipeline: find chapters, train their models, execute them (papermill), render the
site (jupyter-book), check it. ``docs/INTERFACES.md`` says what each module holds; a chapter
records its numbers with :mod:`~mlmbook.pipeline.record`.
"""
