#!/usr/bin/env python3
"""The Python ``Loader`` under ``torchrun`` (torch.distributed, gloo on
127.0.0.1): each rank's loader takes ``shard="env"`` (torchrun's ``RANK`` and
``WORLD_SIZE``) and a per-rank batch of ``GLOBAL / world``; after each step the
ranks ``all_gather`` their batch's sample ids. Checked against the single
process:

- each global step's gathered ids are disjoint across the ranks and are the
  single process's batch of that step, so each epoch (2 of them) is covered
  once;
- a run of 2 ranks stopped after 3 steps (rank 0 saves ``state_dict()``) and
  restarted from that state with 1 and with 3 processes continues with
  exactly the single process's next steps (the global batch of 6 kept).

    pip install torch   # and the tensorprep package
    python examples/torchrun_check.py

It runs ``torchrun --standalone --nproc-per-node=N`` on itself (the ``--rank``
mode) for N = 1, 2, 2 stopped, then 1 and 3 resumed. Exits non-zero on a
mismatch.
"""

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile

GLOBAL = 6
SAMPLES = 30
EPOCHS = 2
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rank_main(args):
    """One rank: its loader's batches, gathered per step; rank 0 writes them."""
    import torch.distributed as dist
    from tensorprep import train

    dist.init_process_group("gloo")
    world, rank = dist.get_world_size(), dist.get_rank()
    with open(os.path.join(REPO, "tests", "fixtures", "sample.jpg"), "rb") as f:
        photo = f.read()
    data = train.Samples([(photo, float(i)) for i in range(SAMPLES)])
    pipeline = train.Pipeline([train.RandomResizedCrop(24), train.RandomHorizontalFlip()])
    loader = train.Loader(data, pipeline, GLOBAL // world, 1, seed=11, shard="env", epochs=EPOCHS, output="numpy")
    assert loader.shard == (rank, world), loader.shard
    if args.resume:
        with open(args.resume, "rb") as f:
            loader.load_state_dict(pickle.load(f))
    steps = []
    step = 0
    while True:
        batch = loader.next_batch()
        if batch is None:
            # The epoch is over for every rank at once (the same steps).
            if loader.epoch + 1 >= EPOCHS:
                break
            iter(loader)  # the next epoch
            continue
        mine = [int(i) for i in batch["indices"]]
        gathered = [None] * world
        dist.all_gather_object(gathered, ((int(batch["epoch"]), int(batch["number"])), mine))
        keys = {tuple(k) for k, _ in gathered}
        assert len(keys) == 1, f"the ranks are at different steps: {gathered}"
        steps.append((list(keys.pop()), [ids for _, ids in gathered]))
        step += 1
        if args.stop_after == step:
            if rank == 0:
                with open(os.path.join(args.out, "state"), "wb") as f:
                    pickle.dump(loader.state_dict(), f)
            break
    loader.close()
    if rank == 0:
        with open(os.path.join(args.out, "steps.json"), "w") as f:
            json.dump(steps, f)
    dist.destroy_process_group()


def torchrun(out, ranks, *extra):
    os.makedirs(out, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}",
           os.path.abspath(__file__), "--rank", "--out", out, *extra]
    subprocess.run(cmd, check=True, env=env, timeout=600)
    with open(os.path.join(out, "steps.json")) as f:
        steps = json.load(f)
    union = {}
    for (epoch, number), parts in steps:
        number = (epoch, number)
        ids = [i for p in parts for i in p]
        assert len(ids) == len(set(ids)), f"step {number}: the ranks overlap: {parts}"
        assert len(parts) == ranks
        union[number] = sorted(ids)
    return union


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rank", action="store_true", help="run as one rank (torchrun starts these)")
    parser.add_argument("--out")
    parser.add_argument("--stop-after", type=int)
    parser.add_argument("--resume")
    args = parser.parse_args()
    if args.rank:
        return rank_main(args)
    with tempfile.TemporaryDirectory() as tmp:
        single = torchrun(os.path.join(tmp, "single"), 1)
        order = sorted(single)
        for epoch in range(EPOCHS):
            ids = [i for k in order if k[0] == epoch for i in single[k]]
            assert sorted(ids) == list(range(SAMPLES)), f"epoch {epoch} covers the dataset once"
        two = torchrun(os.path.join(tmp, "two"), 2)
        assert two == single, "2 ranks gather the single process's steps"
        stopped_dir = os.path.join(tmp, "stopped")
        stopped = torchrun(stopped_dir, 2, "--stop-after", "3")
        assert stopped == {k: single[k] for k in order[:3]}
        for ranks in (1, 3):
            resumed = torchrun(os.path.join(tmp, f"resumed-{ranks}"), ranks, "--resume",
                               os.path.join(stopped_dir, "state"))
            want = {k: single[k] for k in order[3:]}
            assert resumed == want, f"resumed with {ranks}: {resumed} != {want}"
    print(f"ok: {len(single)} steps of {GLOBAL} over {EPOCHS} epochs; 2 ranks gather them; "
          f"stopped after 3 and resumed with 1 and 3 ranks into the same steps")


if __name__ == "__main__":
    sys.exit(main())
