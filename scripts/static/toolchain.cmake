# CMake toolchain for the static builds of scripts/static/: the compilers are the zig wrappers of
# zig.sh for WM_TARGET (in WM_ZIG_BIN); libraries and headers are found in WM_PREFIX (deps.sh)
# only, never on the build machine; programs (nasm, perl) are the build machine's.
set(CMAKE_SYSTEM_NAME Linux)
if(WM_TARGET MATCHES "macos")
  set(CMAKE_SYSTEM_NAME Darwin)
endif()
string(REGEX MATCH "^[^-]+" CMAKE_SYSTEM_PROCESSOR "${WM_TARGET}")
if(CMAKE_SYSTEM_NAME STREQUAL "Darwin" AND CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
  set(CMAKE_SYSTEM_PROCESSOR arm64)
endif()
set(CMAKE_C_COMPILER "${WM_ZIG_BIN}/${WM_TARGET}-cc")
set(CMAKE_CXX_COMPILER "${WM_ZIG_BIN}/${WM_TARGET}-c++")
set(CMAKE_AR "${WM_ZIG_BIN}/${WM_TARGET}-ar" CACHE FILEPATH "")
set(CMAKE_RANLIB "${WM_ZIG_BIN}/${WM_TARGET}-ranlib" CACHE FILEPATH "")
# zig links for the target itself: macOS builds need no SDK, and no sysroot is wanted.
set(CMAKE_OSX_SYSROOT "" CACHE PATH "")
set(CMAKE_OSX_DEPLOYMENT_TARGET "" CACHE STRING "")
# CMake wants install_name_tool for any Darwin target; nothing here installs a shared library, so
# a tool that does nothing stands in (zig has none).
if(CMAKE_SYSTEM_NAME STREQUAL "Darwin")
  set(CMAKE_INSTALL_NAME_TOOL "/bin/true" CACHE FILEPATH "")
endif()
set(CMAKE_FIND_ROOT_PATH "${WM_PREFIX}")
set(CMAKE_PREFIX_PATH "${WM_PREFIX}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_LIBDIR} "${WM_PREFIX}/lib/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")
# Forwarded to try_compile projects.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES WM_TARGET WM_ZIG_BIN WM_PREFIX)
