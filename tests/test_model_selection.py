"""One-standard-error model selection: per-query scores, the paired gain, the selector."""

import numpy as np
import pytest
import torch
from sklearn.metrics import average_precision_score

from rankmetric.model_selection import OneStandardErrorSelector, paired_gain, per_query_scores


def test_per_query_scores_match_a_loop():
    rng = np.random.default_rng(1)
    dist = rng.random((6, 9))
    dist[0, :2] = 0.1  # a tie: the first gallery item counts
    labels_q, labels_g = rng.integers(0, 3, 6), rng.integers(0, 3, 9)
    labels_q[5] = 7  # a query with no relevant item
    relevant = labels_q[:, None] == labels_g[None, :]
    r1 = per_query_scores(torch.as_tensor(dist), torch.as_tensor(relevant), "recall@1").numpy()
    ap = per_query_scores(torch.as_tensor(dist), torch.as_tensor(relevant), "map").numpy()
    for i in range(5):
        order = np.argsort(dist[i], kind="stable")
        hits = relevant[i, order]
        assert r1[i] == float(hits[0])
        precision = np.cumsum(hits) / np.arange(1, 10)
        np.testing.assert_allclose(ap[i], (precision * hits).sum() / hits.sum())
    assert np.isnan(r1[5]) and np.isnan(ap[5])


def _candidates(score_rows):
    """A selector filled with given per-query scores (the recorded bias: the index)."""
    rows = iter(score_rows)
    module = torch.nn.Linear(1, 1)
    cands = OneStandardErrorSelector(
        [module], lambda: torch.as_tensor(next(rows), dtype=torch.float64)
    )
    for i in range(len(score_rows)):
        with torch.no_grad():
            module.bias.fill_(i)
        cands.validate()
    return cands, module


def test_one_standard_error_rule_keeps_the_earliest_candidate_within_the_noise():
    n = 100
    start = np.zeros(n)
    small = start.copy()
    small[:2], small[2] = 1, -1  # +0.01 ± 0.017: within the noise
    big = start.copy()
    big[:30] = 1  # +0.30 ± 0.046: far beyond the noise
    bigger = big.copy()
    bigger[30:32], bigger[0] = 1, 0  # +0.01 ± 0.017 over `big`
    assert _candidates([start, small])[0].select(1.0)[0] == 0  # a noisy gain keeps the start
    cands, module = _candidates([start, small, big, bigger])
    chosen, (gain, noise) = cands.select(1.0)
    cands.restore(chosen)
    assert chosen == 2 and module.bias.item() == 2.0
    d = bigger - start
    assert gain == pytest.approx(d.mean()) and noise == pytest.approx(d.std(ddof=1) / n**0.5)
    assert cands.select(0.0)[0] == 3  # selection_se=0: the best
    # a later candidate below the start is never kept, even within the noise of the best
    worse = start.copy()
    worse[50:52] = -1
    assert _candidates([start, worse, big])[0].select(50.0)[0] == 0
    # the records are buffers: a checkpointed copy restores them whatever their size
    fresh = OneStandardErrorSelector([torch.nn.Linear(1, 1)], None)
    fresh.load_state_dict(cands.state_dict())
    assert torch.equal(fresh.scores, cands.scores) and fresh.select(1.0)[0] == 2
    assert paired_gain(torch.ones(1), torch.zeros(1)) == (1.0, 0.0)


def test_validation_average_precision_matches_sklearn():
    rng = np.random.default_rng(0)
    dist = rng.random((6, 15))
    relevant = rng.random((6, 15)) < 0.3
    relevant[0] = False  # a query without relevant items is left out
    expected = np.mean([average_precision_score(relevant[q], -dist[q]) for q in range(1, 6)])
    scores = per_query_scores(torch.as_tensor(dist), torch.as_tensor(relevant), "map")
    assert torch.isnan(scores[0]) and float(scores.nanmean()) == pytest.approx(expected, rel=1e-12)
