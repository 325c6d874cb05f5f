# Run by CTest (consumer.install): installs the xylem build into a scratch
# prefix, then configures, builds and runs examples/consumer against it, as a
# user of the package would. Inputs: XYLEM_BUILD_DIR, CONSUMER_SOURCE_DIR,
# WORK_DIR, CXX_COMPILER, GENERATOR, BUILD_TYPE, SANITIZE.
cmake_minimum_required(VERSION 3.25)

set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " command)
    message(FATAL_ERROR "failed (${rc}): ${command}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

step(${CMAKE_COMMAND} --install ${XYLEM_BUILD_DIR} --prefix ${prefix})

set(flags "")
if(SANITIZE)
  # The installed library carries the sanitizer runtime; the program must too.
  set(flags "-fsanitize=${SANITIZE} -fno-omit-frame-pointer")
endif()
if(NOT BUILD_TYPE)
  set(BUILD_TYPE Release)
endif()
step(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${build} -G ${GENERATOR}
     -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
     "-DCMAKE_CXX_FLAGS=${flags}" "-DCMAKE_EXE_LINKER_FLAGS=${flags}")
step(${CMAKE_COMMAND} --build ${build})

# Only the installed plugins: nothing from the build tree or the environment.
unset(ENV{XYLEM_PLUGIN_PATH})
unset(ENV{XYLEM_BACKEND})
step(${build}/app)
if(NOT step_output MATCHES "\\[0\\.970687[0-9]*, 0\\.99999[0-9]*, 0\\.6224593[0-9]*, 0\\.998498[0-9]*\\] shape=\\[4\\], strides=\\[1\\]")
  message(FATAL_ERROR "the consumer printed something else than the Parenchyma result")
endif()
# The program linked the installed library, not the build tree's.
step(ldd ${build}/app)
if(NOT step_output MATCHES "${prefix}")
  message(FATAL_ERROR "app does not use the installed libxylem:\n${step_output}")
endif()
message("consumer.install: OK")
