"""Deep metric-learning baseline losses: rankmetric against pytorch-metric-learning (pml).

For each loss and batch size, on random unit-norm embeddings (d = 64) with ``--classes`` balanced
classes, the script measures

* time: one forward + backward pass, median over ``--repeats`` runs, ours and pml alternating in
  this process (``torch.set_num_threads(--threads)``);
* peak memory: in a fresh subprocess per (loss, implementation, batch size), the growth of the
  resident set during the first forward + backward pass: the process's peak RSS after the pass
  (``VmHWM`` of ``/proc/self/status``) minus its RSS just before it (``VmRSS``). This sees every
  CPU allocation of torch, which ``tracemalloc`` does not. (``ru_maxrss`` is not used: on Linux a
  child started by ``fork`` + ``exec`` inherits its parent's value.)

pml's Lifted Struct allocates (#positive pairs × #negative pairs) tensors, O(B³): above
``--pml-lifted-max-batch`` it is not run; its memory and time are extrapolated from the largest
measured batch by (B / B_measured)³ and marked ``~``. Definitions compared (docs/losses.md):

* triplet-all: every valid triplet, mean over non-zero hinges (pml ``TripletMarginLoss``);
* triplet-semihard: ours FaceNet (one semi-hard negative per anchor-positive pair); pml's
  ``TripletMarginMiner("semihard")`` + ``TripletMarginLoss`` keeps every semi-hard triplet, so the
  two compute slightly different losses; the cost comparison is what this row is for;
* triplet-random: one random triplet per anchor (pml ``triplets_per_anchor=1``);
* lifted: Song et al. 2016, same value; npair: dot product, no regulariser, same value;
* proxy-nca: positive proxy in the denominator (pml's convention), same value;
* multi-similarity: with its miner (pml ``MultiSimilarityMiner``), same value.

Run: ``.venv/bin/python benchmarks/bench_losses_vs_pml.py`` (about 4 CPU-minutes, most of it in
pml's B = 512 triplet cells and B = 128 Lifted Struct; 17 minutes wall on the loaded 2-core
machine).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from argparse import SUPPRESS
from collections.abc import Callable

import torch

DIM = 64
LOSSES = (
    "triplet-all",
    "triplet-semihard",
    "triplet-random",
    "lifted",
    "npair",
    "proxy-nca",
    "multi-similarity",
)


def build(name: str, impl: str, n_classes: int) -> Callable:
    """The loss ``f(embeddings, labels)`` of one implementation."""
    return _ours(name, n_classes) if impl == "ours" else _pml(name, n_classes)


def _ours(name: str, n_classes: int) -> Callable:
    from rankmetric.losses.lifted import LiftedStructureLoss
    from rankmetric.losses.multi_similarity import MultiSimilarityLoss
    from rankmetric.losses.npair import NPairLoss
    from rankmetric.losses.proxy_nca import ProxyNCALoss
    from rankmetric.losses.triplet import TripletLoss

    gen = torch.Generator().manual_seed(0)
    return {
        "triplet-all": lambda: TripletLoss(0.2, "all", average_nonzero=True),
        "triplet-semihard": lambda: TripletLoss(0.2, "semihard"),
        "triplet-random": lambda: TripletLoss(0.2, "random", generator=gen),
        "lifted": lambda: LiftedStructureLoss(1.0),
        "npair": lambda: NPairLoss(0.0),
        "proxy-nca": lambda: ProxyNCALoss(n_classes, DIM, exclude_positive=False, generator=gen),
        "multi-similarity": lambda: MultiSimilarityLoss(),
    }[name]()


def _pml(name: str, n_classes: int) -> Callable:
    from pytorch_metric_learning import distances, losses, miners

    euclidean = distances.LpDistance(normalize_embeddings=False)
    if name == "triplet-semihard":
        miner = miners.TripletMarginMiner(0.2, "semihard", distance=euclidean)
        loss = losses.TripletMarginLoss(0.2, distance=euclidean)
        return lambda x, y: loss(x, y, miner(x, y))
    if name == "multi-similarity":
        miner, loss = miners.MultiSimilarityMiner(0.1), losses.MultiSimilarityLoss(2, 50, 0.5)
        return lambda x, y: loss(x, y, miner(x, y))
    dot = distances.DotProductSimilarity(normalize_embeddings=False)
    return {
        "triplet-all": lambda: losses.TripletMarginLoss(0.2, distance=euclidean),
        "triplet-random": lambda: losses.TripletMarginLoss(
            0.2, distance=euclidean, triplets_per_anchor=1
        ),
        "lifted": lambda: losses.LiftedStructureLoss(1, 0, distance=euclidean),
        "npair": lambda: losses.NPairsLoss(distance=dot),
        "proxy-nca": lambda: losses.ProxyNCALoss(n_classes, DIM),
    }[name]()


def make_batch(batch: int, n_classes: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Unit-norm embeddings (batch, DIM) and balanced, shuffled labels."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.nn.functional.normalize(torch.randn(batch, DIM, generator=gen), dim=1)
    y = (torch.arange(batch) % n_classes)[torch.randperm(batch, generator=gen)]
    return x, y


def forward_backward(loss: Callable, x: torch.Tensor, y: torch.Tensor) -> float:
    """Seconds for one forward + backward pass."""
    x = x.detach().requires_grad_()
    start = time.perf_counter()
    loss(x, y).backward()
    return time.perf_counter() - start


def _rss_kib(field: str) -> int:
    """``VmRSS`` (current) or ``VmHWM`` (peak) resident set of this process, KiB (Linux)."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith(field + ":"))
    return int(line.split()[1])


