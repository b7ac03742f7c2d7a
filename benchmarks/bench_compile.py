"""torch.compile against eager mode for the losses of rankmetric.losses.

For each loss, on random unit-norm embeddings (``--batch`` × d = 64, ``--classes`` balanced
classes), the script measures one forward + backward pass, eager and ``torch.compile(loss,
fullgraph=True)`` (inductor), alternating in this process after 3 warm-up calls of each, with
``torch.set_num_threads(--threads)``: the median of each over ``--repeats`` runs, and the median
of the per-run ratios (eager / compiled, robust to load changes between runs on a shared
machine). It also prints the time of the first compiled call (the compilation; inductor's
on-disk cache is disabled so that this is a cold compile). ``fullgraph=True`` would raise on a
graph break, so every row is one graph.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_compile.py`` (a few minutes, most of
it compiling, on a 2-core CPU).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch._inductor.config

from rankmetric.losses import (
    LiftedStructureLoss,
    MultiSimilarityLoss,
    NPairLoss,
    ProxyNCALoss,
    SimilarityRegressionLoss,
    TripletLoss,
    WARPLoss,
)

DIM = 64

LOSSES = {
    "triplet-all": TripletLoss,
    "triplet-semihard": lambda: TripletLoss(mining="semihard"),
    "triplet-hard": lambda: TripletLoss(mining="hard"),
    "multi-similarity": MultiSimilarityLoss,
    "lifted": LiftedStructureLoss,
    "npair": NPairLoss,
    "proxy-nca": lambda: ProxyNCALoss(32, DIM, generator=torch.Generator().manual_seed(0)),
    "warp": WARPLoss,
    "similarity": SimilarityRegressionLoss,
}


def _step(loss_fn, x, y):
    x = x.clone().requires_grad_()
    start = time.perf_counter()
    loss_fn(x, y).backward()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--classes", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--losses", nargs="*", default=list(LOSSES))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch._inductor.config.force_disable_caches = True  # a cold compile, every run
    gen = torch.Generator().manual_seed(0)
    x = torch.nn.functional.normalize(torch.randn(args.batch, DIM, generator=gen), dim=1)
    y = torch.arange(args.batch) % args.classes
    print(
        f"B={args.batch}, d={DIM}, {args.classes} classes, threads={args.threads}, "
        f"median of {args.repeats} forward+backward passes"
    )
    print(f"{'loss':18s} {'eager ms':>9s} {'compiled ms':>12s} {'speed-up':>9s} {'compile s':>10s}")
    print("speed-up: median over runs of eager / compiled time")
    for name in args.losses:
        eager_fn = LOSSES[name]()
        compiled = torch.compile(LOSSES[name](), fullgraph=True)
        compile_s = _step(compiled, x, y)
        for _ in range(3):
            _step(eager_fn, x, y), _step(compiled, x, y)
        eager, comp = [], []
        for _ in range(args.repeats):
            eager.append(_step(eager_fn, x, y))
            comp.append(_step(compiled, x, y))
        e, c = statistics.median(eager) * 1e3, statistics.median(comp) * 1e3
        ratio = statistics.median(a / b for a, b in zip(eager, comp, strict=True))
        print(f"{name:18s} {e:9.2f} {c:12.2f} {ratio:8.2f}x {compile_s:10.1f}", flush=True)
        torch._dynamo.reset()


if __name__ == "__main__":
    main()
