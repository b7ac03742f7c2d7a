"""Tests of the SPDNet layers and network: shapes, SPD outputs, Stiefel weights under training."""

import numpy as np
import pytest
import torch
from pyriemann.datasets import make_matrices

from rankmetric.geometry.means import geodesic, riemannian_mean
from rankmetric.models.spdnet import (
    BiMap,
    LogEig,
    ReEig,
    SPDBatchNorm,
    SPDNet,
    batch_karcher_mean,
    rectified_log,
    sym_to_vec,
)
from rankmetric.models.stiefel import StiefelAdam, StiefelSGD, orthonormality_error


def _spd(n, c, seed=0, dtype=torch.float32):
    X = make_matrices(n, c, "spd", rs=np.random.RandomState(seed), evals_low=0.1, evals_high=5.0)
    return torch.as_tensor(X, dtype=dtype)


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _min_eigenvalue(Y):
    return float(torch.linalg.eigvalsh(Y.detach().double()).min())


def test_bimap_matches_definition_and_keeps_spd():
    layer = BiMap(6, 3, generator=_gen(), dtype=torch.float64)
    X = _spd(4, 6, dtype=torch.float64)
    W = layer.weight.detach()
    Y = layer(X)
    assert Y.shape == (4, 3, 3)
    expected = torch.stack([W.T @ x @ W for x in X])
    assert torch.allclose(Y, expected, atol=1e-12)
    assert torch.equal(Y, Y.mT)
    assert _min_eigenvalue(Y) > 0
    assert orthonormality_error(W) < 1e-12


def test_bimap_refuses_to_grow_dimension():
    with pytest.raises(ValueError, match="out_features=4 must be <= in_features=3"):
        BiMap(3, 4)


def test_reeig_clamps_eigenvalues_and_keeps_eigenvectors():
    X = _spd(5, 4, seed=1, dtype=torch.float64)
    eps = 0.5
    Y = ReEig(eps)(X)
    w, U = torch.linalg.eigh(X)
    expected = U @ torch.diag_embed(w.clamp_min(eps)) @ U.mT
    assert torch.allclose(Y, expected, atol=1e-10)
    assert _min_eigenvalue(Y) >= eps - 1e-10
    with pytest.raises(ValueError, match="eps"):
        ReEig(0.0)


def test_logeig_is_matrix_logarithm():
    X = _spd(3, 4, seed=2, dtype=torch.float64)
    L = LogEig()(X)
    assert torch.allclose(torch.linalg.matrix_exp(L), X, atol=1e-10)


def test_sym_to_vec_is_an_isometry():
    S = torch.randn(5, 4, 4, dtype=torch.float64)
    S = S + S.mT
    v = sym_to_vec(S)
    assert v.shape == (5, 10)
    assert torch.allclose(v.norm(dim=1), torch.linalg.matrix_norm(S), atol=1e-12)
    assert torch.allclose(torch.cdist(v, v), torch.linalg.matrix_norm(S[:, None] - S[None]))


@pytest.mark.parametrize("sizes", [[12, 6], [12, 8, 5, 3]])
def test_spdnet_outputs_are_spd_with_eigenvalue_floor(sizes):
    net = SPDNet(sizes, eps=1e-3, generator=_gen())
    X = _spd(8, sizes[0])
    Y = net(X)
    assert Y.shape == (8, sizes[-1], sizes[-1])
    assert torch.allclose(Y, Y.mT)
    assert _min_eigenvalue(Y) >= 1e-3 * (1 - 1e-4)
    assert len(net.bimaps) == len(sizes) - 1


def test_spdnet_configurations_of_the_papers_build():
    hdm05 = SPDNet([93, 30], generator=_gen())
    afew = SPDNet([400, 200, 100, 50], generator=_gen())
    assert [tuple(b.weight.shape) for b in hdm05.bimaps] == [(93, 30)]
    assert [tuple(b.weight.shape) for b in afew.bimaps] == [(400, 200), (200, 100), (100, 50)]
    assert hdm05(_spd(2, 93)).shape == (2, 30, 30)


def test_rectified_log_equals_log_of_reeig_with_its_gradient():
    X = _spd(4, 5, seed=8, dtype=torch.float64)
    X = X - 0.3 * torch.eye(5, dtype=torch.float64)  # some eigenvalues fall under the floor
    eps = 0.2
    assert float(torch.linalg.eigvalsh(X).min()) < eps
    fused = rectified_log(X, eps)
    assert torch.allclose(fused, LogEig()(ReEig(eps)(X)), atol=1e-12)
    S = torch.zeros_like(X, requires_grad=True)
    assert torch.autograd.gradcheck(lambda S: rectified_log(X + S + S.mT, eps).sum(), (S,))
    with pytest.raises(ValueError, match="eps"):
        rectified_log(X, 0.0)


