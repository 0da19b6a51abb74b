#!/usr/bin/env bash
# Fills the cache of the real-wheel corpus (tests/integration/support/real_wheels.py) ahead of the test
# suites: ${WHEELMERGE_WHEEL_CACHE:-$HOME/.cache/wheelmerge}/real-wheels/. Wheels already there
# are checked against their sha256; missing or damaged ones are downloaded (about 1.5 GB when
# the cache is empty). Arguments go to the fetcher: project names, --jobs N, --list.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python="$root/.venv/bin/python"
[[ -x $python ]] || python=python3
exec "$python" "$root/tests/integration/support/real_wheels.py" "$@"