def child_peak_memory(name: str, impl: str, batch: int, n_classes: int) -> None:
    """(In a subprocess) print the RSS growth of one forward + backward pass, in MiB."""
    loss = build(name, impl, n_classes)
    forward_backward(loss, *make_batch(2 * n_classes, n_classes, seed=1))  # warm-up, tiny batch
    x, y = make_batch(batch, n_classes)
    before = _rss_kib("VmRSS")
    forward_backward(loss, x, y)
    print(json.dumps({"peak_mib": max(_rss_kib("VmHWM") - before, 0) / 1024}))


def peak_memory(name: str, impl: str, batch: int, args) -> float:
    """Run :func:`child_peak_memory` in a fresh interpreter; MiB."""
    command = [sys.executable, __file__, "--child", name, impl, str(batch)]
    command += ["--classes", str(args.classes), "--threads", str(args.threads)]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["peak_mib"]


def median_times(name: str, batch: int, args, impls: list[str]) -> dict[str, float]:
    """Median forward + backward milliseconds of each implementation, runs alternating.

    Each implementation runs ``--repeats`` times, or fewer (at least 3) when its warm-up run
    says that would exceed ``--budget`` seconds.
    """
    losses = {impl: build(name, impl, args.classes) for impl in impls}
    x, y = make_batch(batch, args.classes)
    warm = {impl: forward_backward(losses[impl], x, y) for impl in impls}
    runs = {impl: max(3, min(args.repeats, int(args.budget / warm[impl]))) for impl in impls}
    samples = {impl: [] for impl in impls}
    for step in range(max(runs.values())):
        for impl in impls:
            if step < runs[impl]:
                samples[impl].append(forward_backward(losses[impl], x, y))
    return {impl: 1e3 * statistics.median(v) for impl, v in samples.items()}


def measure(name: str, batch: int, args, extrapolate_from: dict | None) -> dict:
    """Time and memory of ours and pml (pml's guarded Lifted Struct extrapolated by B³)."""
    guarded = name == "lifted" and batch > args.pml_lifted_max_batch
    impls = ["ours"] if guarded else ["ours", "pml"]
    times = median_times(name, batch, args, impls)
    row = {"ours_ms": times["ours"], "ours_mib": peak_memory(name, "ours", batch, args)}
    if guarded:
        base = extrapolate_from
        growth = (batch / base["batch"]) ** 3
        row.update(pml_ms=base["pml_ms"] * growth, pml_mib=base["pml_mib"] * growth, est=True)
    else:
        row.update(pml_ms=times["pml"], pml_mib=peak_memory(name, "pml", batch, args), est=False)
    return row


def _fmt(value: float, est: bool) -> str:
    return ("~" if est else "") + (f"{value:.1f}" if value < 1e4 else f"{value:.3g}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256, 512])
    parser.add_argument("--classes", type=int, default=4, help="balanced classes per batch")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--budget", type=float, default=5.0, help="seconds of timing per cell")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--losses", nargs="+", default=list(LOSSES), choices=LOSSES)
    parser.add_argument("--pml-lifted-max-batch", type=int, default=128)
    parser.add_argument("--child", nargs=3, metavar=("LOSS", "IMPL", "BATCH"), help=SUPPRESS)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.child:
        name, impl, batch = args.child
        child_peak_memory(name, impl, int(batch), args.classes)
        return
    import pytorch_metric_learning

    print(
        f"# d={DIM}, {args.classes} balanced classes, threads={args.threads}, "
        f"median of up to {args.repeats} (>= 3, --budget s per cell), torch {torch.__version__}, "
        f"pytorch-metric-learning {pytorch_metric_learning.__version__}"
    )
    print("# time: forward+backward ms; memory: peak RSS growth MiB (VmHWM - VmRSS, own process)")
    header = f"{'loss':<17}{'B':>5} {'ours ms':>9} {'pml ms':>10} {'pml/ours':>9} "
    header += f"{'ours MiB':>9} {'pml MiB':>10} {'pml/ours':>9}"
    print(header)
    for name in args.losses:
        measured = None
        for batch in sorted(args.sizes):
            row = measure(name, batch, args, measured)
            if not row["est"]:
                measured = {"batch": batch, **row}
            est = row["est"]
            print(
                f"{name:<17}{batch:>5} {row['ours_ms']:>9.2f} {_fmt(row['pml_ms'], est):>10} "
                f"{row['pml_ms'] / row['ours_ms']:>9.1f} {row['ours_mib']:>9.1f} "
                f"{_fmt(row['pml_mib'], est):>10} "
                f"{row['pml_mib'] / max(row['ours_mib'], 0.1):>9.1f}",
                flush=True,
            )
    print("# ~ : pml not run (O(B³) memory), extrapolated by (B / B_measured)³")
    print("# pml/ours memory ratios use max(ours, 0.1 MiB); small figures are noisy (allocator)")


if __name__ == "__main__":
    main()
