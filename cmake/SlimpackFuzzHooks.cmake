# libFuzzer's coverage hooks (-fsanitize=fuzzer-no-link: 8-bit edge
# counters, comparison tracing) on the rooms that parse untrusted bytes, in
# the clang sanitized build (SLIMPACK_FUZZ_HOOKS=ON, scripts/test.sh), so
# the fuzz_<parser> harnesses link there instead of in a tree of their own.
# The rooms scripts/fuzz.sh's SLIMPACK_FUZZ build compiles, but ir; the
# numerical rooms (runtime, quantize, ...) stay uninstrumented, so the tests
# that spend their time there do not pay for hooks they never use. Test
# binaries linking instrumented objects get the sanitizer runtime's no-op
# hooks; only fuzz_<parser> links libFuzzer.

include_guard(GLOBAL)

# ir/ is left out: it builds graphs and tensors, it parses nothing, and its
# -O1 objects compiled ~40 % slower with the hooks (ir/graph.cc 4.5 -> 6.4 s).
set(SLIMPACK_FUZZ_HOOK_DIRS support hf formats export fuzz)

function(slimpack_apply_fuzz_hooks)
  _slimpack_targets_under(${PROJECT_SOURCE_DIR} all_targets)
  foreach(t ${all_targets})
    _slimpack_target_place(${t} type src_dir rel)
    if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|OBJECT_LIBRARY)$")
      continue()
    endif()
    foreach(dir ${SLIMPACK_FUZZ_HOOK_DIRS})
      if(rel STREQUAL dir OR rel MATCHES "^${dir}/")
        target_compile_options(${t} PRIVATE -fsanitize=fuzzer-no-link)
        list(APPEND hooked ${t})
        break()
      endif()
    endforeach()
  endforeach()
  list(LENGTH hooked n)
  message(STATUS "libFuzzer coverage hooks in ${n} targets (${SLIMPACK_FUZZ_HOOK_DIRS})")
endfunction()
