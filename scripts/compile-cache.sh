# Sourced by scripts/setup.sh and scripts/test.sh: the compiles go through ccache (when
# installed; setup.sh installs it), its cache in ~/.cache/wheelmerge/ccache. A clone whose
# sources were compiled before (another clone of the same commit, CI after a session's runs, a
# commit that changed a few files) compiles only what changed. ccache keys on the preprocessed
# source, the compiler and its flags; paths under the clone are hashed relative to it and the
# working directory not at all, so where the clone is does not matter (two clones of one commit
# at different paths give byte-identical executables). Sets `launcher`, the CMake options that
# use it (empty without ccache), and WM_FUZZ_LAUNCHER for tests/fuzz/build.sh.
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_DIR=${WHEELMERGE_CACHE:-$HOME/.cache/wheelmerge}/ccache
  export CCACHE_BASEDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd) CCACHE_NOHASHDIR=true CCACHE_MAXSIZE=6G
  export WM_FUZZ_LAUNCHER=ccache
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
