"""The held-out check of every learner (``estimators/_held_out.py``): warn or fall back when the
learned distance is below its reference on groups it never saw."""

import warnings

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline

from rankmetric import (
    ITML,
    KISSME,
    LMNN,
    SSNE,
    WARCA,
    XQDA,
    KernelWARCA,
    MultiMetricLMNN,
    PairClassifier,
    UntrainedModelWarning,
    load_model,
)
from rankmetric.datasets import make_gaussian_clusters, make_spd_clusters
from rankmetric.estimators import _held_out
from rankmetric.estimators._held_out import (
    compare_with_reference,
    held_out_folds,
    pair_groups,
)
from rankmetric.estimators.spd import SPDNetEmbedding
from rankmetric.training import (
    critical_value,
    per_query_retrieval,
    pooled,
    sample_retrieval_items,
    verdict,
)
from rankmetric.training._comparison import VERDICTS

#: Fast settings: each fit of the unseen-class test takes seconds on one CPU thread.
LEARNERS = {
    "ITML": lambda **kw: ITML(random_state=0, **kw),
    "KISSME": lambda **kw: KISSME(**kw),
    "XQDA": lambda **kw: XQDA(**kw),
    "LMNN": lambda **kw: LMNN(max_iter=40, random_state=0, **kw),
    "WARCA": lambda **kw: WARCA(max_iter=300, random_state=0, device="cpu", **kw),
    "SSNE": lambda **kw: SSNE(max_iter=300, random_state=0, device="cpu", **kw),
    "KernelWARCA": lambda **kw: KernelWARCA(
        kernel="rbf", n_components=16, max_iter=200, random_state=0, device="cpu", **kw
    ),
}


def count_every_metric_below(monkeypatch):
    """Every learned metric counts as below its reference, at the first decisive fold."""
    bounds = {k: (-1e6,) * k for k in range(1, _held_out.MAX_FOLDS + 1)}
    monkeypatch.setattr(_held_out, "SEQUENTIAL_BOUNDS", bounds)
    monkeypatch.setattr(_held_out, "verdict", lambda result, bound: "below")


@pytest.fixture(scope="module")
def unseen_digits():
    """Digits of classes 0–5 to learn from; every pair of 500 digits of classes 6–9 to verify."""
    X, y = load_digits(return_X_y=True)
    seen = y < 6
    rng = np.random.default_rng(0)
    test = rng.choice(np.flatnonzero(~seen), 500, replace=False)
    i, j = np.triu_indices(test.shape[0], 1)
    X1, X2, same = X[test[i]], X[test[j]], y[test[i]] == y[test[j]]
    euclidean = roc_auc_score(same, -np.linalg.norm(X1 - X2, axis=1))
    return X[seen], y[seen], X1, X2, same, euclidean


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_unseen_classes_beat_euclidean_or_warn_and_fallback_is_never_below(unseen_digits, name):
    """The issue's case: each learner beats the Euclidean distance on unseen classes or warns;
    with fallback="reference" it is never below it."""
    X, y, X1, X2, same, euclidean = unseen_digits
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = LEARNERS[name](fallback="reference").fit(X, y)
    check = est.held_out_check_
    warned = [w for w in caught if issubclass(w.category, UntrainedModelWarning)]
    held_out = [w for w in warned if "held-out check" in str(w.message)]
    auc = roc_auc_score(same, -est.pair_distances(X1, X2))
    assert check["status"] == "done" and check["folds_planned"] == 3  # 2 of 6 classes a fold
    assert check["n_groups"] == 2 * check["n_folds"]  # the folds run: until decisive
    assert check["verdict"] in VERDICTS
    warns = check["verdict"] in _held_out.WARNED
    assert bool(held_out) == warns == check["fallback"]
    assert check["below"] == (check["verdict"] == "below")
    if warns:
        assert held_out[0].filename == __file__  # points at the user's line
        assert len(str(held_out[0].message)) < 300
        assert auc == pytest.approx(euclidean, abs=1e-4)  # the reference (up to rounding ties)
    else:
        assert auc > euclidean
    assert auc >= euclidean - 1e-4


