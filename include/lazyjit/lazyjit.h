// The umbrella header for model code: the Tensor API and autograd, nn modules, layers, optimizers
// and data files, and realize/debug helpers.
#pragma once

#include "lazyjit/Graph/DType.h"
#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/NN/ClipGrad.h"
#include "lazyjit/NN/DataLoader.h"
#include "lazyjit/NN/GradScaler.h"
#include "lazyjit/NN/IDX.h"
#include "lazyjit/NN/LRScheduler.h"
#include "lazyjit/NN/Layers.h"
#include "lazyjit/NN/Module.h"
#include "lazyjit/NN/Optim.h"
#include "lazyjit/NN/State.h"
#include "lazyjit/NN/TorchLoad.h"
#include "lazyjit/Tensor/Function.h"
#include "lazyjit/Tensor/Jit.h"
#include "lazyjit/Tensor/Tensor.h"
