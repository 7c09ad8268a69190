// Minimal NumPy .npy / .npz reader and .npy writer for the ORT scripts:
// little-endian, C-order arrays of the dtypes ONNX models take as inputs.
// .npz members may be stored or deflated (numpy.savez / savez_compressed).
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

// NumPy descr -> [ORT tensor type, TypedArray constructor].
const kDtypes = {
  '<f4': ['float32', Float32Array],
  '<f8': ['float64', Float64Array],
  '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array],
  '<i2': ['int16', Int16Array],
  '|i1': ['int8', Int8Array],
  '|u1': ['uint8', Uint8Array],
  '|b1': ['bool', Uint8Array],
};

// Parses one .npy image. Returns {type, dims, data}.
export function parseNpy(buf, where) {
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') {
    throw new Error(`${where}: not a .npy file (bad magic)`);
  }
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const fortran = /'fortran_order':\s*True/.test(header);
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  if (descr === undefined || shapeText === undefined) {
    throw new Error(`${where}: unparsable .npy header ${header}`);
  }
  if (fortran) throw new Error(`${where}: Fortran-order arrays are not supported`);
  const dt = kDtypes[descr];
  if (dt === undefined) {
    throw new Error(`${where}: dtype ${descr} not supported (have ${Object.keys(kDtypes).join(', ')})`);
  }
  const dims = shapeText.split(',').map((s) => s.trim()).filter((s) => s.length > 0).map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const offset = start + headerLen;
  const bytes = count * dt[1].BYTES_PER_ELEMENT;
  if (buf.length - offset < bytes) {
    throw new Error(`${where}: ${bytes} data bytes expected for ${descr} [${dims}], file has ${buf.length - offset}`);
  }
  // Copy so the typed array is aligned whatever the header length.
  const data = new dt[1](count);
  Buffer.from(data.buffer).set(buf.subarray(offset, offset + bytes));
  return { type: dt[0], dims, data: dt[0] === 'bool' ? Array.from(data, (v) => v !== 0) : data };
}

// Reads the members of a zip archive through its central directory.
function readZip(buf, where) {
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 65557); --i) {
    if (buf.readUInt32LE(i) === 0x06054b50) { eocd = i; break; }
  }
  if (eocd < 0) throw new Error(`${where}: not a zip/.npz archive (no end of central directory)`);
  const entries = buf.readUInt16LE(eocd + 10);
  let p = buf.readUInt32LE(eocd + 16);
  const members = [];
  for (let e = 0; e < entries; ++e) {
    if (buf.readUInt32LE(p) !== 0x02014b50) throw new Error(`${where}: corrupt central directory`);
    const method = buf.readUInt16LE(p + 10);
    let csize = buf.readUInt32LE(p + 20);
    const nameLen = buf.readUInt16LE(p + 28), extraLen = buf.readUInt16LE(p + 30);
    const commentLen = buf.readUInt16LE(p + 32);
    let local = buf.readUInt32LE(p + 42);
    const name = buf.toString('utf8', p + 46, p + 46 + nameLen);
    // ZIP64 extra field (numpy writes it for large members): sizes/offset that overflowed.
    for (let x = p + 46 + nameLen; x < p + 46 + nameLen + extraLen;) {
      const id = buf.readUInt16LE(x), len = buf.readUInt16LE(x + 2);
      if (id === 0x0001) {
        let q = x + 4;
        if (buf.readUInt32LE(p + 24) === 0xffffffff) q += 8;
        if (csize === 0xffffffff) { csize = Number(buf.readBigUInt64LE(q)); q += 8; }
        if (local === 0xffffffff) local = Number(buf.readBigUInt64LE(q));
      }
      x += 4 + len;
    }
    const dataStart = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    const raw = buf.subarray(dataStart, dataStart + csize);
    if (method !== 0 && method !== 8) throw new Error(`${where}: member ${name} uses zip method ${method}`);
    members.push({ name, data: method === 0 ? raw : zlib.inflateRawSync(raw) });
    p += 46 + nameLen + extraLen + commentLen;
  }
  return members;
}

// Reads a .npy (one tensor, named after the file stem) or .npz.
// Returns a Map name -> {type, dims, data}.
export function readNpyOrNpz(file) {
  const buf = fs.readFileSync(file);
  const out = new Map();
  if (file.endsWith('.npz')) {
    for (const m of readZip(buf, file)) {
      out.set(m.name.replace(/\.npy$/, ''), parseNpy(m.data, `${file}:${m.name}`));
    }
  } else {
    out.set(path.basename(file).replace(/\.npy$/, ''), parseNpy(buf, file));
  }
  return out;
}

const kDescrOf = {
  float32: '<f4', float64: '<f8', int64: '<i8', int32: '<i4', int16: '<i2', int8: '|i1',
  uint8: '|u1', bool: '|b1',
};

// Writes an ORT tensor ({type, dims, data}) as a version 1.0 .npy file.
export function writeNpy(file, tensor) {
  const descr = kDescrOf[tensor.type];
  if (descr === undefined) throw new Error(`${file}: cannot write tensor type ${tensor.type}`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';  // pad to 64 bytes
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const data = tensor.type === 'bool' ? Uint8Array.from(tensor.data, (v) => (v ? 1 : 0)) : tensor.data;
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'),
    Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}
