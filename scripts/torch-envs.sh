#!/usr/bin/env bash
# Prepares one virtual environment per pinned torch release, for building and testing torch
# extensions (examples/torchdemo, examples/torchstable): torch 2.10.0 (built with CUDA 12.8),
# torch 2.11.0 (CUDA 13.0) and torch 2.15.0 (CUDA 13.2, the newest on the index when pinned,
# where a build against 2.11's stable ABI must run) from the package index, for CPython 3.11 (the
# project's .venv interpreter).
#
#   scripts/torch-envs.sh [VERSION...]     # default: 2.10.0 and 2.11.0
#
# Each release is downloaded once with its dependencies into $TORCH_CACHE/VERSION (default
# ~/.cache/wheelmerge/torch; about 4 GB for 2.10.0, 2.7 GB for 2.11.0, 2.8 GB for 2.15.0), torch's own wheel is
# checked against its pinned sha256, and the environment is made from that directory without
# the network (uv, which hardlinks files from its cache, so an environment costs little disk
# beyond the cache) in $TORCH_ENVS/VERSION (default ~/.cache/wheelmerge/torch-envs). An
# environment that is intact (made from the same pins, and imports torch) is reused. A lock per
# version keeps concurrent runs from clashing. The environment holds torch and setuptools (to
# build extensions with --no-build-isolation), no pip.
#
# Messages go to stderr; stdout gets one line per version: VERSION PYTHON-OF-ITS-ENVIRONMENT.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache_root=${TORCH_CACHE:-$HOME/.cache/wheelmerge/torch}
envs_root=${TORCH_ENVS:-$HOME/.cache/wheelmerge/torch-envs}
python=${PYTHON:-$root/.venv/bin/python}
uv_version=0.13.8
setuptools_version=81.0.0

# version, torch.version.cuda of that release, its wheel for cp311 manylinux x86_64, sha256.
pins=(
  "2.10.0 12.8 torch-2.10.0-3-cp311-cp311-manylinux_2_28_x86_64.whl ac5bdcbb074384c66fa160c15b1ead77839e3fe7ed117d667249afce0acabfac"
  "2.11.0 13.0 torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl 7aa2f9bbc6d4595ba72138026b2074be1233186150e9292865e04b7a63b8c67a"
  "2.15.0 13.2 torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl 48c2d861134c0b5697c7602cb5ffa68f62a2989fdcd1717e593356f67996ca1e"
)

say() { echo "torch-envs: $*" >&2; }
die() { say "error: $*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

[ -x "$python" ] || die "no Python at $python: run scripts/setup.sh, or set PYTHON"
"$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' ||
  die "$python is Python $("$python" -c 'import sys; print(*sys.version_info[:2], sep=".")'); the pinned wheels are for 3.11"

# uv makes the environments; the pinned release in the tools' environment when it has none.
uv=$(dirname "$python")/uv
if ! [ -x "$uv" ] || [ "$("$uv" --version | cut -d' ' -f2)" != "$uv_version" ]; then
  say "installing uv $uv_version into $(dirname "$(dirname "$python")")"
  "$python" -m pip install --quiet --disable-pip-version-check "uv==$uv_version" ||
    die "pip could not install uv $uv_version"
fi

pin_of() {
  local p
  for p in "${pins[@]}"; do
    [ "${p%% *}" = "$1" ] && { echo "$p"; return 0; }
  done
  return 1
}

# The directory holds the release and its dependencies when pip resolves them from it alone.
complete() {
  "$python" -m pip download --quiet --disable-pip-version-check --only-binary=:all: \
    --no-index --find-links "$1" -d "$1" "torch==$2" "setuptools==$setuptools_version" 2>/dev/null
}

prepare() {
  local version=$1 pin cuda wheel sha256 dir env stamp started found
  pin=$(pin_of "$version") || die "torch $version is not pinned here (pinned: $(printf '%s ' "${pins[@]%% *}"))"
  read -r _ cuda wheel sha256 <<<"$pin"
  dir=$cache_root/$version
  env=$envs_root/$version
  stamp="torch $version $sha256 cuda $cuda setuptools $setuptools_version python $("$python" -c 'import sys; print(sys.version.split()[0])')"

  mkdir -p "$dir" "$envs_root"
  exec 9>"$cache_root/$version.lock"
  flock 9  # one download and one environment at a time per version

  if [ -f "$env/.wheelmerge-torch-env" ] && [ "$(cat "$env/.wheelmerge-torch-env")" = "$stamp" ] &&
     found=$("$env/bin/python" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null) &&
     [ "$found" = "$version" ]; then
    say "torch $version: reusing $env"
    echo "$version $env/bin/python"
    return
  fi

  if ! complete "$dir" "$version"; then
    say "torch $version: downloading it and its dependencies into $dir"
    started=$(now)
    "$python" -m pip download --quiet --disable-pip-version-check --only-binary=:all: \
      -d "$dir" "torch==$version" "setuptools==$setuptools_version" ||
      die "pip could not download torch $version (see above)"
    say "torch $version: downloaded in $(since "$started") s, $(du -sh "$dir" | cut -f1) in $dir"
  fi
  [ -f "$dir/$wheel" ] || die "torch $version: $dir has no $wheel (found: $(cd "$dir" && ls torch-*.whl 2>/dev/null))"
  found=$(sha256sum "$dir/$wheel" | cut -d' ' -f1)
  [ "$found" = "$sha256" ] || die "torch $version: $dir/$wheel has sha256 $found, expected $sha256; remove it to download it again"

  say "torch $version: making $env from $dir (offline)"
  started=$(now)
  rm -rf "$env"
  "$uv" venv --quiet --python "$python" "$env" || die "uv could not make $env"
  "$uv" pip install --quiet --python "$env/bin/python" --offline --no-index --find-links "$dir" \
    --link-mode hardlink "torch==$version" "setuptools==$setuptools_version" ||
    die "uv could not install torch $version from $dir"
  say "torch $version: environment made in $(since "$started") s"

  started=$(now)
  found=$("$env/bin/python" -c 'import torch; print(torch.__version__.split("+")[0], torch.version.cuda)') ||
    die "torch $version: import torch fails in $env (see above)"
  [ "$found" = "$version $cuda" ] ||
    die "torch $version: $env has torch and CUDA '$found', expected '$version $cuda'"
  say "torch $version: import torch works ($(since "$started") s, CUDA $cuda)"
  echo "$stamp" >"$env/.wheelmerge-torch-env"  # written last: marks the environment intact
  echo "$version $env/bin/python"
}

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(2.10.0 2.11.0)
for version in "${versions[@]}"; do
  prepare "$version"
done
