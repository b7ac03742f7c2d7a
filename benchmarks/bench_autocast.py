"""Training-step time in float32 and under ``torch.autocast`` (bfloat16), the same model and loss.

A small embedding network (an MLP ``784 → 512 → 512 → 64``, Fashion-MNIST-sized input) and a
loss of :mod:`rankmetric.losses`, one optimiser step per iteration (forward, loss, backward,
SGD). Each configuration is timed over ``--steps`` steps after a warm-up, ``--repeats`` times,
configurations alternating; medians of wall and CPU seconds per step. On the CPU, bfloat16
matrix products are only fast on processors with native bfloat16 instructions (AVX512-BF16 /
AMX); elsewhere autocast adds casts and can be slower. With ``--device cuda`` the same on a GPU.

    OMP_NUM_THREADS=1 python benchmarks/bench_autocast.py --threads 1
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn

from rankmetric.losses import MultiSimilarityLoss, TripletLoss


def make_step(loss_fn, device, autocast: bool, batch: int, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    net = nn.Sequential(
        nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 64)
    ).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    X = torch.randn(batch, 784, generator=gen).to(device)
    y = torch.randint(0, batch // 8, (batch,), generator=gen).to(device)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.type, torch.bfloat16, enabled=autocast):
            loss = loss_fn(net(X), y)
        loss.backward()
        opt.step()
        return float(loss.detach())

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: default)")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    losses = {
        "triplet (all)": TripletLoss(0.2),
        "multi-similarity": MultiSimilarityLoss(),
    }
    print(f"batch {args.batch}, {args.steps} steps per run, {args.repeats} runs, device "
          f"{device}, threads={args.threads or 'default'}")  # fmt: skip
    print("| loss | float32 ms/step (CPU) | bf16 autocast ms/step (CPU) | float32/autocast |")
    print("|---|---|---|---|")
    for name, loss_fn in losses.items():
        times = {False: [], True: []}
        cpu = {False: [], True: []}
        steps = {mode: make_step(loss_fn, device, mode, args.batch) for mode in (False, True)}
        for mode in (False, True):
            for _ in range(3):  # warm-up
                steps[mode]()
        for _ in range(args.repeats):
            for mode in (False, True):  # alternating
                if device.type == "cuda":
                    torch.cuda.synchronize()
                start, c = time.perf_counter(), time.process_time()
                for _ in range(args.steps):
                    steps[mode]()
                if device.type == "cuda":
                    torch.cuda.synchronize()
                times[mode].append((time.perf_counter() - start) / args.steps * 1e3)
                cpu[mode].append((time.process_time() - c) / args.steps * 1e3)
        f32, bf = statistics.median(times[False]), statistics.median(times[True])
        c32, cbf = statistics.median(cpu[False]), statistics.median(cpu[True])
        print(f"| {name} | {f32:.1f} ({c32:.1f}) | {bf:.1f} ({cbf:.1f}) | {f32 / bf:.2f} "
              f"(CPU {c32 / cbf:.2f}) |")  # fmt: skip


if __name__ == "__main__":
    main()
