"""Datasets at http:// URLs (a build with the Cargo feature ``remote``, as the
wheels are): the same batches as from disk for RecordIO, TFRecord,
WebDataset and MindRecord, in the global and the shard-block shuffle; forked
children (``multiprocessing``'s "fork", as a PyTorch ``DataLoader``'s
workers) read them after their parent did; a missing object is a
``DataError`` naming its URL. The server is Python's ``http.server`` with
byte ranges and ETags, on 127.0.0.1: no network."""

import email.utils
import multiprocessing
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from conftest import fixture, within

FIXTURES = fixture()


class _Ranges(BaseHTTPRequestHandler):
    """GET and HEAD of the files under tests/fixtures, with ``Range``,
    ``ETag`` and ``If-Match`` (what an object store answers)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002  (quiet)
        pass

    def do_HEAD(self):
        self._answer(body=False)

    def do_GET(self):
        self._answer(body=True)

    def _answer(self, body):
        type(self).requests += 1
        rel = self.path.split("?")[0].lstrip("/")
        path = os.path.join(FIXTURES, rel)
        if ".." in rel.split("/") or not os.path.isfile(path):
            return self._send(404, {}, b"", body)
        with open(path, "rb") as f:
            data = f.read()
        stat = os.stat(path)
        etag = f'"{stat.st_mtime_ns:x}-{len(data)}"'
        headers = {
            "ETag": etag,
            "Accept-Ranges": "bytes",
            "Last-Modified": email.utils.formatdate(stat.st_mtime, usegmt=True),
        }
        match = self.headers.get("If-Match")
        if match is not None and match not in (etag, "*"):
            return self._send(412, headers, b"", body)
        ranges = self.headers.get("Range")
        if ranges is None:
            return self._send(200, headers, data, body)
        first, _, last = ranges.removeprefix("bytes=").partition("-")
        start = int(first)
        end = min(int(last) if last else len(data) - 1, len(data) - 1)
        if start > end:
            return self._send(416, {"Content-Range": f"bytes */{len(data)}"}, b"", body)
        headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
        return self._send(206, headers, data[start : end + 1], body)

    def _send(self, status, headers, data, body):
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)


@pytest.fixture(scope="module")
def server(tp):
    from tensorprep import train

    if train.remote_stats() is None:
        pytest.skip("this build has no remote datasets (the wheel's pyproject features include `remote`)")
    _Ranges.requests = 0
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Ranges)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    thread.join(10)


def _datasets(train, base):
    """Each format's fixture, opened from ``base`` (a folder or a URL)."""
    at = lambda *parts: "/".join([base, *parts])  # noqa: E731
    return {
        "RecordIO": lambda: train.RecordIO(at("records", "folder.rec")),
        "TFRecord": lambda: train.TFRecord(at("records", "folder.tfrecord")),
        "WebDataset": lambda: train.WebDataset(at("records", "shard-{0..1}.tar")),
        "MindRecord": lambda: train.MindRecord(at("mindrecord", "folder", "folder.mindrecord")),
    }


def _batches(train, data, workers, shuffle=True):
    """One epoch: each batch's images and labels."""
    pipeline = train.Pipeline([train.RandomResizedCrop(24), train.RandomHorizontalFlip()])
    loader = train.Loader(
        data, pipeline, 2, workers, seed=5, shard=None, shuffle=shuffle, block_window=1, output="numpy", epochs=1
    )
    out = [(np.array(images), np.array(labels)) for images, labels in loader]
    loader.close()
    return out


def _same(a, b):
    assert len(a) == len(b) and len(a) > 0
    for (ia, la), (ib, lb) in zip(a, b):
        assert np.array_equal(ia, ib) and np.array_equal(la, lb)


@pytest.mark.parametrize("fmt", ["RecordIO", "TFRecord", "WebDataset", "MindRecord"])
def test_batches_over_http_are_the_disks(server, fmt):
    from tensorprep import train

    local = _datasets(train, FIXTURES)[fmt]
    remote = _datasets(train, server)[fmt]
    before = train.remote_stats()
    for workers in (1, 2):
        for shuffle in (True, "blocks"):
            _same(_batches(train, remote(), workers, shuffle), _batches(train, local(), workers, shuffle))
    after = train.remote_stats()
    assert after is not None and before is not None
    assert after["requests"] > before["requests"]


# The parent's dataset, inherited by forked children (a Dataset is not
# pickled: the children find it here).
_INHERITED = {}


def _child_epoch(workers):
    from tensorprep import train

    # Drops the blocks inherited from the parent: the child asks the server.
    train.set_read_blocks(4096, 1 << 20)
    before = train.remote_stats()
    got = [(i.tobytes(), l.tobytes()) for i, l in _batches(train, _INHERITED["data"], workers)]
    after = train.remote_stats()
    assert before is not None and after is not None and after["requests"] > before["requests"]
    return got


def test_forked_children_read_a_remote_dataset_after_their_parent(server):
    from tensorprep import train

    train.set_read_blocks(4096, 1 << 20)
    try:
        data = train.TFRecord(server + "/records/folder.tfrecord")
        # The parent reads first: its runtime, clients and blocks exist
        # when it forks.
        parent = [(i.tobytes(), l.tobytes()) for i, l in _batches(train, data, 2)]
        _INHERITED["data"] = data
        context = multiprocessing.get_context("fork")

        def run():
            with context.Pool(2) as pool:
                return pool.map(_child_epoch, [1, 2])

        # Within the 10 s a request may take: a child asking through its
        # parent's connections (registered with the parent's runtime, which
        # does not run in the child) stalls until that timeout, then retries.
        children = within(9, run)
        assert children == [parent, parent]
    finally:
        _INHERITED.clear()
        train.set_read_blocks(4 << 20, 64 << 20)


def test_a_torch_dataloader_with_forked_workers_reads_a_remote_dataset(server):
    torch = pytest.importorskip("torch", reason="torch is not installed (the fork itself is tested above)")
    from tensorprep import train

    data = train.TFRecord(server + "/records/folder.tfrecord")
    pipeline = train.Pipeline([train.Resize(32), train.CenterCrop(24)])

    class Epoch(torch.utils.data.IterableDataset):
        """Each DataLoader worker runs the tensorprep loader over its shard."""

        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            shard = (info.id, info.num_workers) if info is not None else None
            loader = train.Loader(data, pipeline, 2, 1, seed=1, shard=shard, shuffle=False, epochs=1, output="numpy")
            for images, labels in loader:
                yield from labels.tolist()

    def run():
        ctx = multiprocessing.get_context("fork")
        dl = torch.utils.data.DataLoader(Epoch(), batch_size=None, num_workers=2, multiprocessing_context=ctx)
        return sorted(int(x) for x in dl)

    labels = within(120, run)
    whole = sorted(int(x) for _, l in _batches(train, data, 1, shuffle=False) for x in l)
    assert labels == whole


def test_a_missing_object_is_an_error_naming_its_url(server, tp):
    from tensorprep import train

    url = server + "/records/missing.rec"
    with pytest.raises(tp.DataError, match="missing.rec"):
        train.RecordIO(url)
