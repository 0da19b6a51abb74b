# Sourced by ci/build.sh and ci/test.sh (the build and test actions' steps): where the job's uv
# is. uv_path PYTHON prints the uv on PATH, else the one beside PYTHON (a venv's), else the one
# `PYTHON -m pip install "$UV_REQUIREMENT"` puts beside it (the workflow's pin); with none of
# them and no UV_REQUIREMENT it says so on stderr and returns 2.
# shellcheck shell=bash
uv_path() {
  local python=$1 found
  found=$(command -v uv || true)
  if [ -z "$found" ] && [ -x "$(dirname "$python")/uv" ]; then found=$(dirname "$python")/uv; fi
  if [ -z "$found" ]; then
    if [ -z "${UV_REQUIREMENT:-}" ]; then
      echo "no uv on PATH or beside $python, and no UV_REQUIREMENT to install" >&2
      return 2
    fi
    "$python" -m pip install --disable-pip-version-check --progress-bar off "$UV_REQUIREMENT" >&2
    found=$(dirname "$python")/uv
  fi
  echo "$found"
}
