#!/usr/bin/env bash
# Builds one variant of a project with `wheelmerge build --no-merge`, exactly as it builds locally
# (the project's backend, build isolation, [tool.wheelmerge] and [tool.wheelmerge.LABEL]: env,
# build-requires, toolkit, backend), then repairs it when asked: the work of the build action
# (ci/build/action.yml, its "Build the variant" step) and of the rehearsal's build jobs
# (ci/rehearse.sh), which run it the same way.
#
#   ci/build.sh --label LABEL [--package-dir DIR] [--output-dir DIR] [--torch-index URL]
#               [--repair-command CMD]
#
# --label: the variant label (cuNN, torchMmm_cuNN, torchMmmplus_cuNN, torchMmm_cpu, x86_64_vN);
#   wheelmerge reads it, this script only passes it on.
# --package-dir: the project's directory (default .).
# --output-dir: where the labelled wheel NAME.LABEL.whl and its build-info.json go (default
#   .wheelmerge/wheelhouse), emptied first. build-info.json is `wheelmerge build --json`'s summary
#   of the build (what it was compiled against); ci/merge.sh gives it to the merge (--build-info).
# --torch-index: the package index torch labels install torch from, searched before the default
#   index (uv's UV_INDEX; the label's torch release is a build requirement of its own).
# --repair-command: run on the built wheel, {wheel} and {dest_dir} replaced as in cibuildwheel;
#   it sees the wheel under its own name (auditwheel reads the name's tags) and must leave one
#   wheel in {dest_dir}, which is labelled again.
#
# The toolkit of a CUDA major N: what `wheelmerge build` finds (WHEELMERGE_CUDA_N, which the
# workflow's container and apt steps set, then CUDA_HOME, /usr/local/cuda-N.*, nvcc on PATH).
# The build's Python: `python` on PATH. Isolated build environments are made with uv: the one
# on PATH, else `pip install $UV_REQUIREMENT` into that Python. The binary is $WHEELMERGE, else
# wheelmerge on PATH. The wheel's path is the last line on stdout and, with GITHUB_OUTPUT set,
# the output `wheel` (and `wheelhouse`, its directory). Exit status: wheelmerge's own when it
# fails, 2 for a usage error of this script, 1 when the repair fails.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

say() { echo "build.sh: $*" >&2; }
fail() {
  say "error: $2"
  [ -z "${GITHUB_ACTIONS:-}" ] || echo "::error title=wheelmerge::$2"
  exit "$1"
}

label="" package_dir=. output_dir=.wheelmerge/wheelhouse torch_index="" repair=""
while [ $# -gt 0 ]; do
  case $1 in
    --label|--package-dir|--output-dir|--torch-index|--repair-command)
      [ $# -ge 2 ] || fail 2 "$1 needs a value"
      case $1 in
        --label) label=$2 ;;
        --package-dir) package_dir=$2 ;;
        --output-dir) output_dir=$2 ;;
        --torch-index) torch_index=$2 ;;
        --repair-command) repair=$2 ;;
      esac
      shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) fail 2 "unknown argument $1 (see --help)" ;;
  esac
done
[ -n "$label" ] || fail 2 "--label is required"
[ -d "$package_dir" ] || fail 2 "--package-dir $package_dir is not a directory"
[ -n "$output_dir" ] || fail 2 "--output-dir is empty"
wheelmerge=${WHEELMERGE:-$(command -v wheelmerge || true)}
if [ -z "$wheelmerge" ] || [ ! -x "$wheelmerge" ]; then fail 2 "no wheelmerge: set WHEELMERGE or put wheelmerge on PATH"; fi
python=$(command -v python) || fail 2 "no python on PATH to build with"

# shellcheck source=ci/uv.sh
source "$here/uv.sh"
uv_path "$python" >/dev/null || fail 2 "no uv to build with (wheelmerge build --installer uv finds it on PATH or beside $python)"
# The label's torch is searched for on the index that has the builds of its CUDA major first.
[ -z "$torch_index" ] || export UV_INDEX="$torch_index"

scratch=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/wheelmerge-build.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
rm -rf "$output_dir"
mkdir -p "$output_dir"
command=("$wheelmerge" build "$package_dir" --variant "$label" --no-merge --installer uv --python "$python"
         -o "$scratch/built" --json)
say "running: ${command[*]}"
status=0
"${command[@]}" >"$scratch/build.json" || status=$?
[ "$status" -eq 0 ] || { say "error: wheelmerge build failed with exit status $status"; exit "$status"; }

built=("$scratch"/built/*.whl)
if [ "${#built[@]}" -ne 1 ] || [ ! -f "${built[0]}" ]; then
  fail 1 "expected one wheel from the build, found ${built[*]}"
fi
name=${built[0]##*/}
if [ -n "$repair" ]; then
  # The repair tool sees the wheel under the name the backend gave it, without the label.
  plain=${name%".$label.whl"}.whl
  mkdir -p "$scratch/plain" "$scratch/repaired"
  mv "${built[0]}" "$scratch/plain/$plain"
  repair=${repair//\{wheel\}/$scratch/plain/$plain}
  repair=${repair//\{dest_dir\}/$scratch/repaired}
  say "repair: $repair"
  bash -eo pipefail -c "$repair" || fail 1 "the repair command failed: $repair"
  repaired=("$scratch"/repaired/*.whl)
  if [ "${#repaired[@]}" -ne 1 ] || [ ! -f "${repaired[0]}" ]; then
    fail 1 "expected one wheel from the repair command, found ${repaired[*]}"
  fi
  name=${repaired[0]##*/}
  name=${name%.whl}.$label.whl
  built=("${repaired[0]}")
fi
mv "${built[0]}" "$output_dir/$name"
cp "$scratch/build.json" "$output_dir/build-info.json"
say "built $output_dir/$name"
[ -z "${GITHUB_OUTPUT:-}" ] || { echo "wheel=$output_dir/$name"; echo "wheelhouse=$output_dir"; } >>"$GITHUB_OUTPUT"
echo "$output_dir/$name"
