#!/usr/bin/env bash
# Installs wheelmerge for the composite action (ci/action.yml, its "Install wheelmerge" step)
# into a virtual environment of its own, so that the job's Python stays as it was.
#
# Environment (the action's inputs):
#   WM_SPEC        the pip requirement to install (the distribution is wheelmerge-cuda, e.g.
#                  wheelmerge-cuda==0.2.0); empty: the action's own checkout (this directory's
#                  parent, $GITHUB_ACTION_PATH/..), so that the tool is the one of the ref the
#                  action was taken from
#   WM_BUILD_DEPS  auto (default), true or false: install the distribution packages that building
#                  wheelmerge from source needs. auto: when WM_SPEC is built from source (a local
#                  directory, a source archive, or a VCS URL such as git+https://...)
#   WM_PYTHON      the Python that makes the environment (default python3)
#   WM_VENV        where the environment goes (default $RUNNER_TEMP/wheelmerge-venv)
#
# The binary's path is the last line on stdout and, with GITHUB_OUTPUT set, the output
# `wheelmerge`.
set -euo pipefail

# What building wheelmerge from source needs on Debian and Ubuntu: the list of scripts/setup.sh
# (tests/integration/ci/test_ci.py keeps the two the same).
apt_packages=(build-essential cmake ninja-build pkg-config zlib1g-dev libzip-dev libssl-dev
              libfmt-dev libutf8proc-dev libyaml-cpp-dev libtomlplusplus-dev doctest-dev libcli11-dev nlohmann-json3-dev patchelf
              python3-venv nasm)

say() { echo "install.sh: $*" >&2; }
die() {
  say "error: $*"
  [ -z "${GITHUB_ACTIONS:-}" ] || echo "::error title=wheelmerge::$*"
  exit 1
}

here=$(cd "$(dirname "$0")" && pwd)
spec=${WM_SPEC:-}
[ -n "$spec" ] || spec=$(cd "$here/.." && pwd)
python=${WM_PYTHON:-python3}
venv=${WM_VENV:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/wheelmerge-venv}

from_source() {
  case $1 in
    git+*|hg+*|svn+*|bzr+*|*" @ git+"*|*" @ hg+"*|*" @ svn+"*|*" @ bzr+"*) return 0 ;;
    *.tar.gz|*.zip|*.tar.bz2|*.tar.xz) return 0 ;;
  esac
  [ -d "$1" ]
}
deps=${WM_BUILD_DEPS:-auto}
case $deps in
  auto) if from_source "$spec"; then deps=true; else deps=false; fi ;;
  true|false) ;;
  *) die "install-build-deps must be auto, true or false, not '$deps'" ;;
esac

if [ "$deps" = true ]; then
  if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
    die "building wheelmerge from source needs apt-get (Debian or Ubuntu) for: ${apt_packages[*]}"
  fi
  missing=()
  for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing the build dependencies ${missing[*]}"
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
      command -v sudo >/dev/null || die "not root and no sudo to install ${missing[*]}"
      sudo=(sudo)
    fi
    "${sudo[@]}" apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
fi

command -v "$python" >/dev/null || die "no $python to install wheelmerge with"
say "installing wheelmerge ($spec) into $venv"
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar off "$spec"
wheelmerge="$venv/bin/wheelmerge"
[ -x "$wheelmerge" ] || die "installing $spec gave no wheelmerge command in $venv/bin"
say "installed wheelmerge $("$wheelmerge" --version)"
[ -z "${GITHUB_OUTPUT:-}" ] || echo "wheelmerge=$wheelmerge" >>"$GITHUB_OUTPUT"
echo "$wheelmerge"
