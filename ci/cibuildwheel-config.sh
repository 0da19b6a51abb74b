#!/usr/bin/env bash
# Configures cibuildwheel for one Python x CUDA major build in its manylinux image: the work of
# the cibuildwheel action (ci/cibuildwheel/action.yml, its "Configure cibuildwheel" step), which
# the reusable workflow's build jobs run with `builder: cibuildwheel`.
#
# Environment (the action's inputs): CUDA_MAJOR, CUDA_VERSION (the toolkit version, 13.0.2),
# CIBW_IDENTIFIER (cibuildwheel's build selector, cp312-manylinux_*), MANYLINUX_IMAGE,
# TOOLKIT_PACKAGES (NVIDIA's RPM packages, each suffixed -MAJOR-MINOR), PACKAGE_DIR,
# REPAIR_COMMAND (empty: auditwheel repair excluding libcuda), CIBUILDWHEEL_REQUIREMENT (the pin
# installed into the job's Python). Writes the CIBW_* variables to $GITHUB_ENV, for the
# workflow's next step, which runs cibuildwheel.
set -eo pipefail
python -m pip install --disable-pip-version-check --progress-bar off "$CIBUILDWHEEL_REQUIREMENT"
IFS=. read -r major minor _ <<<"$CUDA_VERSION"
root=/usr/local/cuda-$major.$minor
packages=()
for package in $TOOLKIT_PACKAGES; do packages+=("$package-$major-$minor"); done
# Inside the manylinux image (AlmaLinux): NVIDIA's RPM repository for its release and
# architecture, then the toolkit; the variables `wheelmerge build` sets, for the build.
# Single quotes: expanded by the image's shell, not this one.
# shellcheck disable=SC2016
before_all='. /etc/os-release && arch=$(uname -m | sed s/aarch64/sbsa/) &&'
before_all+=' dnf install -y -q dnf-plugins-core &&'
# shellcheck disable=SC2016
before_all+=' dnf config-manager --add-repo "https://developer.download.nvidia.com/compute/cuda/repos/rhel${VERSION_ID%%.*}/$arch/cuda-rhel${VERSION_ID%%.*}.repo" &&'
before_all+=" dnf install -y -q ${packages[*]}"
repair=${REPAIR_COMMAND:-"auditwheel repair --exclude 'libcuda.so.*' -w {dest_dir} {wheel}"}
{
  echo "CIBW_BUILD=$CIBW_IDENTIFIER"
  echo "CIBW_ARCHS_LINUX=native"
  echo "CIBW_MANYLINUX_X86_64_IMAGE=$MANYLINUX_IMAGE"
  echo "CIBW_MANYLINUX_AARCH64_IMAGE=$MANYLINUX_IMAGE"
  echo "CIBW_BEFORE_ALL_LINUX=$before_all"
  echo "CIBW_ENVIRONMENT_LINUX=CUDA_HOME=$root CUDA_PATH=$root CUDACXX=$root/bin/nvcc PATH=$root/bin:\$PATH WHEELMERGE_BUILD_CUDA_MAJOR=$CUDA_MAJOR WHEELMERGE_BUILD_VARIANT=cu$CUDA_MAJOR"
  echo "CIBW_REPAIR_WHEEL_COMMAND_LINUX=$repair"
} >>"$GITHUB_ENV"
# One build per job: the selector must name exactly one of cibuildwheel's identifiers.
mapfile -t identifiers < <(CIBW_BUILD=$CIBW_IDENTIFIER CIBW_ARCHS_LINUX=native \
  cibuildwheel --platform linux --print-build-identifiers "$PACKAGE_DIR")
if [ "${#identifiers[@]}" -ne 1 ]; then
  echo "::error title=wheelmerge::cibuildwheel builds ${#identifiers[@]} wheels for $CIBW_IDENTIFIER, not one: ${identifiers[*]:-none (a Python version the pinned $CIBUILDWHEEL_REQUIREMENT does not build?)}"
  exit 1
fi
echo "cibuildwheel builds ${identifiers[0]} with CUDA $CUDA_VERSION ($root, packages ${packages[*]})"
