#!/usr/bin/env bash
# The whole test suite on a fresh machine: a virtualenv with every extra, the real engines
# (scripts/services.sh), then pytest. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -e ".[all,dev]"
if [ -z "${COGMEM_SKIP_SERVICES:-}" ]; then
  eval "$(bash scripts/services.sh start)"
fi
exec .venv/bin/python -m pytest "$@"