def test_the_folds_run_one_at_a_time_until_the_comparison_is_decisive(monkeypatch):
    X, y = make_gaussian_clusters(500, 25, 8, n_informative=3, random_state=1)
    early = KISSME().fit(X, y).held_out_check_
    assert early["folds_planned"] == 3 and early["n_folds"] == 2 and early["n_groups"] == 4
    assert early["dof"] == 3 and early["verdict"] == "better" and not early["below"]
    assert early["bound"] == critical_value(_held_out.SEQUENTIAL_BOUNDS[3][1], 3)  # Student's t
    assert early["difference"] > early["bound"] * early["standard_error"]  # decisively above
    # Never decisive before the last fold: all three run, and the last bound decides.
    monkeypatch.setattr(_held_out, "SEQUENTIAL_BOUNDS", {3: (np.inf, np.inf, 1.645)})
    every = KISSME().fit(X, y).held_out_check_
    assert every["n_folds"] == 3 and every["n_groups"] == 6
    assert every["bound"] == critical_value(1.645, 5) == pytest.approx(2.015, abs=1e-3)
    assert every["n_queries"] > early["n_queries"] and not every["below"]


def class_effects(seed=0):
    """Six held-out classes of 40 items in three folds of two, where the learned embedding is
    clearly better on some classes and clearly worse on others: the items' noise is small, the
    classes' large."""
    rng = np.random.default_rng(seed)
    folds = []
    for fold in range(3):
        groups = np.repeat([2 * fold, 2 * fold + 1], 40)
        centres = rng.normal(size=(2, 8)) * 1.2
        reference = centres[groups - 2 * fold] + rng.normal(size=(80, 8))
        better = groups % 2 == fold % 2  # one class of each fold gains, the other loses
        scale = np.where(better, 0.5, 1.6 + 0.2 * fold)[:, None]
        learned = centres[groups - 2 * fold] + scale * rng.normal(size=(80, 8))
        folds.append((learned, reference, groups))
    return folds


def test_the_standard_error_counts_the_held_out_classes_not_the_items():
    results = [compare_with_reference(a, b, g, metric="map") for a, b, g in class_effects()]
    out = pooled(results)
    assert out["n_groups"] == 6 and out["dof"] == 5 and out["n_queries"] == 240
    # By definition: per-query differences summed per class around the pooled mean (CR1).
    d = np.concatenate(
        [
            per_query_retrieval(torch.as_tensor(a), torch.as_tensor(g), "map").numpy()
            - per_query_retrieval(torch.as_tensor(b), torch.as_tensor(g), "map").numpy()
            for a, b, g in class_effects()
        ]
    )
    groups = np.concatenate([g for _, _, g in class_effects()])
    assert out["difference"] == pytest.approx(d.mean())
    sums = np.array([np.sum(d[groups == k] - d.mean()) for k in range(6)])
    assert out["standard_error"] == pytest.approx(np.sqrt(6 / 5 * np.sum(sums**2)) / 240)
    # The items' standard error says "decisive"; the classes' says "within the noise".
    assert out["difference"] / out["item_standard_error"] < -3
    assert verdict(out, critical_value(1.645, out["dof"])) in ("not better", "level")


def test_pairs_between_two_groups_count_in_both_once():
    """The dyadic sum: every two pairs that share a group covary; brute force on 60 pairs."""
    rng = np.random.default_rng(3)
    ga, gb = rng.integers(0, 5, 60), rng.integers(0, 5, 60)
    similar = ga == gb
    similar[:4] = True
    d_ref = rng.normal(size=60) - similar
    d_learned = d_ref + rng.normal(size=60)
    out = compare_with_reference(d_learned, d_ref, similar, metric="roc_auc", pair_groups=(ga, gb))
    # Each pair's influence on the AUC difference, from its placement values by brute force.
    pos, neg = np.flatnonzero(similar), np.flatnonzero(~similar)

    def placements(dist):
        below = (dist[neg][None, :] > dist[pos][:, None]) + 0.5 * (
            dist[neg][None, :] == dist[pos][:, None]
        )
        return below.mean(axis=1), below.mean(axis=0)

    (l10, l01), (r10, r01) = placements(d_learned), placements(d_ref)
    theta = l10.mean() - r10.mean()
    psi = np.empty(60)
    psi[pos], psi[neg] = (l10 - r10 - theta) / len(pos), (l01 - r01 - theta) / len(neg)
    share = np.array(
        [[len({ga[p], gb[p]} & {ga[q], gb[q]}) > 0 for q in range(60)] for p in range(60)]
    )
    n_groups = len(np.unique(np.concatenate([ga, gb])))
    expected = np.sqrt(n_groups / (n_groups - 1) * psi @ share @ psi)
    assert out["difference"] == pytest.approx(theta)
    assert out["n_groups"] == n_groups and out["standard_error"] == pytest.approx(expected)
    alone = compare_with_reference(d_learned, d_ref, similar, metric="roc_auc")
    assert alone["n_groups"] == 60  # no groups: each pair its own (about DeLong's)
    assert alone["standard_error"] == pytest.approx(alone["item_standard_error"], rel=0.05)


