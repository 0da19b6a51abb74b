#!/usr/bin/env bash
# The main job on the bundled example: `wheelmerge build` compiles examples/cudademo (a real
# CUDA extension) against a CUDA 12 toolkit (assembled from the package index) and the system's
# CUDA 13 toolkit, merges the two wheels, then installs the merged wheel into fresh virtual
# environments and imports it under real cuda-bindings 12.x and 13.x.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
cuda12=$("$root/scripts/cuda12-toolkit.sh" | tail -n 1)
work=$(mktemp -d "${TMPDIR:-/tmp}/wheelmerge-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== wheelmerge build examples/cudademo --cuda 12=$cuda12 --cuda 13"
"$root/build/wheelmerge" build "$root/examples/cudademo" --cuda "12=$cuda12" --cuda 13 -j 2 -o "$work/dist"
merged=$(ls "$work"/dist/*.whl)
"$root/build/wheelmerge" inspect "$merged"

for bindings in "cuda-bindings==12.9.4" "cuda-bindings==13.0.3"; do
  echo "== fresh venv: pip install $(basename "$merged") $bindings"
  "$root/.venv/bin/python" -m venv "$work/venv"
  "$work/venv/bin/python" -m pip install -q --disable-pip-version-check "$merged" "$bindings"
  "$work/venv/bin/python" -c '
import importlib.metadata as md, cudademo
print("cuda-bindings", md.version("cuda-bindings"), "-> loaded build", cudademo._wheelmerge.selected(),
      "| CUDA runtime", cudademo.runtime_version(), "| built with CUDA", cudademo._wheelmerge.build_info()["cuda_version"])'
  rm -rf "$work/venv"
done
