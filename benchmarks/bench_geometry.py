"""SPD geometry speed: ``rankmetric.geometry`` against pyRiemann on the same random SPD matrices.

For every size ``n×c²`` of ``--sizes`` (default ``300x8,300x32,1000x32``: n matrices of c × c),
every dtype of ``--dtypes`` (float64, float32: both libraries get the same array) and every
thread count of ``--threads`` (1, 2), the rows are:

* pairwise AIRM: ``pairwise_airm(X)`` against
  ``pyriemann.geometry.distance.pairwise_distance(X, metric="riemann")``, and of two sets of n
  matrices, ``pairwise_airm(A, B)`` (n² pairs);
* pairwise log-Euclidean, same sizes (``metric="logeuclid"``);
* Riemannian mean, tol 1e-8, at most 50 iterations: ``riemannian_mean`` against
  ``mean_riemann`` (ours iterates in float64 for float32 input, and returns float32);
* tangent space: ``rankmetric.preprocessing.TangentSpace(device="cpu").fit_transform(X)``
  (Riemannian mean + log map) against pyRiemann's ``TangentSpace().fit_transform(X)``, and
  ``transform`` alone at a fixed reference (the log map);
* AIRM distance of n pairs: ours forward + backward (gradients with respect to both inputs)
  against pyRiemann's forward alone, since pyRiemann has no backward (``--rows`` to select).

Each row times ours and pyRiemann alternately in this one process, ``--repeats`` times (1 for
the 1000-matrix pairwise AIRM unless ``--repeats-large``), and prints the median wall time of
each, the ratio pyRiemann / ours (> 1: ours is faster), the median of the per-repeat wall-time
ratios of the alternated calls ("paired": robust to a load that drifts during the run), the ratio
of median process CPU times (at
one thread the CPU time is the robust figure on a loaded machine: it does not count the time
the process waits for a core), and the largest absolute difference between the two results.
``torch.set_num_threads`` and ``threadpoolctl`` cap torch and NumPy's BLAS at the same thread
count. The load average is printed at the start and the end. With ``--device cuda`` ours runs
on the GPU (synchronised before the clock stops) and pyRiemann on the CPU.

``--profile`` prints instead, on one thread, the per-call CPU time of the kernels underneath
(GEMM, stacked products, eigen-solvers, SVD), torch beside NumPy, and, for pairwise AIRM, the
process CPU time of the whole matrix beside that of the batched LAPACK eigen-solver alone on the
same whitened matrices (torch's, which ours calls, and NumPy's, which pyRiemann calls): the part
neither library can shorten.

Run: ``.venv/bin/python benchmarks/bench_geometry.py`` (about 15 minutes on a quiet 2-core
CPU, most of it both libraries' 1000×1000 AIRM matrix; ``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from pyriemann.geometry.distance import distance_riemann, pairwise_distance
from pyriemann.geometry.mean import mean_riemann
from pyriemann.tangentspace import TangentSpace as PyRiemannTangentSpace
from threadpoolctl import threadpool_limits

from rankmetric.geometry import (
    airm_distance,
    pairwise_airm,
    pairwise_log_euclidean,
    riemannian_mean,
)
from rankmetric.preprocessing import TangentSpace


@dataclass
class Row:
    name: str
    ours: Callable[[], object]
    theirs: Callable[[], np.ndarray]
    note: str = ""
    large: bool = False  # a single repeat unless --repeats-large


def random_spd(rng: np.random.Generator, n: int, c: int) -> np.ndarray:
    """Sample covariances of 2c Gaussian samples (plus a small ridge), float64 (n, c, c)."""
    Z = rng.standard_normal((n, c, 2 * c))
    return Z @ np.swapaxes(Z, -1, -2) / (2 * c) + 1e-3 * np.eye(c)


def build_rows(n: int, c: int, dtype: str, args: argparse.Namespace) -> list[Row]:
    rng = np.random.default_rng(args.seed)
    device = torch.device(args.device)
    X = random_spd(rng, n, c).astype(dtype)
    A, B = random_spd(rng, n, c).astype(dtype), random_spd(rng, n, c).astype(dtype)
    Xt = torch.from_numpy(X).to(device)
    At, Bt = torch.from_numpy(A).to(device), torch.from_numpy(B).to(device)
    ours_ts = TangentSpace(device=args.device).fit(X)
    theirs_ts = PyRiemannTangentSpace().fit(X)

    def forward_backward() -> torch.Tensor:
        A_, B_ = At.clone().requires_grad_(), Bt.clone().requires_grad_()
        d = airm_distance(A_, B_)
        d.sum().backward()
        return d.detach()

    tag = f"{n}x{c}² {dtype}"
    return [
        Row(
            f"pairwise AIRM {tag}",
            lambda: pairwise_airm(Xt),
            lambda: pairwise_distance(X, metric="riemann"),
            large=n >= 1000,
        ),
        Row(
            f"pairwise AIRM, two sets {tag}",
            lambda: pairwise_airm(At, Bt),
            lambda: pairwise_distance(A, B, metric="riemann"),
            large=n >= 1000,
        ),
        Row(
            f"pairwise log-Euclidean {tag}",
            lambda: pairwise_log_euclidean(Xt),
            lambda: pairwise_distance(X, metric="logeuclid"),
        ),
        Row(
            f"Riemannian mean {tag}",
            lambda: riemannian_mean(Xt, tol=1e-8, max_iter=50),
            lambda: mean_riemann(X, tol=1e-8, maxiter=50),
        ),
        Row(
            f"tangent space fit_transform {tag}",
            lambda: TangentSpace(device=args.device).fit_transform(X),
            lambda: PyRiemannTangentSpace().fit_transform(X),
        ),
        Row(
            f"tangent space transform {tag}",
            lambda: ours_ts.transform(X),
            lambda: theirs_ts.transform(X),
            "at each library's own fitted mean",
        ),
        Row(
            f"AIRM distance, pairs {tag}",
            forward_backward,
            lambda: distance_riemann(A, B),
            "ours forward+backward vs pyRiemann forward only",
        ),
    ]


def eigen_solver_share(n: int, c: int, dtype: str, args: argparse.Namespace) -> dict:
    """Process CPU time of the whole pairwise AIRM matrix, ours and pyRiemann's, beside that of
    the batched LAPACK eigen-solver alone (values only) on the same n(n−1)/2 whitened matrices:
    torch's (MKL in the PyPI wheels, the one ours calls) and NumPy's (OpenBLAS, pyRiemann's).
    Medians of ``--repeats`` alternated runs."""
    X = random_spd(np.random.default_rng(args.seed), n, c).astype(dtype)
    Xt = torch.from_numpy(X)
    W = torch.linalg.inv(torch.linalg.cholesky(Xt))
    i, j = torch.triu_indices(n, n, offset=1)
    size = max(1, 2**19 // (c * c))  # blocks of 2**19 numbers, as ours (CACHE_BLOCK_ELEMENTS)
    whitened = [
        (W[i[k : k + size]] @ Xt[j[k : k + size]] @ W[i[k : k + size]].mT).contiguous()
        for k in range(0, len(i), size)
    ]
    calls = {
        "ours": lambda: pairwise_airm(Xt),
        "pyRiemann": lambda: pairwise_distance(X, metric="riemann"),
        "eigvalsh torch": lambda: [torch.linalg.eigvalsh(M) for M in whitened],
        "eigvalsh numpy": lambda: [np.linalg.eigvalsh(M.numpy()) for M in whitened],
    }
    cpu = {name: [] for name in calls}
    for _ in range(args.repeats):
        for name, fn in calls.items():
            cpu[name].append(timed(fn, torch.device("cpu"))[1])
    return {name: statistics.median(times) for name, times in cpu.items()}


def print_kernels(args: argparse.Namespace) -> None:
    """Per-call CPU time of the kernels under the geometry, torch (MKL) beside NumPy (OpenBLAS):
    the whitening GEMM, stacked c × c products, and the batched eigen-solvers, c = 8 and 32."""
    rng = np.random.default_rng(args.seed)
    print("\n## kernels, torch beside NumPy (process CPU, medians)")
    for dtype in args.dtypes.split(","):
        print(_gemm_line(rng, dtype, args.repeats), flush=True)
        for c, n in ((8, 20000), (32, 2000)):
            print(_kernel_line(random_spd(rng, n, c).astype(dtype), args.repeats), flush=True)


def _gemm_line(rng: np.random.Generator, dtype: str, repeats: int) -> str:
    a = rng.standard_normal((9600, 32)).astype(dtype)
    b = rng.standard_normal((32, 2048)).astype(dtype)
    at, bt = torch.from_numpy(a), torch.from_numpy(b)
    flops = 2 * 9600 * 32 * 2048
    torch_rate = flops / _cpu(lambda: at @ bt, repeats) / 1e9
    numpy_rate = flops / _cpu(lambda: a @ b, repeats) / 1e9
    return f"{dtype} GEMM 9600x32x2048: torch {torch_rate:.1f}, NumPy {numpy_rate:.1f} GFLOP/s"


def _kernel_line(X: np.ndarray, repeats: int) -> str:
    n, c = X.shape[0], X.shape[-1]
    Xt = torch.from_numpy(X)
    L = torch.linalg.cholesky(Xt)
    kernels = {
        "stacked product": (lambda: Xt @ Xt, lambda: X @ X),
        "eigvalsh": (lambda: torch.linalg.eigvalsh(Xt), lambda: np.linalg.eigvalsh(X)),
        "eigh": (lambda: torch.linalg.eigh(Xt), lambda: np.linalg.eigh(X)),
        "svdvals of L": (
            lambda: torch.linalg.svdvals(L),
            lambda: np.linalg.svd(L.numpy(), compute_uv=False),
        ),
    }
    parts = []
    for name, (ours, theirs) in kernels.items():
        t, o = (_cpu(f, repeats) / n * 1e6 for f in (ours, theirs))
        parts.append(f"{name} {t:.2f} / {o:.2f}")
    return f"{X.dtype} {c}x{c}, µs a matrix, torch / NumPy: " + ", ".join(parts)


def _cpu(fn: Callable, repeats: int) -> float:
    return statistics.median(timed(fn, torch.device("cpu"))[1] for _ in range(repeats))


def print_profile(sizes, args: argparse.Namespace) -> None:
    print("\n## where pairwise AIRM spends its time (process CPU s, medians)")
    print(
        f"{'case':22s} {'ours':>7s} {'eig torch':>9s} {'share':>6s} {'pyRiem':>7s} "
        f"{'eig numpy':>9s} {'share':>6s}"
    )
    for n, c in sizes:
        for dtype in args.dtypes.split(","):
            t = eigen_solver_share(n, c, dtype, args)
            print(
                f"{f'{n}x{c}² {dtype}':22s} {t['ours']:7.3f} {t['eigvalsh torch']:9.3f} "
                f"{t['eigvalsh torch'] / t['ours']:6.0%} {t['pyRiemann']:7.3f} "
                f"{t['eigvalsh numpy']:9.3f} {t['eigvalsh numpy'] / t['pyRiemann']:6.0%}",
                flush=True,
            )


def timed(fn: Callable, device: torch.device) -> tuple[float, float, object]:
    """Wall and process CPU time of one call (after a device synchronisation), and its result."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    cpu, wall = time.process_time(), time.perf_counter()
    result = fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def measure(row: Row, repeats: int, device: torch.device) -> dict:
    """Median wall and CPU times of ours and pyRiemann, alternating."""
    if device.type == "cuda":
        timed(row.ours, device)  # warm-up: CUDA context, kernels, allocator
    times = {"ours": ([], []), "theirs": ([], [])}
    for _ in range(repeats):
        for key, fn, dev in (("ours", row.ours, device), ("theirs", row.theirs, None)):
            wall, cpu, result = timed(fn, dev or torch.device("cpu"))
            times[key][0].append(wall)
            times[key][1].append(cpu)
            if key == "ours":
                ours = result
            else:
                theirs = result
    med = {k: (statistics.median(w), statistics.median(c)) for k, (w, c) in times.items()}
    paired = [t / o for t, o in zip(times["theirs"][0], times["ours"][0], strict=True)]
    ours = ours.double().cpu().numpy() if isinstance(ours, torch.Tensor) else np.asarray(ours)
    difference = np.abs(ours.astype(np.float64) - np.asarray(theirs, dtype=np.float64)).max()
    return {
        "row": row.name,
        "ours_s": med["ours"][0],
        "pyriemann_s": med["theirs"][0],
        "ratio": med["theirs"][0] / med["ours"][0],
        "ours_cpu_s": med["ours"][1],
        "pyriemann_cpu_s": med["theirs"][1],
        "cpu_ratio": med["theirs"][1] / med["ours"][1],
        "paired_ratio": statistics.median(paired),
        "max_abs_diff": float(difference),
        "note": row.note,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="300x8,300x32,1000x32", help="n x c, comma-separated")
    parser.add_argument("--dtypes", default="float64,float32")
    parser.add_argument(
        "--threads",
        default="1,2",
        help="thread counts, comma-separated; 'default' leaves torch's and BLAS's own counts",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--repeats-large", type=int, default=1, help="for 1000-matrix AIRM")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rows", default="", help="comma-separated substrings selecting rows")
    parser.add_argument("--quick", action="store_true", help="sizes 100x8,100x32, one repeat")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="instead of the rows: the share of the LAPACK eigen-solver in pairwise AIRM",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.repeats = "100x8,100x32", 1
    device = torch.device(args.device)
    wanted = [s for s in args.rows.split(",") if s]
    sizes = [tuple(int(v) for v in size.split("x")) for size in args.sizes.split(",")]
    print(
        f"# device={args.device}, repeats={args.repeats}, torch {torch.__version__}, load "
        f"average {os.getloadavg()[0]:.2f}; medians; ratio = pyRiemann / ours (> 1: ours faster)"
    )
    if args.profile:
        torch.set_num_threads(1)
        with threadpool_limits(1):
            print_kernels(args)
            print_profile(sizes, args)
        return
    results = []
    default_threads = torch.get_num_threads()  # what a user gets, before anything is set
    for threads in args.threads.split(","):
        pinned = threads != "default"  # "default": torch's and the BLAS pools' own counts
        threads = int(threads) if pinned else default_threads
        torch.set_num_threads(threads)
        print(f"\n## {threads} thread(s){'' if pinned else ' (the defaults, nothing pinned)'}")
        print(
            f"{'row':46s} {'ours s':>8s} {'pyRiem s':>9s} {'ratio':>7s} {'paired':>7s} "
            f"{'CPU ratio':>9s} {'max|diff|':>9s}  note"
        )
        with threadpool_limits(threads) if pinned else contextlib.nullcontext():
            for n, c in sizes:
                for dtype in args.dtypes.split(","):
                    for row in build_rows(n, c, dtype, args):
                        if wanted and not any(s in row.name for s in wanted):
                            continue
                        repeats = args.repeats_large if row.large else args.repeats
                        r = measure(row, repeats, device) | {"threads": threads}
                        results.append(r)
                        print(
                            f"{r['row']:46s} {r['ours_s']:8.3f} {r['pyriemann_s']:9.3f} "
                            f"{r['ratio']:6.2f}x {r['paired_ratio']:6.2f}x {r['cpu_ratio']:8.2f}x "
                            f"{r['max_abs_diff']:9.1e}  {r['note']}",
                            flush=True,
                        )
    print(f"\n# load average at the end {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
