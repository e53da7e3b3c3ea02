// The NVPTX emulator device (see NVPTXEmulator.h).
#include "NVPTXEmulator.h"
#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Runtime/HostAllocator.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Error.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <atomic>
#include <barrier>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace lazyjit::testing {

namespace {

using namespace llvm;

// The special registers and the block barrier of the calling (emulated) thread.
thread_local int32_t tCtaid[3], tTid[3];
thread_local std::barrier<> *tBarrier = nullptr;

int32_t ctaidX() { return tCtaid[0]; }
int32_t ctaidY() { return tCtaid[1]; }
int32_t ctaidZ() { return tCtaid[2]; }
int32_t tidX() { return tTid[0]; }
int32_t tidY() { return tTid[1]; }
int32_t tidZ() { return tTid[2]; }
void barrier0() { tBarrier->arrive_and_wait(); }

std::atomic<int> statKernels{0}, statLaunches{0}, statBarrierLaunches{0}, statVectorLoads{0};

std::string llvmErrorText(llvm::Error e) {
  std::string s;
  handleAllErrors(std::move(e), [&](const ErrorInfoBase &info) { s += info.message(); });
  return s;
}

class EmuJIT {
public:
  using Entry = void (*)(void **, const int64_t *);

  static EmuJIT &get() {
    static EmuJIT *j = new EmuJIT(); // kernels may run until exit
    return *j;
  }

  const DataLayout &dataLayout() const { return jit->getDataLayout(); }
  const Triple &triple() const { return jit->getTargetTriple(); }

  // One JIT serves every emulated device; a kernel's symbol is a digest of its program, so a
  // symbol added already (by another device, NVEMU and NVEMUR) is the same kernel.
  Entry add(std::unique_ptr<Module> m, std::unique_ptr<LLVMContext> ctx, const std::string &entry) {
    std::lock_guard lock(mu);
    if (auto it = added.find(entry); it != added.end()) {
      m.reset(); // the module before its context
      return it->second;
    }
    if (auto err = jit->addIRModule(orc::ThreadSafeModule(std::move(m), std::move(ctx))))
      throw InternalError("nvemu: cannot add a kernel: " + llvmErrorText(std::move(err)));
    auto sym = jit->lookup(entry);
    if (!sym) throw InternalError("nvemu: " + entry + " not found: " + llvmErrorText(sym.takeError()));
    return added[entry] = sym->toPtr<Entry>();
  }

private:
  std::mutex mu;
  std::map<std::string, Entry> added;
  std::unique_ptr<orc::LLJIT> jit;

  EmuJIT() {
    TargetSpec::host(); // initializes the native target
    auto j = orc::LLJITBuilder().create();
    if (!j) throw InternalError("nvemu: cannot create a JIT: " + llvmErrorText(j.takeError()));
    jit = std::move(*j);
    auto gen = orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit->getDataLayout().getGlobalPrefix());
    if (!gen) throw InternalError("nvemu: " + llvmErrorText(gen.takeError()));
    jit->getMainJITDylib().addGenerator(std::move(*gen));
    orc::SymbolMap syms;
    auto def = [&](const char *name, auto *fn) {
      syms[jit->mangleAndIntern(name)] = {orc::ExecutorAddr::fromPtr(reinterpret_cast<void *>(fn)),
                                          JITSymbolFlags::Exported | JITSymbolFlags::Callable};
    };
    def("nvemu.ctaid.x", ctaidX);
    def("nvemu.ctaid.y", ctaidY);
    def("nvemu.ctaid.z", ctaidZ);
    def("nvemu.tid.x", tidX);
    def("nvemu.tid.y", tidY);
    def("nvemu.tid.z", tidZ);
    def("nvemu.barrier0", barrier0);
    if (auto err = jit->getMainJITDylib().define(orc::absoluteSymbols(std::move(syms))))
      throw InternalError("nvemu: " + llvmErrorText(std::move(err)));
  }
};

struct Retargeted {
  bool hasBarrier = false;
  int vectorLoads = 0;
  std::string entry;
};

