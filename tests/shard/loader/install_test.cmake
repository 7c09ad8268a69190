# Installs slimpack_loader into a temporary prefix, builds examples/loader
# against it with find_package(slimpack_loader), and runs the C and C++
# examples on a generated artifact. Run by ctest (shard_loader_install_and_consume).
file(REMOVE_RECURSE ${WORK_DIR})

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(RUN_OUTPUT "${out}" PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix
    --component slimpack_loader)
if(NOT EXISTS ${WORK_DIR}/prefix/include/slimpack/formats/shard/loader/slimpack_loader.h)
  message(FATAL_ERROR "C API header was not installed")
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/loader -B ${WORK_DIR}/build
    -G ${CMAKE_GENERATOR} -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
    -DCMAKE_BUILD_TYPE=Release
    # The compiler that built the library: a sanitizer runtime is the
    # compiler's own (clang's and gcc's ASan do not mix).
    -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    # A sanitizer build installs an instrumented library: link the runtime.
    "-DCMAKE_EXE_LINKER_FLAGS=${LINK_FLAGS}")
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${MAKE_ARTIFACT} ${WORK_DIR}/artifact)
run(${WORK_DIR}/build/print_tensors_c ${WORK_DIR}/artifact)
if(NOT RUN_OUTPUT MATCHES "5 tensors" OR NOT RUN_OUTPUT MATCHES "w.int4 i4 \\[4,8\\]")
  message(FATAL_ERROR "unexpected C example output:\n${RUN_OUTPUT}")
endif()
run(${WORK_DIR}/build/print_tensors_cpp ${WORK_DIR}/artifact --verify)
if(NOT RUN_OUTPUT MATCHES "verify: OK")
  message(FATAL_ERROR "unexpected C++ example output:\n${RUN_OUTPUT}")
endif()
message(STATUS "install + find_package + examples OK")
