# `cmake --install`: the public headers, the static libraries, lazyjit-dump and a CMake package,
# so another project can write
#   find_package(lazyjit CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE lazyjit::lazyjit)
# lazyjit::lazyjit is everything (the Tensor API, nn, the runtime and the JIT); the libraries
# are also there one by one (lazyjit::Tensor, lazyjit::Graph, ...). LLVM, fmt, spdlog and zlib are
# found again by the package (lazyjitConfig.cmake); no public header includes LLVM.
include(CMakePackageConfigHelpers)

add_library(lazyjit INTERFACE)
target_link_libraries(lazyjit INTERFACE lazyjitNN lazyjitRuntime lazyjitCodeGen)
add_library(lazyjit::lazyjit ALIAS lazyjit)

get_property(LAZYJIT_LIBS GLOBAL PROPERTY LAZYJIT_INSTALL_TARGETS)
install(TARGETS lazyjit ${LAZYJIT_LIBS} lazyjit_llvm EXPORT lazyjitTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS lazyjit-dump RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/lazyjit DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(LAZYJIT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/lazyjit)
install(EXPORT lazyjitTargets NAMESPACE lazyjit:: DESTINATION ${LAZYJIT_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/lazyjitConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/lazyjitConfig.cmake INSTALL_DESTINATION ${LAZYJIT_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/lazyjitConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/lazyjitConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/lazyjitConfigVersion.cmake
  DESTINATION ${LAZYJIT_CMAKE_DIR})
