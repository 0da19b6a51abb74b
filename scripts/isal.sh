#!/usr/bin/env bash
# Builds the ISA-L that wheelmerge inflates with into .deps/isal (lib/libisal.a, include/isa-l/):
# ISA-L 2.32.1 from the source distribution of python-isal 1.9.1 on the Python package index
# (hash-pinned, cached in ~/.cache/wheelmerge/isal), with third_party/isal/zlib-code-sets.patch,
# which makes its inflate refuse the Huffman code sets zlib refuses (see third_party/isal/README.md).
# Needs nasm (Debian: nasm), make, a C compiler and Python with pip. Does nothing when the
# build for this source and patch is already there.
#
#   scripts/isal.sh [PREFIX]        (default: .deps/isal in the repository)
#   scripts/isal.sh --fetch         only fetch and check the source; print the tarball's path
#                                   (scripts/static/deps.sh cross-builds it)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fetch_only=false
if [ "${1:-}" = --fetch ]; then fetch_only=true; shift; fi
prefix=${1:-$root/.deps/isal}
version=1.9.1
sha256=d210dca02a689ef2af709d2c62d2daac2e36b5d2fa06e6dc0d023c83fee77e91
patch=$root/third_party/isal/zlib-code-sets.patch
cache=${WHEELMERGE_CACHE:-$HOME/.cache/wheelmerge}/isal
tarball=$cache/isal-$version.tar.gz
stamp="isal-$version $sha256 $(sha256sum "$patch" | cut -d' ' -f1)"

if ! $fetch_only && [ -f "$prefix/stamp" ] && [ "$(cat "$prefix/stamp")" = "$stamp" ] && [ -f "$prefix/lib/libisal.a" ]; then
  exit 0
fi
python=${PYTHON:-$root/.venv/bin/python}
[ -x "$python" ] || python=python3

mkdir -p "$cache"
if [ ! -f "$tarball" ] || ! echo "$sha256  $tarball" | sha256sum -c --quiet - >/dev/null 2>&1; then
  rm -f "$tarball"
  # pip, as configured here (index, proxy); else the index's JSON API, for a Python without pip.
  "$python" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
    --dest "$cache" "isal==$version" 2>/dev/null ||
  "$python" - "$version" "$tarball" <<'PY'
import json, sys, urllib.request
version, dest = sys.argv[1], sys.argv[2]
with urllib.request.urlopen(f"https://pypi.org/pypi/isal/{version}/json", timeout=60) as r:
    url = next(u["url"] for u in json.load(r)["urls"] if u["packagetype"] == "sdist")
with urllib.request.urlopen(url, timeout=300) as r, open(dest, "wb") as out:
    out.write(r.read())
PY
fi
echo "$sha256  $tarball" | sha256sum -c --quiet - || { echo "isal.sh: $tarball: unexpected sha256" >&2; exit 1; }
if $fetch_only; then echo "$tarball"; exit 0; fi
command -v nasm >/dev/null || { echo "isal.sh: nasm is needed (apt-get install nasm)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar xzf "$tarball" -C "$work"
src=$work/isal-$version/src/isal/isa-l
patch -s -d "$src" -p1 < "$patch"
make -s -C "$src" -f Makefile.unx -j"$(nproc)" lib >/dev/null
rm -rf "$prefix"
mkdir -p "$prefix/lib" "$prefix/include/isa-l"
cp "$src/bin/isa-l.a" "$prefix/lib/libisal.a"
cp "$src"/include/*.h "$prefix/include/isa-l/"
echo "$stamp" > "$prefix/stamp"
echo "isal.sh: built ISA-L 2.32.1 (python-isal $version, patched) into $prefix" >&2
