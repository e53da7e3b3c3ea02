// The ONNX Runtime peer of lazyjit-bench's W12 rows: one node process per model, which creates an
// onnxruntime-node InferenceSession (the package's CPU libonnxruntime.so) once and then serves
// the bench's turns on stdin, so that ORT is timed in turns with lazyjit and libtorch as the
// bench's in-process peers are.
//
//   node bench/ort_peer.js MODEL.onnx INPUT.pb THREADS
//
// It prints "ready <input name> <output shape>" once the session exists and one warm-up run has
// finished (or "error <message>" and exits). Then, per line on stdin:
//   run N    one untimed run, then N timed runs; prints "times <ms> <ms> ..." (each run's wall
//            time inside this process, awaiting session.run) once this process's threads are
//            idle again (ORT's intra-op threads spin for a while after a run, and on a shared
//            2-core host that would be taken from the next contender)
//   quit     exits
// The package is found through NODE_PATH (the bench sets it to build/bench-ort/node_modules,
// scripts/setup-bench-onnxruntime.sh installs it there).
'use strict';

const fs = require('fs');
const readline = require('readline');

function fail(msg) {
  process.stdout.write(`error ${msg.replace(/\n/g, ' ')}\n`);
  process.exit(1);
}

// A minimal reader of the TensorProto fields gen_models.py writes (numpy_helper.from_array):
// dims (1), data_type (2), float_data (4), int64_data (7), raw_data (9).
function readTensorProto(buf) {
  let pos = 0;
  const varint = () => {
    let v = 0n, shift = 0n;
    for (;;) {
      const b = buf[pos++];
      v |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
      shift += 7n;
    }
  };
  const dims = [];
  let dataType = 0, raw = null;
  const floats = [], ints = [];
  while (pos < buf.length) {
    const key = Number(varint());
    const field = key >> 3, wire = key & 7;
    if (wire === 0) {
      const v = varint();
      if (field === 1) dims.push(Number(v));
      else if (field === 2) dataType = Number(v);
      else if (field === 7) ints.push(BigInt.asIntN(64, v));
    } else if (wire === 2) {
      const len = Number(varint());
      const end = pos + len;
      if (field === 9) {
        raw = buf.subarray(pos, end);
      } else if (field === 1 || field === 7) { // packed
        while (pos < end) {
          const v = varint();
          if (field === 1) dims.push(Number(v));
          else ints.push(BigInt.asIntN(64, v));
        }
      } else if (field === 4) {
        for (let p = pos; p < end; p += 4) floats.push(buf.readFloatLE(p));
      }
      pos = end;
    } else if (wire === 5) {
      if (field === 4) floats.push(buf.readFloatLE(pos));
      pos += 4;
    } else if (wire === 1) {
      pos += 8;
    } else {
      throw new Error(`unexpected wire type ${wire}`);
    }
  }
  const copy = () => { // raw_data may be unaligned in the file's buffer
    const a = new ArrayBuffer(raw.length);
    new Uint8Array(a).set(raw);
    return a;
  };
  if (dataType === 1) return { type: 'float32', dims, data: raw ? new Float32Array(copy()) : Float32Array.from(floats) };
  if (dataType === 7) return { type: 'int64', dims, data: raw ? new BigInt64Array(copy()) : BigInt64Array.from(ints) };
  throw new Error(`input data type ${dataType} is not handled (float32 and int64 are)`);
}

// The CPU seconds of this process's threads but the main one (ORT's pool), from each thread's
// schedstat (nanoseconds on a CPU).
function otherThreadsCpuSeconds() {
  let total = 0;
  for (const tid of fs.readdirSync('/proc/self/task')) {
    if (Number(tid) === process.pid) continue;
    try {
      total += Number(fs.readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e9;
    } catch (e) { /* the thread exited */ }
  }
  return total;
}

function nowMs() { return Number(process.hrtime.bigint()) / 1e6; }

// Waits until the other threads used under 5% of a CPU over 2 ms, or 1 s passed (as the bench's
// waitForQuietThreads does for its own process).
function waitQuiet() {
  const start = nowMs();
  let before = otherThreadsCpuSeconds();
  for (;;) {
    const w0 = nowMs();
    while (nowMs() - w0 < 2) { /* spin: the caller's CPU stays awake, as the bench's does */ }
    const now = otherThreadsCpuSeconds();
    if (now - before < 0.05 * (nowMs() - w0) / 1e3) return;
    before = now;
    if (nowMs() - start > 1000) return;
  }
}

async function main() {
  const [modelPath, inputPath, threadsArg] = process.argv.slice(2);
  if (!modelPath || !inputPath) fail('usage: ort_peer.js MODEL.onnx INPUT.pb THREADS');
  let ort;
  try {
    ort = require('onnxruntime-node');
  } catch (e) {
    fail(`onnxruntime-node not found (run scripts/setup-bench-onnxruntime.sh): ${e.message}`);
  }
  const threads = Math.max(1, Number(threadsArg) || 1);
  let session, feeds;
  try {
    session = await ort.InferenceSession.create(modelPath, {
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
    });
    const t = readTensorProto(fs.readFileSync(inputPath));
    feeds = { [session.inputNames[0]]: new ort.Tensor(t.type, t.data, t.dims) };
  } catch (e) {
    fail(e.message);
  }
  const runOnce = async () => {
    const out = await session.run(feeds);
    return out[session.outputNames[0]];
  };
  const first = await runOnce();
  const version = require('onnxruntime-node/package.json').version;
  process.stdout.write(`ready ${session.inputNames[0]} [${first.dims.join(',')}] onnxruntime-node ${version}\n`);

  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of rl) {
    const [cmd, arg] = line.trim().split(/\s+/);
    if (cmd === 'quit') break;
    if (cmd !== 'run') {
      process.stdout.write(`error unknown command '${line.trim()}'\n`);
      continue;
    }
    const n = Math.max(0, Number(arg) || 0);
    await runOnce(); // untimed, as the bench's turns begin
    const times = [];
    for (let i = 0; i < n; ++i) {
      const a = process.hrtime.bigint();
      await runOnce();
      times.push(Number(process.hrtime.bigint() - a) / 1e6);
    }
    waitQuiet();
    process.stdout.write(`times ${times.map((t) => t.toFixed(4)).join(' ')}\n`);
  }
  process.exit(0);
}

main().catch((e) => fail(e.message));
