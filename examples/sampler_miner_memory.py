"""Sampler, miner and memory bank: a PML-style training loop with rankmetric
=========================================================================

A small MLP embeds the 8×8 digits of scikit-learn. A ``ClassBalancedBatchSampler`` feeds a
``DataLoader`` batches of 4 classes × 8 digits; a ``MultiSimilarityMiner`` picks the informative
pairs of each batch against a ``CrossBatchMemory`` of the last 256 embeddings, and the
``MultiSimilarityLoss`` trains on them. ``retrieval_scores`` reports Recall@K, precision@1 and
mAP@R of held-out digits (queries: the test half; gallery: the training half) before and after
training. Stratified half split, seed 0.
"""

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from rankmetric.evaluate import retrieval_scores
from rankmetric.losses import CrossBatchMemory, MultiSimilarityLoss, MultiSimilarityMiner
from rankmetric.sampling import ClassBalancedBatchSampler

torch.manual_seed(0)
torch.set_num_threads(1)
X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X / 16.0, y, test_size=0.5, stratify=y, random_state=0
)
train = torch.utils.data.TensorDataset(
    torch.tensor(X_train, dtype=torch.float32), torch.tensor(y_train)
)
sampler = ClassBalancedBatchSampler(y_train, n_classes=4, n_per_class=8, random_state=0)
loader = torch.utils.data.DataLoader(train, batch_sampler=sampler)

net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 16))
loss_fn = CrossBatchMemory(MultiSimilarityLoss(), size=256, miner=MultiSimilarityMiner(0.1))
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)


def scores() -> dict[str, float]:
    with torch.no_grad():
        gallery = net(torch.tensor(X_train, dtype=torch.float32))
        queries = net(torch.tensor(X_test, dtype=torch.float32))
    return retrieval_scores(gallery, y_train, (1, 3), queries, y_test, metric="cosine")


def show(when: str, result: dict[str, float]) -> None:
    print(f"{when:6s} " + "  ".join(f"{k} {v:.3f}" for k, v in result.items()))


show("before", scores())
print(f"{len(sampler)} batches of {sampler.batch_size} per epoch")
for epoch in range(4):
    sampler.set_epoch(epoch)
    losses = []
    for xb, yb in loader:
        loss = loss_fn(net(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print(f"epoch {epoch}  mean loss {np.mean(losses):.3f}  memory holds {loss_fn.n_filled}")
show("after", scores())
