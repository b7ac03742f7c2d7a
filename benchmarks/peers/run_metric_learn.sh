#!/usr/bin/env bash
# Run metric-learn 0.7.0 (LMNN, ITML_Supervised) on the shared 5x2 CV protocol, in its own venv.
#
#   bash benchmarks/peers/run_metric_learn.sh [OUT.json] [--datasets iris,wine] [--repeats 5]
#   bash benchmarks/peers/run_metric_learn.sh --setup-only      # build the venv and stop
#
# metric-learn 0.7.0 passes `force_all_finite=` to scikit-learn's check_array, removed in
# scikit-learn 1.8, so the newest scikit-learn it runs on is 1.7.x (checked: 1.7.2 works with a
# FutureWarning, 1.8 raises TypeError). The venv lives in benchmarks/peers/.venv-ml.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
VENV="${ML_VENV:-$HERE/.venv-ml}"
PYTHON="${PYTHON:-python3}"
OUT="${1:-$HERE/../../results/peers/metric_learn.json}"
shift || true

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import metric_learn" 2>/dev/null; then
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet "scikit-learn==1.7.*" "metric-learn==0.7.0" numpy scipy
fi

[ "$OUT" = "--setup-only" ] && exit 0
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
"$VENV/bin/python" "$HERE/metric_learn_side.py" "$OUT" "$@"
