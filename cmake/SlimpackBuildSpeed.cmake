# Build-time measures for the sanitized test build (scripts/test.sh), applied
# once from the top-level CMakeLists.txt after every room is added, so the
# rooms' CMakeLists stay as they are. Each was measured on the ASan+UBSan -O1
# tree (CPU seconds per object/link; see the README's test-suite timing).
#
#   SLIMPACK_FAST_LINK   link with lld (else gold) instead of ld.bfd: the
#                        sanitized test binaries link several times faster.
#   SLIMPACK_NO_PIE      executables linked position-dependent: the loader
#                        no longer relocates ~600,000 addresses at the start
#                        of each test process (40 ms of an ASan test's 180).
#   SLIMPACK_TEST_PCH    one precompiled gtest/gmock/absl header shared by
#                        every test executable (parsing gtest is ~1.5 s of
#                        each test object).
#   SLIMPACK_BUILD_BENCH benchmarks in `all`; OFF in the sanitized test build
#                        (timings under ASan mean nothing). They still build
#                        in scripts/build.sh's RelWithDebInfo tree, which
#                        scripts/quickstart.sh runs, and by name.
#   SLIMPACK_JSON_PCH    a precompiled <nlohmann/json.hpp> in every library
#                        or executable with two or more sources including it
#                        (98 objects do; parsing it costs ~2 s each), and in
#                        the tests' shared header.
#   SLIMPACK_O0_DIRS     folders (and everything below them) whose targets
#                        compile at -O0: the tests' own code and the
#                        plumbing (CLI, converter, parsers and writers of
#                        ONNX/safetensors/NumPy/artifacts, graph rewrites,
#                        exports' graph edits, the report). -O1 costs them
#                        15-45 % more compile time (nlohmann-heavy files the
#                        most). Rooms that compute numbers stay optimised:
#                        runtime, quantize, prune, calibration, eval, ir,
#                        support, the GGUF block codecs, the shard loader
#                        (SHA-256, dequantize). From a fresh clone with
#                        formats/ wholly at -O0 the ASan build took 231 s
#                        less and its tests 100 CPU-s more (GGUF and ONNX
#                        exports the most), hence the finer list.

include_guard(GLOBAL)
include(CheckLinkerFlag)

option(SLIMPACK_FAST_LINK "Link with lld (or gold) instead of ld.bfd" OFF)
option(SLIMPACK_NO_PIE "Link executables as position-dependent (test trees)" OFF)
option(SLIMPACK_TEST_PCH "Precompile gtest/gmock/absl headers for the tests" OFF)
option(SLIMPACK_BUILD_BENCH "Build the benchmarks as part of 'all'" ON)
option(SLIMPACK_JSON_PCH "Precompile nlohmann/json.hpp where several sources include it" OFF)
set(SLIMPACK_O0_DIRS "" CACHE STRING "Folders compiled at -O0 (test build speed)")

# Must run before targets are created: link options apply per directory.
macro(slimpack_choose_linker)
  if(SLIMPACK_FAST_LINK)
    check_linker_flag(CXX "-fuse-ld=lld" SLIMPACK_HAVE_LLD)
    if(SLIMPACK_HAVE_LLD)
      add_link_options(-fuse-ld=lld)
    else()
      check_linker_flag(CXX "-fuse-ld=gold" SLIMPACK_HAVE_GOLD)
      if(SLIMPACK_HAVE_GOLD)
        add_link_options(-fuse-ld=gold)
      endif()
    endif()
  endif()
  # A PIE test binary carries ~600,000 relative relocations (vtables,
  # sanitizer metadata) that the dynamic loader applies, dirtying their
  # pages, in each of the ~2,000 test processes: 180 ms to start an empty
  # ASan test process, 140 ms without (relocated once, at link time). The
  # objects stay PIC (they link either way); shipped builds keep PIE.
  if(SLIMPACK_NO_PIE)
    add_link_options("$<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-no-pie>")
  endif()
endmacro()

# Every buildsystem target defined in `dir` and below.
function(_slimpack_targets_under dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    _slimpack_targets_under(${sub} sub_targets)
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# A benchmark: an executable named *_bench, or an executable or library
# with every source under bench/.
function(_slimpack_is_bench target out)
  set(result FALSE)
  get_target_property(type ${target} TYPE)
  if(type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|OBJECT_LIBRARY)$")
    if(type STREQUAL "EXECUTABLE" AND target MATCHES "_bench$")
      set(result TRUE)
    else()
      get_target_property(sources ${target} SOURCES)
      get_target_property(src_dir ${target} SOURCE_DIR)
      set(result TRUE)
      foreach(src ${sources})
        if(NOT IS_ABSOLUTE ${src})
          set(src ${src_dir}/${src})
        endif()
        file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${src})
        if(NOT rel MATCHES "^bench/")
          set(result FALSE)
        endif()
      endforeach()
    endif()
  endif()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# A target's type, source directory, and that directory relative to the
# source root (what the loops below select targets by).
function(_slimpack_target_place target type_out dir_out rel_out)
  get_target_property(type ${target} TYPE)
  get_target_property(dir ${target} SOURCE_DIR)
  file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${dir})
  set(${type_out} ${type} PARENT_SCOPE)
  set(${dir_out} ${dir} PARENT_SCOPE)
  set(${rel_out} ${rel} PARENT_SCOPE)
