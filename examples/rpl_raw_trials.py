"""RPL on raw multichannel trials, in a pyRiemann-style pipeline
=============================================================

BasicMotions (UEA archive, fetched by ``rankmetric data fetch BasicMotions``): 6 motion-sensor
channels, 100 time samples, 4 activities; the official train/test split (40/40 trials).
``Covariances`` turns each trial into a 6×6 SPD matrix, ``RPLEmbedding`` learns an SPDNet
embedding with the Riemannian-potato ranking loss, and 1-NN classifies. Seed 0.

On this easy set the untrained network (the tangent space at the training matrices' Riemannian
mean) already ranks every held-out trial right, so training cannot beat it on validation and
the fit keeps it; it says so with a warning (printed here) instead of returning it silently.
"""

import warnings

import torch
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline

from rankmetric import RPLEmbedding
from rankmetric.datasets import load_dataset
from rankmetric.preprocessing import Covariances

torch.set_num_threads(1)
data = load_dataset("BasicMotions")
print("raw trials:", data.X.shape, "(trials, channels, time samples)")


def fit_and_report(model) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(data.X, data.y)
    for w in caught:  # the first sentence: why the untrained network was kept
        print("warning:", str(w.message).split(" What to try")[0])
    print(f"kept step {model[-2].best_iter_} of {model[-2].n_iter_}")


model = make_pipeline(
    Covariances(estimator="oas"),
    RPLEmbedding(max_iter=100, random_state=0, device="cpu"),
    KNeighborsClassifier(1),
)
fit_and_report(model)
print(f"1-NN accuracy on the test trials: {model.score(data.X_test, data.y_test):.3f}")

# pyRiemann's own Covariances output is accepted as is, when pyRiemann is installed.
try:
    from pyriemann.estimation import Covariances as PyRiemannCovariances
except ImportError:
    pass
else:
    model.steps[0] = ("covariances", PyRiemannCovariances(estimator="oas"))
    fit_and_report(model)
    print(f"same pipeline, pyRiemann's Covariances: {model.score(data.X_test, data.y_test):.3f}")
