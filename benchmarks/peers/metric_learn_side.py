"""metric-learn 0.7.0's LMNN and ITML_Supervised on the shared protocol; writes a JSON file.

Runs in metric-learn's own environment (see ``run_metric_learn.sh``): metric-learn 0.7.0 calls
``check_array(force_all_finite=...)``, a keyword scikit-learn 1.8 removed, so it needs
scikit-learn ≤ 1.7. It cannot import rankmetric, hence the shared ``protocol.py``.

Usage: python metric_learn_side.py OUT.json [--datasets iris,wine] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import metric_learn  # noqa: E402
import numpy as np  # noqa: E402
import protocol  # noqa: E402  (sets the thread variables before NumPy loads)
import scipy  # noqa: E402
import sklearn  # noqa: E402

# Their defaults, with k = 3 target neighbours as in the protocol and a fixed seed.
METHODS = {
    "LMNN": lambda X, y: metric_learn.LMNN(n_neighbors=protocol.K_NEIGHBOURS, random_state=0),
    "ITML": lambda X, y: metric_learn.ITML_Supervised(random_state=0),
}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--datasets", default=",".join(protocol.DATASETS))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    results: dict = {}
    for method, make in METHODS.items():
        for name in args.datasets.split(","):
            print(f"metric-learn {method} on {name} ...", flush=True)
            results.setdefault(method, {})[name] = protocol.evaluate(make, name, args.repeats)
    meta = {
        "python": platform.python_version(),
        "metric_learn": metric_learn.__version__,
        "scikit_learn": sklearn.__version__,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "repeats": args.repeats,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
