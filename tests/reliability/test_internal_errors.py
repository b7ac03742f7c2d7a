"""Legal but extreme input: a clear ValueError or a right answer, never an internal exception or
silent NaN (issue #15, findings 10 and 12)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from rankmetric.datasets import make_gaussian_clusters

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def data():
    return make_gaussian_clusters(60, 5, 3, n_informative=2, random_state=0)


def test_itml_on_data_scaled_by_1e_300_names_the_scale(data):
    from rankmetric import ITML

    X, y = data
    with pytest.raises(ValueError, match="scale of X is too extreme"):
        ITML().fit(X * 1e-300, y)


def test_itml_at_small_but_representable_scale_still_fits(data):
    from rankmetric import ITML

    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ITML(max_iter=50, random_state=0).fit(X * 1e-150, y)
    assert np.isfinite(est.components_).all()


def test_multi_metric_lmnn_predicts_on_data_scaled_by_1e50(data):
    from rankmetric import MultiMetricLMNN

    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = MultiMetricLMNN(max_iter=10).fit(X, y)
    # scaling queries and training set alike keeps the neighbours: compare with a refit model
    big = est.predict(X * 1e50)
    assert big.shape == y.shape and set(big) <= set(y)
    proba = est.predict_proba(X * 1e50)
    assert np.isfinite(proba).all()


def test_multi_metric_lmnn_names_a_scale_beyond_float64(data):
    from rankmetric import MultiMetricLMNN

    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = MultiMetricLMNN(max_iter=10).fit(X, y)
    with pytest.raises(ValueError, match="overflow float64"):
        est.predict(X * 1e200)


def test_lmnn_gradient_descent_with_an_overflowing_learning_rate_raises(data):
    from rankmetric import LMNN

    X, y = data
    est = LMNN(solver="gd", learning_rate=1e300, max_iter=20)
    with pytest.raises(ValueError, match="lower learning_rate"):
        est.fit(X, y)
    assert not hasattr(est, "components_")


def test_lmnn_gradient_descent_recovers_from_a_large_learning_rate(data):
    from rankmetric import LMNN

    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = LMNN(solver="gd", learning_rate=1e6, max_iter=20).fit(X, y)
    assert np.isfinite(est.components_).all()


@pytest.mark.parametrize("dtype, scale", [(torch.float64, 1000.0), (torch.float32, 100.0)])
def test_spd_exp_overflow_is_a_value_error(dtype, scale):
    from rankmetric.geometry import spd_exp

    with pytest.raises(ValueError, match="spd_exp overflows"):
        spd_exp(scale * torch.eye(3, dtype=dtype))
    assert torch.isfinite(spd_exp(torch.eye(3, dtype=dtype) * (scale / 20))).all()


@pytest.mark.parametrize(
    "embeddings, labels, message",
    [
        (torch.tensor([[float("nan"), 0.0], [1.0, 0.0]]), torch.tensor([0, 1]), "NaN"),
        (torch.tensor([[float("inf"), 0.0], [1.0, 0.0]]), torch.tensor([0, 1]), "NaN or inf"),
        (torch.ones(3, 2), torch.tensor([0, 1]), "labels must have shape"),
        (torch.ones(3, 2), torch.tensor([0.0, 1.0, 1.0]), "labels must be integers"),
        (torch.ones(3, 2, 2), torch.tensor([0, 1, 1]), "embeddings must have shape"),
        (torch.ones(3, 2, dtype=torch.int64), torch.tensor([0, 1, 1]), "floating point"),
    ],
)
def test_similarity_regression_loss_checks_its_input_like_every_loss(embeddings, labels, message):
    from rankmetric.losses import SimilarityRegressionLoss

    with pytest.raises(ValueError, match=message):
        SimilarityRegressionLoss()(embeddings, labels)


@pytest.mark.parametrize("name", ["LMNN", "WARCA", "ITML", "KISSME"])
def test_mahalanobis_matrix_is_formed_in_float64(name, data):
    import rankmetric

    X, y = data
    params = {"max_iter": 20} if name in ("LMNN", "WARCA", "ITML") else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = getattr(rankmetric, name)(**params).fit(X, y)
    M = est.get_mahalanobis_matrix()
    L = est.components_.astype(np.float64)
    assert M.dtype == np.float64
    np.testing.assert_array_equal(M, L.T @ L)
    diff = X[:10] - X[10:20]
    from_matrix = np.sqrt(np.einsum("pd,de,pe->p", diff, M, diff))
    np.testing.assert_allclose(from_matrix, est.pair_distances(X[:10], X[10:20]), rtol=1e-12)


def test_multi_metric_lmnn_matrices_are_formed_in_float64(data):
    from rankmetric import MultiMetricLMNN

    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = MultiMetricLMNN(max_iter=5).fit(X, y)
    L = est.components_.astype(np.float64)
    M = est.get_mahalanobis_matrices()
    assert M.dtype == np.float64
    np.testing.assert_array_equal(M, L.transpose(0, 2, 1) @ L)
