"""``DomainRecentering``: per-domain means, pyRiemann's TLCenter numbers, Pipeline routing."""

from __future__ import annotations

import numpy as np
import pytest
import sklearn
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold, cross_validate
from sklearn.pipeline import make_pipeline

from rankmetric.datasets import make_spd_clusters
from rankmetric.geometry import riemannian_mean
from rankmetric.preprocessing import Covariances, DomainRecentering, TangentSpace


def _shifted_sessions(n=40, c=3, seed=0):
    """Two sessions of the same classes, the second moved by a congruence A X Aᵀ."""
    X, y = make_spd_clusters(2 * n, c, 2, class_sep=1.5, random_state=seed)
    rng = np.random.default_rng(seed)
    A = np.eye(c) + 0.6 * rng.normal(size=(c, c))
    X[n:] = A @ X[n:] @ A.T
    return X, y, np.repeat(["s1", "s2"], n)


def _mean(Z):
    return riemannian_mean(torch.as_tensor(Z)).numpy()


def test_every_domain_gets_the_identity_as_mean():
    X, _, sessions = _shifted_sessions()
    Z = DomainRecentering(device="cpu").fit_transform(X, domains=sessions)
    for s in ("s1", "s2"):
        np.testing.assert_allclose(_mean(Z[sessions == s]), np.eye(3), atol=1e-7)


def test_brute_force_congruence_with_stored_means():
    X, _, sessions = _shifted_sessions(n=10)
    rec = DomainRecentering(device="cpu").fit(X, domains=sessions)
    assert list(rec.domains_) == ["s1", "s2"]
    M = _mean(X[sessions == "s2"])
    np.testing.assert_allclose(rec.means_[1], M, atol=1e-10)
    w, U = np.linalg.eigh(M)
    W = (U / np.sqrt(w)) @ U.T
    # a seen domain is re-centred with its stored mean, even for a single matrix
    out = rec.transform(X[-1:], domains=["s2"])
    np.testing.assert_allclose(out[0], W @ X[-1] @ W, atol=1e-10)


def test_same_numbers_as_pyriemann_tlcenter():
    pytest.importorskip("pyriemann")
    from pyriemann.transfer import TLCenter, encode_domains

    X, y, sessions = _shifted_sessions(n=12)
    X_enc, y_enc = encode_domains(X, y, sessions)
    theirs = TLCenter(target_domain="s2").fit_transform(X_enc, y_enc)
    ours = DomainRecentering(device="cpu").fit_transform(X, domains=sessions)
    np.testing.assert_allclose(ours, theirs, atol=1e-8)


def test_a_new_domain_is_recentred_at_its_own_mean_and_none_is_one_domain():
    X, _, sessions = _shifted_sessions()
    rec = DomainRecentering(device="cpu").fit(X[sessions == "s1"], domains=sessions[:40])
    Z = rec.transform(X[sessions == "s2"], domains=np.repeat("s2", 40))
    np.testing.assert_allclose(_mean(Z), np.eye(3), atol=1e-7)
    np.testing.assert_allclose(rec.transform(X[sessions == "s2"]), Z, atol=1e-12)
    unfitted = DomainRecentering(device="cpu").transform(X[sessions == "s2"])
    np.testing.assert_allclose(unfitted, Z, atol=1e-12)


def test_recentring_removes_a_session_shift_for_tangent_space_and_logistic_regression():
    X, y, sessions = _shifted_sessions(n=60, seed=1)
    train, test = sessions == "s1", sessions == "s2"

    def accuracy(steps, **fit_kwargs):
        model = make_pipeline(*steps, TangentSpace(device="cpu"), LogisticRegression())
        return model.fit(X[train], y[train]).score(X[test], y[test])

    plain = accuracy([])
    recentred = make_pipeline(
        DomainRecentering(device="cpu"), TangentSpace(device="cpu"), LogisticRegression()
    )
    recentred.fit(X[train], y[train])
    assert recentred.score(X[test], y[test]) > plain + 0.1  # the test batch is its own domain


def test_pipeline_routes_domains_with_metadata_routing():
    rng = np.random.default_rng(0)
    y = np.tile([0, 1], 30)
    sessions = np.repeat([0, 1, 2], 20)
    gains = np.array([[1.0, 1.0, 1.0], [3.0, 0.5, 1.0], [0.4, 2.0, 1.5]])[sessions]
    signal = np.where(y[:, None] == 1, [2.0, 1.0, 1.0], [1.0, 1.0, 2.0])
    trials = rng.normal(size=(60, 3, 300)) * (gains * signal)[:, :, None]
    with sklearn.config_context(enable_metadata_routing=True):
        recentre = DomainRecentering(device="cpu").set_fit_request(domains=True)
        recentre.set_transform_request(domains=True)
        model = make_pipeline(
            Covariances(estimator="scm"), recentre, TangentSpace(device="cpu"), LogisticRegression()
        )
        model.fit(trials[:40], y[:40], domains=sessions[:40])
        assert model.score(trials[40:], y[40:], domains=sessions[40:]) > 0.9
        scores = cross_validate(
            model, trials, y, cv=GroupKFold(3), params={"domains": sessions, "groups": sessions}
        )["test_score"]
        assert scores.min() > 0.9


