"""Verification from pairs: learner → calibrated threshold → ROC AUC, EER and TAR@FAR
==================================================================================

A user who has only labelled *pairs* ("same digit" / "different digit"), no class labels, fits
KISSME on them through :class:`rankmetric.PairClassifier`, calibrates the decision threshold on
separate validation pairs (highest true accept rate with a true reject rate of at least 95%),
then scores held-out pairs of unseen items: accuracy of the calibrated decision, and the
verification metrics of the learned distance vs the Euclidean one. scikit-learn's digits,
items split in three (train / validation / test), seed 0.
"""

import numpy as np
from sklearn.datasets import load_digits

from rankmetric import KISSME, PairClassifier
from rankmetric.evaluate import verification_scores

rng = np.random.default_rng(0)
X, digit = load_digits(return_X_y=True)
items = rng.permutation(len(X))
parts = np.array_split(items, 3)  # train / validation / test items: no item is shared


def random_pairs(part, count):
    """Random pairs of distinct items of one part, labelled +1 (same digit) or -1."""
    a, b = rng.choice(part, size=(2, count))
    keep = a != b
    a, b = a[keep], b[keep]
    return np.stack([X[a], X[b]], axis=1), np.where(digit[a] == digit[b], 1, -1)


train, train_y = random_pairs(parts[0], 4000)
valid, valid_y = random_pairs(parts[1], 2000)
test, test_y = random_pairs(parts[2], 4000)

clf = PairClassifier(KISSME(n_components=24)).fit(train, train_y)  # stacked (n, 2, 64) pairs
clf.calibrate_threshold(valid, valid_y, strategy="max_tpr", min_rate=0.95)
pred = clf.predict(test)
tar = np.mean(pred[test_y > 0] == 1)
trr = np.mean(pred[test_y < 0] == -1)
print(
    f"calibrated threshold {clf.threshold_:.3f}: accuracy {clf.score(test, test_y):.3f}, "
    f"true accept rate {tar:.3f}, true reject rate {trr:.3f} on test pairs"
)

for name, distances in [
    ("Euclidean", np.linalg.norm(test[:, 0] - test[:, 1], axis=1)),
    ("KISSME", clf.pair_distances(test)),
]:
    s = verification_scores(distances, test_y > 0, far=(1e-1, 1e-2))
    print(
        f"{name:>9}: ROC AUC {s['roc_auc']:.3f}, EER {s['eer']:.3f}, "
        f"TAR@FAR=1e-1 {s['tar_at_far'][0.1][0]:.3f}, TAR@FAR=1e-2 {s['tar_at_far'][0.01][0]:.3f}"
    )
