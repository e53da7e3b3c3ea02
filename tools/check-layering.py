#!/usr/bin/env python3
"""Checks the include layering of DESIGN.md: Support < Graph < Schedule < CodeGen < Runtime <
Tensor < NN. A file of a library (include/lazyjit/<Lib>/ or lib/<Lib>/) may include lazyjit
headers of its own library and of the libraries below it, never above. The graph, the scheduler
and the code generator also read no configuration: their callers pass options (GraphOptions,
CompileOptions), so a `config()` call in one of them is a violation too. Prints every violation as
FILE:LINE: ... and exits 1 if there is one. Usage: check-layering.py [SOURCE_DIR]"""
import os, re, sys

ORDER = ["Support", "Graph", "Schedule", "CodeGen", "Runtime", "Tensor", "NN", "ONNX"]
INCLUDE = re.compile(r'^\s*#\s*include\s*"lazyjit/([A-Za-z]+)/')
NO_CONFIG = ["Graph", "Schedule", "CodeGen"]
# the configuration's accessors; logging's DEBUG queries (LAZYJIT_LOG, debugAtLeast) are allowed
CONFIG_CALL = re.compile(r'(?<![A-Za-z0-9_])(config\s*\(\s*\)|getenv\s*\(|setConfig\s*\(|ScopedConfig\b|'
                         r'fromEnvironment\s*\(|Config\s*::\s*parse\b)')

def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bad, checked = [], 0
    for base in ("include/lazyjit", "lib"):
        for lib in ORDER:
            d = os.path.join(root, base, lib)
            for dirpath, _, files in os.walk(d):
                for f in files:
                    if not f.endswith((".h", ".cpp", ".def")):
                        continue
                    path = os.path.join(dirpath, f)
                    checked += 1
                    with open(path, encoding="utf-8") as fh:
                        for n, line in enumerate(fh, 1):
                            m = INCLUDE.match(line)
                            if m and m.group(1) in ORDER and ORDER.index(m.group(1)) > ORDER.index(lib):
                                bad.append(f"{os.path.relpath(path, root)}:{n}: {lib} includes lazyjit/{m.group(1)} "
                                           f"(a library above it)")
                            code = line.split("//", 1)[0]
                            if lib in NO_CONFIG and CONFIG_CALL.search(code):
                                bad.append(f"{os.path.relpath(path, root)}:{n}: {lib} reads the configuration "
                                           f"(its caller passes options)")
    for b in bad:
        print(b)
    print(f"check-layering: {checked} files, {len(bad)} violations")
    return 1 if bad else 0

if __name__ == "__main__":
    sys.exit(main())
