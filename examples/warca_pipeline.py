"""WARCA in a scikit-learn pipeline
================================

Standardise the wine features, learn a 6-dimensional WARCA metric, classify with 3-NN, and
compare with 3-NN on the standardised features alone. The data set ships with scikit-learn
(no download); the split is a stratified half, seed 0.
"""

import warnings

import matplotlib.pyplot as plt
import torch
from sklearn.datasets import load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from rankmetric import WARCA

torch.set_num_threads(1)
warnings.filterwarnings("ignore", category=ConvergenceWarning)  # a short budget, on purpose
X, y = load_wine(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)

euclidean = make_pipeline(StandardScaler(), KNeighborsClassifier(3))
warca = make_pipeline(
    StandardScaler(),
    WARCA(n_components=6, max_iter=200, random_state=0, device="cpu"),
    KNeighborsClassifier(3),
)
for name, model in [("Euclidean", euclidean), ("WARCA", warca)]:
    model.fit(X_train, y_train)
    print(f"{name:>9} 3-NN accuracy: {model.score(X_test, y_test):.3f}")

# The fitted WARCA step is an ordinary scikit-learn transformer: pandas output, feature names.
scaler, metric = warca[0], warca[1]
metric.set_output(transform="pandas")
print(metric.transform(scaler.transform(X_test[:3])).round(2))
print("feature names:", list(metric.get_feature_names_out()))
print("learned Mahalanobis matrix:", metric.get_mahalanobis_matrix().shape)

# %%
# The test wines in the first two WARCA components, beside the first two standardised
# features: the learned map pulls each cultivar together and the cultivars apart.
metric.set_output(transform="default")
Z = metric.transform(scaler.transform(X_test))
S = scaler.transform(X_test)
fig, axes = plt.subplots(1, 2, figsize=(8, 3.6))
for ax, points, title in [(axes[0], S, "standardised features 1-2"), (axes[1], Z, "WARCA 1-2")]:
    for label in sorted(set(y_test)):
        ax.scatter(*points[y_test == label, :2].T, s=14, label=f"cultivar {label}")
    ax.set_title(title)
axes[1].legend(loc="best", fontsize=8)
fig.tight_layout()
plt.show()
