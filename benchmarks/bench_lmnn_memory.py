"""Peak memory of LMNN per active-set pair: the calibration of its memory guard.

Two measurements, each in a fresh process (peak resident memory ``VmHWM``, reset to the current
resident size before measuring, as ``benchmarks/_memory.py`` does):

``fit``: an LMNN fit on heavily overlapping Gaussian classes (features 20, rank 20, float32),
reporting the largest active set it built and (peak − baseline) / that size::

    OMP_NUM_THREADS=1 python benchmarks/bench_lmnn_memory.py fit --n 6000 --k 3 --max-iter 8

``objective``: the objective and gradient on a random active set of ``--pairs`` pairs::

    OMP_NUM_THREADS=1 python benchmarks/bench_lmnn_memory.py objective --k 3 --pairs 3000000

Compare with ``PAIR_BYTES + PAIR_BYTES_PER_K * k`` in ``rankmetric.estimators.lmnn``.

``search``: one impostor search (``find_impostors``) on ``--n`` standard-normal points in 20
dimensions, 10 random classes, the input space as embedding; reports the pairs found, the
resident memory they need (16 B/pair) and the peak growth of the search (issue #27: it grew by
one 16 MB block per chunk through heap fragmentation)::

    OMP_NUM_THREADS=1 python benchmarks/bench_lmnn_memory.py search --n 20000

``iteration``: the cost of one optimiser iteration as N grows (issue #36: about N^1.6): LMNN
fits of ``--max-iter`` iterations on 10 Gaussian classes in 20 dimensions (rank 20, float32)
at each ``--sizes`` (features times ``--scale``, against the unit margin), timing the impostor
searches and the objective evaluations apart; prints seconds per iteration, the evaluations
of the objective (L-BFGS's line searches make several per iteration), their mean active set
and their time per evaluated pair (the number that should not grow with N), the largest
active set searched, and the log-log slope of seconds per iteration between the sizes. Times
are the process's CPU time (one thread: robust to a loaded machine)::

    OMP_NUM_THREADS=1 python benchmarks/bench_lmnn_memory.py iteration --sizes 5000,20000,50000
"""

from __future__ import annotations

import argparse
import importlib
import time
import warnings

import numpy as np
import torch

import rankmetric.estimators.lmnn as lm
from rankmetric.datasets import make_gaussian_clusters

try:
    from _memory import reset_peak_mb, status_mb
except ImportError:  # run from elsewhere than benchmarks/
    from benchmarks._memory import reset_peak_mb, status_mb


def _reset() -> int:
    """Reset the peak mark; the resident bytes now."""
    return int(reset_peak_mb() * 2**20)


def _peak_bytes() -> int:
    return int(status_mb("VmHWM") * 2**20)


