"""Budgeted self-tuning (rankmetric.tuning): group hold-out, successive halving, no test leak."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_iris

from rankmetric import KISSME, LMNN, WARCA, KernelWARCA, load_model
from rankmetric.datasets import make_camera_views, make_synthetic_reid
from rankmetric.evaluate import reid_scores
from rankmetric.tuning import (
    ITMLCV,
    KISSMECV,
    XQDACV,
    KernelWARCACV,
    TunedMetricLearner,
    group_holdout,
)

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]


class RecordingKISSME(KISSME):
    """KISSME that records every array it is fitted on or asked to transform."""

    seen: list[tuple[str, np.ndarray]] = []

    def fit(self, X, y, *, cameras=None):
        RecordingKISSME.seen.append(("fit", np.array(X, copy=True)))
        return super().fit(X, y, cameras=cameras)

    def transform(self, X):
        RecordingKISSME.seen.append(("transform", np.array(X, copy=True)))
        return super().transform(X)


def _rows_in(rows: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Which rows of ``X`` occur in ``rows`` (exact match)."""
    keys = {r.tobytes() for r in np.ascontiguousarray(rows)}
    return np.array([x.tobytes() in keys for x in np.ascontiguousarray(X)])


def _reid_data(n_identities=120, seed=0):
    data = make_synthetic_reid(n_identities=n_identities, random_state=seed)
    return data.X.astype(np.float64), data.ids, data.camera


def test_group_holdout_keeps_groups_whole_and_refuses_too_few():
    groups = np.repeat(np.arange(20), 3)
    train, val = group_holdout(groups, 0.25, random_state=0)
    assert len(set(groups[train]) & set(groups[val])) == 0
    assert len(np.unique(groups[val])) == 5 and len(train) + len(val) == 60
    with pytest.raises(ValueError, match="too few groups"):
        group_holdout(np.repeat(np.arange(3), 4))
    with pytest.raises(ValueError, match="fraction"):
        group_holdout(groups, 1.5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"budget": 2}, "budget"),
        ({"split": "random"}, "split"),
        ({"eta": 1}, "eta"),
        ({"param_space": {"no_such": [1]}}, "does not have"),
        ({"param_space": {"regularization": []}}, "non-empty"),
        ({"estimator": LMNN()}, "must be a KISSME"),
        ({"n_candidates": 0}, "n_candidates"),
    ],
)
def test_bad_settings_raise_value_error(kwargs, message):
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match=message):
        KISSMECV(**kwargs).fit(X, y)


def test_bad_inputs_raise_value_error():
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match="one label per row"):
        KISSMECV().fit(X, y[:-1])
    with pytest.raises(ValueError, match="cameras"):
        KISSMECV().fit(X, y, cameras=np.zeros(3))
    with pytest.raises(TypeError, match="names no learner"):
        TunedMetricLearner().fit(X, y)


def test_test_rows_never_reach_fit_or_score_and_validation_only_the_refit():
    X, ids, cams = _reid_data()
    test = np.isin(ids, np.arange(60, 120))
    RecordingKISSME.seen.clear()
    # the refit's own held-out check (probe fits on training rows) is off: this counts the tuner's
    cv = KISSMECV(RecordingKISSME(held_out_check=False), n_candidates=6, random_state=0)
    cv.fit(X[~test], ids[~test], cameras=cams[~test])
    seen = RecordingKISSME.seen
    assert seen, "the recording learner was not used"
    for _, rows in seen:  # no call of the search or the refit ever sees a test row
        assert not _rows_in(rows, X[test]).any()
    fits = [rows for kind, rows in seen if kind == "fit"]
    # the search (a rank too large for a small round is retried at the default rank), the refit
    assert len(fits) >= len(cv.tuning_results_["score"]) + 1
    X_train, ids_train = X[~test], ids[~test]
    searched = np.zeros(len(ids_train), dtype=bool)
    for rows in fits[:-1]:
        searched |= _rows_in(rows, X_train)
    held_out = ~searched
    assert held_out.any() and _rows_in(fits[-1], X_train).all()  # the refit uses every row
    # whole identities are held out, and they are what the search scores on
    assert not set(ids_train[held_out]) & set(ids_train[searched])
    scored = np.zeros(len(ids_train), dtype=bool)
    for kind, rows in seen[:-1]:
        if kind == "transform":
            scored |= _rows_in(rows, X_train)
    assert (scored == held_out).all()
    assert cv.split_ == "groups"


def test_fixed_plan_is_reproducible_and_reports_its_search():
    X, ids, cams = _reid_data()
    runs = [XQDACV(n_candidates=6, random_state=3).fit(X, ids, cameras=cams) for _ in range(2)]
    a, b = runs
    assert a.best_params_ == b.best_params_
    assert a.tuning_results_["score"] == b.tuning_results_["score"]
    results = a.tuning_results_
    n = len(results["score"])
    assert all(len(v) == n for v in results.values())
    # default at full resource first, then 6 candidates, 2 survivors, 1 finalist
    assert results["round"] == [2] + [0] * 6 + [1] * 2 + [2]
    assert results["resource"][1] < results["resource"][7] < results["resource"][-1] == 1.0
    assert results["n_samples"][1] < results["n_samples"][7] < results["n_samples"][-1]
    assert a.best_score_ >= a.default_score_
    finals = [s for s, r in zip(results["score"], results["round"], strict=True) if r == 2]
    assert a.best_score_ == pytest.approx(max(finals))
    assert 0.0 <= a.reference_score_ <= 1.0 and a.default_fit_seconds_ > 0
    assert set(a.best_params_) == {"n_components", "regularization"}


