#!/usr/bin/env bash
# Builds wheelmerge's binary wheels, one per platform, each `py3-none-PLATFORM` holding the Python
# package and one self-contained executable (build.sh), and the sdist, into DIST (default dist/).
# The wheels are made by the project's own PEP 517 build (scikit-build-core) with
# WHEELMERGE_PREBUILT naming the executable, then given their platform tag (`wheel tags`):
#
#   x86_64-linux-musl    manylinux2014_x86_64.manylinux_2_17_x86_64.musllinux_1_1_x86_64
#   aarch64-linux-musl   manylinux2014_aarch64.manylinux_2_17_aarch64.musllinux_1_1_aarch64
#   x86_64-macos.10.15   macosx_10_15_x86_64
#   aarch64-macos.11.0   macosx_11_0_arm64
#
# A static musl executable needs no libc at all, so one wheel serves glibc (>= 2.17) and musl
# Linux, as ziglang's own wheels on the index do (`wheel tags` writes the tags sorted).
# Reproducible: SOURCE_DATE_EPOCH is the last commit's time unless set. Prints the paths written.
#
#   scripts/static/wheels.sh [DIST] [TARGET...]      (default: the four targets above)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dist=$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(x86_64-linux-musl aarch64-linux-musl x86_64-macos.10.15 aarch64-macos.11.0)
python=${PYTHON:-$root/.venv/bin/python}
[ -x "$python" ] || { echo "wheels.sh: run scripts/setup.sh first (no $python)" >&2; exit 1; }
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct)}

platform_tag() {
  case $1 in
    x86_64-linux-musl) echo manylinux2014_x86_64.manylinux_2_17_x86_64.musllinux_1_1_x86_64 ;;
    aarch64-linux-musl) echo manylinux2014_aarch64.manylinux_2_17_aarch64.musllinux_1_1_aarch64 ;;
    x86_64-macos.10.15) echo macosx_10_15_x86_64 ;;
    aarch64-macos.11.0) echo macosx_11_0_arm64 ;;
    *) echo "wheels.sh: no platform tag for $1" >&2; return 1 ;;
  esac
}

work=$(mktemp -d "${TMPDIR:-/tmp}/wheelmerge-wheels.XXXXXX")
trap 'rm -rf "$work"' EXIT
for target in "${targets[@]}"; do
  tag=$(platform_tag "$target")
  exe=$("$here/build.sh" "$target")
  rm -rf "$work/$target" && mkdir -p "$work/$target"
  "$python" -m pip wheel -q --no-deps --disable-pip-version-check -w "$work/$target" \
    --config-settings=cmake.define.WHEELMERGE_PREBUILT="$exe" "$root" >&2
  built=("$work/$target"/*.whl)
  [ ${#built[@]} -eq 1 ] || { echo "wheels.sh: expected one wheel for $target, found ${built[*]}" >&2; exit 1; }
  "$python" -m wheel tags --remove --platform-tag "$tag" "${built[0]}" >/dev/null
  wheel=("$work/$target"/*-"$tag".whl)
  cp "${wheel[0]}" "$dist/"
  echo "$dist/${wheel[0]##*/}"
done
if [ "${WHEELMERGE_SDIST:-1}" = 1 ]; then
  "$python" -m build -q --sdist --outdir "$work/sdist" "$root" >&2
  cp "$work"/sdist/*.tar.gz "$dist/"
  echo "$dist/$(cd "$work/sdist" && ls ./*.tar.gz | cut -c3-)"
fi
