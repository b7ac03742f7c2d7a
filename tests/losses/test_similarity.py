"""Similarity regression loss against brute force."""

import numpy as np
import pytest
import torch

from rankmetric.losses.regularizers import group_norm_penalty
from rankmetric.losses.similarity import (
    SimilarityRegressionLoss,
    jaccard_similarity_targets,
    label_similarity_targets,
)
from rankmetric.models.sphere import SphereTanhEmbedding


def _unit_rows(rng, n, m):
    z = rng.normal(size=(n, m))
    return torch.as_tensor(z / np.linalg.norm(z, axis=1, keepdims=True))


def _brute_force_pairs_loss(a, b, s):
    return np.mean([(s[q] - a[q] @ b[q]) ** 2 for q in range(len(s))])


def _brute_force_batch_loss(emb, labels, neg_target):
    terms = []
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            target = 1.0 if labels[i] == labels[j] else neg_target
            terms.append((target - emb[i] @ emb[j]) ** 2)
    return np.mean(terms)


def test_pairs_loss_matches_brute_force(rng):
    a, b = _unit_rows(rng, 9, 4), _unit_rows(rng, 9, 4)
    s = torch.as_tensor(rng.uniform(-1, 1, size=9))
    got = SimilarityRegressionLoss().pairs(a, b, s)
    assert float(got) == pytest.approx(_brute_force_pairs_loss(a.numpy(), b.numpy(), s.numpy()))


def test_pairs_loss_weighted_mean(rng):
    a, b = _unit_rows(rng, 5, 3), _unit_rows(rng, 5, 3)
    s = torch.as_tensor(rng.uniform(-1, 1, size=5))
    w = torch.tensor([1.0, 0.0, 2.0, 0.0, 1.0], dtype=torch.float64)
    sq = (s - (a * b).sum(1)) ** 2
    expected = (sq[0] + 2 * sq[2] + sq[4]) / 4
    assert float(SimilarityRegressionLoss().pairs(a, b, s, w)) == pytest.approx(float(expected))


@pytest.mark.parametrize("neg_target", [-1.0, 0.0, -0.3])
def test_batch_loss_matches_brute_force(rng, neg_target):
    emb = _unit_rows(rng, 8, 5)
    labels = torch.as_tensor(rng.integers(0, 3, size=8))
    got = SimilarityRegressionLoss(neg_target)(emb, labels)
    expected = _brute_force_batch_loss(emb.numpy(), labels.numpy(), neg_target)
    assert float(got) == pytest.approx(expected)


def test_batch_face_equals_pairs_face(rng):
    emb = _unit_rows(rng, 6, 4)
    labels = torch.as_tensor(rng.integers(0, 2, size=6))
    i, j = torch.triu_indices(6, 6, 1)
    loss = SimilarityRegressionLoss(-0.5)
    targets = label_similarity_targets(labels[i], labels[j], -0.5)
    torch.testing.assert_close(loss(emb, labels), loss.pairs(emb[i], emb[j], targets))


def test_objective_gradcheck_through_embedding(rng):
    """J'(W) = mean (s − H(a)ᵀH(b))² + λ Σ ||w_m||, differentiated through the sphere embedding."""
    module = SphereTanhEmbedding(3, 4).to(torch.float64)
    module.reset_parameters(torch.Generator().manual_seed(1))
    x = torch.as_tensor(rng.normal(size=(10, 3)))
    pairs = torch.as_tensor(rng.integers(0, 10, size=(7, 2)))
    s = torch.as_tensor(rng.uniform(-1, 1, size=7))
    loss_fn = SimilarityRegressionLoss()

    def objective(weight):
        emb = torch.func.functional_call(module, {"weight": weight}, (x,))
        return loss_fn.pairs(emb[pairs[:, 0]], emb[pairs[:, 1]], s) + 0.1 * group_norm_penalty(
            weight
        )

    weight = module.weight.detach().clone().requires_grad_(True)
    assert torch.autograd.gradcheck(objective, (weight,))

    # and the value against a loop over pairs with the embedding written out by hand
    W = weight.detach().numpy()
    phi = np.hstack([x.numpy(), np.ones((10, 1))])
    h = 2 / (1 + np.exp(phi @ W)) - 1
    H = h / np.linalg.norm(h, axis=1, keepdims=True)
    p = pairs.numpy()
    expected = _brute_force_pairs_loss(H[p[:, 0]], H[p[:, 1]], s.numpy())
    expected += 0.1 * sum(np.linalg.norm(W[:, m]) for m in range(W.shape[1]))
    assert float(objective(weight.detach())) == pytest.approx(expected, rel=1e-12)


def test_batch_loss_gradcheck(rng):
    emb = _unit_rows(rng, 5, 3).requires_grad_(True)
    labels = torch.tensor([0, 0, 1, 1, 2])
    assert torch.autograd.gradcheck(lambda e: SimilarityRegressionLoss(-1.0)(e, labels), (emb,))


def test_bad_inputs_raise(rng):
    with pytest.raises(ValueError, match="neg_target"):
        SimilarityRegressionLoss(neg_target=1.0)
    loss = SimilarityRegressionLoss()
    emb = _unit_rows(rng, 4, 3)
    with pytest.raises(ValueError, match="labels must have shape"):
        loss(emb, torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="targets must have shape"):
        loss.pairs(emb, emb, torch.zeros(3))
    with pytest.raises(ValueError, match="at least two"):
        loss(emb[:1], torch.zeros(1, dtype=torch.long))


@pytest.mark.parametrize("neg_target", [-1.0, 0.0])
def test_jaccard_targets_match_brute_force(rng, neg_target):
    a = rng.integers(0, 2, size=(30, 4))
    b = rng.integers(0, 2, size=(30, 4))
    a[0] = b[0] = 0  # two empty label sets are identical
    got = jaccard_similarity_targets(torch.as_tensor(a), torch.as_tensor(b), neg_target)
    expected = []
    for p, q in zip(a, b, strict=True):
        sp, sq = set(np.flatnonzero(p)), set(np.flatnonzero(q))
        jac = len(sp & sq) / len(sp | sq) if sp | sq else 1.0
        expected.append(neg_target + (1 - neg_target) * jac)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
