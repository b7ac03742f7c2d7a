"""``rankmetric bench rpl-spd``: RPL's Table 1 (F1, R@1, R@3, NMI) on SPD stand-in data sets.

DEAP, AFEW and HDM05 are licensed and unavailable; real EEG/MEG and motion-sensor recordings of the
UEA archive stand in for them, as covariance matrices (``load_spd``: OAS shrinkage), and region
covariance descriptors of Fashion-MNIST images (``load_spd("fmnist-regcov")``, an image-covariance
set like AFEW). Each cell is one (method, data set, seed): the method is trained on the official
training part, the test part is embedded, and

* F1 and NMI come from k-means (k = number of classes, ``random_state = seed``) on the test
  embeddings (:func:`rankmetric.evaluate.clustering_scores`);
* R@1 and R@3 are leave-one-out Recall@K within the test set
  (:func:`rankmetric.evaluate.retrieval_scores`), Euclidean distance between ``transform``
  vectors (log-Euclidean between SPD outputs);
* ``R@1 (train dist.)``: R@1 under the distance the method trained with — AIRM between SPD
  outputs for DSML-Triplet and for the reference (AIRM between inputs), the same Euclidean
  distance as R@1 for the vector heads. Computed only where the test part holds at most
  :data:`AIRM_MAX_TEST` matrices (an all-pairs AIRM search of 10 000 matrices is too slow here).

Every trained network row is the same estimator with another loss
(:mod:`rankmetric.bench.spdnet_baselines`); the rows an EEG user would pick instead — pyRiemann's
MDM, and the tangent space followed by a logistic regression, WARCA or LMNN — are built by
:mod:`rankmetric.bench.spd_pipelines`, tuned on the same validation part. Every row also reports

* ``acc.``: test classification accuracy — the classifier's own ``predict`` for MDM and the
  logistic regression, a :data:`KNN_K`-NN vote on the embeddings of the training part for every
  other row (:func:`rankmetric.evaluate.knn_accuracy`);
* ``fit s``: the median wall-clock seconds of the fit over seeds (selection of hyper-parameters
  and early stopping included; the machine's load is said where the table is published).

A set where every method, the reference included, has
its mean R@1 within :data:`CHANCE_BAND` points of chance (Σ_c p_c², p_c the test class shares) is
marked *not discriminating*.
"""

from __future__ import annotations

import functools
import time

import numpy as np
import torch
from sklearn.base import clone

from ..evaluate import clustering_scores, knn_accuracy, retrieval_scores
from ..geometry import mean_whitening

# alike: the table helpers every benchmark imports (an import list as warca.py's, not code)
from ._common import (
    SIGNIFICANCE_TEXT,
    BenchConfig,
    Summary,
    below_reference_note,
    below_summary,
    captured_warnings,
    cell_runner,
    compare_results,
    comparison_cells,
    format_ci,
    group_by,
    markdown_table,
    marked,
    mean_ci,
    mean_std,
    split_failures,
    user_files,
)
from .grid import Cell
from .spd_pipelines import PIPELINES, fit_pipeline
from .spdnet_baselines import ROWS, fit_spdnet_row, log_vectors

__all__ = ["NAME", "PAPER_TABLE", "SPD_SETS", "METHODS", "build_cells", "run_cell", "summarise"]