def test_log_output_and_head():
    X = _spd(6, 8, seed=3)
    net = SPDNet([8, 4], generator=_gen(1))
    log_net = SPDNet([8, 4], log_output=True, generator=_gen(1))
    head_net = SPDNet([8, 4], head_dim=5, generator=_gen(1))
    Y = net(X)
    assert torch.allclose(torch.linalg.matrix_exp(log_net(X).double()), Y.double(), atol=1e-4)
    out = head_net(X)
    assert out.shape == (6, 5)
    expected = head_net.head(sym_to_vec(log_net(X)))
    assert torch.allclose(out, expected, atol=1e-5)
    groups = head_net.parameter_groups()
    assert groups[0]["stiefel"] and len(groups[0]["params"]) == 1
    assert len(groups[1]["params"]) == 2  # head weight and bias


def test_initialisation_is_seeded():
    a, b = SPDNet([6, 3], generator=_gen(5)), SPDNet([6, 3], generator=_gen(5))
    c = SPDNet([6, 3], generator=_gen(6))
    assert torch.equal(a.bimaps[0].weight, b.bimaps[0].weight)
    assert not torch.equal(a.bimaps[0].weight, c.bimaps[0].weight)


@pytest.mark.parametrize(
    "sizes, message",
    [([], "non-empty"), ([4, 0], "positive"), ([4, 5], "non-increasing"), (["a"], "integers")],
)
def test_bad_sizes_raise(sizes, message):
    with pytest.raises(ValueError, match=message):
        SPDNet(sizes)


def test_bad_input_shape_raises():
    with pytest.raises(ValueError, match=r"\(B, 6, 6\)"):
        SPDNet([6, 3])(torch.eye(5).expand(2, 5, 5))


def test_gradient_is_finite_at_identity_inputs():
    # Repeated eigenvalues everywhere: plain eigh autograd would give NaN here.
    net = SPDNet([6, 4, 2], log_output=True, generator=_gen())
    X = torch.eye(6).expand(3, 6, 6).clone()
    net(X).pow(2).sum().backward()
    for p in net.parameters():
        assert torch.isfinite(p.grad).all()


def test_gradcheck_through_the_network_float64():
    net = SPDNet([5, 3], log_output=True, eps=1e-2, generator=_gen(), dtype=torch.float64)
    X = _spd(2, 5, seed=4, dtype=torch.float64)
    W = net.bimaps[0].weight

    def forward(weight):
        Y = torch.func.functional_call(net, {"layers.0.weight": weight}, (X,))
        return Y.pow(2).sum()

    assert torch.autograd.gradcheck(forward, (W.detach().clone().requires_grad_(True),))