def test_the_check_does_not_change_the_model():
    X, y = make_gaussian_clusters(240, 6, 8, n_informative=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        checked = WARCA(max_iter=60, random_state=0, device="cpu").fit(X, y)
        plain = WARCA(max_iter=60, random_state=0, device="cpu", held_out_check=False).fit(X, y)
    assert checked.held_out_check_["status"] == "done" and plain.held_out_check_ is None
    np.testing.assert_array_equal(checked.components_, plain.components_)
    check = checked.held_out_check_
    assert check["difference"] == pytest.approx(check["learned"] - check["reference"])
    assert check["metric"] == "map" and check["standard_error"] > 0


@pytest.mark.filterwarnings("ignore:.*stopped at max_iter")
@pytest.mark.filterwarnings("ignore:KernelWARCA held-out check")
def test_kernel_warca_validation_fraction_auto_is_deprecated_and_unchanged():
    X, y = make_gaussian_clusters(160, 5, 8, n_informative=3, random_state=1)
    X = X - X.min() + 0.1
    params = {"n_components": 4, "max_iter": 40, "random_state": 0, "device": "cpu"}
    with pytest.warns(FutureWarning, match="validation_fraction='auto'"):
        old = KernelWARCA(validation_fraction="auto", **params).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UntrainedModelWarning)
        new = KernelWARCA(**params).fit(X, y)
    np.testing.assert_array_equal(old.components_, new.components_)
    assert old.held_out_check_ == new.held_out_check_


def test_too_few_groups_is_recorded_quietly_and_said_with_true():
    X, y = make_gaussian_clusters(60, 4, 3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "auto": no warning, in a grid search or alone
        pipe = make_pipeline(KISSME(), KNeighborsClassifier())
        search = GridSearchCV(pipe, {"kissme__regularization": [1e-6, 1e-3]}, cv=3).fit(X, y)
        est = KISSME().fit(X, y)
    assert est.held_out_check_["status"] == "skipped"
    assert "only 3 classes" in est.held_out_check_["reason"]
    assert search.best_estimator_[0].held_out_check_["status"] == "skipped"
    for _ in range(2):  # asked for explicitly: said at every fit
        with pytest.warns(UserWarning, match=r"held_out_check=True\) skipped"):
            KISSME(held_out_check=True).fit(X, y)
    assert KISSME(held_out_check=False).fit(X, y).held_out_check_ is None


def test_fits_inside_cross_validation_are_not_checked_but_the_refit_is():
    X, y = make_gaussian_clusters(240, 6, 8, n_informative=3, random_state=0)
    seen = []
    pipe = make_pipeline(KISSME(), KNeighborsClassifier())
    scorer = lambda est, X_, y_: seen.append(est[0].held_out_check_["status"]) or 0.0  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UntrainedModelWarning)
        search = GridSearchCV(pipe, {"kissme__regularization": [1e-6]}, cv=2, scoring=scorer)
        search.fit(X, y)
    assert seen == ["skipped", "skipped"]
    assert search.best_estimator_[0].held_out_check_["status"] == "done"


@pytest.mark.filterwarnings("ignore:.*stopped at max_iter")
@pytest.mark.parametrize("make", [KernelWARCA, SSNE])
def test_fallback_of_a_nonlinear_learner_survives_save_and_load(tmp_path, monkeypatch, make):
    count_every_metric_below(monkeypatch)
    X, y = make_gaussian_clusters(120, 4, 6, n_informative=3, random_state=0)
    X = X - X.min() + 0.1
    est = make(max_iter=20, random_state=0, device="cpu", fallback="reference")
    with pytest.warns(UntrainedModelWarning, match="held-out check"):
        est.fit(X, y)
    assert est.held_out_check_["fallback"]
    np.testing.assert_array_equal(est.transform(X), X)
    assert est.get_feature_names_out().shape == (4,)
    est.save(tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.transform(X[:5]), X[:5])


