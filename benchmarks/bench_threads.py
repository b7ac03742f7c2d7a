"""Threads that fit the work: default-thread fits against ``OMP_NUM_THREADS=1``, side by side.

Part 1 (small data, a busy machine): LMNN, WARCA, SSNE and ITML at their defaults on half of
wdbc (the first training half of ``StratifiedKFold(2, shuffle=True, random_state=0)``,
standardised), while ``--busy`` other processes spin on a core each. Each fit runs in a fresh
child process in three settings, alternated ``--repeats`` times:

* ``default``: no thread variable set (rankmetric sizes the pools: one thread for this size);
* ``OMP=1``: ``OMP_NUM_THREADS=1`` in the environment (every pool on one thread);
* ``all cores`` (with ``--all-cores``): ``rankmetric.threads(-1)`` around the fit, every pool
  on every core (what every fit did before the pools were sized; on a loaded machine a single
  such fit can take minutes, hence off by default).

Part 2 (large data): a WARCA fit on 1,000,000 × 128 float32 (10 Gaussian classes, seed 0,
``max_iter`` steps, ``tol=None``) at the default thread count (load-aware: the cores other
processes leave free, see ``rankmetric._threads.free_cores``) and with ``n_threads=1`` and
``n_threads=2``, alternated.

Part 3 (large search): ``knn_search`` of 1,000 queries against ``--search-gallery`` × 128
items (k = 10) at the default thread count, with ``n_threads=1`` and ``n_threads=2``, and
faiss ``IndexFlatL2`` at its default (every core), alternated.

    python benchmarks/bench_threads.py                      # all parts, one busy process
    python benchmarks/bench_threads.py --skip-large --skip-search --repeats 5
    python benchmarks/bench_threads.py --skip-small --busy 3  # large work on a busy machine

Times are medians over the repeats of the fit alone (imports and data loading excluded); the
load average is printed with each table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

METHODS = ("LMNN", "WARCA", "SSNE", "ITML")
SETTINGS = ("default", "OMP=1", "all cores")


def _half_wdbc():
    import numpy as np
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    from rankmetric.datasets import load_dataset

    data = load_dataset("wdbc")
    X, y = data.X.astype(np.float64), data.y
    train, _ = next(StratifiedKFold(2, shuffle=True, random_state=0).split(X, y))
    return StandardScaler().fit_transform(X[train]), y[train]


def _estimator(method: str, **params):
    import rankmetric

    if method in ("WARCA", "SSNE"):
        params = {"random_state": 0, "device": "cpu", **params}
    return getattr(rankmetric, method)(**params)


def child_small(method: str, setting: str) -> None:
    import warnings

    import rankmetric

    warnings.simplefilter("ignore")
    X, y = _half_wdbc()
    _estimator(method).fit(X[:60], y[:60])  # warm-up: imports, thread pools
    start = time.perf_counter()
    if setting == "all cores":
        with rankmetric.threads(-1):
            _estimator(method).fit(X, y)
    else:
        _estimator(method).fit(X, y)
    print(json.dumps({"seconds": time.perf_counter() - start}))


def child_large(n_threads: int, n_samples: int, max_iter: int) -> None:
    """A large WARCA fit; ``n_threads`` 0 is the default (load-aware) count."""
    import numpy as np

    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, n_samples)
    X = rng.standard_normal((n_samples, 128), dtype=np.float32)
    X += rng.standard_normal((10, 128), dtype=np.float32)[y]
    model = _estimator("WARCA", max_iter=max_iter, tol=None, n_threads=n_threads or None)
    start = time.perf_counter()
    model.fit(X, y)
    print(json.dumps({"seconds": time.perf_counter() - start}))


def child_search(setting: str, n_gallery: int) -> None:
    """1,000 queries against ``n_gallery`` items; ``setting`` is default, 1, 2 or faiss."""
    import numpy as np

    from rankmetric.evaluate import knn_search

    rng = np.random.default_rng(0)
    G = rng.standard_normal((n_gallery, 128), dtype=np.float32)
    Q = rng.standard_normal((1000, 128), dtype=np.float32)
    if setting == "faiss":
        import faiss

        index = faiss.IndexFlatL2(128)
        index.add(G)
        start = time.perf_counter()
        index.search(Q, 10)
    else:
        n_threads = None if setting == "default" else int(setting)
        start = time.perf_counter()
        knn_search(Q, G, k=10, backend="torch", n_threads=n_threads)
    print(json.dumps({"seconds": time.perf_counter() - start}))


def _run(args: list[str], env: dict) -> float:
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])["seconds"]


def _env(setting: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    if setting == "OMP=1":
        env["OMP_NUM_THREADS"] = "1"
    return env


def _alternate(settings, args_of, repeats: int, env_of=lambda s: _env("default")) -> dict:
    """Median seconds of each setting's child run, the settings alternated ``repeats`` times."""
    times = {s: [] for s in settings}
    for _ in range(repeats):  # alternate: the settings share the machine's load
        for setting in settings:
            times[setting].append(_run(args_of(setting), env_of(setting)))
    return {s: statistics.median(t) for s, t in times.items()}


