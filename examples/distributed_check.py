#!/usr/bin/env python3
"""Runs examples/distributed.rs alone and under Open MPI's `mpirun`, and checks
that the ranks' batches make the single process's:

- each global step (the ranks' batch of one number, together) holds the single
  process's batch of that number, so an epoch's samples are split between the
  ranks, disjoint, covering the epoch;
- a run of 2 ranks stopped after 2 steps and resumed from rank 0's state with
  1 rank and with 3 ranks continues with exactly the single process's next
  steps (the global batch kept, 6).

    cargo build --release --example distributed
    python3 examples/distributed_check.py target/release/examples/distributed

Needs `mpirun` (Debian: `apt-get install openmpi-bin`). Run as root, it passes
`--allow-run-as-root`; `--oversubscribe` lets 3 ranks share 2 cores.
"""

import os
import subprocess
import sys
import tempfile
from collections import defaultdict

GLOBAL = 6


def run(binary, out, ranks=None, extra=()):
    cmd = [binary, "--global-batch", str(GLOBAL), "--out", out, *extra]
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    if ranks is not None:
        mpi = ["mpirun", "-np", str(ranks), "--oversubscribe"]
        if os.geteuid() == 0:
            mpi.append("--allow-run-as-root")
        cmd = mpi + cmd
    subprocess.run(cmd, check=True, env=env, timeout=600)
    steps = defaultdict(list)
    for name in sorted(os.listdir(out)):
        if name.startswith("rank-"):
            with open(os.path.join(out, name)) as f:
                for line in f:
                    number, ids = line.split()
                    steps[int(number)].append(sorted(int(i) for i in ids.split(",")))
    return steps


def union(steps):
    """Each step's ids across the ranks, checked disjoint."""
    out = {}
    for number, parts in steps.items():
        ids = [i for p in parts for i in p]
        assert len(ids) == len(set(ids)), f"step {number}: ranks overlap: {parts}"
        out[number] = sorted(ids)
    return out


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        single = union(run(binary, os.path.join(tmp, "single")))
        epoch = [i for n in sorted(single) for i in single[n]]
        assert sorted(epoch) == list(range(30)), "the single process's epoch is the dataset"
        two = run(binary, os.path.join(tmp, "two"), ranks=2)
        assert all(len(p) == 2 for p in two.values()), "each step has both ranks' batches"
        assert union(two) == single, "2 ranks make the single process's steps"
        stopped = run(binary, os.path.join(tmp, "stopped"), ranks=2, extra=["--stop-after", "2"])
        assert union(stopped) == {n: single[n] for n in (0, 1)}
        state = os.path.join(tmp, "stopped", "state")
        for ranks in (None, 3):
            resumed = union(run(binary, os.path.join(tmp, f"resumed-{ranks}"), ranks=ranks,
                                extra=["--resume", state]))
            want = {n: ids for n, ids in single.items() if n >= 2}
            assert resumed == want, f"resumed with {ranks or 1} rank(s): {resumed} != {want}"
        print(f"ok: {len(single)} steps of {GLOBAL}; 2 ranks make them; resumed after 2 with 1 and 3 ranks")


if __name__ == "__main__":
    main()
