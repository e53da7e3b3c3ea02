# lazyjit_add_library(<Lib> SOURCES ... [DEPENDS ...] [PRIVATE_DEPENDS ...])
# Creates lazyjit<Lib> from lib/<Lib>, with include/ as its public include root. Dependencies are
# the libraries below it (DESIGN.md layering); tools/check-layering.py enforces the include edges.
function(lazyjit_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS;PRIVATE_DEPENDS" ${ARGN})
  add_library(lazyjit${name} STATIC ${ARG_SOURCES})
  target_include_directories(lazyjit${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                                   $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(lazyjit${name} PUBLIC ${ARG_DEPENDS} PRIVATE ${ARG_PRIVATE_DEPENDS})
  set_target_properties(lazyjit${name} PROPERTIES POSITION_INDEPENDENT_CODE ON EXPORT_NAME ${name})
  set_property(GLOBAL APPEND PROPERTY LAZYJIT_INSTALL_TARGETS lazyjit${name})
endfunction()

# lazyjit_add_unittest(<Lib> SOURCES ... DEPENDS ...): one doctest executable per library.
function(lazyjit_add_unittest name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS" ${ARGN})
  add_executable(${name}Tests ${ARG_SOURCES})
  target_include_directories(${name}Tests SYSTEM PRIVATE ${DOCTEST_INCLUDE_DIR})
  target_include_directories(${name}Tests PRIVATE ${PROJECT_SOURCE_DIR}/unittests)
  target_link_libraries(${name}Tests PRIVATE ${ARG_DEPENDS})
  target_compile_definitions(${name}Tests PRIVATE
    LAZYJIT_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared"
    LAZYJIT_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  add_test(NAME ${name}Tests COMMAND ${name}Tests)
  add_dependencies(lazyjit-unittests ${name}Tests)
  # every kernel AST a test produces is verified and round-tripped through its text form
  set_tests_properties(${name}Tests PROPERTIES LABELS unit ENVIRONMENT "LAZYJIT_VERIFY_AST=1")
endfunction()