def test_kissme_falls_back_to_euclidean_on_its_pca_features(monkeypatch):
    count_every_metric_below(monkeypatch)
    X, y = make_gaussian_clusters(120, 6, 6, n_informative=3, random_state=0)
    with pytest.warns(UntrainedModelWarning):
        est = KISSME(n_components=3, fallback="reference").fit(X, y)
    np.testing.assert_allclose(est.components_, est.pca_components_)


def test_spd_network_falls_back_to_its_untrained_network(monkeypatch):
    count_every_metric_below(monkeypatch)
    X, y = make_spd_clusters(120, 4, 6, class_sep=1.5, random_state=0)
    params = {"max_iter": 10, "validation_every": 5, "random_state": 0, "device": "cpu"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = SPDNetEmbedding(**params, fallback="reference").fit(X, y)
    assert any("held-out check" in str(w.message) for w in caught)
    check = est.held_out_check_
    assert check["fallback"] and check["folds_planned"] == 3
    assert check["n_groups"] == 2 * check["n_folds"]  # a level first fold (0 ± 0) decides nothing
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        untrained = SPDNetEmbedding(**{**params, "max_iter": 0}).fit(X, y)
    np.testing.assert_allclose(est.transform(X), untrained.transform(X), atol=1e-6)


def test_pairs_and_triplets_hold_out_components_and_score_roc_auc():
    X, y = make_gaussian_clusters(160, 4, 8, n_informative=3, random_state=0)
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, len(y), size=(1500, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    labels = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ITML(random_state=0).fit_pairs(X, pairs, labels)
    check = est.held_out_check_
    assert check["metric"] == "roc_auc" and check["held_out"] == "groups of pairs"
    assert check["n_groups"] >= 6 and 0.5 < check["reference"] <= 1
    anchors = rng.integers(0, len(y), 400)
    pos = np.array(
        [rng.choice(np.flatnonzero((y == y[a]) & (np.arange(len(y)) != a))) for a in anchors]
    )
    neg = np.array([rng.choice(np.flatnonzero(y != y[a])) for a in anchors])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lmnn = LMNN(max_iter=20, random_state=0).fit_triplets(X, np.stack([anchors, pos, neg], 1))
    assert lmnn.held_out_check_["metric"] == "roc_auc"


def test_pair_classifier_passes_the_check_to_its_learner(unseen_digits, monkeypatch):
    X, y, X1, X2, same, euclidean = unseen_digits
    rng = np.random.default_rng(1)  # pairs enough for the similar ones to join whole classes
    pairs = rng.integers(0, len(y), size=(12000, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    labels = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
    clf = PairClassifier(KISSME(), points=X, fallback="reference")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(pairs, labels)
    check = clf.held_out_check_
    assert check is clf.learner_.held_out_check_ and check["metric"] == "roc_auc"
    warned = any("held-out check" in str(w.message) for w in caught)
    assert warned == (check["verdict"] in _held_out.WARNED) == check["fallback"]
    auc = roc_auc_score(same, -clf.learner_.pair_distances(X1, X2))
    assert auc > euclidean or auc == pytest.approx(euclidean, abs=1e-4)
    off = PairClassifier(KISSME(), points=X, held_out_check=False).fit(pairs, labels)
    assert off.held_out_check_ is None


def test_paired_auc_standard_error_matches_a_bootstrap():
    rng = np.random.default_rng(0)
    similar = rng.random(600) < 0.3
    d_ref = rng.normal(size=600) - similar
    d_learned = d_ref + 0.7 * rng.normal(size=600)
    out = compare_with_reference(d_learned, d_ref, similar, metric="roc_auc")
    assert out["learned"] == pytest.approx(roc_auc_score(similar, -d_learned))
    assert out["reference"] == pytest.approx(roc_auc_score(similar, -d_ref))
    diffs = []
    for _ in range(300):
        b = rng.integers(0, 600, 600)
        diffs.append(
            roc_auc_score(similar[b], -d_learned[b]) - roc_auc_score(similar[b], -d_ref[b])
        )
    assert out["standard_error"] == pytest.approx(np.std(diffs), rel=0.25)


def test_cameras_leave_same_camera_matches_out():
    groups = np.array([0, 0, 1, 1])
    cameras = np.array([0, 0, 0, 1])
    Z = np.array([[0.0], [0.1], [5.0], [5.1]])
    plain = compare_with_reference(Z, Z, groups, metric="recall@1")
    cross = compare_with_reference(Z, Z, groups, metric="recall@1", cameras=cameras)
    assert plain["n_queries"] == 4 and cross["n_queries"] == 2  # identity 0: one camera


def test_splits_and_groups():
    groups = np.repeat(np.arange(30), 2)
    folds = held_out_folds(groups, 0)
    assert len(folds) == 1 and len(np.unique(groups[folds[0][1]])) == 6  # 20 % of 30
    few = held_out_folds(np.repeat(np.arange(8), 2), 0)
    held = [np.unique(np.repeat(np.arange(8), 2)[h]) for _, h in few]
    assert len(few) == 3 and len(np.unique(np.concatenate(held))) == 6  # disjoint folds
    with pytest.raises(ValueError, match="only 5 groups"):
        held_out_folds(np.repeat(np.arange(5), 2), 0)
    assert pair_groups([0, 1], [1, 2], [True, False], 4).tolist() == [0, 0, 1, 2]


def test_multi_metric_lmnn_is_checked_on_held_out_samples_of_its_classes(monkeypatch):
    X, y = make_gaussian_clusters(150, 4, 3, n_informative=3, random_state=0)
    params = {"max_iter": 10, "random_state": 0, "device": "cpu"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = MultiMetricLMNN(**params).fit(X, y)
    check = est.held_out_check_
    assert check["metric"] == "accuracy" and check["n_queries"] == 30
    assert check["n_groups"] == 30  # samples of its training classes: each counts alone
    count_every_metric_below(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fallen = MultiMetricLMNN(**params, fallback="reference").fit(X, y)
    euclidean = KNeighborsClassifier(n_neighbors=3).fit(X, y)
    assert fallen.held_out_check_["fallback"]
    np.testing.assert_array_equal(fallen.predict(X), euclidean.predict(X))


def test_large_classes_are_all_ranked_not_one_of_them():
    """Two held-out classes of 1,100+ items each: every class keeps its share of the 2,000 items
    ranked (drawing whole classes kept one, where both distances score mAP 1)."""
    X, y = make_gaussian_clusters(7000, 6, 8, n_informative=3, random_state=0)
    check = KISSME().fit(X, y).held_out_check_
    assert check["n_groups"] == 2 * check["n_folds"] and check["learned"] < 1.0
    codes = np.repeat([0, 1, 2, 3], [3000, 900, 5, 1])
    kept = sample_retrieval_items(codes, np.random.default_rng(0), 2000)
    assert np.bincount(codes[kept]).tolist() == [500, 500, 5, 1]  # 2000 // 4 each, or all
    assert len(np.unique(kept)) == len(kept)
    many = np.repeat(np.arange(1500), 3)  # more than 1,000 groups: whole groups, as before
    assert len(np.unique(many[sample_retrieval_items(many, np.random.default_rng(0), 2000)])) == 666


def test_compare_with_reference_says_the_checks_verdict():
    """A network of one's own is judged in the check's words: one look at its 5 % bound."""
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(12), 15)
    signal = rng.normal(size=(12, 4))[groups] + 0.3 * rng.normal(size=(180, 4))
    noisy = np.hstack([signal, 4.0 * rng.normal(size=(180, 20))])  # the classes drowned
    said = {}
    for name, learned, reference in [("better", signal, noisy), ("below", noisy, signal)]:
        out = compare_with_reference(learned, reference, groups, metric="map")
        assert out["verdict"] == verdict(out, critical_value(1.645, out["dof"]))
        said[name] = out["verdict"]
    level = compare_with_reference(signal, signal, groups, metric="map")
    assert said == {"better": "better", "below": "below"} and level["verdict"] == "level"
