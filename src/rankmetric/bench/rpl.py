"""``rankmetric bench rpl-spd``: RPL's Table 1 (F1, R@1, R@3, NMI) on SPD stand-in data sets.

DEAP, AFEW and HDM05 are licensed and unavailable; real EEG/MEG and motion-sensor recordings of the
UEA archive stand in for them, as covariance matrices (``load_spd``: OAS shrinkage). Each cell is
one (method, data set, seed): the method is trained on the official training part, the test part
is embedded, and

* F1 and NMI come from k-means (k = number of classes, ``random_state = seed``) on the test
  embeddings (:func:`rankmetric.evaluate.clustering_scores`);
* R@1 and R@3 are leave-one-out Recall@K within the test set
  (:func:`rankmetric.evaluate.retrieval_scores`).

All methods share one backbone and budget (:mod:`rankmetric.bench.spdnet_baselines`): RPL is
:class:`~rankmetric.estimators.rpl.RPLEmbedding`; the baselines train the same SPDNet with their
loss on the log-vectorised outputs. Every embedding is evaluated the same way: the Euclidean
distance between ``sym_to_vec(log f(Σ))`` vectors (the log-Euclidean distance of the outputs).
"""

from __future__ import annotations

import functools
import time

import numpy as np
import torch

from ..evaluate import clustering_scores, retrieval_scores
from ._common import (
    BenchConfig,
    Summary,
    captured_warnings,
    cell_runner,
    format_pm,
    group_by,
    markdown_table,
    mean_std,
    split_failures,
)
from .grid import Cell
from .spdnet_baselines import BASELINE_LOSSES, fit_spdnet_baseline, log_vectors, whiten

__all__ = ["NAME", "PAPER_TABLE", "SPD_SETS", "METHODS", "build_cells", "run_cell", "summarise"]

NAME = "rpl-spd"
METRICS = ("F1", "R@1", "R@3", "NMI")

#: Paper Table 1: data set -> method -> (F1, R@1, R@3, NMI), in %.
PAPER_TABLE = {
    "DEAP-4": {
        "DSML-Triplet": (38.7, 35.5, 37.8, 36.1), "Triplet-Random": (33.5, 31.4, 32.5, 28.7),
        "Triplet-Semihard": (35.5, 30.1, 31.4, 27.3), "Lifted Struct": (35.3, 35.2, 35.8, 33.4),
        "N-pair-mc": (41.5, 38.4, 39.5, 34.8), "Proxy NCA": (39.8, 41.3, 41.4, 38.1),
        "NRA": (42.2, 44.4, 46.2, 37.2), "RPL": (43.3, 44.7, 46.2, 37.5),
    },
    "AFEW": {
        "DSML-Triplet": (29.3, 31.3, 34.2, 31.9), "Triplet-Random": (25.8, 25.1, 25.4, 27.4),
        "Triplet-Semihard": (27.4, 24.4, 30.5, 28.0), "Lifted Struct": (32.5, 35.4, 38.4, 39.4),
        "N-pair-mc": (34.4, 33.5, 36.4, 35.1), "Proxy NCA": (34.5, 34.2, 36.0, 36.3),
        "NRA": (35.2, 36.5, 38.6, 36.8), "RPL": (36.4, 36.5, 39.4, 36.4),
    },
    "HDM05": {
        "DSML-Triplet": (53.0, 57.3, 58.5, 52.4), "Triplet-Random": (48.3, 44.5, 47.5, 45.6),
        "Triplet-Semihard": (51.3, 50.4, 55.3, 47.5), "Lifted Struct": (55.5, 59.3, 59.2, 53.4),
        "N-pair-mc": (59.8, 60.0, 61.0, 59.4), "Proxy NCA": (59.0, 63.3, 64.5, 62.0),
        "NRA": (59.2, 64.3, 65.2, 64.1), "RPL": (59.4, 66.7, 68.8, 65.4),
    },
}  # fmt: skip

#: Our SPD set -> what it stands in for.
SPD_SETS = {
    "BasicMotions": "HDM05 / AFEW (motion sensors, 4 classes)",
    "JapaneseVowels": "HDM05 / AFEW (non-EEG, 9 classes)",
    "HandMovementDirection": "DEAP (MEG, 4 classes)",
    "FingerMovements": "DEAP (EEG, 2 classes)",
    "SelfRegulationSCP1": "DEAP (EEG, 2 classes)",
    "SelfRegulationSCP2": "DEAP (EEG, 2 classes)",
    "EyesOpenShut": "DEAP (EEG, 2 classes)",
    "synthetic-spd": "nothing (synthetic SPD clusters, for tests)",
}
FULL_SETS = (
    "BasicMotions", "JapaneseVowels", "HandMovementDirection", "FingerMovements",
    "SelfRegulationSCP1", "SelfRegulationSCP2", "EyesOpenShut",
)  # fmt: skip
QUICK_SETS = ("BasicMotions", "HandMovementDirection")

