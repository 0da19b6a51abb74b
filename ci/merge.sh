#!/usr/bin/env bash
# Merges the per-variant wheels found under a directory into one wheel, then checks the result:
# the work of the composite action (ci/action.yml, its "Merge the wheels" step) and of the
# rehearsal's merge job (ci/rehearse.sh), which run it the same way.
#
#   ci/merge.sh --artifact-dir DIR [--output-dir DIR] [--labels 'PATTERN=LABEL ...']
#               [--variant-files 'GLOB ...'] [--variant-file GLOB]... [--driver-fallback]
#
# --artifact-dir: searched recursively for *.whl (actions/download-artifact puts each artifact
#   in a directory of its own). Every wheel found is an input.
# --output-dir: where the merged wheel goes (default wheelmerge-dist), created if missing.
# --labels: whitespace-separated PATTERN=LABEL (cuNN, torchMmm_cuNN, x86_64_vN, ...), for inputs
#   whose names carry no label (no .LABEL suffix, no +cuNN local version). PATTERN is a shell pattern matched against each wheel's path
#   relative to --artifact-dir and against its file name; it must match exactly one wheel.
# --variant-files / --variant-file: wheelmerge merge --variant-file, whitespace-separated / one.
# --driver-fallback: wheelmerge merge --driver-fallback.
# A build-info.json under --artifact-dir (ci/build.sh writes one beside each wheel) gives its
#   builds' build_info (wheelmerge merge --build-info LABEL:KEY=VALUE) and the project's
#   variant-files and driver-fallback to the merge, as `wheelmerge build` merges.
#
# The binary is $WHEELMERGE, else wheelmerge on PATH. The merged wheel's path is the last line
# on stdout; with GITHUB_OUTPUT set it is also written there as `wheel` (and the variant labels,
# space-separated, as `variants`), and with GITHUB_STEP_SUMMARY set a summary is added there.
# Exit status: wheelmerge's own (2 usage, 3 invalid input wheel, 4 merge conflict, 1 other)
# when it fails, 2 for a usage error of this script, 1 when the merged wheel fails inspection.
set -euo pipefail

say() { echo "merge.sh: $*" >&2; }
usage_error() {
  say "error: $*"
  [ -z "${GITHUB_ACTIONS:-}" ] || echo "::error title=wheelmerge::$*"
  exit 2
}

artifact_dir="" output_dir=wheelmerge-dist labels="" driver_fallback=0
variant_files=()
while [ $# -gt 0 ]; do
  case $1 in
    --artifact-dir|--output-dir|--labels|--variant-files|--variant-file)
      [ $# -ge 2 ] || usage_error "$1 needs a value"
      case $1 in
        --artifact-dir) artifact_dir=$2 ;;
        --output-dir) output_dir=$2 ;;
        --labels) labels=$2 ;;
        --variant-files)  # whitespace-separated, without pathname expansion
          read -r -d '' -a globs <<<"$2" || true
          variant_files+=("${globs[@]}") ;;
        --variant-file) variant_files+=("$2") ;;
      esac
      shift 2 ;;
    --driver-fallback) driver_fallback=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument $1 (see --help)" ;;
  esac
done
[ -n "$artifact_dir" ] || usage_error "--artifact-dir is required"
[ -d "$artifact_dir" ] || usage_error "--artifact-dir $artifact_dir is not a directory"
[ -n "$output_dir" ] || usage_error "--output-dir is empty"

wheelmerge=${WHEELMERGE:-}
if [ -z "$wheelmerge" ]; then
  wheelmerge=$(command -v wheelmerge) || usage_error "no wheelmerge: set WHEELMERGE or put wheelmerge on PATH"
fi
[ -x "$wheelmerge" ] || usage_error "WHEELMERGE=$wheelmerge is not an executable"
python=$(command -v python3 || command -v python) || usage_error "python3 is needed to read wheelmerge's JSON"

