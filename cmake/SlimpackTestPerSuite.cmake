# SLIMPACK_TEST_PER_SUITE: one ctest test per GoogleTest test suite (all
# of its cases in one process) instead of gtest_discover_tests' one per
# case. scripts/test.sh turns it on: its ASan tree ran 1,922 cases as
# 1,922 processes, and starting one (mapping an 80 MB binary, relocating
# it, registering its globals with ASan, LeakSanitizer's scan at exit)
# costs 0.1-0.3 s, about 370 of the suite's 1,645 CPU-seconds. Developers'
# trees keep one test per case.
#
# Every suite writes gtest's JSON report to <build>/gtest-results/
# <target>.<suite>.json: scripts/test.sh counts the cases there (the
# suite's floor is in cases, tests/test_count_floor.txt) and lists the
# skipped ones. No SKIP_REGULAR_EXPRESSION: one skipped case must not mark
# its whole suite skipped and hide a failure beside it.
#
# Only gtest_discover_tests' PROPERTIES and DISCOVERY_TIMEOUT options are
# accepted (the only ones the rooms use); the suites are listed when ctest
# starts, as CMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE PRE_TEST does.
include_guard(GLOBAL)

option(SLIMPACK_TEST_PER_SUITE "One ctest test per gtest suite (scripts/test.sh)" OFF)
set(_SLIMPACK_SUITES_IMPL "${CMAKE_CURRENT_LIST_DIR}/SlimpackTestPerSuiteImpl.cmake")

if(SLIMPACK_TEST_PER_SUITE)
  # Defined after include(GoogleTest), this replaces the module's function
  # for every room. GoogleTest.cmake has no include guard: a second
  # include(GoogleTest) would bring the per-case function back. The only
  # other one, in formats/shard/loader/CMakeLists.txt, runs in cross builds
  # of the loader alone, which do not set this option.
  function(gtest_discover_tests target)
    cmake_parse_arguments(arg "" "DISCOVERY_TIMEOUT" "PROPERTIES" ${ARGN})
    if(arg_UNPARSED_ARGUMENTS)
      message(FATAL_ERROR "gtest_discover_tests(${target}): with SLIMPACK_TEST_PER_SUITE "
                          "only PROPERTIES and DISCOVERY_TIMEOUT are handled, not "
                          "'${arg_UNPARSED_ARGUMENTS}' (cmake/SlimpackTestPerSuite.cmake)")
    endif()
    if(NOT arg_DISCOVERY_TIMEOUT)
      set(arg_DISCOVERY_TIMEOUT 5)
    endif()
    get_property(emulator TARGET ${target} PROPERTY CROSSCOMPILING_EMULATOR)
    set(base "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites")
    file(GENERATE OUTPUT "${base}_include.cmake" CONTENT
"if(EXISTS \"$<TARGET_FILE:${target}>\")
  if(NOT EXISTS \"${base}_tests.cmake\" OR
     NOT \"${base}_tests.cmake\" IS_NEWER_THAN \"$<TARGET_FILE:${target}>\")
    include(\"${_SLIMPACK_SUITES_IMPL}\")
    slimpack_write_suite_tests(
      [==[$<TARGET_FILE:${target}>]==] [==[${target}]==] [==[${emulator}]==]
      [==[${CMAKE_CURRENT_BINARY_DIR}]==] [==[${arg_PROPERTIES}]==]
      [==[${CMAKE_BINARY_DIR}/gtest-results]==] [==[${arg_DISCOVERY_TIMEOUT}]==]
      [==[${base}_tests.cmake]==])
  endif()
  include(\"${base}_tests.cmake\")
else()
  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)
endif()
")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${base}_include.cmake")
  endfunction()
endif()
