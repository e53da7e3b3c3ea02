# lit configuration of lazyjit's regression tests: every .lj script and .ast file under test/lit
# runs its RUN lines through lazyjit-dump and FileCheck. Outputs go to the build tree.
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from reflevel import NumericAtReferenceLevel  # noqa: E402

config.name = "lazyjit"

# `--param opt=N` (CTest's lit-ref): the programs that check values run again at OPT=N
# (reflevel.py); the others are reported unsupported in that run.
ref_opt = lit_config.params.get("opt")
config.test_format = NumericAtReferenceLevel(ref_opt)
config.suffixes = [".lj", ".ast", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.lazyjit_obj_root, "test", "lit")

# Tool names are replaced where they stand as a command, not inside other words or paths.
def tool(name, path):
    return (r"(?<![-\w/.%])" + name + r"(?![-\w/.])", path)

config.substitutions.append(("%lazyjit-dump", os.path.join(config.lazyjit_tools_dir, "lazyjit-dump")))
config.substitutions.append(tool("FileCheck", config.filecheck_path))
config.substitutions.append(tool("not", config.not_path))
config.substitutions.append(("%shared", config.lazyjit_shared_dir))
config.substitutions.append(
    ("%expect-exit", "/usr/bin/python3 " + os.path.join(config.test_source_root, "expect-exit.py")))

# the ONNX tests make their models with python3-onnx (a test dependency of setup-deps.sh)
config.substitutions.append(("%python", "/usr/bin/python3"))
import subprocess
if subprocess.run(["/usr/bin/python3", "-c", "import onnx"], capture_output=True).returncode == 0:
    config.available_features.add("python-onnx")

# A hermetic environment: no knob of the caller leaks in (DEBUG, OPT, DEVICE, ...), and compiled
# kernels are cached in the build tree.
for knob in ["DEBUG", "OPT", "DEVICE", "NOOPT", "LAZYCACHE", "MERGE_VIEW", "GRAPH", "THREADS",
             "REDUCEOP_SPLIT_THRESHOLD", "LLVMOPT", "CUDA_ARCH", "DISABLE_COMPILER_CACHE", "LAZYJIT_CPU"]:
    config.environment.pop(knob, None)
config.environment["LAZYJIT_CACHE"] = os.path.join(config.test_exec_root, "kernel-cache")
if ref_opt is not None:
    config.environment["OPT"] = ref_opt
config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", "/usr/bin:/bin")])

# ptxas (from a CUDA toolkit, if one is installed) assembles the PTX of the CodeGen/ptx-* tests:
# `%if ptxas %{ ... %}` RUN lines run only where it exists.
import shutil
ptxas = shutil.which("ptxas") or next(
    (p for p in ["/usr/local/cuda/bin/ptxas"] if os.access(p, os.X_OK)), None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(tool("ptxas", ptxas))

# Graphviz's dot renders the pictures of --emit=dot -o FILE.svg: `%if dot %{ ... %}` RUN lines.
if os.access("/usr/bin/dot", os.X_OK):
    config.available_features.add("dot")

# AVX-512 hosts: there the CPU heuristics pad vector axes (PADTO) and tile 32 lanes wide, which
# some CodeGen tests check (`REQUIRES: avx512`); elsewhere they are reported as unsupported.
try:
    with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
        if any(line.startswith("flags") and " avx512f" in line for line in cpuinfo):
            config.available_features.add("avx512")
except OSError:
    pass
