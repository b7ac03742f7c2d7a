"""``rankmetric bench ssne-uci``: SSNE's Table 1 (UCI, 5×2 CV k-NN) and Table 2 (images).

Table 1: k-NN accuracy (k = 3), mean ± std over 5 times repeated stratified 2-fold cross-validation
on the nine UCI sets of the paper that are available (``protein`` is not), for every method of
the paper's table that we have, plus WARCA. Each (method, data set, fold) is one cell: the fold is
fold number ``cell.fold`` of ``RepeatedStratifiedKFold(n_splits=2, n_repeats=5, random_state=0)``
(the folds of :func:`rankmetric.evaluate.repeated_cv_knn`), features are standardised on the
training half (except for plain ``Euclidean``), hyper-parameters are chosen on a validation split
of the training half, and the test half is touched once.

Table 2: image sets standing in for CIFAR-10 and OSC, Fashion-MNIST (official 60k/10k split) and
MNIST-5k (stratified 50/50 split), pixels / 255 projected on 64 principal axes fitted on the
training part, over several seeds (:data:`IMAGE_SEEDS`): seed ``s`` draws MNIST-5k's split, the
quick mode's training subsample and NCA's points, and seeds the learners.
"""

from __future__ import annotations

import numpy as np
from sklearn.decomposition import PCA
from sklearn.model_selection import RepeatedStratifiedKFold, train_test_split
from sklearn.preprocessing import StandardScaler

from ..estimators.warca import SCHEDULE_0_1 as WARCA_01
from ..evaluate import knn_accuracy

# alike: the table helpers every benchmark imports (an import list as warca.py's, not code)
from ._common import (
    BELOW_MARK,
    SIGNIFICANT_MARK,
    BenchConfig,
    Summary,
    below_reference_note,
    below_summary,
    cell_runner,
    compare_results,
    comparison_payload,
    format_ci,
    group_by,
    json_safe,
    load_arrays,
    markdown_table,
    marked,
    mean_std,
    select,
    split_failures,
)
from .grid import Cell
from .learners import EUCLIDEAN, LABELS, fit_learner, grids_text

__all__ = [
    "NAME",
    "PAPER_TABLE1",
    "PAPER_TABLE2",
    "UCI_SETS",
    "IMAGE_SETS",
    "METHODS",
    "build_cells",
    "run_cv_cell",
    "run_split_cell",
    "cv_fold",
    "stratified_holdout",
    "image_split",
    "load_arrays",
    "PAPER_TABLE1_METHODS",
    "summarise",
]

NAME = "ssne-uci"
K = 3  # neighbours of the k-NN vote without tuning (the paper does not state k; our choice)
#: Full mode: every method chooses its k among these per fold, on the validation third.
K_CANDIDATES = [3, 5]
CV_SEED = 0  # seed of the fold assignment
N_SPLITS = 2

#: Paper Table 1 (k-NN accuracy %, mean and std over 5×2 CV). Rows in the paper's order.
PAPER_TABLE1_METHODS = ("euclidean", "euclidean-scaled", "itml", "lmnn", "mlmnn", "nca", "ssne")
#: The table as printed: a data set, then mean and std of each method of PAPER_TABLE1_METHODS.
_PAPER_TABLE1_TEXT = """
ionosphere    84.23 0.68  83.56 0.56  87.40 0.79  88.65 0.77  90.58 0.83  88.08 1.25  89.33 0.63
balance-scale 82.58 0.40  82.85 0.66  86.51 0.63  89.30 0.58  88.60 0.84  92.15 0.97  92.90 0.49
wdbc          63.29 0.29  96.71 0.31  95.53 0.38  96.18 0.29  96.94 0.27  96.00 0.36  97.12 0.33
protein       72.58 1.46  65.48 1.80  69.03 1.46  69.03 1.46  68.06 2.82  64.84 2.07  71.29 2.07
pima          67.74 0.81  74.04 0.88  73.13 0.80  74.22 0.71  74.22 0.83  73.35 0.65  74.83 0.70
wine          57.88 1.63  96.15 0.76  97.31 0.82  98.08 0.41  98.46 0.48  97.12 0.72  98.46 0.38
iris          95.78 0.40  96.22 0.81  97.11 0.94  96.22 0.88  96.00 1.04  95.56 1.15  96.22 1.00
heart         62.96 1.09  83.21 0.99  80.86 0.91  81.98 1.38  81.98 1.30  80.62 1.31  83.09 1.12
sonar         74.52 2.17  77.10 1.61  72.10 2.04  78.87 1.24  80.48 1.14  81.61 1.69  78.71 1.54
glass         63.11 1.53  66.07 1.69  65.57 2.25  66.23 1.75  67.38 1.99  64.75 1.72  67.21 0.73
"""


