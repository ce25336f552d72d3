"""Fixtures of the pipeline tests: the tiny book the browser check's tests doctor."""
import pytest

from tests.pipeline.tiny_site import render_tiny_site


@pytest.fixture(scope="session")
def tiny_site(tmp_path_factory):
    """The tiny book rendered once per session with the book's configuration: its ``html`` folder."""
    return render_tiny_site(tmp_path_factory)