def _sessions_of_trials(seed=0):
    rng = np.random.default_rng(seed)
    y = np.tile([0, 1], 30)
    sessions = np.repeat(["day1", "day2", "day3"], 20)
    gains = np.array([[1.0, 1.0, 1.0], [3.0, 0.5, 1.0], [0.4, 2.0, 1.5]])[np.repeat([0, 1, 2], 20)]
    signal = np.where(y[:, None] == 1, [2.0, 1.0, 1.0], [1.0, 1.0, 2.0])
    return rng.normal(size=(60, 3, 300)) * (gains * signal)[:, :, None], y, sessions


@pytest.mark.parametrize("embedding", ["rpl", "tangent"])
def test_the_documented_cross_session_pipeline_composes(embedding):
    """The issue's line: domains= through Covariances → DomainRecentering → RPL/TS → classifier."""
    from sklearn.neighbors import KNeighborsClassifier

    from rankmetric import RPLEmbedding

    trials, y, sessions = _sessions_of_trials()
    step = (
        RPLEmbedding(max_iter=30, validation_fraction=0.0, random_state=0, device="cpu")
        if embedding == "rpl"
        else TangentSpace(device="cpu")
    )
    with sklearn.config_context(enable_metadata_routing=True):
        # exactly as the user guide writes it (explicit requests stay allowed) ...
        model = make_pipeline(
            Covariances(estimator="scm"),
            DomainRecentering(device="cpu")
            .set_fit_request(domains=True)
            .set_transform_request(domains=True),
            step,
            KNeighborsClassifier(5),
        )
        model.fit(trials[:40], y[:40], domains=sessions[:40])
        assert model.score(trials[40:], y[40:], domains=sessions[40:]) > 0.9
        # ... and without any set_*_request: every step that takes domains asks for them
        plain = make_pipeline(
            Covariances(estimator="scm"), DomainRecentering(device="cpu"), sklearn.clone(step),
            KNeighborsClassifier(5),
        )  # fmt: skip
        plain.fit(trials[:40], y[:40], domains=sessions[:40])
        np.testing.assert_array_equal(
            plain.predict(trials[40:], domains=sessions[40:]),
            model.predict(trials[40:], domains=sessions[40:]),
        )
        if embedding == "tangent":
            return
        # the network saw the domains too (its per-domain whitening) ...
        np.testing.assert_array_equal(plain[2].domains_, ["day1", "day2"])
        # ... and a step that should not see them opts out
        opted = sklearn.clone(plain)
        opted[2].set_fit_request(domains=False).set_transform_request(domains=False)
        opted.fit(trials[:40], y[:40], domains=sessions[:40])
        assert getattr(opted[2], "domains_", None) is None


def test_bad_input_names_the_problem():
    X, _, sessions = _shifted_sessions(n=5)
    with pytest.raises(ValueError, match=r"domains must have shape \(10,\)"):
        DomainRecentering(device="cpu").fit(X, domains=sessions[:4])
    with pytest.raises(ValueError, match="single matrix"):
        DomainRecentering(device="cpu").fit(X, domains=np.r_[np.zeros(9), 1])
    rec = DomainRecentering(device="cpu").fit(X, domains=sessions)
    with pytest.raises(ValueError, match="single matrix"):
        rec.transform(X[:1], domains=["s3"])
    with pytest.raises(ValueError, match="fitted on 3 x 3"):
        rec.transform(np.stack([np.eye(4)] * 3))
    with pytest.raises(ValueError, match="metric must be one of"):
        DomainRecentering(metric="wasserstein", device="cpu").fit(X)
    bad = X.copy()
    bad[0, 0, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        DomainRecentering(device="cpu").fit(bad)
    with pytest.raises(ValueError, match="positive definite"):
        DomainRecentering(device="cpu").fit(-X)


def test_pipeline_without_routing_takes_fit_domains_as_step_parameters():
    X, y, sessions = _shifted_sessions(n=60, seed=1)
    s1, s2 = sessions == "s1", sessions == "s2"
    X_train = np.concatenate([X[s1][:30], X[s2][:30]])
    y_train = np.concatenate([y[s1][:30], y[s2][:30]])
    domains = np.repeat(["s1", "s2"], 30)
    model = make_pipeline(
        DomainRecentering(device="cpu"), TangentSpace(device="cpu"), LogisticRegression()
    )
    model.fit(X_train, y_train, domainrecentering__domains=domains)
    assert list(model[0].domains_) == ["s1", "s2"]
    # predict without labels: the batch (the rest of session 2) is re-centred at its own mean
    assert model.score(X[s2][30:], y[s2][30:]) > 0.8
