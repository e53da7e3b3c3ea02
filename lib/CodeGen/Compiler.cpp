// The code generator's driver. Its passes run in one function, `runPasses`, top to bottom: build
// the Kernel with the target's optimizations, lower it to LLVM IR (writing the loop nest), run
// LLVM's pipeline, and emit object code or PTX; each logs what it made at DEBUG >= 4. LLVM errors
// are turned into CompileError here; no exception crosses an LLVM frame.
#include "lazyjit/CodeGen/Compiler.h"
#include "CodeGenFingerprint.h"
#include "GPULaunch.h"
#include "LoopNest.h"
#include "LowerKernel.h"
#include "VectorMath.h"
#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/Support/Logging.h"
#include "lazyjit/Support/Math.h"

#include <fmt/ranges.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/PassManager.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Support/xxhash.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <chrono>
#include <mutex>

namespace lazyjit {

namespace {

void initializeLLVM() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const TargetSpec &t) {
  initializeLLVM();
  std::string err;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(t.triple, err);
  LAZYJIT_USER_CHECK(target != nullptr, CompileError, "codegen: no LLVM target for {}: {}", t.triple, err);
  llvm::TargetOptions opts;
  opts.NoNaNsFPMath = false;
  opts.NoInfsFPMath = false;
  auto level = t.optLevel >= 3 ? llvm::CodeGenOptLevel::Aggressive
               : t.optLevel == 0 ? llvm::CodeGenOptLevel::None
                                 : llvm::CodeGenOptLevel::Default;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      t.triple, t.cpu, t.features, opts, llvm::Reloc::PIC_, std::nullopt, level));
  LAZYJIT_USER_CHECK(tm != nullptr, CompileError, "codegen: cannot create a target machine for {} {}",
                     t.triple, t.cpu);
  return tm;
}

// Whether a target has glibc's vector math (libmvec): the kernels' vector math calls
// (KernelOptions::vectorMath) and the loop vectorizer's mapping below both follow this.
bool hasLibmvec(const llvm::Triple &t) { return t.isX86() && t.isOSLinux(); }

// glibc's vector math (libmvec) for the C library calls CPU kernels make (LowerCPU.cpp), at the
// widest vector width the CPU has. The JIT resolves these symbols from libmvec.so.1.
void addVectorMath(llvm::TargetLibraryInfoImpl &tlii, llvm::TargetMachine &tm) {
  if (!hasLibmvec(tm.getTargetTriple())) return;
  llvm::StringRef features = tm.getTargetFeatureString();
  bool avx2 = features.contains("+avx2"), avx512 = features.contains("+avx512f");
  if (!avx2) return;
  static const std::vector<std::string> prefixes = {"_ZGV_LLVM_N4v", "_ZGV_LLVM_N8v", "_ZGV_LLVM_N16v"};
  // VecDesc keeps StringRefs: the names must outlive the TLI, so they are built once
  static const std::vector<std::pair<std::string, unsigned>> ymmNames = [] {
    std::vector<std::pair<std::string, unsigned>> v;
    for (const auto &f : vectorMathFns()) {
      unsigned lanes = 0;
      std::string n = vectorMathName(f, false, &lanes);
      v.emplace_back(std::move(n), lanes);
    }
    return v;
  }();
  static const std::vector<std::pair<std::string, unsigned>> zmmNames = [] {
    std::vector<std::pair<std::string, unsigned>> v;
    for (const auto &f : vectorMathFns()) {
      unsigned lanes = 0;
      std::string n = vectorMathName(f, true, &lanes);
      v.emplace_back(std::move(n), lanes);
    }
    return v;
  }();
  std::vector<llvm::VecDesc> descs;
  auto prefix = [](unsigned lanes) -> llvm::StringRef {
    return lanes == 4 ? prefixes[0] : lanes == 8 ? prefixes[1] : prefixes[2];
  };
  for (size_t i = 0; i < vectorMathFns().size(); ++i) {
    const auto &f = vectorMathFns()[i];
    descs.emplace_back(f.scalar, ymmNames[i].first, llvm::ElementCount::getFixed(ymmNames[i].second), false,
                       prefix(ymmNames[i].second));
    if (avx512)
      descs.emplace_back(f.scalar, zmmNames[i].first, llvm::ElementCount::getFixed(zmmNames[i].second), false,
                         prefix(zmmNames[i].second));
  }
  tlii.addVectorizableFunctions(descs);
}

