"""Save a fitted model and load it back
====================================

``save`` writes an ``.npz`` archive with JSON metadata and a SHA-256 per array; ``load`` reads it
with ``allow_pickle=False``, so loading a model file executes no code. The loaded model
transforms exactly as the saved one. Iris (bundled with scikit-learn), seed 0.
"""

import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning

from rankmetric import ITML, WARCA, load_model

torch.set_num_threads(1)
warnings.filterwarnings("ignore", category=ConvergenceWarning)  # a short budget, on purpose
X, y = load_iris(return_X_y=True)
models = [WARCA(n_components=2, max_iter=100, random_state=0, device="cpu"), ITML(random_state=0)]

with tempfile.TemporaryDirectory() as folder:
    for model in models:
        model.fit(X, y)
        path = Path(folder) / f"{type(model).__name__.lower()}.npz"
        model.save(path)
        same_class = type(model).load(path)  # checks that the file holds this class
        any_class = load_model(path)  # or let the file say what it holds
        assert np.array_equal(same_class.transform(X), model.transform(X))
        assert np.array_equal(any_class.transform(X), model.transform(X))
        print(f"{type(any_class).__name__}: {path.stat().st_size} bytes, transform identical")