def _paper_rows(text: str) -> dict[str, tuple[tuple[float, float], ...]]:
    """``{data set: ((mean, std) per method)}`` of a table printed one data set per line."""
    table = {}
    for line in text.strip().splitlines():
        name, *cells = line.split()
        values = [float(v) for v in cells]
        table[name] = tuple(zip(values[::2], values[1::2], strict=True))
    return table


PAPER_TABLE1 = _paper_rows(_PAPER_TABLE1_TEXT)

#: Paper Table 2 (test accuracy %, single split): data set -> {method: accuracy}.
PAPER_TABLE2 = {
    "CIFAR-10": {"ssne": 61.49, "euclidean": 60.47, "itml": 49.13, "mlmnn": 51.89, "nca": 50.46},
    "OSC": {"ssne": 81.94, "euclidean": 70.82, "itml": 60.33, "mlmnn": 80.56, "nca": 76.43},
}
#: Our image set -> the paper's set it stands in for.
IMAGE_SETS = {"fashion-mnist": "CIFAR-10", "mnist-5k": "OSC"}

#: The paper's UCI sets that are available (``protein`` is not), in its order.
UCI_SETS = tuple(name for name in PAPER_TABLE1 if name != "protein")
METHODS = ("euclidean", "euclidean-scaled", "itml", "lmnn", "mlmnn", "nca", "ssne", "warca")
IMAGE_METHODS = ("euclidean", "itml", "lmnn", "nca", "ssne", "warca")
IMAGE_PCA = 64  # principal axes kept for the image sets

#: Budgets per mode (fixed hyper-parameters of every fit). mLMNN classifies by its own
#: per-class distances, so its k-NN vote (``n_neighbors``) is fixed to the table's k.
BUDGETS = {
    "quick": {
        "itml": {"max_iter": 100},
        "lmnn": {"max_iter": 50},
        "mlmnn": {"max_iter": 50, "n_neighbors": K},
        "nca": {"max_iter": 50},
        "ssne": {"max_iter": 300},
        "warca": {"max_iter": 200, "tol": None, **WARCA_01},
    },
    "full": {
        "itml": {"max_iter": 1000},
        "lmnn": {"max_iter": 1000},
        "mlmnn": {"max_iter": 1000, "n_neighbors": K},
        "nca": {"max_iter": 200},
        "ssne": {"max_iter": 1000},  # its defaults (chosen on validation data, docs/ssne.md)
        # the reference code's fixed 2000 steps, with 0.1's batch and step size
        "warca": {"max_iter": 2000, "tol": None, **WARCA_01},
    },
}
#: Candidates tried on the validation split (full mode, Table 1). Every method chooses its k
#: (``k`` is scored on the same fit; mLMNN's k is its own ``n_neighbors``) among
#: ``K_CANDIDATES``. Each list starts with the estimator's default (k = 3), so the first
#: candidate of every grid is the method's untuned setting: it is kept unless another beats its
#: validation accuracy by more than one binomial standard error (``PREFER_DEFAULT``, the same
#: rule for every method). mLMNN needs k + 1 samples in every class: a candidate that the inner
#: part of a fold cannot support is skipped.
GRIDS = {
    "euclidean": {"k": K_CANDIDATES},
    "euclidean-scaled": {"k": K_CANDIDATES},
    "itml": {"slack_weight": [1.0, 0.1, 10.0], "k": K_CANDIDATES},
    "lmnn": {"push_weight": [0.5, 0.25, 0.75], "k": K_CANDIDATES},
    "mlmnn": {"push_weight": [0.5, 0.25, 0.75], "n_neighbors": K_CANDIDATES},
    "nca": {"k": K_CANDIDATES},
    "ssne": {"neg_target": [0.0, -1.0], "solver": ["bcd", "full"], "k": K_CANDIDATES},
    "warca": {"reg_lambda": [1e-2, 1e-3], "k": K_CANDIDATES},  # the reference's two settings
}
#: Keep each grid's first candidate (the defaults) unless another is better by more than the
#: validation noise (:func:`rankmetric.bench.learners.keep_first_unless_better`).
PREFER_DEFAULT = True
VALIDATION_FRACTION = 1 / 3
#: Image sets: training points used (quick mode subsamples; NCA's O(N²) memory caps it).
IMAGE_TRAIN = {"quick": 2000, "full": None}
#: Image sets: seeds per mode (``--seeds`` overrides). Seed ``s`` draws the training subsample
#: (quick mode), MNIST-5k's 50/50 split and NCA's 5,000 points with ``s``, and seeds every
#: learner with ``s``; Fashion-MNIST's official split is kept, so in full mode (every training
#: image) its seeds vary only the learners and NCA's subsample. Seed 0 is the former single split.
IMAGE_SEEDS = {"quick": 3, "full": 5}
NCA_MAX_TRAIN = 5000