def measure_fit(n: int, sep: float, k: int, max_iter: int) -> None:
    X, y = make_gaussian_clusters(n, 20, 3, n_informative=20, class_sep=sep, random_state=0)
    sizes = []
    search = lm.search.search_active_set

    def recording_search(*args, **kwargs):
        active = search(*args, **kwargs)
        sizes.append(active.anchors.numel())
        return active

    lm.search.search_active_set = recording_search
    base, start = _reset(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = lm.LMNN(n_target_neighbors=k, n_components=20, max_iter=max_iter, device="cpu")
        model.fit(X.astype(np.float32), y)
    peak, largest = _peak_bytes(), max(sizes)
    print(
        f"fit n={n} sep={sep} k={k} max_iter={max_iter}: largest active set {largest:,} pairs, "
        f"peak {peak / 2**30:.2f} GiB (baseline {base / 2**30:.2f}), "
        f"{(peak - base) / largest:.0f} B/pair; guard counts "
        f"{lm.PAIR_BYTES + lm.PAIR_BYTES_PER_K * k} B/pair; {time.perf_counter() - start:.0f} s"
    )


def measure_objective(k: int, pairs: int, n: int = 4000) -> None:
    g = torch.Generator().manual_seed(0)
    X, L = torch.randn(n, 20, generator=g), torch.randn(20, 20, generator=g)
    targets = torch.randint(0, n, (n, k), generator=g)
    ends = [torch.randint(0, n, (pairs,), generator=g) for _ in range(2)]
    active = lm.ActiveSet(targets, torch.ones(n, k, dtype=torch.bool), *ends)
    base = _reset()
    lm.lmnn_loss_and_grad(L, X, active, 0.5)
    per_pair = (_peak_bytes() - base) / pairs + 16  # + the pair's own two int64 indices
    print(
        f"objective k={k} pairs={pairs:,}: {per_pair:.0f} B/pair; guard counts "
        f"{lm.PAIR_BYTES + lm.PAIR_BYTES_PER_K * k} B/pair"
    )


def measure_search(n: int, k: int) -> None:
    g = torch.Generator().manual_seed(0)
    X, codes = torch.randn(n, 20, generator=g), torch.randint(0, 10, (n,), generator=g)
    targets, mask = lm.find_target_neighbors(X, codes, k)
    base, start = _reset(), time.perf_counter()
    anchors, _ = lm.find_impostors(X, codes, targets, mask)
    growth = _peak_bytes() - base
    print(
        f"search n={n} k={k}: {anchors.numel():,} pairs ({16 * anchors.numel() / 2**20:.0f} MiB "
        f"of indices), peak growth {growth / 2**20:.0f} MiB, {time.perf_counter() - start:.0f} s"
    )


def _timed(module, name: str, spent: list) -> None:
    """Replace ``module.name`` by a wrapper adding its CPU time to ``spent``."""
    inner = getattr(module, name)

    def timed(*args, **kwargs):
        start = time.process_time()
        out = inner(*args, **kwargs)
        spent.append((time.process_time() - start, out))
        return out

    setattr(module, name, timed)


def measure_iterations(sizes: list[int], sep: float, k: int, max_iter: int, scale: float) -> None:
    searches: list = []
    evaluations: list = []
    _timed(lm.search, "search_active_set", searches)
    fit_module = importlib.import_module("rankmetric.estimators.lmnn.lmnn")
    inner = fit_module.lmnn_loss_and_grad

    def counted(L, X, active, *args, **kwargs):  # time and pairs of every evaluation
        start = time.process_time()
        out = inner(L, X, active, *args, **kwargs)
        evaluations.append((time.process_time() - start, active.anchors.numel()))
        return out

    fit_module.lmnn_loss_and_grad = counted
    print(
        "| N | iterations | s / iteration | search s / iteration | evaluations | "
        "objective s / evaluation | mean pairs / evaluation | ns / evaluated pair | "
        "largest active set |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    per_iter = []
    for n in sizes:
        X, y = make_gaussian_clusters(n, 20, 10, n_informative=20, class_sep=sep, random_state=0)
        X = scale * X  # against LMNN's unit margin: how many pairs are impostors at the start
        searches.clear()
        evaluations.clear()
        model = lm.LMNN(
            n_target_neighbors=k,
            n_components=20,
            max_iter=max_iter,
            device="cpu",
            held_out_check=False,  # one fit, the one timed
        )
        start = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X.astype(np.float32), y)
        total = time.process_time() - start
        in_search = sum(t for t, _ in searches)
        largest = max(a.anchors.numel() for _, a in searches)
        in_objective = sum(t for t, _ in evaluations)
        pairs = sum(p for _, p in evaluations)
        per_pair = f"{in_objective / pairs * 1e9:.0f}" if pairs else "n/a (no pair evaluated)"
        per_iter.append(total / model.n_iter_)
        print(
            f"| {n:,} | {model.n_iter_} | {total / model.n_iter_:.3f} | "
            f"{in_search / model.n_iter_:.3f} | {len(evaluations)} | "
            f"{in_objective / len(evaluations):.3f} | {pairs / len(evaluations):,.0f} | "
            f"{per_pair} | {largest:,} |",
            flush=True,
        )
    slopes = np.diff(np.log(per_iter)) / np.diff(np.log(sizes))
    print("log-log slope of s / iteration between sizes:", ", ".join(f"{s:.2f}" for s in slopes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["fit", "objective", "search", "iteration"])
    parser.add_argument("--sizes", default="5000,10000,20000,50000")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--n", type=int, default=6000)
    parser.add_argument("--sep", type=float, default=0.5)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--max-iter", type=int, default=8)
    parser.add_argument("--pairs", type=int, default=3_000_000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.what == "fit":
        measure_fit(args.n, args.sep, args.k, args.max_iter)
    elif args.what == "iteration":
        sizes = [int(v) for v in args.sizes.split(",")]
        measure_iterations(sizes, args.sep, args.k, args.max_iter, args.scale)
    elif args.what == "search":
        measure_search(args.n, args.k)
    else:
        measure_objective(args.k, args.pairs)


if __name__ == "__main__":
    main()
