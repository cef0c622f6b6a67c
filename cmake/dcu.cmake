# dcu_test(NAME SOURCES... [LIBS libs...] [LABELS labels...])
# One executable per test file; tests discovered by gtest_discover_tests.
function(dcu_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gmock GTest::gtest GTest::gtest_main)
  set(labels unit)
  if(T_LABELS)
    set(labels ${T_LABELS})
  endif()
  gtest_discover_tests(${name}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    PROPERTIES LABELS "${labels}"
               ENVIRONMENT "DCU_SOURCE_DIR=${CMAKE_SOURCE_DIR};DCU_BIN_DIR=${CMAKE_BINARY_DIR}/bin"
    DISCOVERY_TIMEOUT 60)
endfunction()
