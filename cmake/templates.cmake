# The files of templates/ embedded into the binary as string_views (cmake/template.cpp.in), one
# list for the project and the fuzz harnesses (tests/fuzz/CMakeLists.txt):
# wm_embed_templates(ROOT OUTPUT_VAR) configures each into ${CMAKE_BINARY_DIR}/generated and sets
# OUTPUT_VAR to the generated sources.
set(WM_TEMPLATES
  "templates/loader/core.py" kLoaderCore
  "templates/loader/usual_cuda.py" kLoaderUsualCuda
  "templates/loader/usual_other.py" kLoaderUsualOther
  "templates/loader/rules.py" kRulesCore
  "templates/loader/cuda.py" kRulesCuda
  "templates/loader/torch.py" kRulesTorch
  "templates/loader/cpu.py" kRulesCpu
  "templates/loader/report.py" kRulesReport
  "templates/hook_runner.py" kHookRunnerTemplate)

function(wm_embed_templates ROOT OUTPUT_VAR)
  set(sources)
  set(list ${WM_TEMPLATES})
  list(LENGTH list count)
  math(EXPR last "${count} - 1")
  foreach(i RANGE 0 ${last} 2)
    math(EXPR j "${i} + 1")
    list(GET list ${i} TEMPLATE_FILE)
    list(GET list ${j} TEMPLATE_SYMBOL)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${ROOT}/${TEMPLATE_FILE}")
    file(READ "${ROOT}/${TEMPLATE_FILE}" TEMPLATE_TEXT)
    string(REPLACE "/" "_" stem "${TEMPLATE_FILE}")
    configure_file("${ROOT}/cmake/template.cpp.in" "${CMAKE_BINARY_DIR}/generated/${stem}.cpp" @ONLY)
    list(APPEND sources "${CMAKE_BINARY_DIR}/generated/${stem}.cpp")
  endforeach()
  set(${OUTPUT_VAR} ${sources} PARENT_SCOPE)
endfunction()
