"""Work sized by the input under an address-space limit: finishes or refuses with the estimate.

Each case runs in its own process under ``RLIMIT_AS`` (what ``prlimit --as`` sets; default
4,000,000,000 bytes) and prints whether it finished or refused, the seconds it took, the peak
resident memory and the message. Issue #34's cases::

    PYTHONPATH=src python benchmarks/bench_input_limits.py            # the issue's sizes
    PYTHONPATH=src python benchmarks/bench_input_limits.py --scale 0.2

``pairs``: ``PairClassifier().fit`` on 2M × 2 × 64 stacked pairs; ``verification``:
``labelled_verification_scores`` on 60k items; ``tangent``: ``TangentSpace().fit`` on 100k
32 × 32 SPD matrices; ``bomb``: ``load_features`` of a 1 MiB ``.npz`` declaring 1 GiB (a
deflated bomb of zeros).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap

CASES = {
    "pairs": """
        rng = np.random.default_rng(0)
        n = int(2_000_000 * SCALE)
        P = np.empty((n, 2, 64))
        for s in range(0, n, 100_000):
            P[s : s + 100_000] = rng.standard_normal(size=(min(100_000, n - s), 2, 64))
        y = np.where(rng.random(n) < 0.5, 1, -1)
        from rankmetric import PairClassifier
        run(lambda: PairClassifier().fit(P, y))
    """,
    "verification": """
        n = int(60_000 * SCALE)
        E = np.random.default_rng(0).normal(size=(n, 16))
        from rankmetric.evaluate import labelled_verification_scores
        run(lambda: labelled_verification_scores(E, np.arange(n) % 1000))
    """,
    "tangent": """
        n = int(100_000 * SCALE)
        rng = np.random.default_rng(0)
        X = np.empty((n, 32, 32))
        for s in range(0, n, 5000):
            A = rng.normal(size=(min(5000, n - s), 32, 40))
            np.matmul(A, A.transpose(0, 2, 1), out=X[s : s + len(A)])
        from rankmetric.preprocessing import TangentSpace
        run(lambda: TangentSpace().fit(X))
    """,
    "bomb": """
        import tempfile, zipfile
        path = os.path.join(tempfile.mkdtemp(), "bomb.npz")
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            with z.open("X.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array_header_1_0(
                    member, {"descr": "<f8", "fortran_order": False, "shape": (2**23, 16)}
                )
                zeros = bytes(2**24)
                for _ in range(2**30 // 2**24):
                    member.write(zeros)
            z.writestr("y.npy", b"")
        from rankmetric.datasets import load_features
        run(lambda: load_features(path))
    """,
}

_CHILD = """
import os, resource, time, json
import numpy as np
SCALE = {scale}
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
def run(fn):
    start = time.perf_counter()
    try:
        fn()
        outcome, message = "finished", ""
    except (ValueError, MemoryError) as exc:
        outcome, message = type(exc).__name__, str(exc)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({{"outcome": outcome, "seconds": round(time.perf_counter() - start, 2),
                      "max_rss_mib": round(peak), "message": message[:300]}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help=f"some of {list(CASES)} (default: all)")
    parser.add_argument("--limit", type=int, default=4_000_000_000, help="RLIMIT_AS in bytes")
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the issue's sizes")
    args = parser.parse_args()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("RANKMETRIC_MEMORY_LIMIT", None)
    unknown = sorted(set(args.cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {unknown}; choose from {list(CASES)}")
    for name in args.cases or list(CASES):
        code = _CHILD.format(scale=args.scale, limit=args.limit) + textwrap.dedent(CASES[name])
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        lines = out.stdout.strip().splitlines()
        result = json.loads(lines[-1]) if lines else {"outcome": f"crashed ({out.returncode})",
                                                      "stderr": out.stderr[-300:]}  # fmt: skip
        print(name, json.dumps(result))


if __name__ == "__main__":
    main()