// The new pass manager's default pipeline at the target's level, vectorizers on explicitly.
void optimize(llvm::Module &m, llvm::TargetMachine &tm, int level) {
  if (level <= 0) return;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  pto.LoopUnrolling = true;
  llvm::PassBuilder pb(&tm, pto);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::TargetLibraryInfoImpl tlii(llvm::Triple(m.getTargetTriple()));
  addVectorMath(tlii, tm);
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel ol = level == 1   ? llvm::OptimizationLevel::O1
                               : level == 2 ? llvm::OptimizationLevel::O2
                                            : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(ol);
  mpm.run(m, mam);
}

bool noOptimizations(const CompileOptions &o) { return o.noopt; }

bool checksBounds(const CompileOptions &o, const TargetSpec &t) {
  return t.kind == TargetSpec::Kind::CPU && boundsChecking(o);
}

std::string symbolFor(const KernelOp &ast, const TargetSpec &t, const CompileOptions &o) {
  // A digest of the whole program's text: the AST as the disk cache identifies it (astKey), the
  // target and the options. KernelOp::hash is a hash-table hash and collides (two cast kernels of
  // shapes (64, 2048) and (64, 3072) hash alike), and two programs named alike cannot both be
  // linked into the process's JIT ("Duplicate definition of symbol").
  std::string text = astKey(ast);
  text += fmt::format("\n{}\nnoopt={} bounds={} mergeView={}", t.key(), noOptimizations(o) ? 1 : 0,
                      checksBounds(o, t) ? 1 : 0, o.mergeView ? 1 : 0);
  if (o.applyOpts && !noOptimizations(o))
    for (const auto &opt : *o.applyOpts) text += "\n" + opt.str();
  return fmt::format("lj_{:016x}", llvm::xxh3_64bits(llvm::StringRef(text)));
}

std::string moduleText(const llvm::Module &m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return s;
}

std::vector<uint8_t> emitFile(llvm::Module &m, llvm::TargetMachine &tm, llvm::CodeGenFileType type) {
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  LAZYJIT_USER_CHECK(!tm.addPassesToEmitFile(pm, os, nullptr, type), CompileError,
                     "codegen: the target cannot emit this file type");
  pm.run(m);
  return std::vector<uint8_t>(buf.begin(), buf.end());
}

std::string kernelSummary(const Kernel &k);
KernelSignature describe(const Kernel &k, const KernelOp &ast, const TargetSpec &target, const CompileOptions &opts);

// How far runPasses goes (Loops: as LLVM, with the loop nest written).
enum class Until { Loops, LLVM, LLVMOpt, Code };

struct Compiled {
  explicit Compiled(Kernel k) : kernel(std::move(k)) {}
  Kernel kernel;
  LoopNest nest;
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::unique_ptr<llvm::Module> module;
  LoopTrace loops;
  std::vector<uint8_t> code; ///< object code (CPU) or PTX text (NVPTX), with Until::Code
};

// The code generator's passes, in order.
Compiled runPasses(const KernelOpRef &ast, const TargetSpec &t, const CompileOptions &o, Until until) {
  // 1. the Kernel: axes, buffers, the reduce, and the target's optimizations (heuristics or the
  //    options' list), each recorded in it
  Compiled c(buildKernel(ast, t, o));
  const std::string &name = c.kernel.name();
  LAZYJIT_LOG(CodeGen, 4, "pass kernel:\n{}", kernelSummary(c.kernel));
  // 2. the loop nest: what each axis becomes, the unrolled combinations and accumulators
  c.nest = LoopNest::of(c.kernel);
  LAZYJIT_LOG(CodeGen, 4, "pass loop-nest of {}: {}", name, c.nest.str());
  // 3. lowering to LLVM IR from the loop nest, for the CPU or NVPTX; it writes the loops it emits
  c.ctx = std::make_unique<llvm::LLVMContext>();
  c.tm = makeTargetMachine(t);
  c.module = std::make_unique<llvm::Module>(name, *c.ctx);
  c.module->setTargetTriple(t.triple);
  c.module->setDataLayout(c.tm->createDataLayout());
  bool traceLoops = until == Until::Loops || debugAtLeast(4);
  lowerKernel(c.kernel, c.nest, *c.module, symbolFor(*ast, t, o), t, traceLoops ? &c.loops : nullptr);
  LAZYJIT_LOG(CodeGen, 4, "pass loops of {}:\n{}", name, c.loops.str());
  LAZYJIT_LOG(CodeGen, 4, "pass lower of {}: LLVM IR\n{}", name, moduleText(*c.module));
  if (until == Until::LLVM || until == Until::Loops) return c;
  // 4. LLVM's optimization pipeline at the target's level
  optimize(*c.module, *c.tm, t.optLevel);
  LAZYJIT_LOG(CodeGen, 4, "pass llvm-opt of {}: LLVM IR\n{}", name, moduleText(*c.module));
  if (until == Until::LLVMOpt) return c;
  // 5. code: an object file to link into the JIT, or PTX for the driver
  bool ptx = t.kind == TargetSpec::Kind::NVPTX;
  c.code = emitFile(*c.module, *c.tm, ptx ? llvm::CodeGenFileType::AssemblyFile : llvm::CodeGenFileType::ObjectFile);
  if (ptx) LAZYJIT_LOG(CodeGen, 4, "pass emit of {}: PTX\n{}", name, std::string(c.code.begin(), c.code.end()));
  else LAZYJIT_LOG(CodeGen, 4, "pass emit of {}: {} bytes of object code", name, c.code.size());
  return c;
}