# ----------------------------------------------------------------------------- the grid


def build_cells(config: BenchConfig) -> list[Cell]:
    """The cells of Table 1 (``ssne-uci``) and Table 2 (``ssne-images``) for ``config``."""
    mode = config.mode
    datasets = config.pick("datasets", UCI_SETS + tuple(IMAGE_SETS), UCI_SETS + tuple(IMAGE_SETS))
    methods = config.pick("methods", METHODS, METHODS)
    n_repeats = config.seeds or (1 if config.quick else 5)
    cells = []
    for dataset in datasets:
        image = dataset in IMAGE_SETS
        for method in methods:
            if image and method not in IMAGE_METHODS:
                continue
            options = {
                "mode": mode,
                "device": config.device,
                "fixed": BUDGETS[mode].get(method, {}),
                "grid": {} if (config.quick or image) else GRIDS.get(method, {}),
                "k": K,
                "prefer_first": PREFER_DEFAULT,
            }
            if image:
                options |= {"n_train": IMAGE_TRAIN[mode], "pca": IMAGE_PCA}
                runner = "rankmetric.bench.ssne.run_split_cell"
                cells += [
                    Cell("ssne-images", method, dataset, 0, seed, runner, options)
                    for seed in range(config.seeds or IMAGE_SEEDS[mode])
                ]
                continue
            options |= {"n_repeats": n_repeats, "cv_seed": CV_SEED}
            cells += [
                Cell(NAME, method, dataset, fold, 0, "rankmetric.bench.ssne.run_cv_cell", options)
                for fold in range(n_repeats * N_SPLITS)
            ]  # fmt: skip
    return cells


# ----------------------------------------------------------------------------- the cells


def cv_fold(y: np.ndarray, fold: int, n_repeats: int, seed: int = CV_SEED):
    """``(train, test)`` indices of fold ``fold`` of repeated stratified 2-fold CV.

    The folds are those of ``RepeatedStratifiedKFold(n_splits=2, n_repeats, random_state=seed)``
    in its order, i.e. those :func:`rankmetric.evaluate.repeated_cv_knn` uses.
    """
    cv = RepeatedStratifiedKFold(n_splits=N_SPLITS, n_repeats=n_repeats, random_state=seed)
    for i, split in enumerate(cv.split(np.zeros((len(y), 1)), y)):
        if i == fold:
            return split
    raise ValueError(f"fold must be in [0, {n_repeats * N_SPLITS}), got {fold}.")