#: Method id -> (table label, the paper's row name or None).
METHOD_INFO = {
    "log-euclidean": ("Log-Euclidean (no learning)", None),
    "triplet-random": ("Triplet-Random", "Triplet-Random"),
    "triplet-semihard": ("Triplet-Semihard", "Triplet-Semihard"),
    "lifted": ("Lifted Struct", "Lifted Struct"),
    "npair": ("N-pair-mc", "N-pair-mc"),
    "proxy-nca": ("Proxy NCA", "Proxy NCA"),
    "multi-similarity": ("Multi-Similarity", None),
    "rpl": ("RPL (ours)", "RPL"),
}
METHODS = tuple(METHOD_INFO)

#: The one training budget of RPL and every baseline (RPLEmbedding's defaults in full mode).
BUDGETS = {
    "quick": {"max_iter": 60, "validation_every": 10, "patience": 3},
    "full": {"max_iter": 300, "validation_every": 10, "patience": 10},
}
SHARED_BUDGET = {
    "hidden_sizes": None,  # RPLEmbedding's default: one BiMap to ceil(c / 2)
    "learning_rate": 1e-2,
    "n_per_class": 8,
    "validation_fraction": 0.2,
    "eps": 1e-4,
}
SEEDS = {"quick": 2, "full": 5}


def build_cells(config: BenchConfig) -> list[Cell]:
    """One cell per (method, data set, seed)."""
    mode = config.mode
    datasets = config.pick("datasets", QUICK_SETS if config.quick else FULL_SETS, SPD_SETS)
    methods = config.pick("methods", METHODS, METHODS)
    budget = {**SHARED_BUDGET, **BUDGETS[mode]}
    n_seeds = config.seeds or SEEDS[mode]
    options = {"mode": mode, "device": config.device, "budget": budget}
    return [
        Cell(NAME, method, dataset, 0, seed, "rankmetric.bench.rpl.run_cell", options)
        for dataset in datasets
        for method in methods
        for seed in range(n_seeds)
    ]


