"""The fused violator pass of WARCA's sampled WARP loss: the same values and gradients as the
autograd graph of its formula, to the bit (fixed-seed fits depend on it), and a correct
gradient (gradcheck in float64)."""

from __future__ import annotations

import pytest
import torch

from rankmetric.losses._warp_sampling import _ViolatorHinges


def graph_hinge_sums(E, anchors, positives, negatives, row_slot, margin):
    """Σ over each row's violators of [γ + ‖e_a − e_p‖ − ‖e_a − e_n‖]_+, by plain autograd."""

    def distance(a, b):
        return (a - b).square().sum(-1).clamp_min(1e-12).sqrt()

    e_a, e_p, e_n = (E.index_select(0, i) for i in (anchors, positives, negatives))
    d_ap = distance(e_a, e_p)
    d_an = distance(e_a.index_select(0, row_slot), e_n)
    hinge = torch.relu(margin + d_ap.index_select(0, row_slot) - d_an)
    return torch.zeros(anchors.numel(), dtype=hinge.dtype).index_add(0, row_slot, hinge)


def problem(seed, n=50, d=30, r=7, n_rows=40, n_violators=400, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=dtype)
    W = torch.randn(r, d, generator=g, dtype=dtype).requires_grad_()
    anchors = torch.randint(0, n, (n_rows,), generator=g)
    positives = torch.randint(0, n, (n_rows,), generator=g)
    row_slot = torch.sort(torch.randint(0, n_rows, (n_violators,), generator=g)).values
    negatives = torch.randint(0, n, (n_violators,), generator=g)
    weights = torch.rand(n_rows, generator=g, dtype=dtype)
    return X, W, (anchors, positives, negatives, row_slot), weights


@pytest.mark.parametrize("seed", range(8))
def test_fused_pass_is_bit_identical_to_the_autograd_graph(seed):
    X, W, indices, weights = problem(seed)
    results = []
    for fn in (graph_hinge_sums, _ViolatorHinges.apply):
        W.grad = None
        E = X @ W.T  # not a leaf, as in a fit: the three gradients meet in E's buffer
        sums = fn(E, *indices, 1.0)
        (sums * weights).sum().backward()
        results.append((sums.detach(), W.grad.clone()))
    (value, grad), (fused_value, fused_grad) = results
    assert torch.equal(value, fused_value)
    assert torch.equal(grad, fused_grad)
    assert grad.abs().sum() > 0  # rows with active hinges were drawn


def test_fused_pass_gradient_by_gradcheck():
    X, W, indices, _ = problem(0, n=12, d=5, r=3, n_rows=6, n_violators=20, dtype=torch.float64)
    E = (X @ W.T).detach().requires_grad_()
    assert torch.autograd.gradcheck(lambda E: _ViolatorHinges.apply(E, *indices, 1.0), (E,))


@pytest.mark.parametrize("n_draws", [4, 40])  # P·S below N (drawn rows embedded) and above it
def test_detection_distances_equal_the_cross_formula_to_the_bit(n_draws):
    """The detection's squared distances to drawn negatives, with the rows' squared norms
    computed once per row and gathered, equal ``cross_sq_euclidean`` of the gathered rows."""
    from rankmetric.losses._warp_sampling import _Distances
    from rankmetric.losses._warp_terms import cross_sq_euclidean

    g = torch.Generator().manual_seed(3)
    n, r, n_pairs = 60, 9, 12
    E = torch.randn(n, r, generator=g)
    calls = []

    def embed(indices):
        calls.append(indices is None)
        return E if indices is None else E.index_select(0, indices)

    ends = E[torch.randint(0, n, (n_pairs, 2), generator=g)]
    negatives = torch.randint(0, n, (n_pairs, n_draws), generator=g)
    dist = _Distances(embed, ends, n, dense=False)
    assert dist.partial is None  # the sparse layout
    expected = cross_sq_euclidean(ends, E[negatives])
    assert torch.equal(dist.to(None, negatives), expected)
    pending = torch.tensor([1, 4, 7])
    drawn = negatives[pending]
    expected = cross_sq_euclidean(ends[pending], E[drawn])  # the sequential sampler's rounds
    assert torch.equal(dist.to(pending, drawn), expected)
    # all N rows embedded at most once per step, only when the draws outnumber them
    assert calls.count(True) == (1 if n_pairs * n_draws >= n else 0)
