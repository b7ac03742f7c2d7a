"""Consistent argument rules (issue #34 item 4) and one model per pair route (issue #33 item 4)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize(
    "name", ["TripletLoss", "LiftedStructureLoss", "NPairLoss", "SimilarityRegressionLoss"]
)
def test_ref_labels_without_ref_emb_is_refused(name):
    torch = pytest.importorskip("torch")
    from rankmetric import losses

    embeddings = torch.randn(8, 4)
    labels = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
    with pytest.raises(ValueError, match=f"{name}: ref_labels were given without ref_emb"):
        getattr(losses, name)()(embeddings, labels, ref_labels=labels)


def _pairs(n_points=60, n_pairs=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_points, 5))
    groups = rng.integers(0, 6, size=n_points)
    pairs = rng.integers(0, n_points, size=(n_pairs, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    y = np.where(groups[pairs[:, 0]] == groups[pairs[:, 1]], 1, -1)
    return X, pairs, y


def test_predict_proba_without_probability_says_what_to_set():
    from rankmetric import PairClassifier

    X, pairs, y = _pairs()
    clf = PairClassifier(points=X).fit(pairs, y)
    assert not hasattr(clf, "predict_proba")  # scikit-learn's convention
    with pytest.raises(AttributeError, match=r"probability=True"):
        clf.predict_proba(pairs)
    assert PairClassifier(points=X, probability=True).fit(pairs, y).predict_proba(pairs).shape == (
        len(pairs),
        2,
    )


def test_f_beta_with_beta_zero_is_precision():
    from rankmetric import PairClassifier
    from rankmetric.estimators.pair_classifier import calibrated_threshold

    X, pairs, y = _pairs()
    clf = PairClassifier(points=X, strategy="f_beta", beta=0).fit(pairs, y)
    d = clf.pair_distances(pairs)
    t = calibrated_threshold(d, y > 0, "f_beta", beta=0)
    assert clf.threshold_ == t
    accepted = d <= t
    precision = np.mean(y[accepted] > 0)
    for other in np.sort(d)[1:-1:7]:  # no threshold gives a higher precision
        assert np.mean(y[d <= other] > 0) <= precision + 1e-12


def test_evaluate_pairs_with_a_short_y_names_the_files_arrays(tmp_path, capsys):
    from rankmetric.cli import main

    X, pairs, y = _pairs()
    np.savez(tmp_path / "p.npz", X=X, pairs=pairs, y=y[:-3])
    assert main(["evaluate", "--pairs", str(tmp_path / "p.npz")]) == 2
    err = capsys.readouterr().err
    assert "y must hold one label per pair of pairs" in err and "Traceback" not in err


@pytest.mark.parametrize("learner", ["KISSME", "ITML", "WARCA"])
def test_fit_pairs_uses_only_the_pairs_rows_like_pair_classifier(learner):
    """``fit_pairs(X, P, y)`` and ``PairClassifier(learner, points=X).fit(P, y)``: one model,
    whose preprocessing never saw the rows no pair uses (the test people)."""
    import rankmetric
    from rankmetric import PairClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 40))
    X[300:] += 10 * rng.normal(size=(1, 40))  # rows no pair uses, far away: a PCA would see them
    X[5] = X[17]  # a duplicated point, merged in both routes
    _, pairs, y = _pairs(300, 1500, seed=1)
    kwargs = {"KISSME": {"n_components": 32}, "ITML": {"max_iter": 20, "random_state": 0},
              "WARCA": {"n_components": 8, "max_iter": 20, "device": "cpu",
                        "random_state": 0}}[learner]  # fmt: skip
    make = lambda: getattr(rankmetric, learner)(**kwargs)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short runs: convergence warnings expected
        direct = make().fit_pairs(X, pairs, y)
        routed = PairClassifier(make(), points=X).fit(pairs, y).learner_
        only_used = make().fit_pairs(X[:300], pairs, y)
    np.testing.assert_allclose(direct.transform(X), routed.transform(X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(direct.transform(X), only_used.transform(X), rtol=1e-6, atol=1e-8)
