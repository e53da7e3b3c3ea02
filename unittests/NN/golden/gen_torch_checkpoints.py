#!/usr/bin/python3
"""PyTorch checkpoints for TorchLoadTest, written at build time by Debian's python3-torch (1.13).

Usage: gen_torch_checkpoints.py OUTDIR

For each case CASE it writes OUTDIR/CASE.pt and OUTDIR/CASE.expected/: keys.txt (one line per
tensor, in the order torchLoad must give them: "key<TAB>dtype<TAB>d0,d1,..") and KEY.npy with the
values (bfloat16, which NumPy lacks, as float32: every bfloat16 is exactly a float32).

  seq_zip, seq_legacy   an nn.Sequential's state dict (Linear, BatchNorm1d with running stats and
                        an int64 num_batches_tracked, Linear) in the zip and the legacy format
  views_*               non-contiguous tensors (transpose, step slices, permute, expand), views
                        that share one storage, every dtype, 0-d and empty tensors; zip, legacy,
                        deflated zip, big-endian zip (torch 2's `byteorder` record) and the old
                        tar format (written here by hand, checked by torch.load)
  nested_zip            {"model": state_dict, "optimizer": SGD state, "epoch": 3, ...} flattened
                        with "." (non-tensor values are skipped), and one tensor under two names

and bad files, each of which must be a ParseError: bad_truncated.pt (half of a zip checkpoint),
bad_opcode.pt (an unknown pickle opcode), bad_global.pt (GLOBAL 'os system'), bad_short_tensor.pt
(a tensor reaching past its storage's numel), bad_short_record.pt (a storage record shorter than
its numel).
"""
import io
import os
import pickle
import shutil
import struct
import sys
import tarfile
import zipfile
from collections import OrderedDict

import numpy as np
import torch

OUT = sys.argv[1]

DTYPE_NAMES = {
    torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
    torch.float64: "float64", torch.int64: "int64", torch.int32: "int32", torch.int16: "int16",
    torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool",
}


def flatten(obj, prefix=""):
    """The tensors of a nested checkpoint as torchLoad names them (dicts, lists and tuples)."""
    if isinstance(obj, torch.Tensor):
        return [(prefix, obj)]
    items = []
    if isinstance(obj, dict):
        items = list(obj.items())
    elif isinstance(obj, (list, tuple)):
        items = list(enumerate(obj))
    out = []
    for k, v in items:
        out += flatten(v, f"{prefix}.{k}" if prefix else str(k))
    return out


def write_expected(case, obj):
    d = os.path.join(OUT, case + ".expected")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "keys.txt"), "w") as f:
        for key, t in flatten(obj):
            f.write(f"{key}\t{DTYPE_NAMES[t.dtype]}\t{','.join(str(s) for s in t.shape)}\n")
            v = t.detach().float() if t.dtype == torch.bfloat16 else t.detach()
            np.save(os.path.join(d, key + ".npy"), np.ascontiguousarray(v.numpy()))


def check_reads_back(path, obj):
    """torch.load gives back what was saved (a hand-made file must be a real checkpoint)."""
    back = flatten(torch.load(path))
    want = flatten(obj)
    assert [k for k, _ in back] == [k for k, _ in want], path
    for (_, a), (_, b) in zip(back, want):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), path


def save(case, obj, legacy=False):
    path = os.path.join(OUT, case + ".pt")
    torch.save(obj, path, _use_new_zipfile_serialization=not legacy)
    write_expected(case, obj)
    return path


