#!/usr/bin/env bash
# Assembles a CUDA 12 toolkit root from NVIDIA's component wheels on PyPI, for machines that
# have no CUDA 12 installation: headers, libcudart, NVRTC, ptxas, libnvvm, libdevice and CCCL,
# laid out as a toolkit has them (include/, lib64/, bin/, nvvm/, version.json). There is no
# nvcc in it (NVIDIA publishes nvcc, cicc and cudafe++ in no wheel): device code is compiled
# with NVRTC (lib64/libnvrtc.so.12), or with clang --cuda-path.
#
#   scripts/cuda12-toolkit.sh [DEST]     # default .toolkits/cuda-12 (or $DEST)
#
# Versions and hashes are pinned (CUDA 12.9 Update 1, x86_64 Linux). Downloads are cached in
# .toolkits/downloads (or $DOWNLOADS) and reused without the network; a toolkit already
# assembled from the same pins is left as it is. Messages go to stderr; the last line on stdout
# is the toolkit root.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-${DEST:-$root/.toolkits/cuda-12}}
downloads=${DOWNLOADS:-$root/.toolkits/downloads}
python=${PYTHON:-$root/.venv/bin/python}
[ -x "$python" ] || python=python3

sdk_version=12.9.1
# distribution==version, sha256 of its x86_64 wheel, the version.json key and name.
components=(
  "nvidia-cuda-runtime-cu12==12.9.79 25bba2dfb01d48a9b59ca474a1ac43c6ebf7011f1b0b8cc44f54eb6ac48a96c3 cuda_cudart CUDA Runtime (cudart)"
  "nvidia-cuda-nvrtc-cu12==12.9.86 210cf05005a447e29214e9ce50851e83fc5f4358df8b453155d5e1918094dcb4 cuda_nvrtc CUDA NVRTC"
  "nvidia-cuda-nvcc-cu12==12.9.86 5d6a0d32fdc7ea39917c20065614ae93add6f577d840233237ff08e9a38f58f0 cuda_nvcc CUDA NVCC"
  "nvidia-cuda-cccl-cu12==12.9.27 37869e17ce2e1ecec6eddf1927cca0f8c34e64fd848d40453df559091e2d7117 cuda_cccl CUDA C++ Core Compute Libraries"
)

say() { echo "cuda12-toolkit: $*" >&2; }
die() { say "error: $*"; exit 1; }

[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] ||
  die "the pinned wheels are for Linux x86_64, this is $(uname -s)-$(uname -m)"
command -v readelf >/dev/null || die "readelf (binutils) is needed to read the libraries' SONAMEs"

# The pins as a hash-checked requirements file; the same text marks an assembled toolkit.
pins=""
for c in "${components[@]}"; do
  read -r requirement sha256 _ <<<"$c"
  pins+="$requirement --hash=sha256:$sha256"$'\n'
done
stamp=$(printf 'sdk %s\n%s' "$sdk_version" "$pins")
assembled() {
  [ -f "$dest/.wheelmerge-toolkit" ] && [ "$(cat "$dest/.wheelmerge-toolkit")" = "$stamp" ] || return 1
  say "$dest is already assembled from the pinned wheels"
  echo "$dest"
}
assembled && exit 0

mkdir -p "$downloads" "$(dirname "$dest")"
exec 9>"$dest.lock"
flock 9  # one assembly at a time per destination
assembled && exit 0
# Only a toolkit this script assembled (from other pins) is replaced, never anything else.
if [ -e "$dest" ] && [ ! -f "$dest/.wheelmerge-toolkit" ] && [ -n "$(ls -A "$dest")" ]; then
  die "$dest exists and was not assembled by this script; remove it or choose another DEST"
fi
requirements="$downloads/cuda12-requirements.txt"
printf '%s' "$pins" >"$requirements"
download() {
  "$python" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --require-hashes -r "$requirements" -d "$downloads" "$@"
}
if ! download --no-index --find-links "$downloads" 2>/dev/null; then
  say "downloading the pinned wheels from PyPI into $downloads"
  download || die "pip could not download the pinned wheels (see above)"
