"""Verification from pairs, on classes never seen in training: every pair learner vs Euclidean.

Data: UCI letter-recognition (``rankmetric data fetch letter``; 20,000 items, 16 features, 26
letters). For each seed, the letters are shuffled and split in half: 13 letters for training,
the other 13 for testing, so every test pair shows letters the learner never saw (the
verification setting: new identities at test time). Features are standardised on the training
items.

* Training supervision: ``--train-items`` items of the training letters and ``--pairs`` pairs
  among them, half similar (same letter) and half dissimilar, drawn at random; no class label
  reaches a learner, only these pairs (``fit_pairs``).
* Test: ``--test-items`` items of the test letters and *all* pairs among them
  (:func:`rankmetric.evaluate.labelled_verification_scores`), scored by ROC AUC, EER and TAR at
  FAR = 1e-2.
* Learners: ITML, KISSME, LMNN, WARCA and SSNE at their defaults (the same, zero, tuning budget
  for each; no test data chooses anything), and the Euclidean distance on the standardised
  features. Fit times: one thread (``torch.set_num_threads(1)``), wall clock.

The table gives the median over seeds (and the range); the ROC curves of the first seed go to
``docs/img/verification_roc.png``::

    OMP_NUM_THREADS=1 python benchmarks/bench_verification.py
    OMP_NUM_THREADS=1 python benchmarks/bench_verification.py --seeds 0 --plot ''
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from rankmetric import ITML, KISSME, LMNN, SSNE, WARCA
from rankmetric.datasets import load_dataset
from rankmetric.evaluate import labelled_verification_scores

FAR = 1e-2
LEARNERS = {
    "ITML": lambda seed: ITML(random_state=seed),
    "KISSME": lambda seed: KISSME(),
    "LMNN": lambda seed: LMNN(random_state=seed),
    "WARCA": lambda seed: WARCA(random_state=seed, device="cpu"),
    "SSNE": lambda seed: SSNE(random_state=seed, device="cpu"),
}


def balanced_pairs(y: np.ndarray, n_pairs: int, rng: np.random.Generator):
    """``n_pairs // 2`` same-label and as many different-label random pairs of distinct items."""
    order = np.argsort(y, kind="stable")
    counts = np.bincount(y)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    half = n_pairs // 2
    c = rng.choice(len(counts), size=half, p=counts * (counts - 1) / np.sum(counts * (counts - 1)))
    i = rng.integers(0, counts[c])
    j = (i + rng.integers(1, counts[c])) % counts[c]
    same = np.stack([order[starts[c] + i], order[starts[c] + j]], axis=1)
    a = rng.integers(0, len(y), size=4 * half)
    b = rng.integers(0, len(y), size=4 * half)
    diff = np.stack([a, b], axis=1)[y[a] != y[b]][:half]
    pairs = np.concatenate([same, diff])
    labels = np.r_[np.ones(half), -np.ones(len(diff))]
    return pairs, labels


def split(X, y, seed: int, n_train: int, n_test: int):
    rng = np.random.default_rng(seed)
    letters = rng.permutation(np.unique(y))
    train_letters = letters[: len(letters) // 2]
    train, test = (
        np.flatnonzero(np.isin(y, train_letters)),
        np.flatnonzero(~np.isin(y, train_letters)),
    )
    train = rng.choice(train, size=min(n_train, len(train)), replace=False)
    test = rng.choice(test, size=min(n_test, len(test)), replace=False)
    mean, scale = X[train].mean(0), X[train].std(0)
    return (X[train] - mean) / scale, y[train], (X[test] - mean) / scale, y[test], rng


def run(seeds, n_train, n_test, n_pairs):
    data = load_dataset("letter")
    X, y = data.X.astype(np.float64), data.y
    rows, curves = {}, {}
    for seed in seeds:
        X_tr, y_tr, X_te, y_te, rng = split(X, y, seed, n_train, n_test)
        _, codes = np.unique(y_tr, return_inverse=True)
        pairs, labels = balanced_pairs(codes, n_pairs, rng)
        results = {"Euclidean": (X_te, 0.0)}
        for name, make in LEARNERS.items():
            est = make(seed)
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # convergence notes: defaults are kept as they are
                est.fit_pairs(X_tr, pairs, labels)
            results[name] = (est.transform(X_te), time.perf_counter() - start)
        for name, (E, seconds) in results.items():
            s = labelled_verification_scores(E, y_te, far=(FAR,))
            rows.setdefault(name, []).append(
                (s["roc_auc"], s["eer"], s["tar_at_far"][FAR][0], seconds)
            )
            if seed == seeds[0]:
                curves[name] = (s["roc"]["far"], s["roc"]["tar"])
        n_same, n_diff = s["n_same"], s["n_different"]
        print(f"seed {seed}: {n_same} same and {n_diff} different test pairs", flush=True)
    return rows, curves


def table(rows) -> str:
    def cell(values, fmt):
        v = np.asarray(values)
        med = np.median(v)
        if len(v) == 1:
            return fmt.format(med)
        return f"{fmt.format(med)} ({fmt.format(v.min())}–{fmt.format(v.max())})"

    lines = [
        "| distance | ROC AUC | EER | TAR @ FAR=1e-2 | fit time (s) |",
        "|---|---|---|---|---|",
    ]
    for name, values in rows.items():
        auc, eer, tar, sec = zip(*values, strict=True)
        lines.append(
            f"| {name} | {cell(auc, '{:.3f}')} | {cell(eer, '{:.3f}')} | "
            f"{cell(tar, '{:.3f}')} | {cell(sec, '{:.2f}') if name != 'Euclidean' else '–'} |"
        )
    return "\n".join(lines)


def plot(curves, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    for name, (far, tar) in curves.items():
        ax.plot(far, tar, label=name, lw=1.4, ls="--" if name == "Euclidean" else "-")
    ax.set_xscale("log")
    ax.set_xlim(1e-4, 1)
    ax.set_xlabel("false accept rate (FAR)")
    ax.set_ylabel("true accept rate (TAR)")
    ax.set_title("letter, 13 unseen letters: all test pairs (seed 0)")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"ROC plot written to {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--train-items", type=int, default=2000)
    parser.add_argument("--test-items", type=int, default=2000)
    parser.add_argument("--pairs", type=int, default=5000)
    parser.add_argument("--plot", default="docs/img/verification_roc.png")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows, curves = run(args.seeds, args.train_items, args.test_items, args.pairs)
    print(table(rows))
    if args.plot:
        plot(curves, args.plot)


if __name__ == "__main__":
    main()
