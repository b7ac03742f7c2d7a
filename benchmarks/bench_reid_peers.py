"""``reid_scores`` against torchreid's Cython evaluator (``eval_market1501_cy``), side by side.

torchreid's evaluation is the re-identification field's reference: a dense ``n_query ×
n_gallery`` distance matrix (torch ``addmm``, as ``torchreid.metrics.compute_distance_matrix``),
a full ``argsort`` of it, and a compiled loop over the queries (``rank_cy.pyx``). This script
builds that evaluator from torchreid's own source when it can, and times both sides in fresh
processes, alternating, on the same synthetic Market-1501-style data (float32 embeddings:
identity centres plus noise, ``--cameras`` cameras; no junk items, as torchreid's loaders drop
them). Both sides include their distance computation. Reported: median wall and CPU seconds,
peak resident memory above the inputs (``VmHWM``), rank-1 and mAP (which must agree: torchreid
accumulates in float32, so to about 1e-5).

The torchreid side needs the source file (``--torchreid-source PATH/rank_cy.pyx``, default: the
one of an installed ``torchreid`` package), Cython (``--cython``: a ``cython`` executable,
default: the one on ``PATH`` or this interpreter's ``Cython``) and a C compiler (``$CC`` or
``cc``); without any of them the torchreid column is skipped with a note saying which is missing.

    OMP_NUM_THREADS=1 python benchmarks/bench_reid_peers.py --threads 1            # 3k x 15k
    OMP_NUM_THREADS=1 python benchmarks/bench_reid_peers.py --n-query 1000 --n-gallery 100000
    python benchmarks/bench_reid_peers.py --threads 0         # torch's default threads
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from _memory import reset_peak_mb, run_children, status_mb
from rankmetric.evaluate import reid_scores

BUILD_DIR = Path(tempfile.gettempdir()) / "rankmetric-torchreid-cy"


def make_data(n_query, n_gallery, dim, n_ids, n_cams, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_ids, dim)).astype(np.float32)

    def items(n):
        ids = rng.integers(0, n_ids, n)
        X = centres[ids]
        X += rng.normal(scale=2.5, size=X.shape).astype(np.float32)
        return X, ids, rng.integers(0, n_cams, n)

    return (*items(n_query), *items(n_gallery))


def _torchreid_source(given: str | None) -> Path | str:
    if given:
        path = Path(given)
        return path if path.is_file() else f"no file {path}"
    spec = importlib.util.find_spec("torchreid")
    if spec is None or not spec.submodule_search_locations:
        return "torchreid is not installed and --torchreid-source was not given"
    path = Path(list(spec.submodule_search_locations)[0]) / "metrics/rank_cylib/rank_cy.pyx"
    return path if path.is_file() else f"the installed torchreid has no {path.name}"


def build_torchreid(source: str | None, cython: str | None) -> Path | str:
    """The compiled ``rank_cy`` extension, or a sentence saying what is missing."""
    pyx = _torchreid_source(source)
    if isinstance(pyx, str):
        return pyx
    if cython:
        cythonize = [cython]
    elif shutil.which("cython"):
        cythonize = [shutil.which("cython")]
    elif importlib.util.find_spec("Cython") is not None:
        cythonize = [sys.executable, "-m", "cython"]
    else:
        return "Cython is not available (pass --cython PATH or install Cython)"
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return "no C compiler (cc/gcc or $CC)"
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    target = BUILD_DIR / f"rank_cy{suffix}"
    if target.exists() and target.stat().st_mtime > pyx.stat().st_mtime:
        return target
    c_file = BUILD_DIR / "rank_cy.c"
    steps = [
        [*cythonize, "-3", str(pyx), "-o", str(c_file)],
        [cc, "-O3", "-shared", "-fPIC", "-DNPY_NO_DEPRECATED_API=NPY_1_7_API_VERSION",
         f"-I{sysconfig.get_paths()['include']}", f"-I{np.get_include()}", str(c_file),
         "-o", str(target)],
    ]  # fmt: skip
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            return f"building torchreid's evaluator failed: {(done.stderr or '?').strip()[-300:]}"
    return target


def _torchreid_eval(module_path: str, Q, qi, qc, G, gi, gc):
    spec = importlib.util.spec_from_file_location("rank_cy", module_path)
    rank_cy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rank_cy)
    q, g = torch.from_numpy(Q), torch.from_numpy(G)
    # torchreid.metrics.euclidean_squared_distance
    distmat = (
        q.pow(2).sum(dim=1, keepdim=True).expand(q.shape[0], g.shape[0])
        + g.pow(2).sum(dim=1, keepdim=True).expand(g.shape[0], q.shape[0]).t()
    )
    distmat.addmm_(q, g.t(), beta=1, alpha=-2)
    cmc, mAP = rank_cy.evaluate_cy(distmat.numpy(), qi, gi, qc, gc, 20, False)
    return {"rank1": float(cmc[0]), "mAP": float(mAP)}


def child(args) -> None:
    """One measurement in this (fresh) process; prints one JSON line."""
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    Q, qi, qc, G, gi, gc = make_data(
        args.n_query, args.n_gallery, args.dim, args.identities, args.cameras
    )
    if args.child == "torchreid":  # warm-up on a small slice (imports, thread pools)
        run = lambda *a: _torchreid_eval(args.module, *a)  # noqa: E731
    else:

        def run(Q, qi, qc, G, gi, gc):
            s = reid_scores(Q, qi, qc, G, gi, gc, ranks=(1,), device="cpu")
            return {"rank1": s["cmc"][1], "mAP": s["mAP"]}

    run(Q[:50], qi[:50], qc[:50], G[:2000], gi[:2000], gc[:2000])
    base = reset_peak_mb()
    start, cpu = time.perf_counter(), time.process_time()
    found = run(Q, qi, qc, G, gi, gc)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = status_mb("VmHWM") - base
    print(json.dumps({"seconds": seconds, "cpu": cpu, "peak_mb": peak, **found}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-query", type=int, default=3_000)
    parser.add_argument("--n-gallery", type=int, default=15_000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--identities", type=int, default=750)
    parser.add_argument("--cameras", type=int, default=6)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: default)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--torchreid-source", help="path of torchreid's rank_cy.pyx")
    parser.add_argument("--cython", help="a cython executable")
    parser.add_argument("--child", choices=("ours", "torchreid"), help=argparse.SUPPRESS)
    parser.add_argument("--module", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    built = build_torchreid(args.torchreid_source, args.cython)
    tools = ["ours"] if isinstance(built, str) else ["ours", "torchreid"]
    keep = ("n_query", "n_gallery", "dim", "identities", "cameras", "threads")
    common = [sys.executable, __file__] + [
        f"--{k.replace('_', '-')}={getattr(args, k)}" for k in keep
    ]
    threads = "default" if args.threads == 0 else args.threads
    print(f"{args.n_query} queries x {args.n_gallery} gallery x {args.dim} dims, "
          f"{args.identities} identities, {args.cameras} cameras, threads={threads}, "
          f"{args.repeats} runs per side in fresh processes, alternating")  # fmt: skip
    if isinstance(built, str):
        print(f"torchreid's Cython evaluator skipped: {built}")
    runs = {tool: [] for tool in tools}
    for _ in range(args.repeats):
        for tool in tools:
            extra = [f"--module={built}"] if tool == "torchreid" else []
            found = run_children([*common, f"--child={tool}", *extra], 1)
            if isinstance(found, dict):
                raise SystemExit(f"{tool}: {found['error']}")
            runs[tool] += found
    med = {}
    print("| side | wall s | CPU s | peak MiB | rank-1 | mAP |")
    print("|---|---|---|---|---|---|")
    for tool, got in runs.items():
        med[tool] = {k: statistics.median(r[k] for r in got) for k in ("seconds", "cpu")}
        peak = max(r["peak_mb"] for r in got)
        print(f"| {tool} | {med[tool]['seconds']:.2f} | {med[tool]['cpu']:.2f} | {peak:.0f} | "
              f"{got[0]['rank1']:.4f} | {got[0]['mAP']:.5f} |")  # fmt: skip
    if "torchreid" in runs:
        o, t = runs["ours"][0], runs["torchreid"][0]
        print(
            f"torchreid/ours: wall {med['torchreid']['seconds'] / med['ours']['seconds']:.2f}, "
            f"CPU {med['torchreid']['cpu'] / med['ours']['cpu']:.2f}; |rank-1 difference| "
            f"{abs(o['rank1'] - t['rank1']):.1e}, |mAP difference| {abs(o['mAP'] - t['mAP']):.1e}"
        )


if __name__ == "__main__":
    main()
