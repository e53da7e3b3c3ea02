# Compiler launcher, linker and warning flags shared by every target.
find_program(LAZYJIT_CCACHE ccache)
if(LAZYJIT_CCACHE)
  set(CMAKE_C_COMPILER_LAUNCHER ${LAZYJIT_CCACHE})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${LAZYJIT_CCACHE})
endif()

find_program(LAZYJIT_LLD ld.lld)
if(LAZYJIT_LLD)
  add_link_options(-fuse-ld=lld)
endif()

add_compile_options(-Wall -Wextra -Wno-unused-parameter)
# A switch over an enum lists every enumerator: the switches over Op have no `default:`, so an op
# added to Ops.def is a compile error in every pass that does not say what to do with it.
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  add_compile_options(-Werror=switch)
endif()
if(LAZYJIT_WERROR)
  add_compile_options(-Werror)
endif()

if(LAZYJIT_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    # clang's -fsanitize=function reads a type signature stored before the callee of an indirect
    # call; JIT-compiled kernels have none (the check would read the page before them)
    add_compile_options(-fno-sanitize=function)
  endif()
endif()

# LAZYJIT_SANITIZE_THREAD: ThreadSanitizer, for the threads stress test (the `tsan` preset, `ctest -L
# threads`). LLVM is not instrumented: what it does inside is invisible to TSan (tools/tsan.supp lists
# the races reported there, if any). TSan cannot be combined with ASan.
if(LAZYJIT_SANITIZE_THREAD)
  if(LAZYJIT_SANITIZE)
    message(FATAL_ERROR "LAZYJIT_SANITIZE_THREAD and LAZYJIT_SANITIZE cannot both be ON (ThreadSanitizer "
                        "and AddressSanitizer exclude each other)")
  endif()
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread -fno-omit-frame-pointer)
endif()

# LAZYJIT_FUZZ (clang only): every library is instrumented for libFuzzer's coverage; the targets in
# fuzz/ link the fuzzer runtime. Combined with LAZYJIT_SANITIZE in the `fuzz` preset.
if(LAZYJIT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "LAZYJIT_FUZZ needs clang (the fuzz preset uses clang++-19)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
