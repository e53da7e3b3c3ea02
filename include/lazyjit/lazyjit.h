// The umbrella header for model code: the Tensor API, nn layers, and realize/debug helpers.
#pragma once

#include "lazyjit/Graph/DType.h"
#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/Tensor/NN.h"
#include "lazyjit/Tensor/Tensor.h"
