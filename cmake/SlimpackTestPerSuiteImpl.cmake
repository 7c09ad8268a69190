# Run by ctest (through the include files SlimpackTestPerSuite.cmake
# generates) when a test binary is newer than its list of suites: lists the
# binary's suites and writes one add_test per suite to OUT.
function(slimpack_write_suite_tests exe target emulator workdir properties results timeout out)
  execute_process(
    COMMAND ${emulator} "${exe}" --gtest_list_tests
    WORKING_DIRECTORY "${workdir}"
    TIMEOUT ${timeout}
    OUTPUT_VARIABLE listing
    ERROR_VARIABLE errors
    RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "listing the tests of ${exe} failed (${rc}):\n${listing}${errors}")
  endif()
  # A suite line starts in the first column and ends its name with '.'
  # (a typed or parameterised one may add "  # TypeParam = ..."); case
  # lines are indented. Matched as text, never split into a CMake list: a
  # parameter's printed value may hold ';' or '['.
  string(REGEX MATCHALL "\n[A-Za-z0-9_/]+\\." suites "\n${listing}")
  if(NOT suites)
    message(FATAL_ERROR "${exe} --gtest_list_tests listed no test suite:\n${listing}")
  endif()
  set(props "")
  foreach(p IN LISTS properties)
    string(APPEND props " [==[${p}]==]")
  endforeach()
  set(script "")
  foreach(suite IN LISTS suites)
    string(REGEX REPLACE "^\n(.*)\\.$" "\\1" suite "${suite}")
    string(REPLACE "/" "_" file "${suite}")
    set(name "${target}:${suite}")
    string(APPEND script
      "add_test([==[${name}]==] ${emulator} [==[${exe}]==] [==[--gtest_filter=${suite}.*]==] "
      "[==[--gtest_output=json:${results}/${target}.${file}.json]==])\n"
      "set_tests_properties([==[${name}]==] PROPERTIES WORKING_DIRECTORY [==[${workdir}]==]"
      "${props})\n")
  endforeach()
  file(WRITE "${out}" "${script}")
endfunction()