@pytest.mark.parametrize("optimizer", [StiefelAdam, StiefelSGD])
def test_weights_stay_orthonormal_and_outputs_spd_after_training(optimizer):
    torch.manual_seed(0)
    X = _spd(16, 10, seed=7)
    labels = torch.arange(16) % 2
    net = SPDNet([10, 6, 3], generator=_gen())
    opt = optimizer(net.parameter_groups(), lr=0.05)
    target = torch.where(labels[:, None, None] == 0, 2.0, 0.5) * torch.eye(3)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = (LogEig()(net(X)) - LogEig()(target)).pow(2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        for bimap in net.bimaps:
            assert orthonormality_error(bimap.weight) < 1e-6
    assert losses[-1] < losses[0]
    Y = net(X)
    assert _min_eigenvalue(Y) > 0 and torch.allclose(Y, Y.mT)


def test_sym_to_vec_is_an_isometry_in_float64():
    """The √2 scaling is exact to float64 precision (a float32 √2 would be off by 1e-8)."""
    S = torch.randn(6, 5, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    S = S + S.mT
    v = sym_to_vec(S)
    assert v.dtype == torch.float64
    torch.testing.assert_close(v.norm(dim=-1), torch.linalg.matrix_norm(S), rtol=1e-15, atol=0)


# ---------------------------------------------------------------- free BiMaps, relative ReEig


def _with_repeated_eigenvalues(n, c, seed=0):
    """SPD matrices (float64) whose spectra hold a repeated eigenvalue (1, 1, 1, then distinct)."""
    g = torch.Generator().manual_seed(seed)
    Q, _ = torch.linalg.qr(torch.randn(n, c, c, generator=g, dtype=torch.float64))
    rest = torch.linspace(0.02, 3.0, c - 3, dtype=torch.float64).expand(n, -1)
    lam = torch.cat([torch.ones(n, 3, dtype=torch.float64), rest], 1)
    return Q @ torch.diag_embed(lam) @ Q.mT


def test_identity_bimap_and_free_bimap():
    X = _spd(4, 5, dtype=torch.float64)
    square = BiMap(5, 5, manifold="free", init="identity", dtype=torch.float64)
    assert torch.allclose(square(X), X, atol=1e-14)
    reduce = BiMap(5, 3, init="identity", dtype=torch.float64)
    assert torch.allclose(reduce(X), X[:, :3, :3], atol=1e-14)
    net = SPDNet([5, 5, 5], bimap="free", init="identity", dtype=torch.float64)
    groups = net.parameter_groups()
    assert len(groups) == 1 and not groups[0].get("stiefel")
    with pytest.raises(ValueError, match="manifold"):
        BiMap(3, 3, manifold="grassmann")
    with pytest.raises(ValueError, match="init"):
        BiMap(3, 3, init="zeros")


def test_relative_reeig_floors_at_a_share_of_the_mean_eigenvalue():
    X = 7.0 * _spd(6, 5, seed=3, dtype=torch.float64)
    eps = 0.3
    Y = ReEig(eps, relative=True)(X)
    w, U = torch.linalg.eigh(X)
    floor = eps * w.mean(dim=1, keepdim=True)  # trace / c
    expected = U @ torch.diag_embed(torch.maximum(w, floor)) @ U.mT
    assert torch.allclose(Y, expected, atol=1e-10)
    assert bool((w < floor).any())  # the layer does rectify these matrices
    assert torch.allclose(ReEig(eps, relative=True)(3.0 * X), 3.0 * Y, atol=1e-9)  # scale-free
    with pytest.raises(ValueError, match="relative"):
        ReEig(1.5, relative=True)


@pytest.mark.parametrize("relative", [False, True])
def test_gradcheck_reeig_at_repeated_eigenvalues(relative):
    X = _with_repeated_eigenvalues(2, 5).requires_grad_(True)
    eps = 0.1 if relative else 0.05  # floors away from the repeated eigenvalue 1 and from λ
    layer = ReEig(eps, relative=relative)
    assert torch.autograd.gradcheck(layer, (X,), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("head", [None, "identity", "glorot"])
def test_gradcheck_free_network_with_head_float64(head):
    g = _gen(1)
    net = SPDNet([5, 5, 3], bimap="free", eps=0.1, relative_eps=True,
                 head_dim=None if head is None else 6, head_init=head or "glorot",
                 log_output=True, generator=g, dtype=torch.float64)  # fmt: skip
    with torch.no_grad():  # move the weights off the identity so every term is exercised
        for m in net.bimaps:
            m.weight.add_(0.1 * torch.randn(m.weight.shape, generator=g, dtype=torch.float64))
    X = _with_repeated_eigenvalues(2, 5, seed=2)
    params = list(net.parameters())
    # gradients with respect to the input at repeated eigenvalues, and to every weight
    assert torch.autograd.gradcheck(net, (X.clone().requires_grad_(True),), eps=1e-6, atol=1e-6)
    for p in params:
        p.requires_grad_(True)
    out = net(X)
    seed = torch.randn(out.shape, generator=g, dtype=torch.float64)
    grads = torch.autograd.grad((out * seed).sum(), params)
    for p, grad in zip(params, grads, strict=True):
        direction = torch.randn(p.shape, generator=g, dtype=torch.float64)
        with torch.no_grad():
            p.add_(1e-6 * direction)
            up = (net(X) * seed).sum()
            p.sub_(2e-6 * direction)
            down = (net(X) * seed).sum()
            p.add_(1e-6 * direction)
        numeric = (up - down) / 2e-6
        assert torch.allclose((grad * direction).sum(), numeric, rtol=1e-4, atol=1e-6)


def test_identity_network_reproduces_the_log_euclidean_distance():
    X = _spd(6, 4, seed=4, dtype=torch.float64)
    net = SPDNet([4, 4, 4], bimap="free", init="identity", eps=1e-3, relative_eps=True,
                 head_dim=10, head_init="identity", dtype=torch.float64)  # fmt: skip
    assert torch.allclose(net(X), sym_to_vec(LogEig()(X)), atol=1e-10)
    with pytest.raises(ValueError, match="identity head"):
        SPDNet([4, 4], head_dim=3, head_init="identity")


# ---------------------------------------------------------------- Riemannian batch normalisation


def _karcher_loop(X, n_iter):
    """The fixed-point iteration written out with eigen-decompositions, one matrix at a time."""

    def fn(S, f):
        w, U = np.linalg.eigh(S)
        return (U * f(w)) @ U.T

    X = X.numpy()
    G = X.mean(axis=0)
    for _ in range(n_iter):
        root, inv_root = fn(G, np.sqrt), fn(G, lambda w: 1 / np.sqrt(w))
        T = sum(fn(inv_root @ x @ inv_root, np.log) for x in X) / len(X)
        G = root @ fn(T, np.exp) @ root
    return G


@pytest.mark.parametrize("n_iter", [1, 3])
def test_batch_karcher_mean_matches_its_definition_and_converges(n_iter):
    X = _spd(7, 4, seed=5, dtype=torch.float64)
    got = batch_karcher_mean(X, n_iter)
    np.testing.assert_allclose(got.numpy(), _karcher_loop(X, n_iter), atol=1e-10)
    assert torch.allclose(batch_karcher_mean(X, 30), riemannian_mean(X), atol=1e-8)


def test_batchnorm_centres_the_batch_and_tracks_the_running_mean_along_the_geodesic():
    X = _spd(8, 4, seed=6, dtype=torch.float64)
    bn = SPDBatchNorm(4, momentum=0.3, n_iter=30, bias=False, dtype=torch.float64)
    Y = bn(X)  # training mode: centred by the batch Karcher mean
    assert torch.allclose(riemannian_mean(Y), torch.eye(4, dtype=torch.float64), atol=1e-7)
    G = riemannian_mean(X)
    expected = geodesic(torch.eye(4, dtype=torch.float64), G, 0.3)
    assert torch.allclose(bn.running_mean, expected, atol=1e-7)
    bn.eval()  # evaluation: the running mean, and nothing is updated
    R = bn.running_mean.clone()
    inv_root = torch.linalg.inv(torch.linalg.cholesky(R))  # R^{-1/2} up to a rotation
    Z = bn(X)
    assert torch.equal(bn.running_mean, R)
    w_got = torch.linalg.eigvalsh(Z)
    w_expected = torch.linalg.eigvalsh(inv_root @ X @ inv_root.mT)
    assert torch.allclose(w_got, w_expected, atol=1e-8)


def test_untrained_batchnorm_in_eval_mode_is_the_identity_and_bias_is_a_congruence():
    X = _spd(5, 4, seed=7, dtype=torch.float64)
    bn = SPDBatchNorm(4, dtype=torch.float64).eval()
    assert torch.allclose(bn(X), X, atol=1e-12)
    S = torch.randn(4, 4, generator=_gen(3), dtype=torch.float64)
    with torch.no_grad():
        bn.log_bias.copy_(S)
    B_root = torch.linalg.matrix_exp(0.5 * (S + S.T) / 2)
    assert torch.allclose(bn(X), B_root @ X @ B_root, atol=1e-10)
    net = SPDNet([4, 4, 4], bimap="free", init="identity", eps=1e-3, relative_eps=True,
                 head_dim=10, head_init="identity", batchnorm=True,
                 dtype=torch.float64)  # fmt: skip
    assert len(net.batchnorms) == 2
    assert torch.allclose(net.eval()(X), sym_to_vec(LogEig()(X)), atol=1e-10)


@pytest.mark.parametrize("training", [True, False])
def test_gradcheck_batchnorm_at_repeated_eigenvalues(training):
    bn = SPDBatchNorm(5, n_iter=2, dtype=torch.float64).train(training)
    with torch.no_grad():
        bn.log_bias.copy_(0.2 * torch.randn(5, 5, generator=_gen(4), dtype=torch.float64))
        if not training:
            bn.running_mean.copy_(_spd(1, 5, seed=8, dtype=torch.float64)[0])
    X = _with_repeated_eigenvalues(4, 5, seed=3).requires_grad_(True)
    S = bn.log_bias.detach().clone().requires_grad_(True)

    def forward(X, S):  # the bias as a gradcheck input
        saved = bn.running_mean.clone()
        out = torch.func.functional_call(bn, {"log_bias": S}, (X,))
        bn.running_mean.copy_(saved)  # gradcheck calls forward many times
        return out

    assert torch.autograd.gradcheck(forward, (X, S), eps=1e-6, atol=1e-6)


def test_batchnorm_network_trains_with_finite_gradients():
    X = _spd(12, 5, seed=9)
    net = SPDNet([5, 5, 3], bimap="free", init="identity", eps=0.05, relative_eps=True,
                 head_dim=6, batchnorm=True, generator=_gen(5))  # fmt: skip
    out = net(X)
    out.pow(2).sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in net.parameters())
    assert net.batchnorms[0].log_bias.grad.abs().sum() > 0


def test_batchnorm_bad_parameters_raise():
    with pytest.raises(ValueError, match="momentum"):
        SPDBatchNorm(3, momentum=0.0)
    with pytest.raises(ValueError, match="n_iter"):
        SPDBatchNorm(3, n_iter=0)
