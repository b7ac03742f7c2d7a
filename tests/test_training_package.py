"""The claims of ``docs/architecture.md`` about ``rankmetric.training``: one loop with grouped
settings, one validation split, one validation scorer on the exact ranking kernel."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

from rankmetric import training
from rankmetric.estimators._held_out import held_out_folds
from rankmetric.training import holdout_folds, per_query_scores, split_validation
from rankmetric.tuning import group_holdout


def _same_folds(a, b) -> bool:
    pairs = zip(a, b, strict=True) if len(a) == len(b) else ()
    return len(a) == len(b) and all(
        np.array_equal(fa[k], fb[k]) for fa, fb in pairs for k in range(2)
    )


def test_every_hold_out_is_the_one_split():
    groups = np.repeat(np.arange(12), 3)
    one = holdout_folds(groups, 0.25, np.random.default_rng(0))
    assert _same_folds([split_validation(groups, 0.25, "groups", np.random.default_rng(0))], one)
    assert _same_folds([group_holdout(groups, 0.25, random_state=0)], one)
    check = holdout_folds(
        groups, 0.2, np.random.default_rng(3), min_groups=6, min_held=6, max_folds=3
    )
    assert _same_folds(held_out_folds(groups, 3), check)


def test_group_folds_are_disjoint_and_never_hold_out_a_single_row_group():
    codes = np.concatenate([np.repeat(np.arange(8), 2), [8]])
    folds = holdout_folds(codes, 0.25, np.random.default_rng(1), min_held=6, max_folds=3)
    held = [set(codes[h]) for _, h in folds]
    assert len(folds) == 3 and all(len(h) == 2 for h in held)
    assert len(set().union(*held)) == 6 and all(8 not in h for h in held)
    with pytest.raises(ValueError, match="too few groups"):
        holdout_folds(np.repeat(np.arange(3), 2), 0.5, np.random.default_rng(0))


def test_the_one_scorer_ranks_with_the_exact_kernel_not_a_full_sort(monkeypatch):
    source = inspect.getsource(training._scoring)
    assert "argsort" not in source and "relevant_places" in source
    calls = []
    real = training._scoring.relevant_places
    monkeypatch.setattr(
        training._scoring, "relevant_places", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    rng = np.random.default_rng(0)
    dist = torch.as_tensor(rng.random((6, 9)))
    dist[0, 3] = dist[0, 5]  # a tie: the lower index ranks first
    relevant = torch.as_tensor(rng.random((6, 9)) < 0.3)
    relevant[0] = False
    relevant[0, 5] = True
    dist[1, :] = torch.inf  # a query with nothing ranked
    got = per_query_scores(dist, relevant, "map")
    assert calls
    for q in range(2, 6):  # the definition: mean precision at each relevant item's place
        order = np.lexsort((np.arange(9), dist[q].numpy()))
        hits = relevant[q].numpy()[order]
        expected = np.mean((np.cumsum(hits) / np.arange(1, 10))[hits]) if hits.any() else np.nan
        np.testing.assert_allclose(got[q].item(), expected, rtol=0, atol=1e-12, equal_nan=True)
    assert torch.isnan(got[1])
    first = per_query_scores(dist, relevant, "recall@1")
    assert first[0].item() == float(np.argmin(dist[0].numpy()) == 5)


def test_the_loop_takes_grouped_settings_and_the_estimators_pass_them():
    names = set(inspect.signature(training.train).parameters)
    assert {"validation", "stopping", "checkpointing"} <= names
    assert not names & {"validate", "validation_every", "checkpoint_dir", "fingerprint", "tol"}


def test_snapshot_is_an_independent_copy_that_restores_the_module():
    """The loop's kept states (best validated, lowest loss): tensors cloned, not shared."""
    import torch

    from rankmetric.training._loop import _snapshot

    module = torch.nn.BatchNorm1d(3)  # parameters, buffers and an integer buffer
    module.running_mean.fill_(2.0)
    kept = _snapshot(module)
    assert list(kept) == list(module.state_dict())
    with torch.no_grad():
        module.weight.mul_(3.0)
        module.running_mean.zero_()
        module.num_batches_tracked += 1
    assert kept["weight"].eq(1.0).all() and kept["running_mean"].eq(2.0).all()
    assert int(kept["num_batches_tracked"]) == 0
    module.load_state_dict(kept)
    assert module.weight.eq(1.0).all() and module.running_mean.eq(2.0).all()
    assert kept["weight"].data_ptr() != module.weight.data_ptr()