fi

work="$dest.partial.$$"
rm -rf "$work"
trap 'rm -rf "$work"' EXIT
wheels=()
for c in "${components[@]}"; do
  read -r requirement _ <<<"$c"
  name=${requirement%%==*}
  version=${requirement#*==}
  wheel=$(compgen -G "$downloads/${name//-/_}-$version-*.whl" | head -n 1) ||
    die "no wheel for $requirement in $downloads"
  wheels+=("$wheel")
done

say "unpacking ${#wheels[@]} wheels into $dest"
# Each wheel holds nvidia/<component>/{include,lib,bin,nvvm}; a toolkit has include/, lib64/,
# bin/ and nvvm/ at its root. No two components may provide the same file.
"$python" - "$work" "${wheels[@]}" <<'EOF'
import os, sys, zipfile
from pathlib import Path

root = Path(sys.argv[1])
places = {"include": "include", "lib": "lib64", "bin": "bin", "nvvm": "nvvm"}
owner = {}
for wheel in sys.argv[2:]:
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            parts = info.filename.split("/")
            if (info.is_dir() or len(parts) < 4 or parts[0] != "nvidia"
                    or parts[2] not in places or parts[-1] == "__init__.py"):
                continue  # dist-info, package markers, the wheels' own .metadata
            relative = "/".join([places[parts[2]], *parts[3:]])
            if relative in owner:
                sys.exit(f"{relative} is in both {owner[relative]} and {wheel}")
            owner[relative] = wheel
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            with z.open(info) as source, open(target, "wb") as out:
                while chunk := source.read(1 << 20):
                    out.write(chunk)
            executable = (info.external_attr >> 16) & 0o111
            os.chmod(target, 0o755 if executable else 0o644)
EOF

# Library links as a toolkit has them: the SONAME (libnvvm.so.4 -> libnvvm.so) and the name
# the linker looks for (libcudart.so -> libcudart.so.12).
for library in "$work"/lib64/lib*.so* "$work"/nvvm/lib64/lib*.so*; do
  [ -f "$library" ] && [ ! -L "$library" ] || continue
  dir=$(dirname "$library")
  file=$(basename "$library")
  soname=$(readelf -d "$library" | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p')
  [ -n "$soname" ] || continue
  [ -e "$dir/$soname" ] || ln -s "$file" "$dir/$soname"
  [ -e "$dir/${soname%%.so*}.so" ] || ln -s "$soname" "$dir/${soname%%.so*}.so"
done

# version.json in the real toolkit's format (3-space indent, "key" : value, keys sorted).
"$python" - "$work/version.json" "$sdk_version" "${components[@]}" <<'EOF'
import json, sys

path, sdk, *components = sys.argv[1:]
versions = {"cuda": {"name": "CUDA SDK", "version": sdk}}
for component in components:
    requirement, _sha256, key, name = component.split(" ", 3)
    versions[key] = {"name": name, "version": requirement.split("==")[1]}
with open(path, "w") as out:
    out.write(json.dumps(versions, indent=3, sort_keys=True, separators=(",", " : ")) + "\n")
EOF

for required in include/cuda_runtime_api.h include/crt/host_defines.h include/nvrtc.h \
                include/cuda/std/version lib64/libcudart.so lib64/libcudart_static.a \
                lib64/libnvrtc.so lib64/libnvrtc-builtins.so.12.9 bin/ptxas \
                nvvm/lib64/libnvvm.so.4 nvvm/libdevice/libdevice.10.bc; do
  [ -e "$work/$required" ] || die "the assembled toolkit lacks $required"
done
echo "$stamp" >"$work/.wheelmerge-toolkit"

rm -rf "$dest"
mv "$work" "$dest"
trap - EXIT
say "assembled CUDA $sdk_version from ${#wheels[@]} component wheels in $dest"
echo "$dest"