NAME = "rpl-spd"
METRICS = ("F1", "R@1", "R@3", "NMI")
TRAIN_METRIC = "R@1 (train dist.)"
ACCURACY = "acc."
FIT_TIME = "fit s"
KNN_K = 3  # the k-NN vote of the accuracy column (metric rows), as `rankmetric fit`'s default
AIRM_MAX_TEST = 2000
CHANCE_BAND = 0.05

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
    "JapaneseVowels": "HDM05 / AFEW (non-EEG, 9 classes)",
    "fmnist-regcov": "AFEW (image region covariances, 10 classes)",
    "BasicMotions": "HDM05 / AFEW (motion sensors, 4 classes)",
    "HandMovementDirection": "DEAP (MEG, 4 classes)",
    "FingerMovements": "DEAP (EEG, 2 classes)",
    "SelfRegulationSCP1": "DEAP (EEG, 2 classes)",
    "SelfRegulationSCP2": "DEAP (EEG, 2 classes)",
    "EyesOpenShut": "DEAP (EEG, 2 classes)",
    "synthetic-spd": "nothing (synthetic SPD clusters, for tests)",
}
FULL_SETS = (
    "JapaneseVowels", "fmnist-regcov", "BasicMotions", "HandMovementDirection", "FingerMovements",
    "SelfRegulationSCP1", "SelfRegulationSCP2", "EyesOpenShut",
)  # fmt: skip
QUICK_SETS = ("JapaneseVowels", "fmnist-regcov")
#: Training images of fmnist-regcov (stratified subsample, seed 0); the test part is kept whole
#: in full mode. Quick mode subsamples both.
FMNIST_SIZES = {"full": (5000, None), "quick": (1000, 2000)}

#: Method id -> (table label, the paper's row name or None).
# alike: a table of string pairs, shaped like other tables (training's grouped keywords)
METHOD_INFO = {
    "log-euclidean": ("Log-Euclidean (no learning)", None),
    "dsml-triplet": ("DSML-Triplet (AIRM, SPD output)", "DSML-Triplet"),
    "triplet-random": ("Triplet-Random", "Triplet-Random"),
    "triplet-semihard": ("Triplet-Semihard", "Triplet-Semihard"),
    "lifted": ("Lifted Struct", "Lifted Struct"),
    "npair": ("N-pair-mc", "N-pair-mc"),
    "proxy-nca": ("Proxy NCA", "Proxy NCA"),
    "multi-similarity": ("Multi-Similarity", None),
    "rpl": ("RPL (ours, default potato)", "RPL"),
    "rpl-class": ("RPL, class-centred potato", None),
    **{k: (label, None) for k, (label, _) in PIPELINES.items()},
}
METHODS = tuple(METHOD_INFO)
LABELS = {method: label for method, (label, _) in METHOD_INFO.items()}
#: The row every learned row is compared with (no learning).
REFERENCE = "log-euclidean"

#: The one training budget of RPL and every baseline (RPLEmbedding's defaults in full mode).
BUDGETS = {
    "quick": {"max_iter": 60, "validation_every": 10, "n_iter_no_change": 3},
    "full": {"max_iter": 3000, "validation_every": 10, "n_iter_no_change": 20},
}
SHARED_BUDGET = {
    "hidden_sizes": None,  # the estimators' default network: (c, c), free BiMaps, linear head
    "learning_rate": 1e-2,
    "n_per_class": 8,
    "validation_fraction": 0.2,
}
SEEDS = {"quick": 2, "full": 5}
#: The rows of a user's trial file (``--data PATH``) unless ``--methods`` says otherwise: the EEG
#: baselines beside RPL, and the Log-Euclidean reference the Δ columns compare with.
USER_METHODS = ("log-euclidean", "mdm", "ts-lr", "rpl")
#: Covariance estimator of a user's trials (the bundled EEG/MEG sets' own, ``load_spd``).
USER_COVARIANCES = "oas"
#: Share of a user's trials held out as the test part when the file has neither ``X_test`` nor
#: several ``domains`` (``rankmetric fit``'s ``--test-size`` default).
USER_TEST_SIZE = 0.3


def is_trial_file(name) -> bool:
    """Whether a data set name is a user's ``.npz`` trial file (``--data PATH``), or its label in
    cells and tables (``name.npz@digest``, :func:`rankmetric.bench._common.file_label`)."""
    return str(name).lower().endswith(".npz") or ".npz@" in str(name).lower()


