"""Shared fixtures: the repository's test photos and references (no network)."""

import os
import threading
import time

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


def within(seconds, fn):
    """fn() on a daemon thread joined for at most `seconds`: its result, or the
    exception it raised; a failed assertion, not a hung suite, when it is
    still running (a deadlock)."""
    out = {}

    def target():
        try:
            out["value"] = fn()
        except BaseException as e:  # handed to the caller as it is
            out["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s: a deadlock"
    if "error" in out:
        raise out["error"]
    return out.get("value")


def until(done, seconds=10):
    """Whether `done()` holds within `seconds`, polled every 10 ms on the
    calling thread (it starts no thread, so a thread count can be polled)."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
