# The API reference: `cmake --build build --target docs` runs Doxygen over
# the users' headers (include/xylem/*.hpp) into build/docs/html. Doxygen is
# optional: without it there is no docs target (and no docs.api test).
# cmake/Doxyfile.in makes every undocumented public item a warning and
# every warning a failure.
find_package(Doxygen QUIET)
if(DOXYGEN_FOUND)
  set(XYLEM_DOCS_OUTPUT ${CMAKE_BINARY_DIR}/docs)
  set(XYLEM_DOCS_INPUT ${PROJECT_SOURCE_DIR}/include/xylem)
  set(XYLEM_DOXYFILE ${XYLEM_DOCS_OUTPUT}/Doxyfile)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/Doxyfile.in ${XYLEM_DOXYFILE} @ONLY)
  add_custom_target(docs
    COMMAND ${DOXYGEN_EXECUTABLE} ${XYLEM_DOXYFILE}
    WORKING_DIRECTORY ${XYLEM_DOCS_OUTPUT}
    COMMENT "Doxygen: API reference in ${XYLEM_DOCS_OUTPUT}/html"
    VERBATIM)
else()
  message(STATUS "xylem: doxygen not found, no docs target (Debian: apt-get install doxygen)")
endif()
