# Third-party dependencies (Debian 12 packages installed by scripts/setup-deps.sh).
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(Threads REQUIRED)

find_package(LLVM 19.1 REQUIRED CONFIG HINTS /usr/lib/llvm-19/lib/cmake/llvm)
message(STATUS "LLVM ${LLVM_PACKAGE_VERSION} from ${LLVM_DIR}")
set(LAZYJIT_LLVM_TOOLS_DIR ${LLVM_TOOLS_BINARY_DIR})

# One interface target carries LLVM's include paths, definitions and libraries. Only lib/CodeGen
# and lib/Runtime link it (DESIGN.md: Graph and Schedule build without LLVM).
# Installed, it carries only the link (no public header of lazyjit includes LLVM).
add_library(lazyjit_llvm INTERFACE)
target_include_directories(lazyjit_llvm SYSTEM INTERFACE $<BUILD_INTERFACE:${LLVM_INCLUDE_DIRS}>)
separate_arguments(LAZYJIT_LLVM_DEFS NATIVE_COMMAND ${LLVM_DEFINITIONS})
foreach(def ${LAZYJIT_LLVM_DEFS})
  string(REGEX REPLACE "^-D" "" def "${def}")
  target_compile_definitions(lazyjit_llvm INTERFACE $<BUILD_INTERFACE:${def}>)
endforeach()
set_target_properties(lazyjit_llvm PROPERTIES EXPORT_NAME llvm)
if(LAZYJIT_STATIC_LLVM)
  llvm_map_components_to_libnames(LAZYJIT_LLVM_LIBS
    core support irreader passes orcjit executionengine analysis transformutils
    scalaropts vectorize instcombine ipo target mc object
    x86codegen x86asmparser x86desc x86info
    nvptxcodegen nvptxdesc nvptxinfo)
  target_link_libraries(lazyjit_llvm INTERFACE ${LAZYJIT_LLVM_LIBS})
else()
  target_link_libraries(lazyjit_llvm INTERFACE LLVM)
endif()

find_path(DOCTEST_INCLUDE_DIR doctest/doctest.h REQUIRED)
find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
