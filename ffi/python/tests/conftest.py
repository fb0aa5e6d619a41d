"""Shared fixtures: the repository's test photos and references (no network)."""

import os

import pytest

FIXTURES = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "fixtures"))


def fixture(*parts):
    """The path of a file under tests/fixtures."""
    return os.path.join(FIXTURES, *parts)


@pytest.fixture(scope="session")
def tp():
    import tensorprep

    return tensorprep


@pytest.fixture(scope="session")
def turbo(tp):
    """The libjpeg-turbo decoder: wheels have it; a build without it cannot
    reproduce Pillow's pixels, so the parity tests need it."""
    if "libjpeg-turbo" not in tp.decoders:
        pytest.skip("this build has no libjpeg-turbo decoder (maturin builds the wheel with it)")
    return "libjpeg-turbo"
