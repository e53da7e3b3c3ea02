// PyTorch checkpoints (torch.save files) as state dicts: the reference's torch_load.
//
// Three layouts are read, told apart by their first bytes:
//  - the zip archive torch.save writes since 1.6: `<archive>/data.pkl` (the pickle), one record
//    `<archive>/data/<key>` per storage and maybe `<archive>/byteorder` ("little" or "big").
//    Records are usually stored; deflated ones are inflated (with a CRC check) when loading.
//    ZIP64 directories are understood.
//  - the legacy stream (`_use_new_zipfile_serialization=False`): pickles of the magic number, the
//    protocol version and sys_info, the main pickle, the list of storage keys, then each
//    storage's 8-byte element count and raw bytes.
//  - the tar archive of torch before 0.4: members `storages`, `tensors` and `pickle`.
//
// The pickles go through a restricted unpickler that knows only what a checkpoint of tensors
// uses (torch's tensor rebuild functions, torch.*Storage of the ten dtypes lazyjit shares with
// torch, collections.OrderedDict) and never executes anything.
//
// Every tensor keeps its storage offset and strides (transposes, step slices, expands and several
// views of one storage all read the right elements) and is lazy: the file is memory-mapped and a
// tensor's elements are read when it is realized (the file stays mapped while any tensor lives).
// Big-endian files are byte-swapped on reading.
//
// Names: a checkpoint is often a nest, {"model": state_dict, "optimizer": {...}, "epoch": 3};
// torchLoad flattens dicts, lists and tuples into one dict with "."-joined keys
// ("model.0.weight", "optimizer.state.0.momentum_buffer", "extra.1.0"; int keys in decimal) in
// pickle order, and skips every value that is not a tensor (ints, floats, strings, None). A
// checkpoint that is one tensor gives one entry named "". A tensor the checkpoint holds under two
// names (tied weights: one tensor object, pickled once) is one lazy tensor under both, as in
// PyTorch. So the torch.save of a model's state_dict() is ready for nn::loadStateDict, and a
// nested checkpoint is once its "model." keys are taken.
//
// A malformed file (not a checkpoint, a truncated or inconsistent archive, an unknown pickle
// opcode, a global outside the allowed set, a tensor reaching past its storage, a storage record
// shorter than its element count, duplicate keys after flattening) is a ParseError naming the file
// and the problem; a valid file using what lazyjit lacks (complex or quantized storages, legacy
// storage views) is an UnsupportedError or a ParseError naming it.
#pragma once

#include "lazyjit/NN/Module.h"

#include <optional>
#include <string>

namespace lazyjit::nn {

/// The tensors of the PyTorch checkpoint at `path`, on `device` (default: the default device),
/// flattened and lazy as described above.
StateDict torchLoad(const std::string &path,
                    const std::optional<std::string> &device = std::nullopt);

} // namespace lazyjit::nn
