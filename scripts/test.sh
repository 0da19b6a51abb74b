#!/usr/bin/env bash
# Sets up (scripts/setup.sh), then runs every suite: the doctest unit tests through ctest and
# the integration suites of the real binary with pytest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
cd "$root"
ctest --test-dir build --output-on-failure
WHEELMERGE="$root/build/wheelmerge" .venv/bin/python -m pytest tests/integration -q -p no:cacheprovider "$@"