// Rewrites NVPTX kernel IR to run on the host (see NVPTXEmulator.h) and adds the entry point
// `void nvemu.<symbol>(ptr bufs, ptr vars)`.
Retargeted retarget(Module &m, const KernelSignature &sig) {
  Retargeted r;
  LLVMContext &ctx = m.getContext();
  m.setTargetTriple(EmuJIT::get().triple().str());
  m.setDataLayout(EmuJIT::get().dataLayout());
  Type *i32 = Type::getInt32Ty(ctx), *f32 = Type::getFloatTy(ctx), *f64 = Type::getDoubleTy(ctx);
  Type *voidTy = Type::getVoidTy(ctx);
  auto replace = [&](const char *intrinsic, const char *with, FunctionType *ty) {
    Function *f = m.getFunction(intrinsic);
    if (!f) return false;
    FunctionCallee callee = m.getOrInsertFunction(with, ty);
    for (User *u : make_early_inc_range(f->users())) {
      auto *call = cast<CallInst>(u);
      IRBuilder<> b(call);
      std::vector<Value *> args(call->arg_begin(), call->arg_end());
      CallInst *nc = b.CreateCall(callee, args);
      call->replaceAllUsesWith(nc);
      call->eraseFromParent();
    }
    f->eraseFromParent();
    return true;
  };
  FunctionType *sreg = FunctionType::get(i32, false);
  replace("llvm.nvvm.read.ptx.sreg.ctaid.x", "nvemu.ctaid.x", sreg);
  replace("llvm.nvvm.read.ptx.sreg.ctaid.y", "nvemu.ctaid.y", sreg);
  replace("llvm.nvvm.read.ptx.sreg.ctaid.z", "nvemu.ctaid.z", sreg);
  replace("llvm.nvvm.read.ptx.sreg.tid.x", "nvemu.tid.x", sreg);
  replace("llvm.nvvm.read.ptx.sreg.tid.y", "nvemu.tid.y", sreg);
  replace("llvm.nvvm.read.ptx.sreg.tid.z", "nvemu.tid.z", sreg);
  r.hasBarrier = replace("llvm.nvvm.barrier0", "nvemu.barrier0", FunctionType::get(voidTy, false));
  replace("llvm.nvvm.ex2.approx.f", "exp2f", FunctionType::get(f32, {f32}, false));
  replace("llvm.nvvm.sqrt.rn.f", "sqrtf", FunctionType::get(f32, {f32}, false));
  replace("llvm.nvvm.sqrt.rn.d", "sqrt", FunctionType::get(f64, {f64}, false));
  for (Function &f : m)
    if (f.getName().starts_with("llvm.nvvm."))
      throw InternalError("nvemu: no host equivalent of " + f.getName().str());
  if (NamedMDNode *md = m.getNamedMetadata("nvvm.annotations")) m.eraseNamedMetadata(md);

  Function *kernel = m.getFunction(sig.symbol);
  LAZYJIT_INTERNAL_CHECK(kernel != nullptr, "nvemu: kernel {} not in its module", sig.symbol);
  kernel->setCallingConv(CallingConv::C);
  for (Function &f : m)
    for (BasicBlock &bb : f)
      for (Instruction &i : bb)
        if (auto *ld = dyn_cast<LoadInst>(&i); ld && ld->getType()->isVectorTy()) ++r.vectorLoads;

  r.entry = "nvemu." + sig.symbol;
  Type *ptr = PointerType::getUnqual(ctx);
  Function *entry = Function::Create(FunctionType::get(voidTy, {ptr, ptr}, false), GlobalValue::ExternalLinkage,
                                     r.entry, &m);
  IRBuilder<> b(BasicBlock::Create(ctx, "entry", entry));
  std::vector<Value *> args;
  for (unsigned i = 0; i < kernel->arg_size(); ++i) {
    Type *t = kernel->getArg(i)->getType();
    bool isBuf = t->isPointerTy();
    unsigned slot = isBuf ? i : i - static_cast<unsigned>(sig.numBuffers);
    Value *base = isBuf ? entry->getArg(0) : entry->getArg(1);
    Type *slotTy = isBuf ? ptr : Type::getInt64Ty(ctx);
    Value *v = b.CreateLoad(isBuf ? t : slotTy, b.CreateConstInBoundsGEP1_64(slotTy, base, slot));
    args.push_back(v);
  }
  b.CreateCall(kernel, args);
  b.CreateRetVoid();
  std::string err;
  raw_string_ostream os(err);
  if (verifyModule(m, &os)) throw InternalError("nvemu: the retargeted kernel does not verify: " + os.str());
  return r;
}

class EmuProgram : public Program {
public:
  EmuProgram(KernelSignature sig, EmuJIT::Entry entry, bool hasBarrier)
      : sig(std::move(sig)), entry(entry), hasBarrier(hasBarrier) {
    info_.name = this->sig.name;
    info_.global = this->sig.globalSize;
    info_.local = this->sig.localSize;
  }

