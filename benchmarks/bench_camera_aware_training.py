"""Camera-aware training (issue 22): cross-camera positives or every positive, on validation ids.

On ``make_multicamera_reid`` (a Market-1501-like **stand-in**: identities seen by 2 to 6 cameras,
same-camera images sharing a session offset), each seed draws a fresh data set and splits its
identities three ways: 50 % training, 25 % validation, 25 % test. **The test identities are
never used**: they are dropped before anything is fitted. WARCA, KISSME and XQDA are fitted on the
training identities with ``positives="all"`` (the default: every same-identity pair) and with
``positives="cross_camera"`` (only pairs of one identity in two cameras), the same
hyper-parameters and budget for both, then scored on the validation identities under the
Market-1501 protocol (:func:`rankmetric.evaluate.reid_scores`: one query per (identity, camera)
track, same-identity same-camera gallery items removed): rank 1 and full mAP, in %.

    OMP_NUM_THREADS=1 python benchmarks/bench_camera_aware_training.py            # seeds 0-4
    OMP_NUM_THREADS=1 python benchmarks/bench_camera_aware_training.py --seeds 0 1

Prints mean ± standard deviation over the seeds of each score, and the paired difference
(cross_camera − all) with its standard deviation over the seeds: a gain is real only when it is
well above that split-to-split noise.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from rankmetric.datasets import make_multicamera_reid
from rankmetric.estimators.pair_covariance import KISSME, XQDA
from rankmetric.estimators.warca import WARCA
from rankmetric.evaluate import query_gallery_split, reid_scores

#: Identities per data set unless a setting says otherwise (the generator's default).
N_IDENTITIES = 600
#: Data settings: the generator's defaults, and camera offsets as large as an identity's spread
#: (where same-camera pairs hide most of what separates two cameras' views of one identity).
#: ``images_per_camera=6``: longer same-camera tracks (Market-1501's training set has about 3.7
#: images per track), so that same-camera pairs are a larger share of the positives (19.5 % of
#: the ordered same-identity pairs on seed 0, 45 % for an identity in two cameras; 12.7 % with
#: the default 2 images per track).
SETTINGS = {
    "default": {},
    "camera_offset=1.0": {"camera_offset": 1.0},
    "images_per_camera=6": {"images_per_camera": 6, "n_identities": 300},
}
#: Same settings for both options; WARCA's budget is its defaults with rank 32.
METHODS = {
    "WARCA": lambda seed, positives: WARCA(
        n_components=32, random_state=seed, device="cpu", positives=positives
    ),
    "KISSME": lambda seed, positives: KISSME(n_components=32, positives=positives),
    "XQDA": lambda seed, positives: XQDA(positives=positives),
}


def split_identities(ids: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the training and validation identities (50 % / 25 %; the last 25 %, test, unused)."""
    unique = np.random.default_rng(seed).permutation(np.unique(ids))
    n = len(unique)
    train_ids, val_ids = unique[: n // 2], unique[n // 2 : 3 * n // 4]
    return np.flatnonzero(np.isin(ids, train_ids)), np.flatnonzero(np.isin(ids, val_ids))


def validation_scores(Z: np.ndarray, ids: np.ndarray, cams: np.ndarray, seed: int):
    """Market-1501 rank 1 and mAP (%) of embedded validation items."""
    q, g = query_gallery_split(ids, cams, random_state=seed)
    s = reid_scores(Z[q], ids[q], cams[q], Z[g], ids[g], cams[g], ranks=(1,), device="cpu")
    return 100 * s["cmc"][1], 100 * s["mAP"]


def run(seeds, setting: dict) -> dict:
    results: dict = {}
    for seed in seeds:
        d = make_multicamera_reid(**{"n_identities": N_IDENTITIES, **setting}, random_state=seed)
        tr, va = split_identities(d.ids, seed)
        X_va, y_va, c_va = d.X[va], d.ids[va], d.camera[va]
        results.setdefault(("Euclidean", "-"), []).append(
            (*validation_scores(X_va, y_va, c_va, seed), 0.0)
        )
        for name, make in METHODS.items():
            for positives in ("all", "cross_camera"):
                est = make(seed, positives)
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.fit(d.X[tr], d.ids[tr], cameras=d.camera[tr])
                elapsed = time.perf_counter() - start
                r1, ap = validation_scores(est.transform(X_va), y_va, c_va, seed)
                results.setdefault((name, positives), []).append((r1, ap, elapsed))
                print(
                    f"seed {seed} {name:9s} {positives:12s} R1 {r1:5.1f} mAP {ap:5.1f} "
                    f"fit {elapsed:.2f}s",
                    flush=True,
                )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS))
    args = parser.parse_args()
    tables = {name: run(args.seeds, SETTINGS[name]) for name in args.settings}
    for name, results in tables.items():
        report(name, results, args.seeds)


def _std(x: np.ndarray) -> float:
    return float(x.std(ddof=1)) if len(x) > 1 else float("nan")


def report(setting: str, results: dict, seeds) -> None:
    print(
        f"\nmake_multicamera_reid({setting}), seeds {seeds}; "
        "validation identities, Market-1501 protocol; mean ± std over seeds (%)"
    )
    print("| method | positives | rank 1 | mAP | Δ rank 1 (cross − all) | Δ mAP | fit (s) |")
    print("|---|---|---|---|---|---|---|")
    for (name, positives), rows in results.items():
        a = np.array(rows)
        delta = ""
        if positives == "cross_camera":
            b = np.array(results[(name, "all")])
            d = a[:, :2] - b[:, :2]
            delta = (
                f"{d[:, 0].mean():+.1f} ± {_std(d[:, 0]):.1f} | "
                f"{d[:, 1].mean():+.1f} ± {_std(d[:, 1]):.1f}"
            )
        else:
            delta = " | "
        print(
            f"| {name} | {positives} | {a[:, 0].mean():.1f} ± {_std(a[:, 0]):.1f} | "
            f"{a[:, 1].mean():.1f} ± {_std(a[:, 1]):.1f} | {delta} | "
            f"{np.median(a[:, 2]):.2f} |"
        )


if __name__ == "__main__":
    main()
