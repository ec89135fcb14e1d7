# Installs the build into a fresh prefix, then configures, builds and runs the consumer
# project against it: find_package(tilesmith) + tilesmith::gemm, from C.
# -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=...
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "cmake --install failed:\n${out}")
endif()
# Only the library, its headers and its CMake files.
file(GLOB_RECURSE installed RELATIVE ${WORK_DIR}/prefix ${WORK_DIR}/prefix/*)
foreach(f ${installed})
  if(NOT f MATCHES "^(lib/libtilesmith_gemm\\.so.*|include/tilesmith/gemm\\.hp?p?|lib/cmake/tilesmith/tilesmith.*\\.cmake)$")
    message(FATAL_ERROR "cmake --install installed ${f}, which is not part of libtilesmith_gemm")
  endif()
endforeach()
foreach(f lib/libtilesmith_gemm.so include/tilesmith/gemm.h include/tilesmith/gemm.hpp
          lib/cmake/tilesmith/tilesmithConfig.cmake lib/cmake/tilesmith/tilesmithConfigVersion.cmake)
  if(NOT EXISTS ${WORK_DIR}/prefix/${f})
    message(FATAL_ERROR "cmake --install did not install ${f}")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/gemmlib/consumer -B ${WORK_DIR}/build
                        -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "configuring the consumer failed:\n${out}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "building the consumer failed:\n${out}")
endif()
execute_process(COMMAND ${WORK_DIR}/build/consumer ${WORK_DIR}/no_package RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message(STATUS "consumer: ${out}")
if(rc)
  message(FATAL_ERROR "the consumer failed (exit ${rc}): ${out}")
endif()
