"""What ``rankmetric fit`` and ``rankmetric evaluate`` print: k-NN, re-id and pair scores of a
fitted model beside the Euclidean baseline on the same features."""

from __future__ import annotations

import json

import numpy as np

__all__ = [
    "check_model_input",
    "beside_euclidean",
    "euclidean_spaces",
    "flat",
    "held_out_report",
    "knn_report",
    "model_preprocessing",
    "print_report",
    "reid_report",
    "transform",
]


def _fitted_model(est):
    """The model a report describes: a tuned learner's ``best_estimator_`` (what ``--out``
    saves), else ``est``."""
    return getattr(est, "best_estimator_", est)


def model_preprocessing(est):
    """``(preprocess, description)``: the fixed preprocessing ``est`` applies before its learned
    part — the per-feature standardisation ``(x − mean_) / scale_`` of WARCA and SSNE (with
    ``standardize=True``) — or ``(None, "none")``. The Euclidean baseline of a report is scored
    on these features, so that the gain printed is the learned part's alone."""
    est = _fitted_model(est)
    mean, scale = getattr(est, "mean_", None), getattr(est, "scale_", None)
    if mean is None or scale is None or np.ndim(scale) != 1:
        return None, "none"
    if np.all(scale == 1) and np.all(mean == 0):  # standardize=False
        return None, "none"
    return (lambda X: (np.asarray(X) - mean) / scale), "standardised (the model's mean_, scale_)"


def held_out_report(est) -> dict:
    """The held-out check's line of a report: its verdict and the comparison behind it
    (``held_out_check_["summary"]``), the reason it was skipped, or nothing when it was switched
    off. A warning says a loss as well; this line says every outcome, "better" included.

    Examples
    --------
    >>> class Fitted:
    ...     held_out_check_ = {"status": "done", "verdict": "better", "summary": "mAP ..."}
    >>> held_out_report(Fitted())
    {'held_out_check': 'better: mAP ...'}
    """
    check = getattr(_fitted_model(est), "held_out_check_", None)
    if check is None:
        return {}
    if check.get("status") != "done":
        return {"held_out_check": f"skipped: {check.get('reason', check.get('status'))}"}
    return {"held_out_check": f"{check['verdict']}: {check['summary']}"}


def euclidean_spaces(X, preprocess) -> list[tuple[str, object]]:
    """Where a report's Euclidean baselines are scored: ``X`` (``"euclidean"``); with the
    model's ``preprocess``, on its features (``"euclidean"``) and on the raw ones
    (``"euclidean_raw"``). ``preprocess`` acts on the last axis (stacked pairs too)."""
    if preprocess is None:
        return [("euclidean", X)]
    return [("euclidean", preprocess(X)), ("euclidean_raw", X)]


def check_model_input(model, X, data: str, model_name: str) -> None:
    """Refuse rows that ``model`` cannot take, naming both files: the features it was fitted on
    (and the file, when ``rankmetric fit`` recorded it) against those of ``data``.

    Examples
    --------
    >>> import numpy as np
    >>> class Fitted:
    ...     n_features_in_ = 4
    >>> check_model_input(Fitted(), np.zeros((2, 3)), "new.csv", "--model m.npz")
    Traceback (most recent call last):
    ...
    ValueError: --data new.csv has 3 features per row, but --model m.npz (Fitted) takes 4.
    """
    model = getattr(model, "best_estimator_", model)
    n = getattr(model, "n_features_in_", None)
    X = np.asarray(X) if not hasattr(X, "shape") else X
    if n is None or X.ndim < 2:
        return
    spd = hasattr(model, "weights_")  # an SPD network takes c × c matrices
    got = tuple(X.shape[1:]) if spd else X.shape[-1]
    if got == ((n, n) if spd else n):
        return
    has = " × ".join(map(str, got)) + " matrices" if spd else f"{got} features per row"
    takes = f"{n} × {n} SPD matrices" if spd else str(n)
    record = getattr(model, "fit_split_", None) or {}
    fitted = f", fitted on {record['data']}" if "data" in record else ""
    message = f"--data {data} has {has}, but {model_name} ({type(model).__name__}{fitted}) takes "
    if spd and X.ndim == 3 and X.shape[1] != X.shape[2]:  # raw trials: what makes its input
        estimator = record.get("covariance_estimator")
        which = f", {estimator!r}" if estimator else ""
        raise ValueError(f"{message}{takes}: these are raw trials (trials, channels, time); "
                         "write rankmetric.datasets.covariances(trials, estimator) to a .npz "
                         f"first, with the estimator the model was fitted "
                         f"with{which}.")  # fmt: skip
    raise ValueError(f"{message}{takes}.")


#: Scores of a report that are counts or spreads: not compared.
_NOT_COMPARED = ("_std", "queries_valid", "queries_skipped")


