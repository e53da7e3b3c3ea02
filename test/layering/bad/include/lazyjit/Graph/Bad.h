// A fixture for the layering check: Graph may not include Tensor (tools/check-layering.py must
// report this line).
#pragma once
#include "lazyjit/Tensor/Tensor.h"
