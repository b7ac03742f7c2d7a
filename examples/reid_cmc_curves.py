"""CMC curves for person re-identification
========================================

WARCA and XQDA learn a metric from the images of half the people of a two-camera re-id stand-in
(``make_synthetic_reid``: 316 people, one image per camera, 64 features mixing identity with
camera and nuisance variation; VIPeR itself cannot be had here). The other half's camera-0
images query their camera-1 images; the CMC curve is the fraction of queries whose person is
among the first r gallery images. Seed 0.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch

from rankmetric import WARCA, XQDA
from rankmetric.datasets import make_synthetic_reid
from rankmetric.evaluate import cmc_curve

torch.set_num_threads(1)
data = make_synthetic_reid(n_identities=316, random_state=0)
rng = np.random.default_rng(0)
people = rng.permutation(np.unique(data.ids))
train = np.isin(data.ids, people[:158])
probe, gallery = ~train & (data.camera == 0), ~train & (data.camera == 1)

embeddings = {"Euclidean": lambda Z: Z}
for model in (WARCA(n_components=32, random_state=0, device="cpu"), XQDA()):
    model.fit(data.X[train], data.ids[train])
    embeddings[type(model).__name__] = model.transform

curves = {}
for name, embed in embeddings.items():
    scores, curves[name] = cmc_curve(
        embed(data.X[probe]),
        data.ids[probe],
        embed(data.X[gallery]),
        data.ids[gallery],
        ranks=(1, 5, 10, 20),
        return_curve=True,
    )
    print(f"{name:>9}: " + ", ".join(f"CMC@{r} {v:.3f}" for r, v in scores.items()))

# %%
# The whole curves, rank 1 to 50 of the 158 gallery images.
fig, ax = plt.subplots(figsize=(6, 3.6))
ranks = np.arange(1, 51)
for name, curve in curves.items():
    ax.plot(ranks, curve[:50], label=name)
ax.set_xlabel("rank r")
ax.set_ylabel("CMC(r)")
ax.set_ylim(0, 1)
ax.legend()
fig.tight_layout()
plt.show()