def rewrite_zip(src, dst, change):
    """Copies a zip checkpoint entry by entry; change(name, data) gives (data, compression) or None
    to drop the entry."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            got = change(info.filename, zin.read(info.filename))
            if got is not None:
                data, method = got
                zout.writestr(zipfile.ZipInfo(info.filename), data, compress_type=method)


def model_state():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.ReLU(),
                                torch.nn.Linear(3, 2))
    model.train()
    for _ in range(3):
        model(torch.randn(8, 4))
    return model


def views():
    torch.manual_seed(1)
    base = torch.randn(3, 4)
    big = torch.arange(12.0)
    return OrderedDict([
        ("transposed", base.t()),
        ("stepped", base[:, ::2]),
        ("row", base[1]),
        ("shared_a", big[0:5]),
        ("shared_b", big[3:10]),
        ("shared_c", big.view(3, 4)[:, 1:3]),
        ("expanded", torch.randn(3).expand(2, 3)),
        ("permuted", torch.randn(2, 3, 4).permute(2, 0, 1)),
        ("f16", torch.randn(2, 3).half()),
        ("bf16", torch.randn(5).bfloat16()),
        ("bf16_t", torch.randn(3, 2).bfloat16().t()),
        ("f64", torch.randn(4).double()),
        ("i64", torch.tensor([2**40 + 3, -3, 0, 2**62], dtype=torch.int64)),
        ("i32", torch.tensor([[1, -2], [2**31 - 1, -2**31]], dtype=torch.int32)),
        ("i16", torch.tensor([-300, 300, 7], dtype=torch.int16)),
        ("i8", torch.tensor([-128, 127, 0], dtype=torch.int8)),
        ("u8", torch.tensor([0, 255, 17], dtype=torch.uint8)),
        ("bool", torch.tensor([True, False, True, True])),
        ("scalar", torch.tensor(2.5)),
        ("int_scalar", torch.tensor(7)),
        ("empty", torch.empty(0, 3)),
    ])


def byteswapped_zip(src, dst):
    """A big-endian checkpoint as torch 2 writes one on a big-endian machine: every storage's
    elements byte-swapped and a `byteorder` record saying "big"."""
    itemsize = {"FloatStorage": 4, "HalfStorage": 2, "BFloat16Storage": 2, "DoubleStorage": 8,
                "LongStorage": 8, "IntStorage": 4, "ShortStorage": 2, "CharStorage": 1,
                "ByteStorage": 1, "BoolStorage": 1}
    sizes = {}

    class Sizes(pickle.Unpickler):
        def find_class(self, module, name):
            if module == "torch":
                return name
            if module == "torch._utils":
                return lambda *args: None
            return super().find_class(module, name)

        def persistent_load(self, pid):
            sizes[pid[2]] = itemsize[pid[1]]

    with zipfile.ZipFile(src) as z:
        base = z.namelist()[0].split("/")[0]
        Sizes(io.BytesIO(z.read(base + "/data.pkl"))).load()

    def change(name, data):
        key = name.split("/")[-1]
        if "/data/" in name:
            w = sizes[key]
            data = np.frombuffer(data, dtype=f"u{w}" if w > 1 else "u1").byteswap().tobytes()
        return data, zipfile.ZIP_STORED

    rewrite_zip(src, dst, change)
    with zipfile.ZipFile(dst, "a") as z:
        z.writestr(zipfile.ZipInfo(base + "/byteorder"), b"big")


def tar_checkpoint(path, tensors):
    """The old tar format (torch < 0.4): members sys_info, storages, tensors and pickle, as
    torch.serialization.legacy_load reads them."""
    storages, storage_ids, tensor_recs = [], {}, []
    for name, t in tensors.items():
        s = t.storage()
        # storage keys must differ from the tensor keys (0, 1, ...): one dict holds both
        sid = storage_ids.setdefault(s.data_ptr(), 1000 + len(storage_ids))
        if sid == 1000 + len(storages):
            storages.append(s)
        tensor_recs.append((name, sid, t))

    def pickled(*objs, persistent=None):
        buf = io.BytesIO()
        for o in objs:
            p = pickle.Pickler(buf, protocol=2)
            if persistent:
                p.persistent_id = persistent
            p.dump(o)
        return buf.getvalue()

    storage_types = {torch.float32: torch.FloatStorage, torch.int64: torch.LongStorage,
                     torch.float16: torch.HalfStorage}
    tensor_types = {torch.float32: torch.FloatTensor, torch.int64: torch.LongTensor,
                    torch.float16: torch.HalfTensor}
    st = pickled(len(storages))
    for sid, s in enumerate(storages, start=1000):
        st += pickled((sid, "cpu", storage_types[s.dtype]))
        raw = bytes(torch.tensor([], dtype=s.dtype).set_(s).numpy().tobytes())
        st += struct.pack("<q", s.size()) + raw
    st += pickled([])  # storage views
    te = pickled(len(tensor_recs))
    for key, (name, sid, t) in enumerate(tensor_recs):
        te += pickled((key, sid, tensor_types[t.dtype]))
        te += struct.pack("<i", t.dim()) + b"\0" * 4
        te += struct.pack(f"<{t.dim()}q", *t.shape) + struct.pack(f"<{t.dim()}q", *t.stride())
        te += struct.pack("<q", t.storage_offset())

    class Ref:
        def __init__(self, key):
            self.key = key

    main = OrderedDict((name, Ref(key)) for key, (name, _, _) in enumerate(tensor_recs))
    pk = pickled(main, persistent=lambda o: str(o.key) if isinstance(o, Ref) else None)
    sys_info = pickled(dict(protocol_version=1001, little_endian=True,
                            type_sizes=dict(short=2, int=4, long=4)))
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in [("sys_info", sys_info), ("pickle", pk), ("tensors", te),
                           ("storages", st)]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 1.5  # a float mtime makes a pax header, as old torch's files have
            tar.addfile(info, io.BytesIO(data))


def zip_with_pickle(path, pkl, storages):
    """A zip checkpoint from raw data.pkl bytes and raw storage records."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        for key, data in storages.items():
            z.writestr(f"archive/data/{key}", data)
        z.writestr("archive/version", b"3\n")


