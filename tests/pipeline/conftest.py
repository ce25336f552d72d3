"""Fixtures of the pipeline tests: the tiny book the browser check's tests doctor."""
import pytest

from tests.pipeline.tiny_site import render_tiny_site


@pytest.fixture(scope="session")
def tiny_site(tmp_path_factory):
    """The tiny book rendered once per session with the book's configuration: its ``html`` folder."""
    return render_tiny_site(tmp_path_factory)


@pytest.fixture(scope="module")
def one_browser(chromium):
    """One Chromium for a module's browser checks (``mlmbook.pipeline.sitecheck.one_browser``)."""
    from mlmbook.pipeline.sitecheck import one_browser
    with one_browser() as browser:
        yield browser
