#!/usr/bin/env bash
# Installs a merged wheel in a fresh environment beside what selects one label's build, imports
# the package and checks the build it selected: the work of the test action (ci/test/action.yml,
# its "Check the selected build" step) and of the rehearsal's test jobs (ci/rehearse.sh).
#
# Environment (the action's inputs): IMPORT_NAME, LABEL, LABELS (the plan's JSON list), and the
# label's matrix values CUDA_MAJOR, TORCH_VERSION, TORCH_INDEX, TORCH_NEWEST, CPU_LEVEL (each
# empty when the label has none); the merged wheel is the one *.whl under .wheelmerge/merged.
# A floor label (TORCH_NEWEST, ">=2.10,<3") is also loaded under the newest torch of that range
# on its index, beside the floor's own release, in an environment of its own. uv makes the
# environments and installs (UV_REQUIREMENT installs uv when none is on PATH).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# What selects the label's build: cuda-bindings of its CUDA major (cuNN), the torch it
# names (torch labels; a floor label's own release), the CPU (x86-64 levels: the highest
# level this runner's CPU runs, as glibc's ld.so says, is expected).
# uv makes the environment and installs, as the build action's `wheelmerge build --installer uv`
# does (the one on PATH, else $UV_REQUIREMENT's): it links torch and its CUDA wheels from its
# cache where pip copies gigabytes, and it reads the same UV_* settings as the build step.
# shellcheck source=ci/uv.sh
source "$here/uv.sh"
python=$(command -v python)
uv=$(uv_path "$python") || exit 2
"$uv" venv --quiet --python "$python" .wheelmerge/venv
wheels=(.wheelmerge/merged/*.whl)
install=("$uv" pip install --python .wheelmerge/venv/bin/python "${wheels[@]}")
if [ -n "$TORCH_VERSION" ]; then
  # The label's index first (torch and the CUDA wheels it pins), then the default index.
  install+=(--index "$TORCH_INDEX" "torch==$TORCH_VERSION.*")
elif [ -n "$CUDA_MAJOR" ]; then
  install+=("cuda-bindings==$CUDA_MAJOR.*")
fi
"${install[@]}"
# Nothing but what was installed may choose the build, and no source tree may be on
# sys.path.
unset WHEELMERGE_CUDA_MAJOR WHEELMERGE_VARIANT
cd .wheelmerge
venv/bin/python - <<'EOF'
import importlib, importlib.metadata, json, os, re, subprocess, sys

name, label = os.environ["IMPORT_NAME"], os.environ["LABEL"]
os.environ.pop(f"WHEELMERGE_VARIANT_{name.split('.')[0].upper()}", None)
expected, by = label, ""
if os.environ["CPU_LEVEL"]:
    # glibc's list of the levels this CPU runs ("x86-64-v3 (supported, searched)").
    help_text = subprocess.run(["/lib64/ld-linux-x86-64.so.2", "--help"], capture_output=True, text=True).stdout
    runs = [int(level) for level in re.findall(r"x86-64-v(\d) \(supported", help_text)] + [1]
    levels = sorted(int(l.rsplit("v", 1)[1]) for l in json.loads(os.environ["LABELS"]))
    fitting = [level for level in levels if level <= max(runs)]
    if not fitting:
        print(f"::error title=wheelmerge::this runner's CPU is x86-64-v{max(runs)}, below every build ({', '.join(json.loads(os.environ['LABELS']))})")
        sys.exit(1)
    expected, by = f"x86_64_v{fitting[-1]}", f" on an x86-64-v{max(runs)} CPU"
installed = []
for package in ("torch", "cuda-bindings"):
    try:
        installed.append(f"{package} {importlib.metadata.version(package)}")
    except importlib.metadata.PackageNotFoundError:
        pass
by += f" with {' and '.join(installed)}" if installed else ""
selected = importlib.import_module(name)._wheelmerge.selected()
print(f"{name}: selected {selected}{by} on Python {sys.version.split()[0]}")
if selected != expected:
    subprocess.run([sys.executable, "-m", f"{name}._wheelmerge"], check=False)
    print(f"::error title=wheelmerge::{name}._wheelmerge.selected() is {selected!r}, expected {expected!r}")
    sys.exit(1)
if os.environ["CPU_LEVEL"] and label != expected:
    # This job's own build, chosen by the loader's override, where this CPU runs it.
    if int(os.environ["CPU_LEVEL"]) > max(runs):
        print(f"{label}: not run, this CPU is x86-64-v{max(runs)}")
        sys.exit(0)
    check = f"import {name}; assert {name}._wheelmerge.selected() == {label!r}"
    forced = subprocess.run([sys.executable, "-c", check], env={**os.environ, "WHEELMERGE_VARIANT": label})
    if forced.returncode != 0:
        print(f"::error title=wheelmerge::{name} with WHEELMERGE_VARIANT={label} failed to import its {label} build")
        sys.exit(1)
    print(f"{name}: {label} imports with WHEELMERGE_VARIANT={label}")
EOF
if [ -n "${TORCH_NEWEST:-}" ]; then
  # A floor label (a build against torch's stable ABI): it must also load under the newest torch
  # its floor admits on its index, in an environment of its own.
  cd ..
  "$uv" venv --quiet --python "$python" .wheelmerge/venv-newest
  "$uv" pip install --python .wheelmerge/venv-newest/bin/python --index "$TORCH_INDEX" "${wheels[@]}" \
    "torch$TORCH_NEWEST"
  cd .wheelmerge
  venv-newest/bin/python - <<'EOF'
import importlib, importlib.metadata, json, os, subprocess, sys

import torch

name, labels = os.environ["IMPORT_NAME"], json.loads(os.environ["LABELS"])
version, cuda = importlib.metadata.version("torch"), torch.version.cuda or ""
module = importlib.import_module(name)  # the selected build's code loads under this torch
selected = module._wheelmerge.selected()
print(f"{name}: selected {selected} with torch {version} (the newest torch{os.environ['TORCH_NEWEST']} "
      f"on {os.environ['TORCH_INDEX']}) on Python {sys.version.split()[0]}")
# The build of this torch's CUDA major (cuNN at the label's end; _cpu for none).
wanted = f"_cu{cuda.split('.')[0]}" if cuda else "_cpu"
if selected not in labels or not selected.endswith(wanted):
    subprocess.run([sys.executable, "-m", f"{name}._wheelmerge"], check=False)
    print(f"::error title=wheelmerge::{name}._wheelmerge.selected() is {selected!r} under torch {version}, "
          f"expected a build of {labels} for {wanted[1:]}")
    sys.exit(1)
EOF
fi
