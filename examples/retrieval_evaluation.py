"""Retrieval and clustering evaluation of embeddings
=================================================

Embed the digits of scikit-learn with LMNN and compare, with the raw pixels, the metrics of
``rankmetric.evaluate``: Recall@K and mAP@R (each test digit queries the others, leave-one-out),
k-NN accuracy, and NMI / pairwise F1 of k-means on the embedding. Stratified half split, seed 0.
"""

import warnings

import matplotlib.pyplot as plt
import torch
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from rankmetric import LMNN
from rankmetric.evaluate import clustering_scores, knn_accuracy, recall_at_k, retrieval_scores

torch.set_num_threads(1)
warnings.filterwarnings("ignore", category=ConvergenceWarning)  # a short budget, on purpose
X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)
scaler = StandardScaler().fit(X_train)
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)

lmnn = LMNN(n_components=20, max_iter=30, random_state=0, device="cpu").fit(X_train, y_train)
embeddings = {
    "pixels": (X_train, X_test),
    "LMNN": (lmnn.transform(X_train), lmnn.transform(X_test)),
}

for name, (E_train, E_test) in embeddings.items():
    retrieval = retrieval_scores(E_test, y_test, ks=(1, 4))
    clusters = clustering_scores(E_test, y_test, random_state=0)
    accuracy = knn_accuracy(E_train, y_train, E_test, y_test, k=3)
    print(
        f"{name:>6}: "
        + ", ".join(f"{k} {v:.3f}" for k, v in retrieval.items())
        + f", 3-NN accuracy {accuracy:.3f}, "
        + ", ".join(f"{k} {v:.3f}" for k, v in clusters.items())
    )

# %%
# Recall@K for K = 1..10: the fraction of test digits with a digit of their own class among
# their K nearest test digits.
ks = list(range(1, 11))
fig, ax = plt.subplots(figsize=(6, 3.4))
for name, (_, E_test) in embeddings.items():
    recall = recall_at_k(E_test, y_test, ks=ks)
    ax.plot(ks, [recall[k] for k in ks], marker="o", label=name)
ax.set_xlabel("K")
ax.set_ylabel("Recall@K")
ax.legend()
fig.tight_layout()
plt.show()