// A feature list as TargetSpec keeps it: "+name" / "-name", sorted, comma-separated.
std::string featureString(std::vector<std::string> fs) {
  std::sort(fs.begin(), fs.end());
  std::string out;
  for (const auto &f : fs) out += (out.empty() ? "" : ",") + f;
  return out;
}

} // namespace

TargetSpec TargetSpec::host(int optLevel) {
  initializeLLVM();
  TargetSpec t;
  t.kind = Kind::CPU;
  t.triple = llvm::sys::getProcessTriple();
  t.cpu = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> feats = llvm::sys::getHostCPUFeatures();
  std::vector<std::string> fs;
  for (const auto &f : feats) fs.push_back((f.second ? "+" : "-") + f.first().str());
  t.features = featureString(std::move(fs));
  t.optLevel = optLevel;
  return t;
}

TargetSpec TargetSpec::namedCPU(const std::string &cpu, int optLevel) {
  TargetSpec t = host(optLevel);
  std::string err;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(t.triple, err);
  if (!target) throw CompileError("no LLVM target for " + t.triple + ": " + err);
  // (checked on a generic subtarget: one made for an unknown name prints LLVM's warning to stderr)
  std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(t.triple, "", ""));
  if (!sti || !sti->isCPUStringValid(cpu))
    throw UnsupportedError("'" + cpu + "' is not a CPU LLVM knows for " + t.triple);
  sti.reset(target->createMCSubtargetInfo(t.triple, cpu, ""));
  // every feature the target defines, on or off as the CPU has it (the host's list, which
  // host() reports, names only the features the host knows)
  std::vector<std::string> fs;
  for (const llvm::SubtargetFeatureKV &f : sti->getAllProcessorFeatures())
    fs.push_back((sti->getFeatureBits().test(f.Value) ? "+" : "-") + std::string(f.Key));
  t.cpu = cpu;
  t.features = featureString(std::move(fs));
  return t;
}

std::vector<std::string> TargetSpec::missingOnHost() const {
  std::vector<std::string> missing;
  if (kind != Kind::CPU) return missing;
  llvm::StringMap<bool> hostFeats = llvm::sys::getHostCPUFeatures();
  llvm::StringRef rest(features);
  while (!rest.empty()) {
    auto [f, tail] = rest.split(',');
    rest = tail;
    if (f.size() < 2 || f[0] != '+') continue;
    llvm::StringRef name = f.drop_front();
    // the instruction sets LLVM makes a kernel's arithmetic and memory accesses from; not the
    // system ones (PKU, shadow stacks, ...) a VM may hide, nor SSE4A (AMD's EXTRQ/INSERTQ and
    // scalar streaming stores, which kernels do not make)
    bool isa = name != "sse4a" && (name.starts_with("sse") || name == "ssse3" || name.starts_with("avx") ||
                                   name == "fma" || name == "f16c" || name.starts_with("bmi") ||
                                   name == "lzcnt" || name == "popcnt" || name == "movbe");
    auto it = hostFeats.find(name);
    if (isa && it != hostFeats.end() && !it->second) missing.push_back(name.str());
  }
  return missing;
}