# The inputs, in a stable order (paths sorted bytewise; wheelmerge's output does not depend on
# it), less anything in the output directory should it lie inside the artifact directory.
mkdir -p "$output_dir"
output_abs=$(cd "$output_dir" && pwd -P)
wheels=()
while IFS= read -r -d '' wheel; do
  case $(cd "$(dirname "$wheel")" && pwd -P)/ in "$output_abs"/*) continue ;; esac
  wheels+=("$wheel")
done < <(find "$artifact_dir" -type f -name '*.whl' -print0 | LC_ALL=C sort -z)
[ ${#wheels[@]} -gt 0 ] || usage_error "no *.whl under $artifact_dir"
say "found ${#wheels[@]} wheel(s) under $artifact_dir:"
for wheel in "${wheels[@]}"; do say "  ${wheel#"$artifact_dir"/}"; done

# Explicit labels: PATTERN=LABEL, each matching exactly one input.
declare -A label_of=()
read -r -d '' -a label_words <<<"$labels" || true
for pair in "${label_words[@]}"; do
  pattern=${pair%=*}
  label=${pair##*=}
  [[ $pair == *=* && -n $pattern ]] || usage_error "--labels: '$pair' is not PATTERN=LABEL"
  # wheelmerge checks the label itself; here only that it is one word of a label's characters.
  [[ $label =~ ^[a-z0-9_]+$ ]] || usage_error "--labels: '$pair': the label must be a variant label (cuNN, torchMmm_cuNN, x86_64_vN, ...)"
  matched=()
  for wheel in "${wheels[@]}"; do
    relative=${wheel#"$artifact_dir"/}
    # shellcheck disable=SC2053  # the right-hand side is a pattern on purpose
    if [[ $relative == $pattern || ${wheel##*/} == $pattern ]]; then matched+=("$wheel"); fi
  done
  [ ${#matched[@]} -eq 1 ] ||
    usage_error "--labels: '$pattern' matches ${#matched[@]} of the wheels under $artifact_dir, not one${matched[*]:+: ${matched[*]}}"
  if [ -n "${label_of["${matched[0]}"]:-}" ]; then
    usage_error "--labels: ${matched[0]} is labelled twice"
  fi
  label_of["${matched[0]}"]=$label
done

inputs=()
for wheel in "${wheels[@]}"; do
  inputs+=("$wheel${label_of[$wheel]:+=${label_of[$wheel]}}")
done
options=()
for glob in "${variant_files[@]}"; do options+=(--variant-file "$glob"); done
[ "$driver_fallback" = 0 ] || options+=(--driver-fallback)
# What `wheelmerge build` would have merged with: the build-info.json that ci/build.sh puts beside
# each wheel (wheelmerge build's summary) gives what each build was compiled against (the loader's
# build_info()) and the project's merge settings ([tool.wheelmerge] variant-files, driver-fallback, runtime-requirements;
# given more than once when several builds carry them, which wheelmerge takes as one).
while IFS= read -r -d '' info; do
  words=$("$python" - "$info" <<'EOF'
import json, sys
summary = json.load(open(sys.argv[1]))
for variant in summary["variants"]:
    for key, value in sorted(variant["build_info"].items()):
        print(f"--build-info\n{variant['label']}:{key}={value}")
for glob in summary["merge"]["variant_files"]:
    print(f"--variant-file\n{glob}")
if summary["merge"]["driver_fallback"]:
    print("--driver-fallback")
if summary["merge"].get("runtime_requirements"):
    print("--runtime-requirements")
EOF
  ) || usage_error "$info is not the build-info.json of wheelmerge build --no-merge --json"
  while IFS= read -r word; do [ -z "$word" ] || options+=("$word"); done <<<"$words"
done < <(find "$artifact_dir" -type f -name build-info.json -print0 | LC_ALL=C sort -z)

scratch=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/wheelmerge-merge.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

command=("$wheelmerge" merge "${inputs[@]}" -o "$output_dir" "${options[@]}" --json)
say "running: ${command[*]}"
status=0
"${command[@]}" >"$scratch/merge.json" || status=$?
if [ "$status" -ne 0 ]; then
  # wheelmerge annotated its own errors (::error) under GitHub Actions; this line only ends the log.
  say "error: wheelmerge merge failed with exit status $status"
  exit "$status"
fi

# The merged wheel, then wheelmerge inspect's verdict on it: valid, merged, the same variants.
"$wheelmerge" inspect "$(
  "$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["output"])' "$scratch/merge.json"
)" --json >"$scratch/inspect.json" || status=$?
if [ "$status" -ne 0 ]; then
  cat "$scratch/inspect.json" >&2
  say "error: wheelmerge inspect failed with exit status $status"
  exit 1
fi
"$python" - "$scratch/merge.json" "$scratch/inspect.json" "$scratch/result" <<'EOF'
import json, sys

merge = json.load(open(sys.argv[1]))
inspect = json.load(open(sys.argv[2]))
problems = []
if not inspect.get("valid"):
    problems.append("wheelmerge inspect finds it invalid")
if not inspect.get("merged"):
    problems.append("wheelmerge inspect finds no merged variants in it")
if inspect.get("variants") != merge.get("variants"):
    problems.append(f"inspect shows variants {inspect.get('variants')}, merge made {merge.get('variants')}")
if problems:
    sys.exit(f"merge.sh: error: {merge['output']}: " + "; ".join(problems))
for warning in merge.get("warnings", []):
    print(f"merge.sh: warning: {warning}", file=sys.stderr)
with open(sys.argv[3], "w") as out:
    out.write(merge["output"] + "\n" + " ".join(merge["variants"]) + "\n")
print(f"merge.sh: merged {merge['output']}: variants {', '.join(merge['variants'])}, "
      f"{merge['shared']} shared files, {merge['variant_files']} variant files, "
      f"tags {', '.join(inspect['tags'])}", file=sys.stderr)
EOF
{ read -r merged; read -r variants; } <"$scratch/result"

if [ -n "${GITHUB_OUTPUT:-}" ]; then
  { echo "wheel=$merged"; echo "variants=$variants"; } >>"$GITHUB_OUTPUT"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  {
    echo "### wheelmerge: \`${merged##*/}\`"
    echo
    echo "| input | label |"
    echo "| --- | --- |"
    for wheel in "${wheels[@]}"; do
      echo "| \`${wheel#"$artifact_dir"/}\` | ${label_of[$wheel]:-from its name} |"
    done
    echo
    echo "Variants: ${variants// /, }"
  } >>"$GITHUB_STEP_SUMMARY"
fi
echo "$merged"
