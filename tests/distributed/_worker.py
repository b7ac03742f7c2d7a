"""One process of the distributed tests: ``python _worker.py OUT_DIR`` under torchrun's variables.

With ``WORLD_SIZE=2`` (two copies, ``RANK`` 0 and 1) it trains on shards of each global batch;
with ``WORLD_SIZE=1`` it is the single-process reference. Either way it writes what it computed
to ``OUT_DIR/rank{RANK}_of{WORLD_SIZE}.npz`` for the test to compare.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

from rankmetric import distributed
from rankmetric.estimators.spd import RPLEmbedding
from rankmetric.estimators.ssne import SSNE
from rankmetric.estimators.warca import WARCA, KernelWARCA
from rankmetric.losses import LiftedStructureLoss, MultiSimilarityLoss, TripletLoss


def feature_data() -> tuple[np.ndarray, np.ndarray]:
    """Three Gaussian classes, 90 × 6."""
    rng = np.random.default_rng(7)
    y = np.repeat(np.arange(3), 30)
    X = rng.standard_normal((90, 6)) + 1.5 * rng.standard_normal((3, 6))[y]
    return X, y


def spd_data() -> tuple[np.ndarray, np.ndarray]:
    """Three classes of 5 × 5 SPD matrices, 45 of them."""
    rng = np.random.default_rng(8)
    y = np.repeat(np.arange(3), 15)
    bases = rng.standard_normal((3, 5, 5))
    A = bases[y] + 0.5 * rng.standard_normal((45, 5, 5))
    return A @ A.transpose(0, 2, 1) + 0.1 * np.eye(5), y


def primitives(rank: int) -> dict[str, np.ndarray]:
    """all_gather_with_grad with unequal lengths, all_reduce_mean and global_mean, in float64."""
    gen = torch.Generator().manual_seed(3)
    full = torch.randn(5, 3, generator=gen, dtype=torch.float64)  # rank 0: rows 0-1, rank 1: 2-4
    weights = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    start, stop = distributed.shard_bounds(5)
    local = full[start:stop].clone().requires_grad_(True)
    gathered = distributed.all_gather_with_grad(local)
    # a batch-coupled loss, the same on every rank: every row meets every other row
    coupled = (gathered @ gathered.T).square().sum() + (weights * gathered).sum()
    coupled.backward()
    local_sum = local.detach().clone().requires_grad_(True)
    mean = distributed.global_mean((local_sum.square()).sum(), n_total=5)
    mean.backward()
    return {
        "gathered": gathered.detach().numpy(),
        "coupled_value": coupled.detach().numpy(),
        "coupled_grad_local": local.grad.numpy(),
        "mean_value": mean.detach().numpy(),
        "mean_grad": local_sum.grad.numpy(),
        "reduced": distributed.all_reduce_mean(torch.tensor([float(rank + 1)])).numpy(),
        "bounds": np.array([start, stop]),
    }


class ShardCounter:
    """Counts the items ``distributed.shard`` is given and returns, to show that work is split."""

    def __init__(self) -> None:
        self.given = self.kept = 0
        self.original = distributed.shard
        distributed.shard = self

    def __call__(self, items):
        kept = self.original(items)
        self.given, self.kept = self.given + len(items), self.kept + len(kept)
        return kept

    def fraction(self) -> np.ndarray:
        """Share of the global batches this rank kept, since the last call."""
        share = self.kept / max(self.given, 1)
        self.given = self.kept = 0
        return np.array(share)


def estimators() -> dict[str, np.ndarray]:
    X, y = feature_data()
    out: dict[str, np.ndarray] = {}
    counter = ShardCounter()
    for sampling in ("batched", "sequential", "exact"):
        warca = WARCA(
            3,
            max_iter=15,
            batch_size=33,
            max_sampling=16,
            sampling=sampling,
            random_state=0,
            device="cpu",
        ).fit(X, y)
        out[f"warca_{sampling}"] = warca.components_
        out[f"warca_{sampling}_loss"] = np.asarray(warca.loss_curve_)
        out[f"warca_{sampling}_share"] = counter.fraction()
    kernel = KernelWARCA(
        3, kernel="rbf", max_iter=10, batch_size=33, max_sampling=16, random_state=0, device="cpu"
    ).fit(X, y)
    out["kernel_warca"], out["kernel_warca_share"] = kernel.components_, counter.fraction()
    ssne = SSNE(n_components=8, max_iter=15, batch_size=45, random_state=0, device="cpu").fit(X, y)
    out["ssne"], out["ssne_loss"] = ssne.weight_, ssne.loss_curve_
    out["ssne_share"] = counter.fraction()
    bcd = SSNE(
        8, solver="bcd", block_size=3, max_iter=15, batch_size=45, random_state=0, device="cpu"
    ).fit(X, y)
    out["ssne_bcd"] = bcd.weight_
    S, z = spd_data()
    rpl = RPLEmbedding(
        3, max_iter=8, n_per_class=5, validation_every=4, random_state=0, device="cpu"
    ).fit(S, z)
    out["rpl"] = rpl.weights_[0]
    out["rpl_loss"] = rpl.loss_curve_
    out["rpl_log_mu"], out["rpl_log_sigma"] = rpl.potato_log_mu_, rpl.potato_log_sigma_
    out["rpl_share"] = counter.fraction()
    return out


def user_ddp_loop() -> dict[str, np.ndarray]:
    """A user's own DistributedDataParallel step with ``GatheredLoss``, three losses."""
    X, y = feature_data()
    rows = np.random.default_rng(1).permutation(90)[:24]  # the global batch
    start, stop = distributed.shard_bounds(24)
    x_local = torch.as_tensor(X[rows[start:stop]])
    y_local = torch.as_tensor(y[rows[start:stop]])
    torch.manual_seed(0)
    model = torch.nn.Linear(6, 4).double()
    net = (
        torch.nn.parallel.DistributedDataParallel(model) if distributed.is_distributed() else model
    )
    out = {}
    losses = {
        "ms": MultiSimilarityLoss(),
        "triplet": TripletLoss(mining="semihard"),
        "lifted": LiftedStructureLoss(),
    }
    for name, loss in losses.items():
        net.zero_grad()
        value = distributed.GatheredLoss(loss)(net(x_local), y_local)
        value.backward()
        out[f"ddp_{name}_value"] = value.detach().numpy()
        out[f"ddp_{name}_grad"] = model.weight.grad.numpy().copy()
    return out


def main(out_dir: str) -> None:
    torch.set_num_threads(1)
    distributed.init_from_env("gloo")
    rank, world = distributed.rank(), distributed.world_size()
    results = {**primitives(rank), **user_ddp_loop(), **estimators()}
    np.savez(Path(out_dir) / f"rank{rank}_of{world}.npz", **results)
    if distributed.is_distributed():
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
