"""Throughput of data-parallel training (gloo, CPU) at 1 and 2 processes, and its communication.

For WARCA, SSNE and RPLEmbedding, fits the estimator for a fixed number of steps on synthetic
data with 1 process (1 thread, then 2 threads) and with 2 processes of 1 thread each, launched
like ``torchrun`` (``RANK``/``WORLD_SIZE``/``MASTER_ADDR``/``MASTER_PORT`` on loopback). Every
process times its whole ``fit`` and the time spent inside ``torch.distributed`` collectives
(``all_reduce``, ``all_gather``, wrapped with a timer: this includes waiting for the slower
rank). A micro-benchmark then times the collectives of one step alone, back to back.

    python benchmarks/bench_distributed.py                # all methods, 3 repeats
    python benchmarks/bench_distributed.py --methods warca --repeats 5

Throughput is global-batch items per second (WARCA: positive pairs, SSNE: pairs, RPL: SPD
matrices), median over repeats; the slowest rank's time counts.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

# method -> (estimator parameters, global batch items per step, unit)
CONFIGS = {
    "warca": (
        {"n_components": 32, "batch_size": 2048, "max_sampling": 64, "max_iter": 30},
        2048,
        "positive pairs",
    ),
    "ssne": ({"n_components": 128, "batch_size": 8192, "max_iter": 30}, 8192, "pairs"),
    "rpl": (
        {
            "hidden_sizes": 8,
            "n_per_class": 32,
            "max_iter": 10,
            "validation_fraction": 0.0,
            "whiten": False,
        },
        128,
        "SPD matrices",
    ),
}
MICRO_STEPS = 50


def _data(method: str):
    import numpy as np

    rng = np.random.default_rng(0)
    if method == "rpl":
        y = np.repeat(np.arange(4), 100)
        A = rng.standard_normal((4, 16, 16))[y] + 0.5 * rng.standard_normal((400, 16, 16))
        return A @ A.transpose(0, 2, 1) + 0.1 * np.eye(16), y
    y = rng.integers(0, 20, 20000)
    return rng.standard_normal((20000, 64)) + rng.standard_normal((20, 64))[y], y


def _estimator(method: str):
    from rankmetric.estimators.spd import RPLEmbedding
    from rankmetric.estimators.ssne import SSNE
    from rankmetric.estimators.warca import WARCA

    cls = {"warca": WARCA, "ssne": SSNE, "rpl": RPLEmbedding}[method]
    return cls(**CONFIGS[method][0], random_state=0, device="cpu")


class _CollectiveTimer:
    """Wraps ``torch.distributed.all_reduce`` / ``all_gather`` to add up the seconds inside."""

    def __init__(self) -> None:
        import torch.distributed as dist

        self.seconds, self.calls, self.dist = 0.0, 0, dist
        self.originals = {name: getattr(dist, name) for name in ("all_reduce", "all_gather")}
        for name, original in self.originals.items():
            setattr(dist, name, self._timed(original))

    def _timed(self, original):
        def call(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
                self.calls += 1

        return call


def _micro(method: str, model_sizes: list[int], steps: int) -> float:
    """Median seconds of one step's collectives alone: gradients, loss scalar, (RPL) gathers."""
    import torch
    import torch.distributed as dist

    from rankmetric import distributed

    grads = [torch.zeros(n) for n in model_sizes]
    scalar = torch.zeros(())
    rows = torch.zeros(CONFIGS["rpl"][1] // distributed.world_size(), 8, 8)
    times = []
    for _ in range(steps):
        dist.barrier()
        start = time.perf_counter()
        for g in grads:
            dist.all_reduce(g)
        if method == "rpl":
            distributed.all_gather_with_grad(rows)
            dist.all_reduce(torch.zeros(CONFIGS["rpl"][1], 8, 8))  # its backward
            dist.all_reduce(torch.zeros(3, 4, dtype=torch.float64))  # potato statistics
        else:
            dist.all_reduce(scalar)  # global_mean's value
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def child(method: str, threads: int) -> None:
    import torch

    from rankmetric import distributed

    torch.set_num_threads(threads)
    X, y = _data(method)
    distributed.init_from_env("gloo")
    timer = _CollectiveTimer() if distributed.is_distributed() else None
    est = _estimator(method)
    start = time.perf_counter()
    est.fit(X, y)
    seconds = time.perf_counter() - start
    report = {"seconds": seconds, "steps": int(est.n_iter_), "comm": 0.0, "micro": 0.0}
    if timer is not None:
        report["comm"] = timer.seconds
        for name, original in timer.originals.items():
            setattr(timer.dist, name, original)
        sizes = (
            [w.size for w in est.weights_]
            if method == "rpl"
            else [(est.components_ if method == "warca" else est.weight_).size]
        )
        report["micro"] = _micro(method, sizes, MICRO_STEPS)
        torch.distributed.destroy_process_group()
    print(json.dumps(report))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(method: str, world: int, threads: int) -> dict:
    """One launch of ``world`` processes; the slowest rank's figures."""
    port = str(_free_port())
    procs = []
    for rank in range(world):
        env = {
            **os.environ,
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(world),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": port,
            "OMP_NUM_THREADS": str(threads),
        }
        cmd = [sys.executable, __file__, "--child", method, "--threads", str(threads)]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True))
    reports = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    slowest = max(reports, key=lambda r: r["seconds"])
    return {**slowest, "comm": max(r["comm"] for r in reports)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", choices=list(CONFIGS), help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.threads)
        return
    print(f"gloo on loopback, {os.cpu_count()} cores, median of {args.repeats} repeats\n")
    print(
        "| method | items/step | setting | steps | fit s | items/s | comm s/step "
        "(in fit, incl. waits) | comm s/step (alone) | speed-up vs 1x1 |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for method in args.methods:
        _, per_step, unit = CONFIGS[method]
        base = None
        for world, threads, label in (
            (1, 1, "1 proc x 1 thread"),
            (1, 2, "1 proc x 2 threads"),
            (2, 1, "2 procs x 1 thread"),
        ):
            runs = [run(method, world, threads) for _ in range(args.repeats)]
            seconds = statistics.median(r["seconds"] for r in runs)
            steps = runs[0]["steps"]
            rate = steps * per_step / seconds
            base = base or rate
            comm = statistics.median(r["comm"] for r in runs) / steps
            micro = statistics.median(r["micro"] for r in runs)
            comm_text = f"{comm * 1e3:.2f} ms" if world > 1 else "-"
            micro_text = f"{micro * 1e3:.2f} ms" if world > 1 else "-"
            print(
                f"| {method} | {per_step} {unit} | {label} | {steps} | {seconds:.2f} | "
                f"{rate:,.0f} | {comm_text} | {micro_text} | {rate / base:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
