// What the CPU heuristics' files share (HeuristicsCPU.cpp, HeuristicsCPUPack.cpp).
#pragma once

#include "lazyjit/CodeGen/Kernel.h"

#include <vector>

namespace lazyjit::cpu_heuristics {

/// Per buffer, whether the kernel's reduce reads it (every buffer when there is no reduce): only
/// those decide the register tile and the panels.
std::vector<bool> reduceInputs(const Kernel &k);

/// Whether neither the index nor the validity of buffer `buf` moves along `axis`.
bool independentOf(const Kernel &k, size_t buf, size_t axis);

/// Packed panels for a register-tiled reduce (HeuristicsCPUPack.cpp): the reduce's inputs that move
/// along the vector axis and not along the tile's rows are copied once per value of the global
/// axes they depend on, and read by every iteration of the global loops inside those.
void choosePanelPacking(Kernel &k);

} // namespace lazyjit::cpu_heuristics
