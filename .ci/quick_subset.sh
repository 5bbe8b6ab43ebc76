#!/usr/bin/env bash
# A quick subset on another Python: the core and command-line tests, the on-policy fusion-mode
# sweep, the exported programs (which read LAPACK calls from JAX's printed StableHLO) and one
# training run, in a fresh virtual environment with the newest JAX the pin allows,
# or the one a constraint names.
#   bash .ci/quick_subset.sh 3.13
#   bash .ci/quick_subset.sh 3.12 "jax<0.12"
set -euo pipefail
cd "$(dirname "$0")/.."
version=$1
constraint=${2:-}
python=$(ls -d "$HOME"/.pyenv/versions/"$version".*/bin/python 2>/dev/null | sort -V | tail -1)
if [ -z "$python" ]; then
    echo "quick subset: no Python $version under ~/.pyenv/versions" >&2
    exit 1
fi
venv=.ci-venv-py$version
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
constraints=$(mktemp)
echo "$constraint" > "$constraints"
"$venv/bin/pip" install -q -c "$constraints" -e . pytest pytest-timeout pytest-xdist hypothesis
"$venv/bin/python" -c "import sys, jax; print(f'quick subset: Python {sys.version.split()[0]}, JAX {jax.__version__}')"
"$venv/bin/python" -m pytest tests/core tests/cli tests/policies/test_fusion.py \
    tests/policies/test_exported.py -p no:cacheprovider -q
(cd "$(mktemp -d)" && "$OLDPWD/$venv/bin/jaxrl-fdg" train --total-steps 20480 --out '' --no-progress | grep -E '^(completed|final return)')