def test_best_estimator_serves_transform_distances_and_model_files(tmp_path):
    X, y = load_iris(return_X_y=True)
    cv = KISSMECV(n_candidates=3, random_state=0).fit(X, y)
    assert cv.split_ == "stratified"  # three classes: rows held out within each class
    assert isinstance(cv.best_estimator_, KISSME)
    assert cv.best_estimator_.get_params()["regularization"] == cv.best_params_["regularization"]
    np.testing.assert_allclose(cv.transform(X), cv.best_estimator_.transform(X))
    np.testing.assert_allclose(cv.pair_distances(X[:5], X[5:10]),
                               cv.best_estimator_.pair_distances(X[:5], X[5:10]))  # fmt: skip
    assert cv.get_metric()(X[0], X[1]) == pytest.approx(cv.pair_distances(X[:1], X[1:2])[0])
    path = tmp_path / "tuned.npz"
    cv.save(path)
    loaded = load_model(path)
    assert type(loaded) is KISSME  # the base learner comes back
    np.testing.assert_allclose(loaded.transform(X), cv.transform(X), rtol=1e-6)


@pytest.mark.filterwarnings("ignore:ITML stopped at max_iter")
def test_time_budget_runs_successive_halving():
    X, y = load_iris(return_X_y=True)
    cv = ITMLCV(budget=4, random_state=0).fit(X, y)
    rounds = cv.tuning_results_["round"][1:]
    assert rounds == sorted(rounds) and rounds.count(0) >= 3  # eta candidates at least
    for r in set(rounds) - {0}:  # a round holds at most a third of the previous one
        assert rounds.count(r) <= max(1, rounds.count(r - 1) // 3)
    assert cv.search_seconds_ > 0 and cv.default_fit_seconds_ > 0
    assert cv.best_params_["slack_weight"] in (0.01, 0.1, 1.0, 10.0, 100.0)


def _digit_histogram_reid(n_identities=300, seed=0):
    """Two simulated camera views of digit images (upscaled to 24 × 24) as stripe histograms."""
    from scipy.ndimage import zoom

    from rankmetric.preprocessing import StripeHistograms

    digits = load_digits()
    pick = np.sort(np.random.default_rng(seed).choice(len(digits.target), n_identities, False))
    images = zoom(digits.images[pick] / 16.0, (1, 3, 3), order=1).clip(0.0, 1.0)
    views = make_camera_views(images, random_state=seed)
    H = StripeHistograms(image_shape=(24, 24)).fit_transform(views.X)
    return H, views.ids, views.camera


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:class .* has 2 sample")  # LMNN's k = 3 on two views
def test_tuned_chi2_kernel_warca_level_with_the_best_linear_learner():
    from sklearn.preprocessing import StandardScaler

    H, ids, cams = _digit_histogram_reid()
    train = np.isin(ids, np.random.default_rng(0).permutation(300)[:150])
    S = StandardScaler().fit(H[train]).transform(H)

    def rank1(Z):
        q, g = ~train & (cams == 0), ~train & (cams == 1)
        return reid_scores(Z[q], ids[q], cams[q], Z[g], ids[g], cams[g], ranks=(1,),
                           device="cpu")["cmc"][1]  # fmt: skip

    linear = {
        "kissme": KISSME().fit(S[train], ids[train]),
        "lmnn": LMNN(random_state=0).fit(S[train], ids[train]),
        "warca": WARCA(random_state=0).fit(S[train], ids[train]),
    }
    best_linear = max(rank1(est.transform(S)) for est in linear.values())
    cv = KernelWARCACV(KernelWARCA(random_state=0), n_candidates=6, random_state=0)
    cv.fit(H[train], ids[train], cameras=cams[train])
    tuned = rank1(cv.transform(H))
    # level: within one binomial standard error of the best linear learner's rank-1
    noise = np.sqrt(best_linear * (1 - best_linear) / 150)
    assert tuned >= best_linear - noise, (tuned, best_linear, cv.best_params_)


def test_cli_fit_tune_reports_the_chosen_values(tmp_path, capsys):
    import json

    from rankmetric.cli import main

    out = tmp_path / "m.npz"
    assert (
        main(["fit", "kissme", "--data", "iris", "--tune", "4", "--json", "--out", str(out)]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert set(report["tuned_params"]) == {"n_components", "regularization"}
    model = load_model(out)
    assert type(model) is KISSME
    # the report describes the model saved: its held-out check, its preprocessing
    check = model.held_out_check_
    said = f"{check['verdict']}: {check['summary']}" if check["status"] == "done" else None
    assert report["held_out_check"] == (said or f"skipped: {check['reason']}")


def test_cli_fit_tune_reports_the_tuned_models_preprocessing(tmp_path, capsys):
    """WARCA standardises its inputs: the tuned report scores the Euclidean baseline on the
    standardised features too (the learned part's gain alone), as the untuned report does."""
    import json

    from rankmetric.cli import main

    argv = ["fit", "warca", "--data", "wine", "--tune", "3", "--json", "--max-iter", "20"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["preprocessing"].startswith("standardised") and "held_out_check" in report