endfunction()

# Whether `src` includes nlohmann/json.hpp itself or through one of the
# project headers it includes (one level deep: how the rooms' headers that
# expose JSON types are used).
function(_slimpack_includes_json src out)
  set(result FALSE)
  file(STRINGS ${src} lines REGEX "^#include [<\"]")
  foreach(line ${lines})
    if(line MATCHES "nlohmann/json.hpp")
      set(result TRUE)
    elseif(line MATCHES "^#include \"([^\"]+)\"")
      set(header ${PROJECT_SOURCE_DIR}/${CMAKE_MATCH_1})
      if(EXISTS ${header})
        file(STRINGS ${header} hits REGEX "^#include [<\"]nlohmann/json.hpp[>\"]")
        if(hits)
          set(result TRUE)
        endif()
      endif()
    endif()
  endforeach()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

function(slimpack_apply_build_speed)
  _slimpack_targets_under(${PROJECT_SOURCE_DIR} all_targets)

  # Appended after CMAKE_CXX_FLAGS_<CONFIG>, so the last -O wins.
  if(SLIMPACK_O0_DIRS)
    foreach(t ${all_targets})
      _slimpack_target_place(${t} type src_dir rel)
      set(match FALSE)
      foreach(dir ${SLIMPACK_O0_DIRS})
        if(rel STREQUAL dir OR rel MATCHES "^${dir}/")
          set(match TRUE)
        endif()
      endforeach()
      if(match AND type MATCHES
         "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|OBJECT_LIBRARY|MODULE_LIBRARY)$")
        target_compile_options(${t} PRIVATE -O0)
        list(APPEND o0_targets ${t})
      endif()
    endforeach()
    list(LENGTH o0_targets n)
    message(STATUS "${n} targets at -O0 (SLIMPACK_O0_DIRS: ${SLIMPACK_O0_DIRS})")
  endif()

  if(NOT SLIMPACK_BUILD_BENCH)
    foreach(t ${all_targets})
      _slimpack_is_bench(${t} is_bench)
      if(is_bench)
        set_target_properties(${t} PROPERTIES EXCLUDE_FROM_ALL TRUE)
        list(APPEND skipped ${t})
      endif()
    endforeach()
    message(STATUS "Benchmarks not in 'all' (SLIMPACK_BUILD_BENCH=OFF): ${skipped}")
  endif()

  if(SLIMPACK_JSON_PCH)
    foreach(t ${all_targets})
      _slimpack_target_place(${t} type src_dir rel)
      if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|OBJECT_LIBRARY)$")
        continue()
      endif()
      # Test executables get it through the tests' shared header below.
      if(SLIMPACK_TEST_PCH AND type STREQUAL "EXECUTABLE" AND t MATCHES "_test$"
         AND rel MATCHES "^tests(/|$)")
        continue()
      endif()
      get_target_property(sources ${t} SOURCES)
      set(n 0)
      foreach(src ${sources})
        if(NOT IS_ABSOLUTE ${src})
          set(src ${src_dir}/${src})
        endif()
        if(src MATCHES "\\.cc$" AND EXISTS ${src})
          _slimpack_includes_json(${src} hit)
          if(hit)
            math(EXPR n "${n} + 1")
          endif()
        endif()
      endforeach()
      if(n GREATER_EQUAL 2)
        target_precompile_headers(${t} PRIVATE <nlohmann/json.hpp>)
        list(APPEND json_pch ${t})
      endif()
    endforeach()
    list(LENGTH json_pch n)
    message(STATUS "nlohmann/json.hpp precompiled in ${n} targets: ${json_pch}")
  endif()

  if(SLIMPACK_TEST_PCH AND SLIMPACK_BUILD_TESTS AND TARGET GTest::gmock)
    # The header is compiled with the tree's common flags and only gtest's
    # own definition (GTEST_HAS_PTHREAD), so GCC accepts it in any test
    # whose extra -D macros the header does not use.
    set(pch_src ${CMAKE_BINARY_DIR}/slimpack_test_pch.cc)
    file(CONFIGURE OUTPUT ${pch_src} CONTENT "// Holder of the tests' precompiled header.\n")
    add_library(slimpack_test_pch OBJECT ${pch_src})
    # GCC refuses a precompiled header built with another -O.
    if("tests" IN_LIST SLIMPACK_O0_DIRS)
      target_compile_options(slimpack_test_pch PRIVATE -O0)
    endif()
    target_link_libraries(slimpack_test_pch PRIVATE GTest::gmock GTest::gtest absl::status
                                                    absl::statusor)
    if(SLIMPACK_JSON_PCH)
      target_precompile_headers(slimpack_test_pch PRIVATE <nlohmann/json.hpp>)
    endif()
    target_precompile_headers(slimpack_test_pch PRIVATE
      <gmock/gmock.h> <gtest/gtest.h>
      <absl/status/status.h> <absl/status/statusor.h> <absl/strings/string_view.h>
      <cstdint> <memory> <string> <vector>)
    foreach(t ${all_targets})
      _slimpack_target_place(${t} type src_dir rel)
      if(type STREQUAL "EXECUTABLE" AND t MATCHES "_test$" AND rel MATCHES "^tests(/|$)")
        target_precompile_headers(${t} REUSE_FROM slimpack_test_pch)
      endif()
    endforeach()
  endif()
endfunction()
