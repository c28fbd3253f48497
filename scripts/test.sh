#!/usr/bin/env bash
# The whole test suite on a fresh machine: a virtualenv with every extra, the real engines
# (scripts/services.sh), then pytest. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -e ".[all,dev]"
# The inspector page is tested in headless Chromium: Debian's package (playwright drives it; no
# browser download). Point COGMEM_TEST_CHROMIUM at another build to use that instead.
if [ -z "${COGMEM_TEST_CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    (apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends chromium >/dev/null; }) \
      || echo "scripts/test.sh: could not install chromium; the inspector's browser tests will not run" >&2
  else
    echo "scripts/test.sh: no chromium (apt-get install chromium, or set COGMEM_TEST_CHROMIUM)" >&2
  fi
fi
if [ -z "${COGMEM_SKIP_SERVICES:-}" ]; then
  eval "$(bash scripts/services.sh start)"
fi
exec .venv/bin/python -m pytest "$@"
