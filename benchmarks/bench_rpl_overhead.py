"""Cost of the Riemannian potato loss against an SPDNet forward + backward on the same batch.

For each network (input size → BiMap sizes) and batch (``n_classes × n_per_class`` SPD matrices):

* ``net``: SPDNet forward, then backward of ``<Y, G>`` for a fixed random symmetric ``G`` (the
  gradient reaching every BiMap weight), SPD output ``Y``;
* ``airm``: :class:`RiemannianPotatoLoss` (AIRM) forward + backward on the (detached) output;
* ``net-log``: the same network with ``log_output=True`` (its last ReEig and LogEig share one
  eigen-decomposition), the route ``RPLEmbedding(distance="log_euclidean")`` trains;
* ``le-vec``: the loss on ``vec(log Y)`` (Euclidean = log-Euclidean distance), forward + backward;
* ``le-spd``: the loss with ``distance="log_euclidean"`` on the SPD output (computes the logs);
* ``net-bn``: the network of ``net`` with Riemannian batch normalisation after every BiMap
  (``batchnorm=True``, training mode: one Karcher step per layer), forward + backward;

and prints medians over ``--repeats`` alternating runs and the ratios loss / net (the issue's
target: < 0.25). The AIRM loss solves B(B−1)/2 generalised eigenproblems of the output size per
batch, the network B eigenproblems per layer, so that ratio grows with B and shrinks with the
depth and width of the network.

Run: ``.venv/bin/python benchmarks/bench_rpl_overhead.py`` (a minute or two on 1 thread;
``--quick`` for a smoke run, ``--device cuda`` on a GPU).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from rankmetric.losses.potato import RiemannianPotatoLoss
from rankmetric.models.spdnet import SPDNet, sym_to_vec

# (name, sizes, n_classes, n_per_class)
CONFIGS = [
    ("JapaneseVowels default", [12, 12, 12], 9, 8),  # the estimators' (c, c) network
    ("fmnist-regcov default", [8, 8, 8], 10, 8),
    ("BasicMotions-like", [6, 3], 4, 8),
    ("HandMovementDirection-like", [10, 5], 4, 8),
    ("FingerMovements-like", [28, 14], 2, 16),
    ("HDM05-like", [93, 30], 8, 4),
    ("AFEW-like", [400, 200, 100, 50], 8, 4),
]


def random_spd(n: int, c: int, generator: torch.Generator, device) -> torch.Tensor:
    """Sample covariances of 2c Gaussian samples plus a small ridge, float32 (n, c, c)."""
    Z = torch.randn(n, c, 2 * c, generator=generator, dtype=torch.float64)
    X = Z @ Z.mT / (2 * c) + 1e-3 * torch.eye(c, dtype=torch.float64)
    return X.float().to(device)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(fn, device) -> float:
    _sync(device)
    start = time.perf_counter()
    fn()
    _sync(device)
    return time.perf_counter() - start


def bench_config(sizes, n_classes, n_per_class, repeats, device):
    gen = torch.Generator().manual_seed(0)
    batch = n_classes * n_per_class
    X = random_spd(batch, sizes[0], gen, device)
    labels = torch.arange(n_classes, device=device).repeat_interleave(n_per_class)
    net = SPDNet(sizes, generator=gen, device=device)
    log_net = SPDNet(sizes, log_output=True, device=device)
    log_net.load_state_dict(net.state_dict())
    bn_net = SPDNet(sizes, batchnorm=True, device=device)
    bn_net.load_state_dict(net.state_dict(), strict=False)
    G = torch.randn(batch, sizes[-1], sizes[-1], generator=gen).to(device)
    G = G + G.mT
    Y = net(X).detach()
    V = sym_to_vec(log_net(X)).detach()

    def run_net(module):
        def run():
            module.zero_grad(set_to_none=True)
            (module(X) * G).sum().backward()

        return run

    def run_loss(distance, embeddings):
        loss = RiemannianPotatoLoss(metric=distance, n_classes=n_classes).to(device)

        def run():
            emb = embeddings.clone().requires_grad_(True)
            loss(emb, labels).backward()

        return run

    jobs = {
        "net": run_net(net),
        "airm": run_loss("airm", Y),
        "net-log": run_net(log_net),
        "le-vec": run_loss("log_euclidean", V),
        "le-spd": run_loss("log_euclidean", Y),
        "net-bn": run_net(bn_net),
    }
    for job in jobs.values():  # warm-up (and potato initialisation)
        job()
    times = {name: [] for name in jobs}
    for _ in range(repeats):
        for name, job in jobs.items():
            times[name].append(timed(job, device))
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true", help="3 repeats, small networks only")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    configs = CONFIGS[:4] if args.quick else CONFIGS
    repeats = 3 if args.quick else args.repeats
    print(f"device={device}, threads={args.threads}, median of {repeats} runs, times in ms")
    print(
        f"{'network':<27}{'sizes':<16}{'B':>3}{'net':>9}{'airm':>9}{'ratio':>7}"
        f"{'net-log':>9}{'le-vec':>8}{'ratio':>7}{'le-spd':>8}{'ratio':>7}{'net-bn':>9}"
    )
    for name, sizes, n_classes, n_per_class in configs:
        t = bench_config(sizes, n_classes, n_per_class, repeats, device)
        print(
            f"{name:<27}{'→'.join(map(str, sizes)):<16}{n_classes * n_per_class:>3}"
            f"{1e3 * t['net']:>9.2f}{1e3 * t['airm']:>9.2f}{t['airm'] / t['net']:>7.2f}"
            f"{1e3 * t['net-log']:>9.2f}{1e3 * t['le-vec']:>8.2f}{t['le-vec'] / t['net-log']:>7.2f}"
            f"{1e3 * t['le-spd']:>8.2f}{t['le-spd'] / t['net']:>7.2f}{1e3 * t['net-bn']:>9.2f}"
        )


if __name__ == "__main__":
    main()