def small_table(repeats: int, settings: tuple[str, ...]) -> None:
    print("| method | " + " | ".join(f"{s} (s)" for s in settings) + " | "
          + " | ".join(f"{s} / OMP=1" for s in settings if s != "OMP=1") + " |")  # fmt: skip
    print("|---" * (2 * len(settings)) + "|")
    for method in METHODS:
        med = _alternate(
            settings, lambda s, m=method: ["--child-small", m, s], repeats, env_of=_env
        )
        ratios = [f"{med[s] / med['OMP=1']:.2f}" for s in settings if s != "OMP=1"]
        cells = [f"{med[s]:.2f}" for s in settings]
        print(f"| {method} | " + " | ".join(cells + ratios) + " |", flush=True)


def large_table(repeats: int, n_samples: int, max_iter: int) -> None:
    code = {"default": "0", "1 thread": "1", "2 threads": "2"}
    med = _alternate(
        tuple(code),
        lambda s: [
            "--child-large",
            code[s],
            "--n-samples",
            str(n_samples),
            "--max-iter",
            str(max_iter),
        ],
        repeats,
    )
    best = min(med["1 thread"], med["2 threads"])
    print(f"WARCA {n_samples:,} × 128, {max_iter} steps: "
          + ", ".join(f"{s} {t:.1f} s" for s, t in med.items())
          + f"; 2 / 1 = {med['2 threads'] / med['1 thread']:.2f}, "
          f"default / best fixed = {med['default'] / best:.2f}")  # fmt: skip


def search_table(repeats: int, n_gallery: int) -> None:
    med = _alternate(
        ("default", "1", "2", "faiss"),
        lambda s: ["--child-search", s, "--search-gallery", str(n_gallery)],
        repeats,
    )
    print(f"knn_search 1,000 × {n_gallery:,} × 128, k = 10: default {med['default']:.2f} s, "
          f"1 thread {med['1']:.2f} s, 2 threads {med['2']:.2f} s, faiss (default threads) "
          f"{med['faiss']:.2f} s; default / faiss = {med['default'] / med['faiss']:.2f}, "
          f"2 threads / default = {med['2'] / med['default']:.2f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--busy", type=int, default=1, help="competing busy processes")
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--skip-small", action="store_true")
    parser.add_argument("--all-cores", action="store_true", help="also time all pools on all cores")
    parser.add_argument("--n-samples", type=int, default=1_000_000)
    parser.add_argument("--max-iter", type=int, default=30)
    parser.add_argument("--skip-search", action="store_true")
    parser.add_argument("--search-gallery", type=int, default=300_000)
    parser.add_argument("--child-small", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--child-large", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child-search", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_small:
        return child_small(*args.child_small)
    if args.child_large is not None:
        return child_large(args.child_large, args.n_samples, args.max_iter)
    if args.child_search:
        return child_search(args.child_search, args.search_gallery)
    spin = [sys.executable, "-c", "while True: pass"]
    busy = [subprocess.Popen(spin) for _ in range(args.busy)]
    try:
        print(f"{os.cpu_count()} cores, {args.busy} busy process(es), {args.repeats} repeats")
        if not args.skip_small:
            small_table(args.repeats, SETTINGS if args.all_cores else SETTINGS[:2])
            print(f"load average (1, 5, 15 min): {os.getloadavg()}", flush=True)
        if not args.skip_large:
            large_table(args.repeats, args.n_samples, args.max_iter)
            print(f"load average (1, 5, 15 min): {os.getloadavg()}", flush=True)
        if not args.skip_search:
            search_table(args.repeats, args.search_gallery)
            print(f"load average (1, 5, 15 min): {os.getloadavg()}")
    finally:
        for p in busy:
            p.kill()


if __name__ == "__main__":
    main()
