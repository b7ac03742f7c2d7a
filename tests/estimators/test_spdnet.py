"""SPDNetEmbedding: one network, any loss; the identity start; step 0 kept when best."""

import warnings

import numpy as np
import pytest
import scipy.linalg
import torch
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import parametrize_with_checks

from rankmetric.estimators.spd import (
    LOSSES,
    UNTRAINED_ADVICE,
    RPLEmbedding,
    SPDNetEmbedding,
    untrained_message,
)
from rankmetric.evaluate import knn_accuracy
from rankmetric.io import load_model, save_model

from ._spd_rows import rows_to_spd

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

FAST = {"max_iter": 6, "validation_every": 3, "random_state": 0, "device": "cpu"}


def _data(n_per_class=12, c=5, n_classes=3, seed=0):
    """SPD matrices whose log-spectra carry the class (a small, separable set)."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(n_classes), n_per_class)
    centres = rng.normal(scale=0.8, size=(n_classes, c))
    log_s = centres[y] + 0.3 * rng.normal(size=(len(y), c))
    Q, _ = np.linalg.qr(rng.normal(size=(c, c)))
    X = (Q * np.exp(log_s)[:, None, :]) @ Q.T
    return (X + np.swapaxes(X, 1, 2)) / 2, y


def _reference(est, X):
    """The untrained reference: vec(log(W X W)) with the estimator's whitening W."""
    W = est.whitening_
    L = np.stack([scipy.linalg.logm(W @ x @ W).real for x in X])
    rows, cols = np.triu_indices(X.shape[1])
    scale = np.where(rows == cols, 1.0, np.sqrt(2.0))
    return L[:, rows, cols] * scale


# ---------------------------------------------------------------- scikit-learn contract
# SPDNetEmbedding and its RPL configuration RPLEmbedding: scikit-learn's checks feed 2-D feature
# arrays, so every check that fits or transforms the bare estimator fails on the shape; the same
# checks run again on a pipeline whose first step maps feature rows to SPD matrices


_NEEDS_2D = "the check feeds 2-D features; the SPD estimators take SPD matrices (n, c, c)"
_BARE_EXPECTED_FAILURES = {
    name: _NEEDS_2D
    for name in [
        "check_fit_score_takes_y",
        "check_estimators_overwrite_params",
        "check_dont_overwrite_parameters",
        "check_estimators_fit_returns_self",
        "check_readonly_memmap_input",
        "check_n_features_in_after_fitting",
        "check_positive_only_tag_during_fit",
        "check_estimators_dtypes",
        "check_dtype_object",
        "check_pipeline_consistency",
        "check_estimators_nan_inf",
        "check_estimators_pickle",
        "check_f_contiguous_array_estimator",
        "check_transformer_data_not_an_array",
        "check_transformer_general",
        "check_transformer_preserve_dtypes",
        "check_transformer_n_iter",
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
        "check_fit2d_1feature",
        "check_dict_unchanged",
        "check_fit_idempotent",
        "check_fit_check_is_fitted",
        "check_n_features_in",
        "check_fit2d_predict1d",
    ]
}
_IN_PLACE = "a Pipeline fits its steps in place, so its `steps` parameter changes"
_PIPELINE_EXPECTED_FAILURES = {
    "check_estimators_overwrite_params": _IN_PLACE,
    "check_dont_overwrite_parameters": _IN_PLACE,
}


@parametrize_with_checks(
    [SPDNetEmbedding(loss="lifted", **FAST), RPLEmbedding(**FAST)],
    expected_failed_checks=lambda est: _BARE_EXPECTED_FAILURES,
)
def test_sklearn_checks_bare(estimator, check):
    check(estimator)


def _spd_pipeline(est):
    return make_pipeline(FunctionTransformer(rows_to_spd, validate=True), clone(est))


@parametrize_with_checks(
    [_spd_pipeline(SPDNetEmbedding(loss="lifted", **FAST)), _spd_pipeline(RPLEmbedding(**FAST))],
    expected_failed_checks=lambda est: _PIPELINE_EXPECTED_FAILURES,
)
def test_sklearn_checks_on_spd_input(estimator, check):
    check(estimator)


