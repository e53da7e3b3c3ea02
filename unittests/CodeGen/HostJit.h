// Tests of IR-level helpers (math lowerings): the test builds functions into module(), then
// compile() JIT-compiles them for the host and lookup() gives their addresses.
#pragma once

#include <doctest/doctest.h>

#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/TargetSelect.h>

#include <memory>

namespace lazyjit::testing {

class HostJit {
public:
  explicit HostJit(const char *name) {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto j = llvm::orc::LLJITBuilder().create();
    REQUIRE(static_cast<bool>(j));
    jit = std::move(*j);
    ctx = std::make_unique<llvm::LLVMContext>();
    mod = std::make_unique<llvm::Module>(name, *ctx);
    mod->setDataLayout(jit->getDataLayout());
  }
  llvm::Module &module() { return *mod; }
  /// Verifies the module and hands it to the JIT (module() is gone afterwards).
  void compile() {
    REQUIRE_FALSE(llvm::verifyModule(*mod, &llvm::errs()));
    REQUIRE_FALSE(static_cast<bool>(jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(mod), std::move(ctx)))));
  }
  template <typename Fn> Fn lookup(const char *name) {
    auto sym = jit->lookup(name);
    REQUIRE(static_cast<bool>(sym));
    return sym->toPtr<Fn>();
  }

private:
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::Module> mod;
};

} // namespace lazyjit::testing
