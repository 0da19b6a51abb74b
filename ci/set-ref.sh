#!/usr/bin/env bash
# Names REF in every reference to wheelmerge's own reusable workflow and composite actions in the
# shipped files, so that a release's files name the release: run it in the commit that gets
# tagged REF (ci/set-ref.sh v0.2.0; then tag v0.2.0), and back to main after.
#
#   ci/set-ref.sh REF [ROOT]     # ROOT: the checkout to edit (default: this one)
#
# The reusable workflow's `uses: wheelmerge/wheelmerge/ci@REF` cannot be an expression, so this
# is how the workflow and the action it runs stay at one ref; tests/integration/ci/test_ci.py fails
# when the shipped files name more than one.
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: ci/set-ref.sh REF [ROOT]" >&2; exit 2; }
ref=$1
root=${2:-$(cd "$(dirname "$0")/.." && pwd)}
[[ $ref =~ ^[A-Za-z0-9._/-]+$ ]] || { echo "set-ref.sh: error: '$ref' is not a git ref name" >&2; exit 2; }
cd "$root"
files=(.github/workflows/wheelmerge-wheels.yml ci/action.yml ci/*/action.yml ci/examples/*.yml)
sed -i -E "s#(wheelmerge/wheelmerge/(ci/build|ci/plan|ci/test|ci/cibuildwheel|ci|\\.github/workflows/wheelmerge-wheels\\.yml))@[A-Za-z0-9._/-]+#\\1@$ref#g" "${files[@]}"
grep -HnoE "wheelmerge/wheelmerge/(ci/build|ci/plan|ci/test|ci/cibuildwheel|ci|\\.github/workflows/wheelmerge-wheels\\.yml)@[A-Za-z0-9._/-]+" "${files[@]}" >&2