@functools.lru_cache(maxsize=4)
def load_spd_split(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(X_train, y_train, X_test, y_test)`` SPD matrices of a set (official split).

    ``"synthetic-spd"`` is 3 classes of 5×5 matrices from
    :func:`rankmetric.datasets.make_spd_clusters` (seed 0), split 60/60; it needs no download.
    """
    if name == "synthetic-spd":
        from ..datasets import make_spd_clusters

        X, y = make_spd_clusters(120, n_channels=5, n_classes=3, class_sep=0.6, random_state=0)
        return X[:60], y[:60], X[60:], y[60:]
    from ..datasets import load_spd

    data = load_spd(name)
    return data.X, data.y, data.X_test, data.y_test


def _fit_rpl(X, y, budget, seed, device):
    from ..estimators.rpl import RPLEmbedding

    keys = ("hidden_sizes", "max_iter", "learning_rate", "n_per_class", "validation_fraction",
            "validation_every", "patience", "eps")  # fmt: skip
    est = RPLEmbedding(**{k: budget[k] for k in keys}, output="vector", random_state=seed,
                       device=device).fit(X, y)  # fmt: skip
    record = {"n_iter": int(est.n_iter_), "best_iter": est.best_iter_,
              "validation_score": est.validation_score_}  # fmt: skip
    return est.transform, record


def _fit_log_euclidean(X, y, budget, seed, device):
    """No learning: the whitened inputs' log-vectors (the backbone's input space)."""
    W = whiten(torch.as_tensor(X, dtype=torch.float64))

    def transform(Z):
        Z = torch.as_tensor(Z, dtype=torch.float64)
        return log_vectors(W @ Z @ W).numpy()

    return transform, {}


def _fit(method, X, y, budget, seed, device):
    if method == "rpl":
        return _fit_rpl(X, y, budget, seed, device)
    if method == "log-euclidean":
        return _fit_log_euclidean(X, y, budget, seed, device)
    if method in BASELINE_LOSSES:
        return fit_spdnet_baseline(X, y, method, budget, seed=seed, device=device)
    raise ValueError(f"unknown method {method!r}; choose from {list(METHODS)}.")


def embedding_scores(Z: np.ndarray, y: np.ndarray, seed: int) -> dict[str, float]:
    """F1, NMI (k-means on ``Z``) and leave-one-out R@1, R@3 of test embeddings ``Z``."""
    clusters = clustering_scores(Z, y, random_state=seed)
    retrieval = retrieval_scores(Z, y, ks=(1, 3), device="cpu")
    return {
        "F1": clusters["f1"],
        "R@1": retrieval["recall@1"],
        "R@3": retrieval["recall@3"],
        "NMI": clusters["nmi"],
    }


@cell_runner
def run_cell(cell: Cell) -> dict:
    """Train ``cell.method`` on the training part of ``cell.dataset``; score the test part."""
    X, y, X_test, y_test = load_spd_split(cell.dataset)
    opts = cell.options
    with captured_warnings() as caught:
        start = time.perf_counter()
        transform, record = _fit(cell.method, X, y, opts["budget"], cell.seed, opts["device"])
        seconds = time.perf_counter() - start
        scores = embedding_scores(transform(X_test), y_test, cell.seed)
    return {"scores": scores, "training": record, "warnings": caught, "fit_seconds": seconds}


# ----------------------------------------------------------------------------- the report


def _aggregate(results: list[dict]) -> dict:
    """``{dataset: {method: {metric: (mean, std)}}}`` over seeds."""
    table: dict = {}
    for (dataset, method), group in group_by(results, "dataset", "method").items():
        table.setdefault(dataset, {})[method] = {
            m: mean_std(r["scores"][m] for r in group) for m in METRICS
        }
    return table


def _ours_table(table: dict, datasets: list[str], methods: list[str]) -> str:
    header = ["method"] + [f"{d} {m}" for d in datasets for m in METRICS]
    rows = []
    for method in methods:
        row = [METHOD_INFO[method][0]]
        for dataset in datasets:
            entry = table.get(dataset, {}).get(method)
            row += [format_pm(*entry[m], digits=1) if entry else "—" for m in METRICS]
        rows.append(row)
    return markdown_table(header, rows)


def _per_dataset_tables(table: dict, datasets: list[str], methods: list[str]) -> str:
    parts = []
    for dataset in datasets:
        rows = []
        for method in methods:
            entry = table.get(dataset, {}).get(method)
            if entry:
                rows.append(
                    [METHOD_INFO[method][0], *(format_pm(*entry[m], digits=1) for m in METRICS)]
                )
        parts.append(f"**{dataset}** (stands in for {SPD_SETS.get(dataset, '?')})\n\n"
                     + markdown_table(["method", *METRICS], rows))  # fmt: skip
    return "\n\n".join(parts)


def _paper_table() -> str:
    header = ["method"] + [f"{d} {m}" for d in PAPER_TABLE for m in METRICS]
    rows = [
        [name] + [f"{v:.1f}" for d in PAPER_TABLE for v in PAPER_TABLE[d][name]]
        for name in PAPER_TABLE["DEAP-4"]
    ]
    return markdown_table(header, rows)


def summarise(results: list[dict], config: BenchConfig, out_dir) -> Summary:
    """Per-data-set tables (mean ± std over seeds), the paper's table, and bar charts."""
    from .plots import metric_bars

    results, failures = split_failures(results)
    if not results:
        return Summary(NAME, f"## RPL Table 1 — SPD stand-ins\n\n{failures}", {}, [])
    table = _aggregate(results)
    datasets = [d for d in SPD_SETS if d in table]
    methods = [m for m in METHODS if any(m in table[d] for d in datasets)]
    seeds = sorted({r["cell"]["seed"] for r in results})
    budget = results[0]["cell"]["options"]["budget"]
    quick = "QUICK MODE (fewer sets and seeds, short training) — " if config.quick else ""
    intro = (
        f"{quick}F1 / R@1 / R@3 / NMI (%) on the official test part, mean ± std over seeds "
        f"{seeds}. Every method trains the same SPDNet (one BiMap to ⌈c/2⌉ + ReEig, inputs "
        f"whitened by their Riemannian mean) for at most {budget['max_iter']} steps of "
        f"Riemannian Adam (lr {budget['learning_rate']}, {budget['n_per_class']} samples per "
        f"class per batch), keeping the step with the best validation mAP on a stratified "
        f"{budget['validation_fraction']:.0%} of the training part (checked every "
        f"{budget['validation_every']} steps, patience {budget['patience']}). Loss settings are "
        "the published defaults (margins 1 for the unnormalised embeddings); nothing is tuned on "
        "the test part. Evaluation: Euclidean distance between log-vectorised outputs."
    )
    paper = (
        "Paper (RPL Table 1, DEAP-4 / AFEW / HDM05 — **different data sets**: these figures are "
        "for reference only, they cannot be compared number for number):\n\n" + _paper_table()
    )
    markdown = "\n\n".join([
        "## RPL Table 1 — SPD stand-ins", intro,
        _per_dataset_tables(table, datasets, methods), paper, failures,
    ])  # fmt: skip
    labels = {m: METHOD_INFO[m][0] for m in METHODS}
    ordered = {d: {m: table[d][m] for m in methods if m in table[d]} for d in datasets}
    plots = [metric_bars(ordered, METRICS, labels, out_dir, "rpl_spd_scores.png")]
    payload = {
        d: {m: {k: {"mean": v[0], "std": v[1]} for k, v in table[d][m].items()} for m in table[d]}
        for d in datasets
    }
    return Summary(NAME, markdown.rstrip(), payload, plots)