def bad_files():
    good = os.path.join(OUT, "seq_zip.pt")
    with open(good, "rb") as f:
        data = f.read()
    with open(os.path.join(OUT, "bad_truncated.pt"), "wb") as f:
        f.write(data[: len(data) // 2])
    zip_with_pickle(os.path.join(OUT, "bad_opcode.pt"), b"\x80\x02}q\x00\xff.", {})
    zip_with_pickle(os.path.join(OUT, "bad_global.pt"), b"\x80\x02cos\nsystem\nq\x00.", {})

    # a float32 tensor of 10 elements over a storage of 4
    class Storage:
        pass

    class Fake:
        def __reduce__(self):
            return (torch._utils._rebuild_tensor_v2, (Storage(), 0, (10,), (1,), False, OrderedDict()))

    buf = io.BytesIO()
    p = pickle.Pickler(buf, protocol=2)
    p.persistent_id = lambda o: ("storage", torch.FloatStorage, "0", "cpu", 4) \
        if isinstance(o, Storage) else None
    p.dump({"w": Fake()})
    zip_with_pickle(os.path.join(OUT, "bad_short_tensor.pt"), buf.getvalue(),
                    {"0": np.arange(4, dtype=np.float32).tobytes()})

    # the storage record of 1.weight holds 2 bytes, its pickle says 3 floats
    rewrite_zip(good, os.path.join(OUT, "bad_short_record.pt"),
                lambda name, d: (d[:2] if name.endswith("/data/2") else d, zipfile.ZIP_STORED))


def main():
    if os.path.exists(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    state = model_state().state_dict()
    save("seq_zip", state)
    save("seq_legacy", state, legacy=True)

    v = views()
    zpath = save("views_zip", v)
    save("views_legacy", v, legacy=True)

    rewrite_zip(zpath, os.path.join(OUT, "views_deflate.pt"),
                lambda name, d: (d, zipfile.ZIP_DEFLATED))
    check_reads_back(os.path.join(OUT, "views_deflate.pt"), v)
    write_expected("views_deflate", v)

    byteswapped_zip(zpath, os.path.join(OUT, "views_bigendian.pt"))
    write_expected("views_bigendian", v)

    tar_views = OrderedDict((k, v[k]) for k in ["transposed", "stepped", "row", "shared_a",
                                                "shared_b", "expanded", "f16", "i64", "scalar"])
    tar_checkpoint(os.path.join(OUT, "views_tar.pt"), tar_views)
    check_reads_back(os.path.join(OUT, "views_tar.pt"), tar_views)
    write_expected("views_tar", tar_views)

    model = model_state()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(8, 4)).sum().backward()
    opt.step()
    nested = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3,
              "name": "run-1", "best": 0.25, "extra": [torch.ones(2), (torch.zeros(1, dtype=torch.int64),)]}
    tied = torch.randn(2, 2)  # one tensor under two names: pickled once, the second a memo reference
    nested["tied_a"], nested["tied_b"] = tied, tied
    save("nested_zip", nested)

    bad_files()


if __name__ == "__main__":
    main()
