"""Per-domain statistics of the SPD batch normalisation (TSMNet's SPDDSMBN) and SPDNet's domains."""

import numpy as np
import pytest
import torch
from pyriemann.datasets import make_matrices

from rankmetric.geometry.means import geodesic, riemannian_mean
from rankmetric.models.batchnorm import SPDBatchNorm
from rankmetric.models.spdnet import SPDNet

EYE = torch.eye(4, dtype=torch.float64)


def _spd(n, c, seed=0):
    X = make_matrices(n, c, "spd", rs=np.random.RandomState(seed), evals_low=0.1, evals_high=5.0)
    return torch.as_tensor(X, dtype=torch.float64)


def test_each_domain_is_centred_at_its_own_batch_mean_and_tracks_its_own_running_mean():
    X = torch.cat([_spd(6, 4, seed=1), 3.0 * _spd(5, 4, seed=2)])
    domains = torch.tensor([1] * 6 + [0] * 5)
    bn = SPDBatchNorm(4, momentum=0.3, n_iter=30, bias=False, n_domains=2, dtype=torch.float64)
    Y = bn(X, domains)
    for d, rows in ((1, slice(0, 6)), (0, slice(6, 11))):
        assert torch.allclose(riemannian_mean(Y[rows]), EYE, atol=1e-7)
        expected = geodesic(EYE, riemannian_mean(X[rows]), 0.3)
        assert torch.allclose(bn.domain_means[d], expected, atol=1e-7)
    assert torch.equal(bn.running_mean, EYE)  # the shared statistics are left alone
    bn.eval()  # evaluation: each matrix at its domain's running mean
    means = bn.domain_means.clone()
    Z = bn(X, domains)
    assert torch.equal(bn.domain_means, means)
    w, U = torch.linalg.eigh(means[domains])
    inv_root = U @ torch.diag_embed(w.rsqrt()) @ U.mT
    assert torch.allclose(Z, inv_root @ X @ inv_root, atol=1e-10)


def test_without_domains_the_layer_is_the_shared_one_bit_for_bit():
    X = _spd(7, 4, seed=3).float()
    torch.manual_seed(0)
    plain = SPDBatchNorm(4)
    with_domains = SPDBatchNorm(4, n_domains=3)
    with torch.no_grad():
        plain.log_bias.normal_()
        with_domains.log_bias.copy_(plain.log_bias)
    assert torch.equal(plain(X), with_domains(X))
    assert torch.equal(plain.running_mean, with_domains.running_mean)


@pytest.mark.parametrize("training", [True, False])
def test_gradcheck_per_domain_batchnorm(training):
    bn = SPDBatchNorm(4, n_iter=2, n_domains=2, dtype=torch.float64).train(training)
    with torch.no_grad():
        bn.log_bias.copy_(0.1 * (EYE + torch.ones(4, 4, dtype=torch.float64)))
        bn.domain_means.copy_(_spd(2, 4, seed=4))
    X = _spd(7, 4, seed=5).requires_grad_(True)
    domains = torch.tensor([0, 1, 0, 1, 1, 0, 0])
    saved = bn.domain_means.clone()

    def forward(X):
        out = bn(X, domains)
        with torch.no_grad():
            bn.domain_means.copy_(saved)  # gradcheck calls forward many times
        return out

    assert torch.autograd.gradcheck(forward, (X,), eps=1e-6, atol=1e-6)


def test_bad_domains_raise():
    bn = SPDBatchNorm(4, n_domains=2, dtype=torch.float64)
    X = _spd(3, 4)
    with pytest.raises(ValueError, match="domains must lie in"):
        bn(X, torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="integer tensor of shape"):
        bn(X, torch.tensor([0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="n_domains"):
        SPDBatchNorm(4, n_domains=-1)
    with pytest.raises(ValueError, match="domain must lie"):
        bn.set_domain_mean(2, EYE)


def test_adapt_domain_centres_a_new_domain_at_every_batchnorm():
    net = SPDNet([4, 4, 3], bimap="free", init="random", eps=1e-3, relative_eps=True,
                 batchnorm=True, n_domains=2, generator=torch.Generator().manual_seed(0),
                 dtype=torch.float64).eval()  # fmt: skip
    for bn in net.batchnorms:
        bn.log_bias = None  # no bias: the output of each normalisation is centred
    X = 4.0 * _spd(20, 4, seed=6)
    net.adapt_domain(X, 1)
    assert not net.training
    domains = torch.ones(20, dtype=torch.long)
    Y = X
    for layer in net.layers:
        Y = layer(Y, domains) if isinstance(layer, SPDBatchNorm) else layer(Y)
        if isinstance(layer, SPDBatchNorm):
            assert torch.allclose(riemannian_mean(Y), torch.eye(Y.shape[-1]).double(), atol=1e-6)
    assert torch.allclose(net(X, domains), Y)
    assert torch.equal(net.batchnorms[0].domain_means[0], EYE)  # other domains untouched
    with pytest.raises(ValueError, match="at least 2 matrices"):
        net.adapt_domain(X[:1], 0)