TargetSpec TargetSpec::nvptx(const std::string &sm, int optLevel) {
  TargetSpec t;
  t.kind = Kind::NVPTX;
  t.triple = "nvptx64-nvidia-cuda";
  t.cpu = sm;
  t.features = "+ptx80";
  t.optLevel = optLevel;
  return t;
}

std::string TargetSpec::key() const {
  return triple + "|" + cpu + "|" + features + "|O" + std::to_string(optLevel) + "|LLVM " + llvmVersionString() +
         "|codegen " + LAZYJIT_CODEGEN_FINGERPRINT;
}

std::string llvmVersionString() { return LLVM_VERSION_STRING; }

bool boundsChecking(const CompileOptions &o) { return o.bounds; }

CompileOptions CompileOptions::from(const Config &c) {
  CompileOptions o;
  o.noopt = c.noopt;
  o.bounds = c.bounds;
  o.mergeView = c.mergeView;
  return o;
}

Kernel buildKernel(const KernelOpRef &ast, const TargetSpec &target, const CompileOptions &opts) {
  KernelOptions ko;
  if (target.features.find("+avx512f") != std::string::npos) ko.vectorBits = 512;
  ko.avx512dq = target.features.find("+avx512dq") != std::string::npos;
  if (target.kind == TargetSpec::Kind::NVPTX) {
    ko.hasLocal = true;
    ko.hasShared = true;
    ko.globalMax = {2147483647, 65535, 65535};
    ko.localMax = {1024, 1024, 64};
  }
  ko.mergeView = opts.mergeView;
  ko.vectorMath = hasLibmvec(llvm::Triple(target.triple));
  Kernel k(ast, ko);
  k.boundsCheck = checksBounds(opts, target);
  if (!noOptimizations(opts)) {
    if (opts.applyOpts)
      for (const auto &o : *opts.applyOpts) k.applyOpt(o);
    else
      k.handCodedOptimizations();
  }
  // the loop nest's decisions the optimizations leave to the target
  if (target.kind == TargetSpec::Kind::CPU) chooseVectorAxis(k);
  if (k.vectorAxis < 0 || k.vectorReduce) {
    // the copies into reduce order serve the register tile's vector loop: without one (an op the
    // lanes cannot compute, such as a cast to float16, turns it down) nothing is copied
    k.packDepth = -1;
    k.packedBufs.clear();
    k.packBlock = 0;
    k.wholePacked.clear();
    k.wholePackBytes = 0;
  }
  return k;
}