def beside_euclidean(scores: dict, euclidean: dict, lower_is_better=()) -> dict:
    """The Euclidean distance's scores on the same rows (``euclidean_scores``) and those of
    ``scores`` that are worse (``below_euclidean``: point estimates on these rows; the fit's
    held-out check is the test with its noise).

    Examples
    --------
    >>> found = beside_euclidean({"map@r": 0.4, "eer": 0.2}, {"map@r": 0.5, "eer": 0.3}, ["eer"])
    >>> found["below_euclidean"]
    'map@r 0.4000 vs 0.5000'
    """

    def worse(key) -> bool:
        sign = -1 if key in lower_is_better else 1
        return sign * scores[key] < sign * euclidean[key]

    below = [f"{key} {scores[key]:.4f} vs {euclidean[key]:.4f}" for key in scores
             if key in euclidean and not key.endswith(_NOT_COMPARED) and worse(key)]  # fmt: skip
    return {"euclidean_scores": euclidean, "below_euclidean": "; ".join(below) or "none"}


def reid_report(embed, X, y, cameras, split, metric: str = "euclidean", *,
                preprocess=None, rerank: bool = False, junk_ids=(-1,)) -> dict:  # fmt: skip
    """Re-id scores (Market-1501 protocol) of the test part under plain Euclidean distance (on
    the features after the model's ``preprocess`` when given, and on the raw ones) and embedded:
    queries and gallery from the ``split`` column, else one query per (identity, camera)
    track; ``rerank`` re-ranks each ranking (k-reciprocal), ``junk_ids`` are ignored in the
    gallery (:func:`rankmetric.evaluate.reid_scores`). ``embed=None``: ``X`` is the embedding,
    scored alone (keys without a ``_euclidean`` / ``_learned`` suffix)."""
    from ..evaluate import query_gallery_split, reid_scores, rerank_k_reciprocal

    if split is not None and np.isin(split, ("query", "gallery")).any():
        query, gallery = np.flatnonzero(split == "query"), np.flatnonzero(split != "query")
    else:
        query, gallery = query_gallery_split(y, cameras)
    ranks = tuple(r for r in (1, 5, 10, 20) if r <= len(gallery))
    report = {}
    spaces = (
        [("", X)] if embed is None else [*euclidean_spaces(X, preprocess), ("learned", embed(X))]
    )
    for name, Z in spaces:
        Z, tag = flat(np.asarray(Z)), f"_{name}" if name else ""
        if rerank:
            D = rerank_k_reciprocal(Z[query], Z[gallery], metric=metric, device="cpu")
            q_in, g_in, how = D, None, "precomputed"
        else:
            q_in, g_in, how = Z[query], Z[gallery], metric
        s = reid_scores(q_in, y[query], cameras[query], g_in, y[gallery], cameras[gallery],
                        ranks=ranks, metric=how, device="cpu", junk_ids=junk_ids)  # fmt: skip
        report.update({f"reid_rank{r}{tag}": v for r, v in s["cmc"].items()})
        report.update({f"reid_mAP{tag}": s["mAP"], f"reid_mINP{tag}": s["mINP"]})
        report.update(reid_queries_valid=s["n_valid"], reid_queries_skipped=s["n_skipped"])
    return report


def transform(est, X, domains):
    """``est.transform(X)``, with the domains of ``X`` when the model was fitted with them (a
    test file without domains_test is one new domain, re-centred at its own mean)."""
    if getattr(est, "domains_", None) is None:
        return est.transform(X)
    return est.transform(X, domains=domains)


def flat(X) -> np.ndarray:
    """Rows of an embedding; matrix outputs (n, c, c) are flattened."""
    X = np.asarray(X)
    return X.reshape(len(X), -1) if X.ndim > 2 else X


def knn_report(est, k: int, split, preprocess) -> dict:
    """k-NN accuracy, test part against training part of ``split``
    (:class:`~rankmetric.datasets.Split`), of the learned metric and of Euclidean distance on
    the same features (after the model's ``preprocess``; then on the raw ones too,
    ``..._euclidean_raw``)."""
    from ..evaluate import knn_accuracy

    X_tr, y_tr, d_tr = split.X_train, split.y_train, split.domains_train
    X_te, y_te, d_te = split.X_test, split.y_test, split.domains_test
    if not np.isin(y_te, y_tr).all():  # k-NN accuracy needs the test classes in training
        return {}
    knn = lambda A, B: knn_accuracy(flat(A), y_tr, flat(B), y_te, k=k)  # noqa: E731
    spaces = zip(
        euclidean_spaces(X_tr, preprocess), euclidean_spaces(X_te, preprocess), strict=True
    )
    report = {f"knn{k}_accuracy_{name}": knn(A, B) for (name, A), (_, B) in spaces}
    Z_tr = transform(est, X_tr, d_tr)
    Z_te = transform(est, X_te, d_te if d_tr is not None else None)
    report[f"knn{k}_accuracy_learned"] = knn(Z_tr, Z_te)
    return report


def print_report(report: dict, as_json: bool, indent: str = "", scores: bool = False) -> None:
    """``report`` as JSON, or one ``key  value`` line each: scores (accuracies, re-id scores,
    the values of a nested dict of scores, printed indented below its key) to 4 decimals."""
    if as_json:
        print(json.dumps(report, indent=2))
        return
    width = max(len(k) for k in report)
    for key, value in report.items():
        if isinstance(value, dict):
            print(f"{indent}{key}")
            print_report(value, False, indent + "  ", scores=True)
            continue
        scored = scores or "accuracy" in key or key.startswith("reid_")
        shown = f"{value:.4f}" if isinstance(value, float) and scored else value
        print(f"{indent}{key:<{width}}  {shown}")
