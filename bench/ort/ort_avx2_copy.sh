#!/bin/bash
# Makes DEST, a copy of bench/ort whose ONNX Runtime runs its AVX2 kernels
# on an AVX-512 machine, so that scripts/ort_latency.sh (ORT_DIR=DEST, with
# SLIMPACK_CPU_MAX=avx2 for our side) can time both runtimes on AVX2 code
# paths where no AVX2-only CPU is at hand. ORT has no switch for this:
# MLAS picks its kernels once, from CPUID, in MLAS_PLATFORM's constructor.
# This copy's libonnxruntime.so.1 has that constructor's two branches into
# the AVX-512F and the AVX-VNNI kernel tables made unconditional jumps past
# them (je -> jmp), so it keeps the AVX2/FMA tables an AVX2 CPU gets. The
# byte patterns are onnxruntime-node 1.30.0's (the lockfile's); each must
# occur exactly once, else nothing is written. Everything else is hard
# links to bench/ort. Usage: bench/ort/ort_avx2_copy.sh DEST
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:?usage: $0 DEST}
[[ -d $here/node_modules/onnxruntime-node ]] ||
  { echo "no $here/node_modules/onnxruntime-node: run npm ci --ignore-scripts in $here" >&2; exit 1; }
[[ ! -e $dest ]] || { echo "$dest exists; remove it first" >&2; exit 1; }
# cp -al copies a symbolic link as a link: the rm below would then remove
# the original library.
[[ ! -L $here/node_modules/onnxruntime-node && ! -L $here/node_modules ]] ||
  { echo "$here/node_modules/onnxruntime-node is a symbolic link; copy it first" >&2; exit 1; }
rel=node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
/usr/bin/python3 - "$here/$rel" "$tmp" <<'PY'
import sys
src, out = sys.argv[1], sys.argv[2]
b = bytearray(open(src, 'rb').read())
# (what, pattern, offset of the je's opcode byte in the pattern)
patches = [
    # test $0x10000,%r10d (CPUID.7.EBX bit 16, AVX512F); je +0x0e; mov %r8,%rax; not; test $0xe0,%al
    ('AVX-512F', bytes.fromhex('41f7c200000100740e4c89c048f7d0a8e0'), 7),
    # mov $7,%eax; mov $1,%ecx; cpuid; test $0x10,%al (CPUID.7.1.EAX bit 4, AVX-VNNI); je +0x38
    ('AVX-VNNI', bytes.fromhex('b807000000b9010000000fa2a8107438'), 14),
]
for what, pat, at in patches:
    i = b.find(pat)
    if i < 0 or b.find(pat, i + 1) >= 0:
        sys.exit(f'{src}: the {what} branch pattern occurs {b.count(pat)} times, not once: '
                 'not the onnxruntime-node build this script knows')
    assert b[i + at] == 0x74, what
    b[i + at] = 0xEB  # je rel8 -> jmp rel8
    print(f'patched the {what} branch at file offset {i + at:#x}')
open(out, 'wb').write(bytes(b))
PY
cp -al "$here" "$dest"
rm -rf "$dest/work"
rm "$dest/$rel"
install -m 0644 "$tmp" "$dest/$rel"
echo "ORT with its AVX2 kernels: ORT_DIR=$dest"
