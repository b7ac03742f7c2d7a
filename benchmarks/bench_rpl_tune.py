"""Choose the SPD network's and RPL's defaults on validation data carved out of training splits.

For each data set the official *training* split is divided (stratified, ``--val-fraction`` held
out, one split per seed); each named configuration (:data:`CONFIGS`, keyword arguments of
``SPDNetEmbedding``) is fitted on the rest and scored on the held-out part exactly as the test
figures are: R@1 and mAP@R leave-one-out within the held-out part, Euclidean distance between
``transform`` vectors. The row ``reference`` is the untrained log-Euclidean distance of the
whitened inputs. The test splits are never read. ``fmnist-regcov`` is tuned on a stratified
subsample of ``--fmnist-train`` training images.

Run: ``.venv/bin/python benchmarks/bench_rpl_tune.py --configs all`` (``--configs "a;b"``
picks rows; ``--sets`` picks data sets). Every configuration runs with the estimator's current
budget and selection rule (at most 3000 steps, patience 20, one-standard-error rule on an inner
validation split of the fitting part).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from rankmetric.evaluate import retrieval_scores

SETS = ("JapaneseVowels", "fmnist-regcov", "BasicMotions")
_RPL = {"loss": "rpl"}
#: name -> SPDNetEmbedding parameters (``loss_params`` for the loss).
CONFIGS = {
    # the network: depth, BiMap manifold, ReEig floor, head (RPL, class-centred potato)
    "rpl-class c,c linear eps.05": {**_RPL, "loss_params": {"centre": "class", "margin": 2.0}},
    "rpl-pair c,c linear eps.05": {**_RPL, "loss_params": {"centre": "pairwise", "margin": 2.0}},
    "rpl-class c,c log eps.05": {**_RPL, "head": "log", "loss_params": {"centre": "class",
                                                                        "margin": 2.0}},
    "rpl-class c,c linear eps1e-4abs": {**_RPL, "eps": 1e-4, "relative_eps": False,
                                        "loss_params": {"centre": "class", "margin": 2.0}},
    "rpl-class c,c linear eps.2": {**_RPL, "eps": 0.2, "loss_params": {"centre": "class",
                                                                        "margin": 2.0}},
    "rpl-class c linear eps.05": {**_RPL, "hidden_sizes": "c", "loss_params": {"centre": "class",
                                                                                 "margin": 2.0}},
    "rpl-class c,c,c/2 linear": {**_RPL, "hidden_sizes": "c,c,c/2",
                                 "loss_params": {"centre": "class", "margin": 2.0}},
    "rpl-class c,c spd airm": {**_RPL, "head": "spd", "loss_params": {"centre": "class",
                                                                       "margin": 2.0}},
    "rpl-pair c,c spd airm": {**_RPL, "head": "spd", "loss_params": {"centre": "pairwise",
                                                                      "margin": 2.0}},
    "rpl-pair c/2 stiefel random (v0.1)": {**_RPL, "hidden_sizes": "c/2", "bimap": "stiefel",
                                           "init": "random", "eps": 1e-4, "relative_eps": False,
                                           "head": "spd", "loss_params": {"centre": "pairwise",
                                                                          "margin": 2.0}},
    "rpl-class c,c linear m1": {**_RPL, "loss_params": {"centre": "class", "margin": 1.0}},
    "rpl-class c,c linear lr3e-3": {**_RPL, "learning_rate": 3e-3,
                                    "loss_params": {"centre": "class", "margin": 2.0}},
    "rpl-pair c,c linear m1": {**_RPL, "loss_params": {"centre": "pairwise", "margin": 1.0}},
    # Riemannian batch normalisation after every BiMap (Brooks et al. 2019), RPL and one baseline
    "rpl-pair c,c linear m1 batchnorm": {**_RPL, "batchnorm": True,
                                         "loss_params": {"centre": "pairwise", "margin": 1.0}},
    "ms c,c linear": {"loss": "multi-similarity"},
    "ms c,c linear batchnorm": {"loss": "multi-similarity", "batchnorm": True},
}  # fmt: skip


def resolve_sizes(spec, c: int):
    """``"c,c,c/2"`` → ``[c, c, ceil(c / 2)]`` for ``c`` input channels."""
    if not isinstance(spec, str):
        return spec
    table = {"c": c, "c/2": max(2, -(-c // 2))}
    return [table[s] for s in spec.split(",")]


def load(name: str, fmnist_train: int) -> tuple[np.ndarray, np.ndarray]:
    """The official *training* part of a set (never its test part)."""
    from rankmetric.datasets import load_spd

    extra = {"n_train": fmnist_train, "n_test": 1} if name == "fmnist-regcov" else {}
    data = load_spd(name, **extra)
    return data.X, data.y


def reference_vectors(X_fit: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Untrained reference ``vec(log(M^{-1/2} X M^{-1/2}))``, ``M`` the Riemannian mean of X_fit."""
    from rankmetric.geometry import riemannian_mean, spd_inv_sqrt, spd_log, sym_to_vec

    W = spd_inv_sqrt(riemannian_mean(torch.as_tensor(X_fit)))
    return sym_to_vec(spd_log(W @ torch.as_tensor(X) @ W)).numpy()


def score(name: str, config: dict | None, X, y, seed: int, val_fraction: float) -> dict:
    from rankmetric.estimators.spd import SPDNetEmbedding

    X_fit, X_val, y_fit, y_val = train_test_split(
        X, y, test_size=val_fraction, stratify=y, random_state=seed
    )
    start = time.perf_counter()
    with threadpool_limits(1):
        if config is None:
            Z, n_iter, best = reference_vectors(X_fit, X_val), 0, 0
        else:
            params = dict(config)
            params["hidden_sizes"] = resolve_sizes(params.get("hidden_sizes"), X.shape[1])
            est = SPDNetEmbedding(**params, random_state=seed, device="cpu").fit(X_fit, y_fit)
            Z, n_iter, best = est.transform(X_val), est.n_iter_, est.best_iter_
        found = retrieval_scores(Z, y_val, ks=(1,), device="cpu")
    seconds = time.perf_counter() - start
    return {"set": name, "r1": 100 * found["recall@1"], "map": 100 * found["map@r"],
            "seconds": seconds, "n_iter": n_iter, "best_iter": best}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--configs", default="all")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--val-fraction", type=float, default=0.3)
    parser.add_argument("--fmnist-train", type=int, default=3000)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    names = args.sets.split(",")
    picked = list(CONFIGS) if args.configs == "all" else args.configs.split(";")
    rows = {}
    for name in names:
        X, y = load(name, args.fmnist_train)
        for label in ["reference", *picked]:
            config = None if label == "reference" else CONFIGS[label]
            runs = [score(name, config, X, y, s, args.val_fraction) for s in range(args.seeds)]
            r1, mp = np.mean([r["r1"] for r in runs]), np.mean([r["map"] for r in runs])
            secs = np.mean([r["seconds"] for r in runs])
            best = [r["best_iter"] for r in runs]
            rows.setdefault(label, {})[name] = {"r1": r1, "map": mp}
            print(f"{name:15s} {label:38s} R@1 {r1:5.1f}  mAP@R {mp:5.1f}  {secs:6.1f} s/fit  "
                  f"best steps {best}", flush=True)  # fmt: skip
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
