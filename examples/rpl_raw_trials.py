"""RPL on raw multichannel trials, in a pyRiemann-style pipeline
=============================================================

BasicMotions (UEA archive, fetched by ``rankmetric data fetch BasicMotions``): 6 motion-sensor
channels, 100 time samples, 4 activities; the official train/test split (40/40 trials).
``Covariances`` turns each trial into a 6×6 SPD matrix, ``RPLEmbedding`` learns an SPDNet
embedding with the Riemannian-potato ranking loss, and 1-NN classifies. Seed 0.
"""

import torch
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline

from rankmetric import RPLEmbedding
from rankmetric.datasets import load_dataset
from rankmetric.preprocessing import Covariances

torch.set_num_threads(1)
data = load_dataset("BasicMotions")
print("raw trials:", data.X.shape, "(trials, channels, time samples)")

model = make_pipeline(
    Covariances(estimator="oas"),
    RPLEmbedding(max_iter=100, random_state=0, device="cpu"),
    KNeighborsClassifier(1),
)
model.fit(data.X, data.y)
print(f"1-NN accuracy on the test trials: {model.score(data.X_test, data.y_test):.3f}")

# pyRiemann's own Covariances output is accepted as is, when pyRiemann is installed.
try:
    from pyriemann.estimation import Covariances as PyRiemannCovariances
except ImportError:
    pass
else:
    model.steps[0] = ("covariances", PyRiemannCovariances(estimator="oas"))
    model.fit(data.X, data.y)
    print(f"same pipeline, pyRiemann's Covariances: {model.score(data.X_test, data.y_test):.3f}")