namespace {

std::string wholePacked(const Kernel &k) {
  if (k.wholePacked.empty()) return "";
  return fmt::format("\n  packs buffers [{}] whole before the loops ({} KiB of scratch)", fmt::join(k.wholePacked, ", "),
                     k.wholePackBytes / 1024);
}

std::string kernelSummary(const Kernel &k) {
  std::string axes;
  LoopNest nest = LoopNest::of(k);
  for (size_t a = 0; a < nest.roles.size(); ++a)
    axes += fmt::format("{}{}:{}", a ? " " : "", k.fullShape()[a].render(), LoopNest::roleName(nest.roles[a]));
  std::string optStr;
  for (const auto &o : k.appliedOpts) optStr += (optStr.empty() ? "" : ", ") + o.str();
  std::string shape = renderShape(k.fullShape());
  std::string packed = fmt::format("{}", fmt::join(k.packedBufs, ", "));
  return fmt::format("kernel {}\n  full_shape ({})\n  axes {}\n  opts [{}]{}{}{}{}{}{}{}{}", k.name(),
                     shape.substr(1, shape.size() - 2), axes, optStr,
                     k.rowLanes ? fmt::format("\n  row stores {} lanes", k.rowLanes) : "",
                     k.rowMoments.empty() ? ""
                                          : fmt::format("\n  row moments: {} sum{} of squared deviations from the first pass (Welford)",
                                                        k.rowMoments.size(), k.rowMoments.size() == 1 ? "" : "s"),
                     k.rowPipelined ? "\n  rows pipelined: each row's output pass runs in the next row's last pass" : "",
                     k.rowThreads ? fmt::format("\n  row threads {} per block", k.rowThreads) : "",
                     k.streamingStores ? "\n  stores streaming" : "",
                     k.scatterOutput ? "\n  stores scattered (the vector axis is not the output's contiguous one)" : "",
                     k.packDepth < 0   ? ""
                     : k.packBlock ? fmt::format("\n  packs buffers [{}] before axis {}, axis {} in blocks of {}", packed,
                                                 k.packDepth, k.firstReduce(), k.packBlock)
                                   : fmt::format("\n  packs buffers [{}] before axis {}", packed, k.packDepth),
                     wholePacked(k));
}

KernelSignature describe(const Kernel &k, const KernelOp &ast, const TargetSpec &target, const CompileOptions &opts) {
  KernelSignature sig;
  sig.name = k.name();
  sig.symbol = symbolFor(ast, target, opts);
  for (const KernelOp *x : k.bufs)
    if (x->op != Op::Const) sig.numBuffers = std::max(sig.numBuffers, x->memBuffer().idx + 1);
  sig.vars = varsFromAst(ast);
  sig.opts = k.appliedOpts;
  sig.boundsChecked = k.boundsCheck;
  sig.scratchBytes = k.wholePackBytes;
  if (k.wholePackBytes) sig.packRange = k.fullShape()[static_cast<size_t>(k.firstReduce())].asInt();
  if (target.kind == TargetSpec::Kind::NVPTX) {
    GPULaunch launch = gpuLaunch(k);
    for (const auto &d : launch.grid) {
      sig.gridDims.push_back(d.size);
      sig.globalSize.push_back(maxBound(d.size));
    }
    for (const auto &d : launch.block) sig.localSize.push_back(d.size.asInt());
    sig.sharedBytes = launch.sharedBytes;
  } else {
    sig.gridDims.push_back(k.outerRange());
  }
  sig.kernelSummary = kernelSummary(k);
  return sig;
}

} // namespace

KernelSignature describeKernel(const KernelOpRef &ast, const TargetSpec &target, const CompileOptions &opts) {
  return describe(buildKernel(ast, target, opts), *ast, target, opts);
}

std::string emitKernelText(const KernelOpRef &ast, const TargetSpec &target, const CompileOptions &opts,
                           IRStage stage) {
  if (stage == IRStage::Loops || stage == IRStage::LLVM) {
    Compiled c = runPasses(ast, target, opts, stage == IRStage::Loops ? Until::Loops : Until::LLVM);
    return stage == IRStage::Loops ? c.loops.str() : moduleText(*c.module);
  }
  if (stage == IRStage::LLVMOpt) return moduleText(*runPasses(ast, target, opts, Until::LLVMOpt).module);
  Compiled c = runPasses(ast, target, opts, Until::LLVMOpt);
  auto bytes = emitFile(*c.module, *c.tm, llvm::CodeGenFileType::AssemblyFile);
  return std::string(bytes.begin(), bytes.end());
}

namespace {

// A kernel's code (object file or PTX) and its signature, from one run of the passes.
std::vector<uint8_t> compileCode(const KernelOpRef &ast, const TargetSpec &target, const CompileOptions &opts,
                                 KernelSignature *sig) {
  auto t0 = std::chrono::steady_clock::now();
  Compiled c = runPasses(ast, target, opts, Until::Code);
  if (sig) *sig = describe(c.kernel, *ast, target, opts);
  LAZYJIT_LOG(CodeGen, 2, "compiled {}{} in {:.2f} ms", c.kernel.name(),
              target.kind == TargetSpec::Kind::NVPTX ? " to PTX" : "",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return std::move(c.code);
}

} // namespace

std::vector<uint8_t> compileToObject(const KernelOpRef &ast, const TargetSpec &target, const CompileOptions &opts,
                                     KernelSignature *sig) {
  LAZYJIT_USER_CHECK(target.kind == TargetSpec::Kind::CPU, CompileError,
                     "codegen: object code is for CPU targets");
  return compileCode(ast, target, opts, sig);
}

std::string compileToPTX(const KernelOpRef &ast, const TargetSpec &target, const CompileOptions &opts,
                         KernelSignature *sig) {
  LAZYJIT_USER_CHECK(target.kind == TargetSpec::Kind::NVPTX, CompileError, "codegen: PTX is for NVPTX targets");
  std::vector<uint8_t> ptx = compileCode(ast, target, opts, sig);
  return std::string(ptx.begin(), ptx.end());
}

} // namespace lazyjit