@pytest.mark.parametrize("loss", [name for name in LOSSES if name != "triplet"])
def test_every_loss_trains_the_same_network(loss):
    X, y = _data()
    est = SPDNetEmbedding(loss=loss, **FAST).fit(X, y)
    assert [w.shape for w in est.weights_] == [(5, 5), (5, 5)]
    assert est.head_weight_.shape == (15, 15)
    assert np.all(np.isfinite(est.loss_curve_)) and est.n_iter_ <= 6
    assert est.transform(X).shape == (len(X), 15)
    assert est.initial_validation_score_ <= est.validation_score_


def test_dsml_triplet_on_riemannian_distances_of_spd_outputs():
    X, y = _data()
    est = SPDNetEmbedding(loss="triplet", head="spd", distance="riemann", **FAST).fit(X, y)
    assert est.head_weight_ is None
    Y = clone(est).set_params(output="spd")
    Y.__dict__.update({k: v for k, v in vars(est).items() if k.endswith("_")})
    S = Y.transform(X[:4])
    expected = [np.sqrt((np.log(scipy.linalg.eigh(S[1], S[0], eigvals_only=True)) ** 2).sum())]
    np.testing.assert_allclose(est.pair_distances(X[:1], X[1:2]), expected, rtol=1e-5)


def test_untrained_network_is_the_log_euclidean_reference():
    X, y = _data()
    est = SPDNetEmbedding(eps=1e-6, max_iter=1, learning_rate=1e-12, validation_fraction=0,
                          random_state=0, device="cpu").fit(X, y)  # fmt: skip
    np.testing.assert_allclose(est.transform(X), _reference(est, X), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cls", [SPDNetEmbedding, RPLEmbedding])
def test_max_iter_zero_is_pyriemanns_tangent_space(cls):
    """max_iter=0: the untrained reference, built on purpose; no training, no warning."""
    pyriemann_ts = pytest.importorskip("pyriemann.tangentspace")
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "kept the untrained network" warning
        est = cls(eps=1e-9, max_iter=0, random_state=0, device="cpu").fit(X[::2], y[::2])
    assert est.n_iter_ == 0 and est.best_iter_ == 0 and est.loss_curve_.shape == (0,)
    assert est.validation_score_ is None and est.initial_validation_score_ is None
    expected = pyriemann_ts.TangentSpace(metric="riemann").fit(X[::2]).transform(X[1::2])
    np.testing.assert_allclose(est.transform(X[1::2]), expected, rtol=1e-6, atol=1e-6)


def test_keeping_the_untrained_network_warns_with_what_to_try():
    X, y = _data()
    with pytest.warns(UserWarning, match=r"kept the untrained network \(best_iter_ == 0\)") as rec:
        est = SPDNetEmbedding(learning_rate=1e-12, **FAST).fit(X, y)
    assert est.best_iter_ == 0
    message = str(rec[0].message)
    assert "What to try" in message and "max_iter=0" in message and "validation map" in message
    assert "nothing was left to learn" in message  # this small set validates at R@1 = 1 at step 0
    assert untrained_message(est) in message and UNTRAINED_ADVICE in message
    assert len(message) < 600 and rec[0].filename == __file__  # short, at the user's line


def test_the_untrained_warning_points_at_the_users_line_through_a_pipeline():
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline

    X, y = _data()
    model = make_pipeline(SPDNetEmbedding(learning_rate=1e-12, **FAST), KNeighborsClassifier(1))
    with pytest.warns(UserWarning, match="kept the untrained network") as rec:
        model.fit(X, y)
    assert {r.filename for r in rec} == {__file__}


def test_the_start_is_kept_when_training_only_hurts():
    X, y = _data()
    with pytest.warns(UserWarning, match="kept the untrained network"):
        est = SPDNetEmbedding(eps=1e-6, learning_rate=50.0, **FAST).fit(X, y)
    assert est.best_iter_ == 0
    assert est.validation_score_ == est.initial_validation_score_
    np.testing.assert_allclose(est.transform(X), _reference(est, X), rtol=1e-5, atol=1e-5)


def test_rpl_embedding_is_the_rpl_configuration():
    X, y = _data()
    ours = RPLEmbedding(margin=1.5, potato="pairwise", **FAST).fit(X, y)
    params = {"margin": 1.5, "centre": "pairwise"}
    generic = SPDNetEmbedding(loss="rpl", loss_params=params, **FAST).fit(X, y)
    np.testing.assert_array_equal(ours.transform(X), generic.transform(X))
    assert "loss" not in ours.get_params() and ours.get_params()["potato"] == "pairwise"


def test_save_load_round_trip_with_a_head(tmp_path):
    X, y = _data()
    est = SPDNetEmbedding(loss="lifted", **FAST).fit(X, y)
    save_model(est, tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")
    assert isinstance(loaded, SPDNetEmbedding)
    np.testing.assert_array_equal(loaded.transform(X), est.transform(X))
    np.testing.assert_allclose(
        est.pair_distances(X[:3], X[3:6]),
        np.linalg.norm(est.transform(X[:3]) - est.transform(X[3:6]), axis=1),
        rtol=1e-6,
    )


@pytest.mark.parametrize(
    "params, message",
    [
        ({"loss": "contrastive"}, "loss"),
        ({"loss": "npair", "head": "spd"}, "head"),
        ({"loss": "triplet"}, "head='spd'"),
        ({"head": "linear", "output": "spd"}, "output"),
        ({"head": "tangent"}, "head"),
        ({"bimap": "grassmann"}, "bimap"),
        ({"init": "pca"}, "init"),
        ({"eps": 1.5}, "relative eps"),
        ({"distance": "wasserstein"}, "distance"),
        ({"loss_params": [1]}, "loss_params"),
        ({"validation_metric": "ndcg"}, "validation_metric"),
        ({"validation_distance": "cosine", "head": "spd"}, "validation_distance"),
        ({"selection_se": -1.0}, "selection_se"),
        ({"batchnorm": "yes"}, "batchnorm"),
        ({"max_iter": -1}, "max_iter"),
        ({"max_iter": 1.5}, "max_iter"),
    ],
)
def test_bad_parameters_raise(params, message):
    X, y = _data()
    with pytest.raises(ValueError, match=message):
        SPDNetEmbedding(**{**FAST, **params}).fit(X, y)


def test_selection_rule_and_validation_are_reported():
    X, y = _data()
    kept = SPDNetEmbedding("lifted", eps=1e-6, selection_se=1e9, **FAST).fit(X, y)
    assert kept.best_iter_ == 0 and kept.validation_score_ == kept.initial_validation_score_
    np.testing.assert_allclose(kept.transform(X), _reference(kept, X), rtol=1e-5, atol=1e-5)
    best = SPDNetEmbedding("lifted", eps=1e-6, selection_se=0.0, validation_metric="map",
                           **FAST).fit(X, y)  # fmt: skip
    assert best.validation_score_ >= best.initial_validation_score_
    gain, noise = best.validation_gain_
    assert noise >= 0 and np.isfinite(gain)


def test_dsml_triplet_validates_under_the_log_euclidean_distance():
    X, y = _data()
    est = SPDNetEmbedding("triplet", head="spd", validation_distance="logeuclid", **FAST)
    assert est.fit(X, y)._validation_distance() == "log_euclidean"
    assert est.initial_validation_score_ is not None


def test_batchnorm_option_fits_saves_and_reloads(tmp_path):
    X, y = _data()
    est = SPDNetEmbedding("lifted", batchnorm=True, selection_se=0.0, **FAST).fit(X, y)
    assert len(est.batchnorm_means_) == 2 and len(est.batchnorm_log_biases_) == 2
    save_model(est, tmp_path / "bn.npz")
    loaded = load_model(tmp_path / "bn.npz")
    np.testing.assert_allclose(loaded.transform(X), est.transform(X), rtol=1e-6, atol=1e-6)
    kept = SPDNetEmbedding(eps=1e-6, batchnorm=True, selection_se=1e9, **FAST).fit(X, y)
    assert kept.best_iter_ == 0  # the untrained batch-normalised network is the reference
    np.testing.assert_allclose(kept.transform(X), _reference(kept, X), rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu():
    X, y = _data()
    cpu = SPDNetEmbedding(**FAST).fit(X, y)
    gpu = SPDNetEmbedding(**{**FAST, "device": "cuda"}).fit(X, y)
    np.testing.assert_allclose(gpu.transform(X), cpu.transform(X), rtol=1e-3, atol=1e-3)


# ---------------------------------------------------------------- per-domain statistics


def _shifted_domains(shift=1.4):
    """Three domains of one class structure, each mapped by its own congruence ``A X A``.

    Each domain's matrices are first centred at the identity, so re-centring a domain at its own
    mean undoes its shift exactly: the alignment that per-domain statistics should recover.
    """
    from rankmetric.geometry import riemannian_mean, whiten

    parts = []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        y = np.repeat(np.arange(3), 12)
        centres = np.random.default_rng(99).normal(scale=0.8, size=(3, 5))
        log_s = centres[y] + 0.3 * rng.normal(size=(len(y), 5))
        Q, _ = np.linalg.qr(np.random.default_rng(98).normal(size=(5, 5)))
        X = torch.as_tensor((Q * np.exp(log_s)[:, None, :]) @ Q.T)
        X = whiten(X, riemannian_mean(X)).numpy()
        G = rng.normal(size=(5, 5))
        A = scipy.linalg.expm(shift * seed * (G + G.T) / 2)
        parts.append((A @ X @ A.T, y))
    return parts


@pytest.mark.parametrize("batchnorm", [True, False])
def test_per_domain_statistics_recover_the_alignment_of_shifted_domains(batchnorm):
    (X0, y0), (X1, y1), (X2, y2) = _shifted_domains()
    X, y = np.concatenate([X0, X1]), np.concatenate([y0, y1])
    domains = np.repeat(["day 1", "day 2"], len(y0))
    params = {**FAST, "batchnorm": batchnorm}
    plain = RPLEmbedding(**params).fit(X, y)
    model = RPLEmbedding(**params).fit(X, y, domains=domains)
    assert list(model.domains_) == ["day 1", "day 2"] and model.domain_whitening_.shape == (2, 5, 5)
    assert len(model.batchnorm_domain_means_) == (2 if batchnorm else 0)

    def cross_domain_1nn(embed):
        Z0, Z1, Z2 = (embed(Xd, name) for Xd, name in ((X0, "day 1"), (X1, "day 2"), (X2, "new")))
        return [knn_accuracy(Z0, y0, Z, yd, k=1) for Z, yd in ((Z1, y1), (Z2, y2))]

    # a seen domain at its stored statistics, a new one ("new", and the default None) at its own
    assert cross_domain_1nn(lambda Xd, name: model.transform(Xd, domains=[name] * len(Xd))) == [
        1.0,
        1.0,
    ]
    np.testing.assert_allclose(
        model.transform(X2), model.transform(X2, domains=["new"] * len(X2)), atol=1e-12
    )
    # without domains the network may learn to bridge its two training days, not a new one
    assert cross_domain_1nn(lambda Xd, name: plain.transform(Xd))[1] < 0.75
    # fit_transform passes the domains on to transform
    np.testing.assert_allclose(
        clone(model).fit_transform(X, y, domains=domains), model.transform(X, domains=domains)
    )


def test_domains_travel_through_a_pipeline_by_metadata_routing(tmp_path):
    import sklearn
    from sklearn.neighbors import KNeighborsClassifier

    (X0, y0), (X1, y1), (X2, y2) = _shifted_domains()
    X, y = np.concatenate([X0, X1]), np.concatenate([y0, y1])
    domains = np.repeat([1, 2], len(y0))
    with sklearn.config_context(enable_metadata_routing=True):
        net = RPLEmbedding(batchnorm=True, **FAST)
        net.set_fit_request(domains=True).set_transform_request(domains=True)
        model = make_pipeline(net, KNeighborsClassifier(1)).fit(X, y, domains=domains)
        assert model.score(X2, y2, domains=np.full(len(X2), 3)) == 1.0
    fitted = model[0]
    path = tmp_path / "model.npz"
    save_model(fitted, path)
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.domains_, [1, 2])
    np.testing.assert_allclose(
        loaded.transform(X2, domains=[3] * len(X2)), fitted.transform(X2, domains=[3] * len(X2))
    )


def test_bad_domains_raise():
    (X0, y0), *_ = _shifted_domains()
    domains = np.repeat([0, 1], len(y0) // 2)
    with pytest.raises(ValueError, match="change nothing"):
        SPDNetEmbedding(whiten=False, **FAST).fit(X0, y0, domains=domains)
    with pytest.raises(ValueError, match=r"domains must have shape \(36,\)"):
        SPDNetEmbedding(**FAST).fit(X0, y0, domains=domains[:-1])
    with pytest.raises(ValueError, match="NaN"):
        SPDNetEmbedding(**FAST).fit(X0, y0, domains=np.full(len(y0), np.nan))
    with pytest.raises(ValueError, match="fitted without domains"):
        SPDNetEmbedding(**FAST).fit(X0, y0).transform(X0, domains=domains)
    model = SPDNetEmbedding(batchnorm=True, **FAST).fit(X0, y0, domains=domains)
    with pytest.raises(ValueError, match="single matrix"):
        model.transform(X0[:3], domains=[0, 1, 5])
