"""SPD geometry in batched, differentiable torch.

Matrix functions with a Daleckii–Krein backward (exact at repeated eigenvalues), the
affine-invariant and log-Euclidean distances, geodesics, Riemannian means, and the logarithmic /
exponential maps at a reference point in pyRiemann's tangent-space coordinates.
See ``docs/geometry.md``.
"""

from ._precision import half_as_float32
from .aliases import METRIC_ALIASES, canonical_metric
from .checks import check_spd
from .dispatch import distance, distance_functions, pairwise_distance, pairwise_distance_functions
from .distances import (
    airm_distance,
    euclidean_distance,
    log_euclidean_distance,
    pairwise_airm,
    pairwise_euclidean,
    pairwise_log_euclidean,
)
from .matrix_functions import (
    spd_clamp,
    spd_exp,
    spd_inv_sqrt,
    spd_log,
    spd_power,
    spd_sqrt,
    sym_function,
    sym_to_vec,
    symmetrize,
    vec_to_sym,
)
from .means import geodesic, log_euclidean_mean, riemannian_mean, spd_mean
from .tangent import congruence, exp_map, log_map, mean_whitening, whiten

# float16 / bfloat16 input: computed in float32, returned in the input's dtype (one helper,
# applied here to the public entry points only; the modules' own names stay unwrapped).
_HALF_AS_FLOAT32 = """
    sym_function spd_log spd_exp spd_sqrt spd_inv_sqrt spd_power spd_clamp
    airm_distance pairwise_airm log_euclidean_distance pairwise_log_euclidean
    euclidean_distance pairwise_euclidean distance pairwise_distance
    riemannian_mean log_euclidean_mean geodesic
"""
for _name in _HALF_AS_FLOAT32.split():
    globals()[_name] = half_as_float32(globals()[_name])
del _name

# alike: the package's public list names its modules' names again (explicit, as numpy and
# scikit-learn write theirs; the modules' own lists hold internal names too)
__all__ = [
    "METRIC_ALIASES",
    "canonical_metric",
    "check_spd",
    "sym_function",
    "symmetrize",
    "sym_to_vec",
    "vec_to_sym",
    "spd_log",
    "spd_exp",
    "spd_sqrt",
    "spd_inv_sqrt",
    "spd_power",
    "spd_clamp",
    "airm_distance",
    "pairwise_airm",
    "log_euclidean_distance",
    "pairwise_log_euclidean",
    "euclidean_distance",
    "pairwise_euclidean",
    "distance",
    "pairwise_distance",
    "distance_functions",
    "pairwise_distance_functions",
    "riemannian_mean",
    "log_euclidean_mean",
    "spd_mean",
    "geodesic",
    "log_map",
    "exp_map",
    "whiten",
    "congruence",
    "mean_whitening",
]