  void run(std::span<Buffer *const> bufs, const VarVals &vars) override {
    std::vector<void *> ptrs;
    for (Buffer *b : bufs) ptrs.push_back(b->ptr());
    std::vector<int64_t> vals;
    std::map<std::string, int64_t> byName;
    for (const auto &v : sig.vars) {
      int64_t x = vars.at(*v->expr).second;
      vals.push_back(x);
      byName[*v->expr] = x;
    }
    int64_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
    for (size_t i = 0; i < sig.gridDims.size(); ++i) grid[i] = symInfer(sig.gridDims[i], byName);
    for (size_t i = 0; i < sig.localSize.size(); ++i) block[i] = sig.localSize[i];
    if (grid[0] <= 0 || grid[1] <= 0 || grid[2] <= 0) return;
    LAZYJIT_INTERNAL_CHECK(grid[0] <= 2147483647 && grid[1] <= 65535 && grid[2] <= 65535 &&
                               block[0] * block[1] * block[2] <= 1024,
                           "nvemu: kernel {} launches grid [{}, {}, {}] block [{}, {}, {}], beyond CUDA's limits",
                           sig.name, grid[0], grid[1], grid[2], block[0], block[1], block[2]);
    ++statLaunches;
    void **p = ptrs.data();
    const int64_t *vp = vals.data();
    auto eachBlock = [&](const std::function<void()> &body) {
      for (int64_t z = 0; z < grid[2]; ++z)
        for (int64_t y = 0; y < grid[1]; ++y)
          for (int64_t x = 0; x < grid[0]; ++x) {
            tCtaid[0] = static_cast<int32_t>(x);
            tCtaid[1] = static_cast<int32_t>(y);
            tCtaid[2] = static_cast<int32_t>(z);
            body();
          }
    };
    auto setTid = [&](int64_t t) {
      tTid[0] = static_cast<int32_t>(t % block[0]);
      tTid[1] = static_cast<int32_t>(t / block[0] % block[1]);
      tTid[2] = static_cast<int32_t>(t / (block[0] * block[1]));
    };
    int64_t threads = block[0] * block[1] * block[2];
    if (!hasBarrier) {
      eachBlock([&] {
        for (int64_t t = 0; t < threads; ++t) {
          setTid(t);
          entry(p, vp);
        }
      });
      return;
    }
    ++statBarrierLaunches;
    // one OS thread per GPU thread; they enter each block together so the shared array is reused
    // only after every thread has finished with it
    std::barrier<> bar(static_cast<std::ptrdiff_t>(threads));
    std::vector<std::thread> workers;
    for (int64_t t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        tBarrier = &bar;
        setTid(t);
        eachBlock([&] {
          bar.arrive_and_wait();
          entry(p, vp);
        });
      });
    for (auto &w : workers) w.join();
  }

  const ProgramInfo &info() const override { return info_; }

private:
  KernelSignature sig;
  EmuJIT::Entry entry;
  bool hasBarrier;
  ProgramInfo info_;
};

class EmuDevice : public Device {
public:
  explicit EmuDevice(const std::string &name) : Device(name) {}
  Allocator &allocator() override { return hostAllocator(); }

  std::shared_ptr<Program> compile(const KernelOpRef &ast) override {
    std::lock_guard lock(mu);
    ProgramKey key{ast, config().noopt};
    if (auto it = programs.find(key); it != programs.end()) return it->second;
    TargetSpec target = TargetSpec::nvptx("sm_90");
    KernelSignature sig = describeKernel(ast, target, CompileOptions::from(config()));
    std::string ir = emitKernelText(ast, target, CompileOptions::from(config()), IRStage::LLVM);
    auto ctx = std::make_unique<LLVMContext>();
    SMDiagnostic diag;
    std::unique_ptr<Module> m = parseIR(MemoryBufferRef(ir, sig.name), diag, *ctx);
    if (!m) throw InternalError("nvemu: cannot parse the IR of " + sig.name + ": " + diag.getMessage().str());
    Retargeted r = retarget(*m, sig);
    statVectorLoads += r.vectorLoads;
    ++statKernels;
    auto entry = EmuJIT::get().add(std::move(m), std::move(ctx), r.entry);
    auto prg = std::make_shared<EmuProgram>(sig, entry, r.hasBarrier);
    programs.emplace(key, prg);
    return prg;
  }

private:
  std::mutex mu;
  ProgramCache programs; // by AST and NOOPT, as the real devices do
};

} // namespace

void registerNVPTXEmulator() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerDeviceFactory("NVEMU", [](const std::string &n) { return std::make_unique<EmuDevice>(n); });
    registerRowKernelDevice("NVEMU", /*reducesOfRows=*/false); // as CUDA
    // the same device scheduled as the CPU is, so that the lowering of a reduce of rows (which
    // CUDA's schedule never forms) is run too
    registerDeviceFactory("NVEMUR", [](const std::string &n) { return std::make_unique<EmuDevice>(n); });
    registerRowKernelDevice("NVEMUR");
  });
}

NVPTXEmulatorStats nvptxEmulatorStats() {
  return {statKernels.load(), statLaunches.load(), statBarrierLaunches.load(), statVectorLoads.load()};
}

} // namespace lazyjit::testing
