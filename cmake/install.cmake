# `cmake --install` gives a package another CMake project uses with
#   find_package(xylem CONFIG REQUIRED)
#   target_link_libraries(app xylem::xylem)
# Plugins are installed next to libxylem, where the loader looks.
include(CMakePackageConfigHelpers)

install(TARGETS xylem EXPORT xylemTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/xylem DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(plugin xylem_opencl xylem_cuda xylem_mpi)
  if(TARGET ${plugin})
    install(TARGETS ${plugin} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  endif()
endforeach()

set(XYLEM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/xylem)
install(EXPORT xylemTargets NAMESPACE xylem:: DESTINATION ${XYLEM_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/xylemConfig.cmake.in
  ${CMAKE_BINARY_DIR}/xylemConfig.cmake INSTALL_DESTINATION ${XYLEM_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/xylemConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/xylemConfig.cmake ${CMAKE_BINARY_DIR}/xylemConfigVersion.cmake
  DESTINATION ${XYLEM_CMAKE_DIR})
