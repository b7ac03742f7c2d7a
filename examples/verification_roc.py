"""ROC curves for verification from pairs
=======================================

SSNE learns a similarity from same/different pairs alone (no class labels): 200 people of a
re-id stand-in (``make_synthetic_reid``, two images each), the pairs of each person's two
images and as many pairs of two different people, targets +1 and −1. On pairs of 120 people it
never saw, its ROC curve is compared with the Euclidean distance of the raw features; the
printed EER is where false accepts equal false rejects. Seed 0.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.metrics import roc_auc_score, roc_curve

from rankmetric import SSNE
from rankmetric.datasets import make_synthetic_reid

torch.set_num_threads(1)
n = 320
data = make_synthetic_reid(n_identities=n, random_state=1)  # rows i and i + n: person i
people = np.random.default_rng(0).permutation(n)


def pairs_of(persons):
    pairs = np.r_[np.c_[persons, persons + n], np.c_[persons, np.roll(persons, 1) + n]]
    return pairs, np.r_[np.ones(len(persons)), np.zeros(len(persons))]


train_pairs, train_same = pairs_of(people[:200])
test_pairs, test_same = pairs_of(people[200:])
model = SSNE(n_components=16, random_state=0, device="cpu")
model.fit_pairs(data.X, train_pairs, 2 * train_same - 1)

a, b = data.X[test_pairs[:, 0]], data.X[test_pairs[:, 1]]
scores = {"Euclidean": -np.linalg.norm(a - b, axis=1), "SSNE": model.score_pairs(a, b)}
fig, ax = plt.subplots(figsize=(4.6, 4.2))
for name, score in scores.items():
    fpr, tpr, _ = roc_curve(test_same, score)
    eer = fpr[np.argmin(np.abs(fpr - (1 - tpr)))]
    print(f"{name:>9}: ROC AUC {roc_auc_score(test_same, score):.3f}, EER {eer:.3f}")
    ax.plot(fpr, tpr, label=f"{name} (AUC {roc_auc_score(test_same, score):.2f})")
ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
ax.set_xlabel("false accept rate")
ax.set_ylabel("true accept rate")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()
