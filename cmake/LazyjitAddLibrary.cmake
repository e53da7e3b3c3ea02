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

# lazyjit_add_unittest(<Lib> SOURCES ... DEPENDS ... [EXCLUDE_SUITES suite...]): one doctest
# executable per library, run as the CTest entry <Lib>Tests; that entry leaves out the doctest
# suites in EXCLUDE_SUITES, which get entries of their own (lazyjit_add_unittest_entry).
function(lazyjit_add_unittest name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS;EXCLUDE_SUITES" ${ARGN})
  add_executable(${name}Tests ${ARG_SOURCES})
  target_include_directories(${name}Tests SYSTEM PRIVATE ${DOCTEST_INCLUDE_DIR})
  target_include_directories(${name}Tests PRIVATE ${PROJECT_SOURCE_DIR}/unittests)
  target_link_libraries(${name}Tests PRIVATE ${ARG_DEPENDS})
  target_compile_definitions(${name}Tests PRIVATE
    LAZYJIT_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared"
    LAZYJIT_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  set(filter)
  if(ARG_EXCLUDE_SUITES)
    list(JOIN ARG_EXCLUDE_SUITES "," suites)
    set(filter "--test-suite-exclude=${suites}")
  endif()
  add_test(NAME ${name}Tests COMMAND ${name}Tests ${filter})
  add_dependencies(lazyjit-unittests ${name}Tests)
  # every kernel AST a test produces is verified and round-tripped through its text form
  set_tests_properties(${name}Tests PROPERTIES LABELS unit ENVIRONMENT "LAZYJIT_VERIFY_AST=1")
endfunction()

# lazyjit_add_unittest_entry(<Lib> <entry> ARGS doctest-option... [ENVIRONMENT VAR=value...]):
# another CTest entry, <Lib>Tests-<entry>, that runs <Lib>Tests with the given doctest filters, for
# tests that need what a machine may lack (a GPU, the CUDA toolkit). Such a test calls test::skip
# (unittests/TestSkip.h) instead of passing; the run then exits 77, which CTest reports as
# skipped, with the reason in the test's output (ctest -V, Testing/Temporary/LastTest.log).
function(lazyjit_add_unittest_entry name entry)
  cmake_parse_arguments(ARG "" "" "ARGS;ENVIRONMENT" ${ARGN})
  add_test(NAME ${name}Tests-${entry} COMMAND ${name}Tests ${ARG_ARGS})
  list(PREPEND ARG_ENVIRONMENT LAZYJIT_VERIFY_AST=1)
  set_tests_properties(${name}Tests-${entry} PROPERTIES LABELS "unit;${entry}" SKIP_RETURN_CODE 77
                       ENVIRONMENT "${ARG_ENVIRONMENT}")
endfunction()