def stratified_holdout(y: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Inner (training, validation) indices: a stratified third held out for tuning."""
    idx = np.arange(len(y))
    inner, val = train_test_split(idx, test_size=VALIDATION_FRACTION, stratify=y, random_state=seed)
    return np.sort(inner), np.sort(val)


def knn_score(Z_train, y_train, Z_val, y_val, k: int = K) -> float:
    """The validation score of Table 1: k-NN accuracy (k = 3 unless tuned)."""
    return knn_accuracy(_flat(Z_train), y_train, _flat(Z_val), y_val, k=k, device="cpu")


def chosen_k(params: dict, default: int = K) -> int:
    """The k a fitted cell votes with: its tuned ``k`` (mLMNN: ``n_neighbors``) or ``default``."""
    return int(params.get("k", params.get("n_neighbors", default)))


def _flat(Z) -> np.ndarray:
    Z = np.asarray(Z)
    return Z.reshape(Z.shape[0], -1)


def _evaluate(cell: Cell, X_train, y_train, X_test, y_test) -> dict:
    """Standardise on the training part (except for plain Euclidean), fit the cell's method
    there; k-NN accuracy on the test part."""
    if cell.method != "euclidean":
        scaler = StandardScaler().fit(X_train)
        X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    opts = cell.options
    fitted = fit_learner(
        cell.method, X_train, y_train, fixed=opts["fixed"], grid=opts["grid"], seed=cell.seed,
        device=opts["device"], split=stratified_holdout, score=knn_score,
        prefer_first=opts.get("prefer_first", False),
    )  # fmt: skip
    k = chosen_k(fitted.params, opts["k"])
    if fitted.predict is not None:  # mLMNN: its own k-NN rule, n_neighbors = k
        accuracy = np.mean(fitted.predict(X_test) == y_test)
    else:
        accuracy = knn_accuracy(
            _flat(fitted.transform(X_train)), y_train, _flat(fitted.transform(X_test)), y_test,
            k=k, device="cpu",
        )  # fmt: skip
    return {
        "accuracy": float(accuracy),
        "k": k,
        "params": fitted.params,
        "validation": fitted.validation,
        "warnings": fitted.warnings,
        "n_train": int(len(y_train)),
        "n_test": int(len(y_test)),
        "fit_seconds": fitted.seconds,
    }


@cell_runner
def run_cv_cell(cell: Cell) -> dict:
    """One fold of Table 1: fit on the training half (standardised), score the test half."""
    X, y, X_extra, y_extra = load_arrays(cell.dataset)
    if X_extra is not None:  # a set with an official split: CV runs on train + test together
        X, y = np.vstack([X, X_extra]), np.concatenate([y, y_extra])
    train, test = cv_fold(y, cell.fold, cell.options["n_repeats"], cell.options["cv_seed"])
    return _evaluate(cell, X[train], y[train], X[test], y[test])


def image_split(name: str, n_train: int | None, seed: int = 0):
    """Train/test arrays of an image set (pixels / 255), the training part optionally subsampled.

    Fashion-MNIST keeps its official split; MNIST-5k is split 50/50, stratified, with ``seed``.
    A subsample of ``n_train`` training images is stratified and drawn with ``seed``.
    """
    X, y, X_test, y_test = load_arrays(name)
    if X_test is None:
        X, X_test, y, y_test = train_test_split(X, y, test_size=0.5, stratify=y, random_state=seed)
    if n_train is not None and n_train < len(y):
        X, _, y, _ = train_test_split(X, y, train_size=n_train, stratify=y, random_state=seed)
    return X / 255.0, y, X_test / 255.0, y_test


@cell_runner
def run_split_cell(cell: Cell) -> dict:
    """Table 2: one train/test split of an image set, on PCA features of the training part."""
    opts = cell.options
    X_train, y_train, X_test, y_test = image_split(cell.dataset, opts["n_train"], cell.seed)
    if cell.method == "nca" and len(y_train) > NCA_MAX_TRAIN:  # O(N²) memory
        keep, _ = train_test_split(
            np.arange(len(y_train)), train_size=NCA_MAX_TRAIN, stratify=y_train,
            random_state=cell.seed,
        )  # fmt: skip
        X_train, y_train = X_train[np.sort(keep)], y_train[np.sort(keep)]
    pca = PCA(n_components=opts["pca"], random_state=0).fit(X_train)
    return _evaluate(cell, pca.transform(X_train), y_train, pca.transform(X_test), y_test)


# ----------------------------------------------------------------------------- the report


def _paper_cell(dataset: str, method: str) -> str:
    row = PAPER_TABLE1.get(dataset)
    if row is None or method not in PAPER_TABLE1_METHODS:
        return ""
    mean, std = row[PAPER_TABLE1_METHODS.index(method)]
    return f"{mean:.2f} ± {std:.2f}"


def _table1(results: list[dict], config: BenchConfig) -> tuple[str, dict]:
    cv = [r for r in results if r["cell"]["benchmark"] == NAME]
    methods = [m for m in METHODS if select(cv, method=m)]
    datasets = [d for d in UCI_SETS if select(cv, dataset=d)]
    columns = methods[:]
    placeholder = "lmnn" in columns and "mlmnn" not in columns
    if placeholder:  # the paper's mLMNN figures beside our LMNN
        columns.insert(columns.index("lmnn") + 1, "mlmnn")
    header = ["data set", "", *(LABELS[m] for m in columns), "SSNE − paper"]
    rows, payload, tests, below = [], {}, [], []
    groups = group_by(cv, "dataset", "method")
    unavailable = ["protein"] if config.datasets is None else []
    for dataset in [*datasets, *unavailable]:
        ours, paper = [dataset, "ours"], ["", "paper"]
        compared = _compare_methods(groups, dataset, methods)
        below += below_reference_note(
            compared, LABELS, dataset, "k-NN accuracy", "its Euclidean reference"
        )
        for method in columns:
            accs = [r["accuracy"] for r in groups.get((dataset, method), [])]
            if accs:
                mean, std = mean_std(accs)
                test = compared[method]
                payload.setdefault(dataset, {})[method] = json_safe({
                    "mean": mean, "std": std, "ci95": test["ci"], "scores": accs,
                    **comparison_payload(test),
                })  # fmt: skip
            ours.append(_marked_cell(compared[method], 2) if accs else "—")
            paper.append(_paper_cell(dataset, method))
        gap = _ssne_gap(payload.get(dataset, {}).get("ssne"), dataset)
        rows += [ours + [gap], paper + [""]]
        if compared:
            tests.append([dataset, *(_p_pair(compared.get(m)) for m in methods)])
    folds = sorted({r["cell"]["fold"] for r in cv})
    n_rep = len(folds) // N_SPLITS if folds else 0
    k_rows, k_tuned = _k_table(groups, datasets, methods)
    k_text = (
        f"k ∈ {K_CANDIDATES} chosen per fold on the validation third" if k_tuned else f"k = {K}"
    )
    title = (
        f"k-NN accuracy ({k_text}, %), mean ± 95 % t-interval half-width over {n_rep}×{N_SPLITS} "
        f"stratified CV folds (`RepeatedStratifiedKFold(random_state={CV_SEED})`; the paper's "
        "± is a standard deviation); paper = SSNE Table 1. `protein` is not available."
        + (" mLMNN was not run (paper figures only)." if placeholder else "")
        + f" Reference: Euclidean (scaled), the learners' own standardised inputs (else plain "
        f"Euclidean). {BELOW_MARK}: below the reference's mean; "
        f"{SIGNIFICANT_MARK}: differs from the reference by a paired t-test over the folds at "
        "p < 0.05 (the folds of repeated CV overlap, so the test is optimistic)."
    )
    text = f"{title}\n\n{markdown_table(header, rows)}"
    if tests:
        text += (
            "\n\nPaired t-tests over the folds, two-sided p-values: against the reference / "
            "against the best row of the data set (— : the row itself).\n\n"
            + markdown_table(["data set", *(LABELS[m] for m in methods)], tests)
        )
    text += "\n\n" + below_summary(below, "the Euclidean reference")
    if k_tuned:
        text += (
            "\n\nThe k each cell voted with: folds choosing k = 3 / k = 5 (of each cell's folds)."
            "\n\n" + markdown_table(["data set", *(LABELS[m] for m in methods)], k_rows)
        )
    return text, payload


def _compare_methods(groups: dict, dataset: str, methods: list[str]) -> dict[str, dict]:
    """Intervals and paired tests of every method on ``dataset`` (paired by fold and seed)."""
    found = [r for m in methods for r in groups.get((dataset, m), [])]
    # the learned rows see standardised features: their reference is Euclidean on those
    rows = compare_results(found, lambda r: r["accuracy"], ("euclidean-scaled", "euclidean"))
    for method in EUCLIDEAN:  # the baselines learn nothing: only learned rows are marked
        if method in rows:
            rows[method]["below_reference"] = False
    return rows


def _marked_cell(test: dict, digits: int) -> str:
    """``"88.12 ± 1.20 ▼*"``: the interval, below-Euclidean and significance marks."""
    text = marked(format_ci(test["mean"], test["ci"], digits=digits), test["below_reference"])
    p_value = test["p_reference"]
    if np.isfinite(p_value) and p_value < 0.05:
        text += SIGNIFICANT_MARK
    return text


def _p_pair(test: dict | None) -> str:
    if test is None:
        return ""
    return " / ".join("—" if not np.isfinite(p) else f"{p:.2f}"
                      for p in (test["p_reference"], test["p_best"]))  # fmt: skip


def _k_table(groups: dict, datasets: list[str], methods: list[str]) -> tuple[list[list], bool]:
    """Rows ``data set | "n3 / n5" per method`` and whether any cell chose a k other than K."""
    rows, tuned = [], False
    for dataset in datasets:
        row = [dataset]
        for method in methods:
            ks = [r.get("k", K) for r in groups.get((dataset, method), [])]
            tuned |= any(k != K for k in ks)
            row.append(" / ".join(str(ks.count(k)) for k in K_CANDIDATES) if ks else "—")
        rows.append(row)
    return rows, tuned


def _ssne_gap(entry: dict | None, dataset: str) -> str:
    if not entry or not entry["scores"] or dataset not in PAPER_TABLE1:
        return ""
    paper = PAPER_TABLE1[dataset][PAPER_TABLE1_METHODS.index("ssne")][0]
    return f"{100 * entry['mean'] - paper:+.2f}"


def _table2(results: list[dict], config: BenchConfig) -> tuple[str, dict]:
    """Table 2: each image set's accuracy over its seeds, with intervals, tests and ▼ marks."""
    split = [r for r in results if r["cell"]["benchmark"] == "ssne-images"]
    if not split:
        return "", {}
    methods = [m for m in IMAGE_METHODS if select(split, method=m)]
    columns = methods[:]
    if "lmnn" in columns:  # the paper's mLMNN figures; ours is not run on the image sets
        columns.insert(columns.index("lmnn") + 1, "mlmnn")
    header = ["data set (train / test)", *(LABELS[m] for m in columns)]
    rows, payload, tests, below = [], {}, [], []
    groups = group_by(split, "dataset", "method")
    for dataset, standin in IMAGE_SETS.items():
        found = select(split, dataset=dataset)
        if not found:
            continue
        compared = _compare_methods(groups, dataset, methods)
        below += below_reference_note(compared, LABELS, dataset, "k-NN accuracy")
        # NCA's cells train on fewer points: the set's size is the largest training part
        row = [f"{dataset} ({max(r['n_train'] for r in found)} / {found[0]['n_test']})"]
        for method in columns:
            accs = [r["accuracy"] for r in groups.get((dataset, method), [])]
            if accs:
                mean, std = mean_std(accs)
                payload.setdefault(dataset, {})[method] = json_safe({
                    "mean": mean, "std": std, "ci95": compared[method]["ci"], "scores": accs,
                    "seeds": [r["cell"]["seed"] for r in groups[dataset, method]],
                    **comparison_payload(compared[method]),
                })  # fmt: skip
            row.append(_marked_cell(compared[method], 2) if accs else "—")
        paper = PAPER_TABLE2[standin]
        rows.append(row)
        rows.append(
            [f"paper: {standin}"] + [f"{paper[m]:.2f}" if m in paper else "" for m in columns]
        )
        tests.append([dataset, *(_p_pair(compared.get(m)) for m in methods)])
    seeds = sorted({r["cell"]["seed"] for r in split})
    title = (
        f"k-NN test accuracy (k = {K}, %), mean ± 95 % t-interval half-width over "
        f"{len(seeds)} seed(s), pixels/255 → PCA-{IMAGE_PCA} fitted on the training part; "
        + _image_protocol_text(config)
        + " The paper's row is the set each one stands in for (CIFAR-10 / OSC are not "
        f"available). NCA trains on at most {NCA_MAX_TRAIN} points (O(N²) memory), drawn per "
        "seed. Table 2 uses each method's default hyper-parameters (no tuning). mLMNN is not run "
        f"on the image sets (paper figures only). Reference: plain Euclidean. {BELOW_MARK}: a "
        f"learned row below its mean; {SIGNIFICANT_MARK}: differs from it by a paired t-test "
        "over the seeds at p < 0.05."
    )
    text = f"{title}\n\n{markdown_table(header, rows)}"
    text += (
        "\n\nPaired t-tests over the seeds, two-sided p-values: against Euclidean / against the "
        "best row of the data set (— : the row itself).\n\n"
        + markdown_table(["data set", *(LABELS[m] for m in methods)], tests)
    )
    text += "\n\n" + below_summary(below, "Euclidean")
    return text, payload


def _image_protocol_text(config: BenchConfig) -> str:
    """What Table 2's seeds vary in this mode (data draws, or only the learners)."""
    if config.quick:
        return (
            f"each seed draws its own stratified {IMAGE_TRAIN['quick']}-image training subsample "
            "(MNIST-5k: of its own stratified 50/50 split) and seeds the learners, so the interval "
            "is over data draws and learner seeds."
        )
    return (
        "every training image; Fashion-MNIST keeps its official 60,000 / 10,000 split, so its "
        "interval is over the learners' seeds (and NCA's subsample), **not over data draws**; "
        "MNIST-5k's stratified 50/50 split is redrawn per seed (data draws and learner seeds)."
    )


def summarise(results: list[dict], config: BenchConfig, out_dir) -> Summary:
    """Markdown tables, JSON payload and the bar chart of one run."""
    from .plots import accuracy_bars

    results, failures = split_failures(results)
    table1, payload1 = _table1(results, config)
    table2, payload2 = _table2(results, config)
    mode = (
        "QUICK MODE (small budgets, no tuning; Fashion-MNIST / MNIST-5k training parts "
        f"subsampled to {IMAGE_TRAIN['quick']} images) — "
        if config.quick
        else ""
    )
    tuning = (
        "no tuning (quick mode: every method at its default)"
        if config.quick
        else "hyper-parameters (and k) chosen per fold on a stratified validation third of the "
        "training half (grids, defaults first: "
        + grids_text(GRIDS)
        + "); the defaults are kept unless a candidate beats their validation accuracy by more "
        "than its binomial standard error"
    )
    parts = [f"## SSNE Table 1 — UCI\n\n{mode}{table1}\n\nTuning: {tuning}."] if payload1 else []
    if table2:
        parts.append(f"## SSNE Table 2 — images\n\n{mode}{table2}")
    plots = []
    if payload1:
        plots.append(accuracy_bars(payload1, PAPER_TABLE1, PAPER_TABLE1_METHODS, out_dir))
    markdown = "\n\n".join([*parts, failures] if failures else parts)
    return Summary(NAME, markdown, {"table1": payload1, "table2": payload2}, plots)
