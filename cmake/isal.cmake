# ISA-L, which wheelmerge inflates with (merger/zip/inflate.cpp): the patched build of
# scripts/isal.sh (third_party/isal/README.md says why it is patched). Taken from
# WHEELMERGE_ISAL_ROOT (default: .deps/isal, where scripts/setup.sh puts it); where that holds
# none, scripts/isal.sh builds one into the build directory at configure time (nasm, Python and
# the package index needed), so a build from a source archive gets it too.
# -DWHEELMERGE_ISAL=OFF builds without it: every member is then inflated with zlib, the same
# verdicts at zlib's speed. Defines wheelmerge_isal, an INTERFACE library (empty when OFF).
option(WHEELMERGE_ISAL "inflate with the patched ISA-L of scripts/isal.sh" ON)
set(WHEELMERGE_ISAL_ROOT "${CMAKE_CURRENT_LIST_DIR}/../.deps/isal" CACHE PATH "prefix of a scripts/isal.sh build")
add_library(wheelmerge_isal INTERFACE)
if(WHEELMERGE_ISAL)
  get_filename_component(wm_isal_root "${WHEELMERGE_ISAL_ROOT}" ABSOLUTE)
  if(NOT EXISTS "${wm_isal_root}/lib/libisal.a")
    set(wm_isal_root "${CMAKE_BINARY_DIR}/isal")
    message(STATUS "ISA-L: none in ${WHEELMERGE_ISAL_ROOT}; building it with scripts/isal.sh into ${wm_isal_root}")
    execute_process(COMMAND bash "${CMAKE_CURRENT_LIST_DIR}/../scripts/isal.sh" "${wm_isal_root}"
                    RESULT_VARIABLE wm_isal_rc)
    if(NOT wm_isal_rc EQUAL 0)
      message(FATAL_ERROR "scripts/isal.sh failed (it needs nasm, make and the package index); "
                          "configure with -DWHEELMERGE_ISAL=OFF to inflate with zlib only")
    endif()
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${wm_isal_root}/stamp")
  target_include_directories(wheelmerge_isal SYSTEM INTERFACE "${wm_isal_root}/include")
  target_link_libraries(wheelmerge_isal INTERFACE "${wm_isal_root}/lib/libisal.a")
  target_compile_definitions(wheelmerge_isal INTERFACE WHEELMERGE_WITH_ISAL=1)
  message(STATUS "ISA-L: ${wm_isal_root}")
endif()
