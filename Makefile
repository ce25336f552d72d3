# The book's entry points. Every target first makes sure .venv exists and has the
# package installed; that set-up runs again only when pyproject.toml changes.
#
#   make book    the whole book, full profile  -> _build/html/index.html
#   make quick   the whole book, quick profile
#   make test    the test suite (unit tests + every chapter in the quick profile)
#   make test-fast  the unit tier only (pytest -m "not slow": nothing executes a chapter or builds a book)
#   make lint    ruff (rules and line length in pyproject.toml)
#   make bench   time the profiles (writes benchmarks/results.md)
#   make reference  rebuild the whole book (full profile) and update the committed reference
#                results (results/full/, results/timings/): the only target that changes
#                tracked files besides `make bench`
#   make clean   remove build output (_build/); `make distclean` also removes .venv

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cksum < pyproject.toml | cut -d' ' -f1)
# the suite on two processes (pytest-xdist): each shared book is built once, in one of them, and the
# tests that read it run there (tests/conftest.py gives every test its group); PARALLEL= runs it in one
PARALLEL ?= -n 2 --dist loadgroup --no-loadscope-reorder

.PHONY: book quick test test-fast lint bench reference setup clean distclean

book: $(STAMP)
	$(PY) -m mlmbook build --profile full

quick: $(STAMP)
	$(PY) -m mlmbook build --profile quick

test: $(STAMP)
	$(PY) -m pytest -q $(PARALLEL) --durations=25

test-fast: $(STAMP)
	$(PY) -m pytest -q $(PARALLEL) -m "not slow"

lint: $(STAMP)
	$(VENV)/bin/ruff check mlmbook tests benchmarks

bench: $(STAMP)
	$(PY) -m benchmarks

reference: $(STAMP)
	$(PY) -m mlmbook build --profile full --update-reference

setup: $(STAMP)

$(STAMP):
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -e '.[book,test]'
	@rm -f $(VENV)/.installed-*
	@touch $@

clean:
	rm -rf _build .pytest_cache

distclean: clean
	rm -rf $(VENV)
