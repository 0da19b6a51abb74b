#!/usr/bin/env bash
# The main job on the bundled example: build examples/wmdemo once per CUDA major, merge the two
# wheels with wheelmerge, install the merged wheel into fresh virtual environments and import it
# under real cuda-bindings 12.x and 13.x from the package index.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
py="$root/.venv/bin/python"
work=$(mktemp -d "${TMPDIR:-/tmp}/wheelmerge-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== building examples/wmdemo for cu12 and cu13 (separate source copies)"
for major in 12 13; do
  cp -r "$root/examples/wmdemo" "$work/src$major"
  (cd "$work/src$major" && WMDEMO_CUDA_MAJOR=$major "$py" -m build --wheel --no-isolation -o "$work/dist$major" >"$work/build$major.log" 2>&1) ||
    { cat "$work/build$major.log"; exit 1; }
  ls "$work/dist$major"
done

echo "== merging"
"$root/build/wheelmerge" merge "$work"/dist12/*.whl "$work"/dist13/*.whl -o "$work/merged"
merged=$(ls "$work"/merged/*.whl)
"$root/build/wheelmerge" inspect "$merged"

for bindings in "cuda-bindings==12.9.4" "cuda-bindings==13.0.3"; do
  echo "== fresh venv with $bindings"
  "$py" -m venv "$work/venv"
  "$work/venv/bin/python" -m pip install -q --disable-pip-version-check "$merged" "$bindings"
  "$work/venv/bin/python" -c '
import importlib.metadata as md, wmdemo
print("cuda-bindings", md.version("cuda-bindings"), "-> selected", wmdemo._wheelmerge.selected(),
      "| build_major() =", wmdemo.build_major(), "| kernel:", wmdemo._wheelmerge.path("kernels/scale.cubin").rsplit("/", 1)[1])'
  rm -rf "$work/venv"
done
