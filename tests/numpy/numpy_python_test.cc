// Interop with real NumPy: files written by numpy.save/savez/savez_compressed
// are read here, and files written here are loaded and checked by numpy.
#include <cstdlib>
#include <cstring>
#include <string>

#include "formats/numpy/numpy_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/safetensors/test_files.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::numpy {
namespace {

using ::slimpack::safetensors::testing::TempDir;
using ::slimpack::safetensors::testing::WriteFile;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

int RunPython(const TempDir& dir, const std::string& script) {
  WriteFile(dir.File("script.py"), "import numpy as np, os\nos.chdir('" + dir.path() +
                                       "')\n" + script);
  return std::system((std::string(SLIMPACK_PYTHON3) + " " + dir.File("script.py")).c_str());
}

template <typename T>
std::vector<T> Values(const ir::Tensor& t) {
  std::vector<T> v(t.data.size() / sizeof(T));
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

TEST(NumpyPythonTest, ReadsFilesWrittenByNumpy) {
  TempDir dir;
  ASSERT_EQ(0, RunPython(dir, R"(
a = (np.arange(24, dtype=np.float32) * 0.5).reshape(2, 3, 4)
b = np.arange(-3, 3, dtype=np.int64)
np.save('a.npy', a)
np.savez('plain.npz', a=a, b=b)
np.savez_compressed('packed.npz', a=a, b=b)
np.save('half.npy', np.array([1.5, -2.0], dtype=np.float16))
np.save('flags.npy', np.array([True, False, True]))
np.save('fortran.npy', np.asfortranarray(a))
np.save('big.npy', np.arange(3, dtype='>i4'))
)"));
  auto a = ReadNpy(dir.File("a.npy"));
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ(a->dims, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(Values<float>(*a)[23], 11.5f);
  for (const char* archive : {"plain.npz", "packed.npz"}) {
    SCOPED_TRACE(archive);
    auto z = ReadNpz(dir.File(archive));
    ASSERT_THAT(z, IsOk());
    ASSERT_EQ(z->size(), 2u);
    EXPECT_EQ((*z)[0].name, "a");
    EXPECT_EQ(Values<float>((*z)[0]), Values<float>(*a));
    EXPECT_EQ((*z)[1].name, "b");
    EXPECT_EQ(Values<int64_t>((*z)[1]), (std::vector<int64_t>{-3, -2, -1, 0, 1, 2}));
  }
  auto half = ReadNpy(dir.File("half.npy"));
  ASSERT_THAT(half, IsOk());
  EXPECT_EQ(half->dtype, ir::DType::kF16);
  EXPECT_EQ(Values<uint16_t>(*half), (std::vector<uint16_t>{0x3E00, 0xC000}));
  auto flags = ReadNpy(dir.File("flags.npy"));
  ASSERT_THAT(flags, IsOk());
  EXPECT_EQ(Values<uint8_t>(*flags), (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_THAT(ReadNpy(dir.File("fortran.npy")),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("fortran_order")));
  EXPECT_THAT(ReadNpy(dir.File("big.npy")),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("'>i4'")));
}

TEST(NumpyPythonTest, CorruptDeflateStreamIsDataLoss) {
  TempDir dir;
  ASSERT_EQ(0, RunPython(dir, R"(
np.savez_compressed('packed.npz', a=np.zeros(4096, dtype=np.float32) + 1)
import zipfile
with zipfile.ZipFile('packed.npz') as z:
    info = z.infolist()[0]
data = bytearray(open('packed.npz', 'rb').read())
h = info.header_offset
# The local header's own name/extra lengths (numpy writes a Zip64 extra there only).
start = h + 30 + int.from_bytes(data[h + 26:h + 28], 'little') + int.from_bytes(data[h + 28:h + 30], 'little')
data[start + 3] ^= 0xFF
open('broken.npz', 'wb').write(data)
)"));
  ASSERT_THAT(ReadNpz(dir.File("packed.npz")), IsOk());
  auto r = ReadNpz(dir.File("broken.npz"));
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kDataLoss, HasSubstr("'a.npy'")));
}

TEST(NumpyPythonTest, NumpyLoadsWhatWeWrite) {
  TempDir dir;
  ir::Tensor f;
  f.name = "logits";
  f.dtype = ir::DType::kF32;
  f.dims = {2, 3};
  std::vector<float> fv = {0.f, 1.5f, -2.f, 3.25f, 1e-3f, 7.f};
  f.data = ir::TensorData::Owned(std::vector<uint8_t>(
      reinterpret_cast<uint8_t*>(fv.data()), reinterpret_cast<uint8_t*>(fv.data() + 6)));
  ir::Tensor i = f;
  i.name = "ids";
  i.dtype = ir::DType::kI64;
  i.dims = {1};
  int64_t iv = -42;
  i.data = ir::TensorData::Owned(std::vector<uint8_t>(reinterpret_cast<uint8_t*>(&iv),
                                                      reinterpret_cast<uint8_t*>(&iv + 1)));
  ASSERT_THAT(WriteNpz(dir.File("out.npz"), {f, i}), IsOk());
  ASSERT_THAT(WriteNpy(dir.File("out.npy"), f), IsOk());
  EXPECT_EQ(0, RunPython(dir, R"(
z = np.load('out.npz')
assert list(z.keys()) == ['logits', 'ids'], list(z.keys())
assert z['logits'].dtype == np.float32 and z['logits'].shape == (2, 3)
assert (z['logits'] == np.array([[0, 1.5, -2], [3.25, 1e-3, 7]], dtype=np.float32)).all()
assert z['ids'].dtype == np.int64 and z['ids'].tolist() == [-42]
assert (np.load('out.npy') == z['logits']).all()
)"));
}

}  // namespace
}  // namespace slimpack::numpy