def build_cells(config: BenchConfig) -> list[Cell]:
    """One cell per (method, data set, seed); a user's trial files (``--data``) as data sets."""
    mode = config.mode
    files = tuple(d for d in (config.datasets or ()) if is_trial_file(d))
    if files:  # the file's name and digest label the cells: a changed file is recomputed
        datasets, default_methods = user_files(files, resolve=True), USER_METHODS
    else:
        picked = config.pick("datasets", QUICK_SETS if config.quick else FULL_SETS, SPD_SETS)
        datasets, default_methods = {name: {} for name in picked}, METHODS
    methods = config.pick("methods", default_methods, METHODS)
    budget = {**SHARED_BUDGET, **BUDGETS[mode]}
    n_seeds = config.seeds or SEEDS[mode]
    options = {"mode": mode, "device": config.device, "budget": budget,
               "fmnist_sizes": FMNIST_SIZES[mode]}  # fmt: skip
    return [
        Cell(NAME, method, dataset, 0, seed, "rankmetric.bench.rpl.run_cell", {**options, **extra})
        for dataset, extra in datasets.items()
        for method in methods
        for seed in range(n_seeds)
    ]


@functools.lru_cache(maxsize=4)
def load_spd_split(
    name: str, sizes: tuple[int | None, int | None] = (None, None)
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(X_train, y_train, X_test, y_test)`` SPD matrices of a set (official split).

    ``"synthetic-spd"`` is 3 classes of 5×5 matrices from
    :func:`rankmetric.datasets.make_spd_clusters` (seed 0), split 60/60; it needs no download.
    ``sizes`` = ``(n_train, n_test)`` stratified subsamples (seed 0) for ``fmnist-regcov``.
    """
    if is_trial_file(name):
        return user_split(name)
    if name == "synthetic-spd":
        from ..datasets import make_spd_clusters

        X, y = make_spd_clusters(120, n_channels=5, n_classes=3, class_sep=0.6, random_state=0)
        return X[:60], y[:60], X[60:], y[60:]
    from ..datasets import load_spd

    extra = {}
    if name == "fmnist-regcov":
        extra = {"n_train": sizes[0], "n_test": sizes[1]}
    data = load_spd(name, **extra)
    return data.X, data.y, data.X_test, data.y_test


def user_split(path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(C_train, y_train, C_test, y_test)``: covariances of a user's trial file, split.

    The covariances are :data:`USER_COVARIANCES`' (as the bundled sets'). The test part is the
    file's ``X_test``; else, with several ``domains`` (sessions), the **last** session held out
    whole (cross-session) and every session re-centred at its own Riemannian mean
    (:class:`~rankmetric.preprocessing.DomainRecentering`: the training sessions at ``fit``,
    the held-out one at the mean of its own trials, without labels), the field's standard
    for a new session; else a stratified :data:`USER_TEST_SIZE` hold-out (seed 0).
    """
    from ..datasets import load_split
    from ..preprocessing import DomainRecentering

    held = _held_session(path)[1]
    estimator = None if _holds_spd(path) else USER_COVARIANCES  # SPD matrices: as given
    split = load_split(path, test_size=USER_TEST_SIZE, spd=True,
                       covariance_estimator=estimator, test_domain=held)  # fmt: skip
    if held is None:
        return split.X_train, split.y_train, split.X_test, split.y_test
    sessions = split.domains_train.astype(str)
    recentre = DomainRecentering(device="cpu").fit(split.X_train, domains=sessions)
    C_train = recentre.transform(split.X_train, domains=sessions)
    return C_train, split.y_train, recentre.transform(split.X_test), split.y_test


def _user_matrices(path) -> str:
    """What the table says a user's file holds."""
    if _holds_spd(path):
        return "your SPD matrices, as given"
    return f"your trials, {USER_COVARIANCES.upper()} covariances"


def _holds_spd(path) -> bool:
    """Whether a user's file holds SPD matrices (used as given) rather than raw trials."""
    from ..datasets import read_trial_file

    return read_trial_file(path).holds_spd


def _held_session(path) -> tuple[bool, str | None]:
    """``(has X_test, the session held out)``: the last of two or more, without ``X_test``."""
    from ..datasets import read_trial_file

    data = read_trial_file(path)
    if data.X_test is not None or data.domains is None:
        return data.X_test is not None, None
    sessions = np.unique(data.domains.astype(str))
    return False, str(sessions[-1]) if len(sessions) >= 2 else None


def split_description(name) -> str:
    """How :func:`user_split` splits a user's file (for the table's heading)."""
    has_test, held = _held_session(name)
    if has_test:
        return "the file's X_test"
    if held is not None:
        return f"session {held!r} held out (cross-session), every session re-centred"
    return f"stratified {USER_TEST_SIZE:.0%} hold-out, seed 0"


def _fit_log_euclidean(X):
    """No learning: the whitened inputs' log-vectors (the network's untrained output)."""
    W = mean_whitening(torch.as_tensor(X, dtype=torch.float64))

    def transform(Z):
        Z = torch.as_tensor(Z, dtype=torch.float64)
        return log_vectors(W @ Z @ W).numpy()

    def spd_outputs(Z):  # AIRM between inputs (congruence-invariant: whitening changes nothing)
        return np.asarray(Z, dtype=np.float64)

    return transform, spd_outputs, {}


def _fit(method, X, y, budget, seed, device, mode="full"):
    """``(transform, spd_outputs or None, record, predict or None)`` of a method fitted on ``X, y``.

    ``predict`` is a classifier's own prediction (MDM, logistic regression); ``None`` for the
    rows whose accuracy is a k-NN vote on their embedding.
    """
    if method in PIPELINES:
        embed, predict, record = fit_pipeline(method, X, y, seed=seed, mode=mode)
        return embed, None, record, predict
    if method == "log-euclidean":
        return (*_fit_log_euclidean(X), None)
    if method not in ROWS:
        raise ValueError(f"unknown method {method!r}; choose from {list(METHODS)}.")
    est, record = fit_spdnet_row(X, y, method, budget, seed=seed, device=device)
    spd_outputs = None
    if est.head == "spd":
        spd = clone(est).set_params(output="spd")
        spd.__dict__.update({k: v for k, v in vars(est).items() if k.endswith("_")})
        spd_outputs = spd.transform
    return est.transform, spd_outputs, record, None


def airm_recall_at_1(Y: np.ndarray, y: np.ndarray) -> float:
    """Leave-one-out R@1 of SPD matrices ``Y`` under the affine-invariant distance."""
    from ..geometry.distances import pairwise_airm

    D = pairwise_airm(torch.as_tensor(Y, dtype=torch.float64)).numpy()
    np.fill_diagonal(D, np.inf)
    return float(np.mean(y[np.argmin(D, axis=1)] == y))


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
    opts = cell.options
    sizes = tuple(opts.get("fmnist_sizes", (None, None)))
    X, y, X_test, y_test = load_spd_split(opts.get("path", cell.dataset), sizes)
    labels = np.unique(np.concatenate([y, y_test]))  # a user's labels may be strings
    y, y_test = np.searchsorted(labels, y), np.searchsorted(labels, y_test)
    with captured_warnings() as caught:
        start = time.perf_counter()
        transform, spd_outputs, record, predict = _fit(
            cell.method, X, y, opts["budget"], cell.seed, opts["device"], opts.get("mode", "full")
        )
        seconds = time.perf_counter() - start
        Z_test = transform(X_test)
        scores = embedding_scores(Z_test, y_test, cell.seed)
        if predict is not None:
            scores[ACCURACY] = float(np.mean(predict(X_test) == y_test))
        else:
            scores[ACCURACY] = knn_accuracy(transform(X), y, Z_test, y_test, k=KNN_K, device="cpu")
        scores[TRAIN_METRIC] = scores["R@1"]
        if spd_outputs is not None:
            small = len(X_test) <= AIRM_MAX_TEST
            scores[TRAIN_METRIC] = airm_recall_at_1(spd_outputs(X_test), y_test) if small else None
        scores["chance R@1"] = float(np.sum((np.bincount(y_test) / len(y_test)) ** 2))
    return {"scores": scores, "training": record, "warnings": caught, "fit_seconds": seconds}


# ----------------------------------------------------------------------------- the report


def _aggregate(results: list[dict], spread=mean_std) -> dict:
    """``{dataset: {method: {metric: (mean, spread)}}}`` over seeds (``spread``: std, or the
    95 % t-interval half-width with :func:`~rankmetric.bench._common.mean_ci`)."""
    table: dict = {}
    for (dataset, method), group in group_by(results, "dataset", "method").items():
        table.setdefault(dataset, {})[method] = {
            m: spread(r["scores"][m] for r in group if r["scores"].get(m) is not None)
            for m in (*METRICS, TRAIN_METRIC, ACCURACY, "chance R@1")
        }
        seconds = [r["fit_seconds"] for r in group if r.get("fit_seconds") is not None]
        median = float(np.median(seconds)) if seconds else float("nan")
        table[dataset][method][FIT_TIME] = (median, float("nan"))
    return table


def discriminating(entries: dict) -> bool:
    """Whether some method's mean R@1 is more than :data:`CHANCE_BAND` above chance."""
    return any(e["R@1"][0] > e["chance R@1"][0] + CHANCE_BAND for e in entries.values())


def _per_dataset_tables(
    table: dict, datasets, methods, results, paths: dict | None = None
) -> tuple[str, list[str]]:
    parts, below = [], []
    columns = (*METRICS, TRAIN_METRIC, ACCURACY)
    for dataset in datasets:
        rows = []
        found = [r for r in results if r["cell"]["dataset"] == dataset]
        compared = compare_results(found, lambda r: r["scores"].get("R@1"), (REFERENCE,))
        below += below_reference_note(compared, LABELS, dataset, "R@1", "Log-Euclidean")
        for method in methods:
            entry = table.get(dataset, {}).get(method)
            if entry:
                test = compared.get(method, {})
                rows.append(
                    [marked(LABELS[method], test.get("below_reference", False)),
                     *(format_ci(*entry[m]) for m in columns),
                     _format_seconds(entry.get(FIT_TIME, (float("nan"),))[0]),
                     *comparison_cells(test)]
                )  # fmt: skip
        entries = table.get(dataset, {})
        chance = next(iter(entries.values()))["chance R@1"][0] if entries else float("nan")
        flag = "" if discriminating(entries) else " — **not discriminating**: every method, the " \
            "reference included, is within 5 points of chance in R@1"  # fmt: skip
        path = (paths or {}).get(dataset, dataset)
        what = (
            f"{_user_matrices(path)}; test part: {split_description(path)}"
            if is_trial_file(dataset)
            else f"stands in for {SPD_SETS.get(dataset, '?')}"
        )
        header = ["method", *columns, FIT_TIME, "Δ R@1 vs Log-Euclidean", "Δ R@1 vs best"]
        parts.append(f"**{dataset}** ({what}; chance R@1 {100 * chance:.1f}){flag}\n\n"
                     + markdown_table(header, rows))  # fmt: skip
    return "\n\n".join(parts), below


def _format_seconds(value: float) -> str:
    """Seconds with two significant digits (``"0.012"``, ``"3.4"``, ``"120"``); ``"—"`` if none."""
    if not np.isfinite(value):
        return "—"
    return f"{value:.2g}" if value < 100 else f"{value:.0f}"


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
    intervals = _aggregate(results, mean_ci)
    datasets = [d for d in SPD_SETS if d in table] + [d for d in table if is_trial_file(d)]
    methods = [m for m in METHODS if any(m in table[d] for d in datasets)]
    seeds = sorted({r["cell"]["seed"] for r in results})
    budget = results[0]["cell"]["options"]["budget"]
    quick = "QUICK MODE (fewer sets and seeds, short training) — " if config.quick else ""
    intro = (
        f"{quick}F1 / R@1 / R@3 / NMI (%) on the test part (a bundled set's official one) over "
        f"seeds {seeds}. {SIGNIFICANCE_TEXT} The reference row is Log-Euclidean (no learning). "
        "Every trained row is `SPDNetEmbedding` with another loss (RPL rows: "
        "`RPLEmbedding`), on one network: inputs whitened by their Riemannian mean, two square "
        "free BiMap → ReEig blocks (identity start, ReEig floor 5 % of the mean eigenvalue), "
        "LogEig and a linear head (identity start); DSML-Triplet keeps the SPD output and its "
        f"AIRM distance. At most {budget['max_iter']} steps of Adam (lr "
        f"{budget['learning_rate']}, {budget['n_per_class']} samples per class per batch), "
        "keeping the parameters with the best validation mAP (leave-one-out within a stratified "
        f"{budget['validation_fraction']:.0%} of the training part, under the distance R@1 is "
        "read with; the estimators' default since 0.2) and the untrained start (step 0) unless "
        "that best beats it by more than one "
        f"paired standard error (checked every {budget['validation_every']} steps, patience "
        f"{budget['n_iter_no_change']}). Loss settings are the published defaults (margins 1); "
        "nothing is tuned on the test part. fmnist-regcov: a stratified subsample of "
        f"{FMNIST_SIZES[config.mode][0]} training images (seed 0), test part "
        f"{FMNIST_SIZES[config.mode][1] or 'all 10 000'}. R@1 etc.: Euclidean distance between "
        f"`transform` vectors; {TRAIN_METRIC}: the distance the method trained with (AIRM for "
        f"SPD outputs and the reference; only for test parts ≤ {AIRM_MAX_TEST} matrices). "
        "The rows an EEG user would pick instead (`rankmetric.bench.spd_pipelines`): MDM "
        "(`rankmetric.MDM`, pyRiemann's predictions; nothing to tune; embedding: AIRM distances "
        "to the class means) and the tangent "
        "space at the training matrices' Riemannian mean followed by a logistic regression "
        "(C ∈ {1, 0.1, 10}; embedding: its class scores), WARCA (reg_lambda ∈ {1e-2, 1e-3}) or "
        "LMNN (push_weight ∈ {0.5, 0.25, 0.75}), each chosen on the same held-out 20 % as the "
        "networks' early stopping (the first value kept unless another wins by more than one "
        "binomial standard error; R@1 for the metrics, accuracy for the logistic regression), "
        f"then refitted on the whole training part. {ACCURACY}: test accuracy of the classifier's "
        f"own prediction (MDM, logistic regression) or of a {KNN_K}-NN vote on the embeddings of "
        f"the training part (every other row); {FIT_TIME}: median seconds of the fit over seeds "
        "(tuning and early stopping included)."
    )
    paper = (
        "Paper (RPL Table 1, DEAP-4 / AFEW / HDM05 — **different data sets**: these figures are "
        "for reference only, they cannot be compared number for number):\n\n" + _paper_table()
    )
    paths = {r["cell"]["dataset"]: r["cell"]["options"].get("path") for r in results}
    if all(is_trial_file(d) for d in datasets):  # a user's trials: no stand-in, no paper table
        title, paper = "## RPL beside the EEG baselines — your trials", ""
    else:
        title = "## RPL Table 1 — SPD stand-ins"
    tables, below = _per_dataset_tables(intervals, datasets, methods, results, paths)
    verdict = below_summary(below, "Log-Euclidean in R@1")
    markdown = "\n\n".join(part for part in [
        title, intro, tables, verdict, paper, failures,
    ] if part)  # fmt: skip
    ordered = {d: {m: table[d][m] for m in methods if m in table[d]} for d in datasets}
    plots = [metric_bars(ordered, METRICS, LABELS, out_dir, "rpl_spd_scores.png")]
    payload = {
        d: {
            **{m: {k: {"mean": v[0], "std": v[1]} for k, v in entry.items() if np.isfinite(v[0])}
               for m, entry in table[d].items()},
            "discriminating": discriminating(table[d]),
        }
        for d in datasets
    }  # fmt: skip
    return Summary(NAME, markdown.rstrip(), payload, plots)
