"""A rankmetric loss in your own PyTorch training loop
===================================================

A small MLP embeds the 8×8 digits of scikit-learn; ``WARPLoss`` (the loss behind WARCA) trains
it with plain Adam on random mini-batches. Recall@1 on held-out digits is printed before and
after training. Stratified half split, seed 0.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from rankmetric.evaluate import recall_at_k
from rankmetric.losses import WARPLoss

torch.manual_seed(0)
torch.set_num_threads(1)
X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X / 16.0, y, test_size=0.5, stratify=y, random_state=0
)
X_train, X_test = (
    torch.tensor(X_train, dtype=torch.float32),
    torch.tensor(X_test, dtype=torch.float32),
)
y_train = torch.tensor(y_train)

net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 16))
loss_fn = WARPLoss(margin=1.0)
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)


def test_recall() -> float:
    with torch.no_grad():
        return recall_at_k(net(X_test), y_test, ks=(1,))[1]


print(f"Recall@1 before training: {test_recall():.3f}")
rng = np.random.default_rng(0)
losses = []
for step in range(300):
    batch = torch.as_tensor(rng.choice(len(X_train), size=128, replace=False))
    loss = loss_fn(net(X_train[batch]), y_train[batch])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
    if step % 100 == 0:
        print(f"step {step:3d}  loss {loss.item():.3f}")
print(f"Recall@1 after training:  {test_recall():.3f}")

# %%
# The training curve: the WARP loss of each mini-batch, and its running mean over 20 steps.
fig, ax = plt.subplots(figsize=(6, 3.4))
ax.plot(losses, lw=0.8, alpha=0.5, label="mini-batch loss")
ax.plot(
    np.arange(19, len(losses)), np.convolve(losses, np.ones(20) / 20, "valid"), label="mean of 20"
)
ax.set_xlabel("step")
ax.set_ylabel("WARP loss")
ax.legend()
fig.tight_layout()
plt.show()
