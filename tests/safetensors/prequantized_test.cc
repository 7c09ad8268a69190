// Already-quantized checkpoints (formats/safetensors/prequantized.h): each
// packing convention unpacked against a packer written here from the
// libraries' layouts (GPTQ v1 / v2, 2/4/8 bits, AWQ GEMM order), act-order
// permutations, refusals naming the tensor and field, the config readers,
// and the committed fixtures through ImportSafetensors and the decoder
// graph builder.
#include "formats/safetensors/prequantized.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "absl/strings/match.h"
#include "formats/safetensors/checkpoint_importer.h"
#include "formats/safetensors/safetensors_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hf/llama_graph_builder.h"
#include "hf/weight_roles.h"
#include "ir/float_convert.h"
#include "ir/quant.h"
#include "tests/safetensors/test_files.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::safetensors {
namespace {

using ::slimpack::safetensors::testing::MakeTensor;
using ::slimpack::safetensors::testing::TempDir;
using ::slimpack::safetensors::testing::WriteFile;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

// One linear's grid in checkpoint order, and its packing.
struct Linear {
  int bits = 4;
  int64_t in = 16, out = 8, group = 4;  // group: the real group length
  std::vector<std::vector<uint32_t>> q;  // [in][out]
  std::vector<std::vector<uint32_t>> z;  // [groups][out] (true zero points)
  std::vector<std::vector<uint16_t>> s;  // [groups][out] f16 bits
  std::vector<int32_t> g_idx;            // [in]
  int64_t groups() const { return (in + group - 1) / group; }
};

Linear MakeLinear(int bits, int64_t in, int64_t out, int64_t group, uint32_t seed,
                  uint32_t min_zero = 0) {
  Linear l;
  l.bits = bits;
  l.in = in;
  l.out = out;
  l.group = group;
  std::mt19937 rng(seed);
  const uint32_t maxq = (1u << bits) - 1;
  l.q.assign(in, std::vector<uint32_t>(out));
  for (auto& row : l.q) {
    for (auto& v : row) v = rng() & maxq;
  }
  l.z.assign(l.groups(), std::vector<uint32_t>(out));
  l.s.assign(l.groups(), std::vector<uint16_t>(out));
  for (int64_t k = 0; k < l.groups(); ++k) {
    for (int64_t o = 0; o < out; ++o) {
      l.z[k][o] = min_zero + rng() % (maxq + 1 - min_zero);
      l.s[k][o] = ir::F32ToF16(0.001f * static_cast<float>(1 + rng() % 1000));
    }
  }
  for (int64_t i = 0; i < in; ++i) l.g_idx.push_back(static_cast<int32_t>(i / group));
  return l;
}

std::vector<uint8_t> Words(const std::vector<uint32_t>& w) {
  std::vector<uint8_t> b(w.size() * 4);
  std::memcpy(b.data(), w.data(), b.size());
  return b;
}

// GPTQ: qweight words along the input rows, qzeros words along the outputs,
// value k of a word at bits [bits*k, ...); v1 stores zero - 1.
std::vector<ir::Tensor> PackGptq(const Linear& l, const std::string& p, bool v1) {
  const int64_t per = 32 / l.bits;
  std::vector<uint32_t> qw(static_cast<size_t>(l.in / per * l.out), 0);
  for (int64_t i = 0; i < l.in; ++i) {
    for (int64_t o = 0; o < l.out; ++o) {
      qw[(i / per) * l.out + o] |= l.q[i][o] << (l.bits * (i % per));
    }
  }
  std::vector<uint32_t> qz(static_cast<size_t>(l.groups() * (l.out / per)), 0);
  std::vector<uint8_t> sc;
  for (int64_t k = 0; k < l.groups(); ++k) {
    for (int64_t o = 0; o < l.out; ++o) {
      const uint32_t stored = (l.z[k][o] - (v1 ? 1 : 0)) & ((1u << l.bits) - 1);
      qz[k * (l.out / per) + o / per] |= stored << (l.bits * (o % per));
      sc.push_back(static_cast<uint8_t>(l.s[k][o] & 0xFF));
      sc.push_back(static_cast<uint8_t>(l.s[k][o] >> 8));
    }
  }
  std::vector<uint8_t> gi(l.g_idx.size() * 4);
  std::memcpy(gi.data(), l.g_idx.data(), gi.size());
  return {MakeTensor(p + ".qweight", ir::DType::kI32, {l.in / per, l.out}, Words(qw)),
          MakeTensor(p + ".qzeros", ir::DType::kI32, {l.groups(), l.out / per}, Words(qz)),
          MakeTensor(p + ".scales", ir::DType::kF16, {l.groups(), l.out}, sc),
          MakeTensor(p + ".g_idx", ir::DType::kI32, {l.in}, gi)};
}

// AWQ GEMM: words along the outputs, field k of word c = column 8c + order[k].
std::vector<ir::Tensor> PackAwq(const Linear& l, const std::string& p) {
  constexpr int kOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  std::vector<uint32_t> qw(static_cast<size_t>(l.in * l.out / 8), 0);
  for (int64_t i = 0; i < l.in; ++i) {
    for (int64_t c = 0; c < l.out / 8; ++c) {
      for (int k = 0; k < 8; ++k) qw[i * (l.out / 8) + c] |= l.q[i][8 * c + kOrder[k]] << (4 * k);
    }
  }
  std::vector<uint32_t> qz(static_cast<size_t>(l.groups() * l.out / 8), 0);
  std::vector<uint8_t> sc;
  for (int64_t g = 0; g < l.groups(); ++g) {
    for (int64_t c = 0; c < l.out / 8; ++c) {
      for (int k = 0; k < 8; ++k) qz[g * (l.out / 8) + c] |= l.z[g][8 * c + kOrder[k]] << (4 * k);
    }
    for (int64_t o = 0; o < l.out; ++o) {
      sc.push_back(static_cast<uint8_t>(l.s[g][o] & 0xFF));
      sc.push_back(static_cast<uint8_t>(l.s[g][o] >> 8));
    }
  }
  return {MakeTensor(p + ".qweight", ir::DType::kI32, {l.in, l.out / 8}, Words(qw)),
          MakeTensor(p + ".qzeros", ir::DType::kI32, {l.groups(), l.out / 8}, Words(qz)),
          MakeTensor(p + ".scales", ir::DType::kF16, {l.groups(), l.out}, sc)};
}

// AutoAWQ GEMV: qweight [out, in/8] with input 8c + k in field k of word c,
// qzeros [out, width] the same along the groups, scales [out, 8 * width]
// with padding after the real groups (width as AutoAWQ's
// calculate_zeros_width). `width` is passed in so a test can get it wrong.
std::vector<ir::Tensor> PackAwqGemv(const Linear& l, const std::string& p, int64_t width) {
  std::vector<uint32_t> qw(static_cast<size_t>(l.out * l.in / 8), 0);
  std::vector<uint32_t> qz(static_cast<size_t>(l.out * width), 0);
  std::vector<uint8_t> sc(static_cast<size_t>(l.out * 8 * width * 2), 0);
  for (int64_t o = 0; o < l.out; ++o) {
    for (int64_t i = 0; i < l.in; ++i) qw[o * (l.in / 8) + i / 8] |= l.q[i][o] << (4 * (i % 8));
    for (int64_t g = 0; g < l.groups(); ++g) {
      qz[o * width + g / 8] |= l.z[g][o] << (4 * (g % 8));
      sc[2 * (o * 8 * width + g)] = static_cast<uint8_t>(l.s[g][o] & 0xFF);
      sc[2 * (o * 8 * width + g) + 1] = static_cast<uint8_t>(l.s[g][o] >> 8);
    }
  }
  return {MakeTensor(p + ".qweight", ir::DType::kI32, {l.out, l.in / 8}, Words(qw)),
          MakeTensor(p + ".qzeros", ir::DType::kI32, {l.out, width}, Words(qz)),
          MakeTensor(p + ".scales", ir::DType::kF16, {l.out, 8 * width}, sc)};
}

PrequantConfig Gptq(int bits, int64_t group_size, bool v1) {
  PrequantConfig c;
  c.method = PrequantMethod::kGptq;
  c.source = "config.json: quantization_config";
  c.bits = bits;
  c.group_size = group_size;
  c.zeros_minus_one = v1;
  return c;
}

PackedLinear Packed(const std::vector<ir::Tensor>& t, bool with_g_idx = true) {
  PackedLinear p;
  p.prefix = "m";
  p.qweight = &t[0];
  p.qzeros = &t[1];
  p.scales = &t[2];
  p.g_idx = with_g_idx && t.size() > 3 ? &t[3] : nullptr;
  return p;
}

uint32_t CodeAt(const ir::Tensor& t, uint64_t i) {
  return t.dtype == ir::DType::kU8 ? t.data.data()[i]
                                   : static_cast<uint32_t>(ir::IntAt<ir::DType::kU4>(t.data.data(), i));
}

// The stored scale bits: an f16 checkpoint scale is carried as f16.
uint16_t HalfAt(const ir::Tensor& t, uint64_t i) {
  uint16_t v;
  std::memcpy(&v, t.data.data() + 2 * i, 2);
  return v;
}

// Checks the unpacked tensors against `l`, input position j holding
// checkpoint row perm[j] (identity when perm is empty).
void ExpectCarries(const std::vector<ir::Tensor>& out, const Linear& l,
                   const std::vector<int64_t>& perm) {
  ASSERT_GE(out.size(), 3u);
  const ir::Tensor& w = out[0];
  const ir::Tensor& s = out[1];
  const ir::Tensor& z = out[2];
  EXPECT_EQ(w.name, "m.weight");
  EXPECT_EQ(w.quant.scale, "m.weight.scale");
  EXPECT_EQ(w.quant.zero_point, "m.weight.zero_point");
  EXPECT_EQ(s.name, "m.weight.scale");
  EXPECT_EQ(z.name, "m.weight.zero_point");
  EXPECT_THAT(ir::ValidateQuantLayout(w, &s, &z), IsOk());
  EXPECT_EQ(w.dims, (std::vector<int64_t>{l.out, l.in}));
  const bool per_channel = l.bits == 8 && l.groups() == 1;
  EXPECT_EQ(s.dtype, ir::DType::kF16);
  for (int64_t o = 0; o < l.out; ++o) {
    for (int64_t j = 0; j < l.in; ++j) {
      const int64_t i = perm.empty() ? j : perm[j];
      ASSERT_EQ(CodeAt(w, o * l.in + j), l.q[i][o]) << "output " << o << " position " << j;
    }
    const int64_t ng = per_channel ? 1 : l.groups();
    for (int64_t k = 0; k < ng; ++k) {
      EXPECT_EQ(HalfAt(s, o * ng + k), l.s[k][o]) << o << "," << k;
      EXPECT_EQ(CodeAt(z, o * ng + k), l.z[k][o]) << o << "," << k;
    }
  }
}

TEST(PrequantizedGptqTest, V1Int4GroupsCarryCodesZerosPlusOneAndScales) {
  // v1 cannot hold zero point 0 (its field would be -1).
  const Linear l = MakeLinear(4, 16, 8, 4, 1, /*min_zero=*/1);
  const auto t = PackGptq(l, "m", /*v1=*/true);
  auto out = UnpackLinear(Gptq(4, 4, true), Packed(t));
  ASSERT_THAT(out.status(), IsOk());
  ASSERT_EQ(out->size(), 3u);  // no input permutation
  const ir::Tensor& w = (*out)[0];
  EXPECT_EQ(w.dtype, ir::DType::kU4);
  EXPECT_EQ(w.quant.kind, ir::QuantKind::kInt4GroupWise);
  EXPECT_EQ(w.quant.axis, 1);
  EXPECT_EQ(w.quant.group_size, 4);
  EXPECT_EQ(w.quant.algorithm, "gptq-checkpoint");
  ExpectCarries(*out, l, {});
}

TEST(PrequantizedGptqTest, V2ZerosAreReadAsStoredIncludingZero) {
  Linear l = MakeLinear(4, 16, 8, 4, 2);
  l.z[0][0] = 0;
  l.z[1][3] = 15;
  const auto t = PackGptq(l, "m", /*v1=*/false);
  auto out = UnpackLinear(Gptq(4, 4, false), Packed(t));
  ASSERT_THAT(out.status(), IsOk());
  ExpectCarries(*out, l, {});
}

TEST(PrequantizedGptqTest, ReadingV2AsV1WouldShiftEveryZero) {
  // Near miss: the same bytes read with the other convention give every
  // zero point plus one (so the convention flag is what decides).
  Linear l = MakeLinear(4, 16, 8, 4, 3);
  for (auto& row : l.z) {
    for (uint32_t& z : row) z %= 15;  // 0..14: a v1 reading stays in range
  }
  const auto t = PackGptq(l, "m", /*v1=*/false);
  auto out = UnpackLinear(Gptq(4, 4, true), Packed(t));
  ASSERT_THAT(out.status(), IsOk());
  const ir::Tensor& z = (*out)[2];
  for (int64_t o = 0; o < 8; ++o) {
    for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(CodeAt(z, o * 4 + k), l.z[k][o] + 1);
  }
}

TEST(PrequantizedGptqTest, V1ZeroFieldOfAllOnesIsRefusedNamingGroupAndOutput) {
  Linear l = MakeLinear(4, 16, 8, 4, 4, 1);
  l.z[2][5] = 0;  // stored as -1: the field reads 15
  const auto t = PackGptq(l, "m", /*v1=*/true);
  EXPECT_THAT(UnpackLinear(Gptq(4, 4, true), Packed(t)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("m.qzeros"), HasSubstr("group 2, output 5"),
                                      HasSubstr("would be 16"))));
}

TEST(PrequantizedGptqTest, PerChannelInt4IsOneGroupOfAllInputs) {
  const Linear l = MakeLinear(4, 16, 8, 16, 5, 1);
  const auto t = PackGptq(l, "m", true);
  auto out = UnpackLinear(Gptq(4, -1, true), Packed(t));
  ASSERT_THAT(out.status(), IsOk());
  EXPECT_EQ((*out)[0].quant.group_size, 16);
  ExpectCarries(*out, l, {});
}

TEST(PrequantizedGptqTest, TwoBitCodesGoToU4) {
  const Linear l = MakeLinear(2, 32, 16, 8, 6, 1);
  const auto t = PackGptq(l, "m", true);
  auto out = UnpackLinear(Gptq(2, 8, true), Packed(t));
  ASSERT_THAT(out.status(), IsOk());
  EXPECT_EQ((*out)[0].dtype, ir::DType::kU4);
  ExpectCarries(*out, l, {});
}

// AutoGPTQ's 3-bit packing: along each qweight column (qzeros row), the
// values form one little-endian bit string, value k at bit 3k; 32 values
// fill 3 words, values 10 and 21 straddle two words.
TEST(PrequantizedGptqTest, ThreeBitValuesStraddleWords) {
  Linear l = MakeLinear(3, 64, 32, 16, 27, 1);
  const int64_t words_in = l.in * 3 / 32, words_out = l.out * 3 / 32;
  std::vector<uint32_t> qw(static_cast<size_t>(words_in * l.out), 0);
  for (int64_t o = 0; o < l.out; ++o) {
    for (int64_t i = 0; i < l.in; ++i) {
      const uint64_t v = static_cast<uint64_t>(l.q[i][o]) << ((3 * i) % 32);
      qw[(3 * i / 32) * l.out + o] |= static_cast<uint32_t>(v);
      if (v >> 32) qw[(3 * i / 32 + 1) * l.out + o] |= static_cast<uint32_t>(v >> 32);
    }
  }
  std::vector<uint32_t> qz(static_cast<size_t>(l.groups() * words_out), 0);
  std::vector<uint8_t> sc;
  for (int64_t k = 0; k < l.groups(); ++k) {
    for (int64_t o = 0; o < l.out; ++o) {
      const uint64_t v = static_cast<uint64_t>(l.z[k][o] - 1) << ((3 * o) % 32);
      qz[k * words_out + 3 * o / 32] |= static_cast<uint32_t>(v);
      if (v >> 32) qz[k * words_out + 3 * o / 32 + 1] |= static_cast<uint32_t>(v >> 32);
      sc.push_back(static_cast<uint8_t>(l.s[k][o] & 0xFF));
      sc.push_back(static_cast<uint8_t>(l.s[k][o] >> 8));
    }
  }
  const std::vector<ir::Tensor> t = {
      MakeTensor("m.qweight", ir::DType::kI32, {words_in, l.out}, Words(qw)),
      MakeTensor("m.qzeros", ir::DType::kI32, {l.groups(), words_out}, Words(qz)),
      MakeTensor("m.scales", ir::DType::kF16, {l.groups(), l.out}, sc)};
  auto out = UnpackLinear(Gptq(3, 16, true), Packed(t, false));
  ASSERT_THAT(out.status(), IsOk());
  EXPECT_EQ((*out)[0].dtype, ir::DType::kU4);
  ExpectCarries(*out, l, {});
  // 3-bit qweight rows must hold whole values: 2 rows of words hold 21.33.
  std::vector<ir::Tensor> odd = t;
  odd[0] = MakeTensor("m.qweight", ir::DType::kI32, {2, l.out}, std::vector<uint8_t>(8 * l.out));
  EXPECT_THAT(UnpackLinear(Gptq(3, 16, true), Packed(odd, false)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("m.qweight"), HasSubstr("whole number"))));
}

TEST(PrequantizedGptqTest, EightBitPerChannelIsInt8PerChannelU8) {
  const Linear l = MakeLinear(8, 16, 8, 16, 7, 1);
  const auto t = PackGptq(l, "m", true);
  auto out = UnpackLinear(Gptq(8, -1, true), Packed(t));
  ASSERT_THAT(out.status(), IsOk());
  const ir::Tensor& w = (*out)[0];
  EXPECT_EQ(w.dtype, ir::DType::kU8);
  EXPECT_EQ(w.quant.kind, ir::QuantKind::kInt8PerChannel);
  EXPECT_EQ(w.quant.axis, 0);
  EXPECT_EQ((*out)[1].dims, (std::vector<int64_t>{8}));
  ExpectCarries(*out, l, {});
}

TEST(PrequantizedGptqTest, EightBitWithGroupsIsInt8GroupWiseU8) {
  const Linear l = MakeLinear(8, 16, 8, 4, 8, 1);
  const auto t = PackGptq(l, "m", true);
  auto out = UnpackLinear(Gptq(8, 4, true), Packed(t));
  ASSERT_THAT(out.status(), IsOk());
  const ir::Tensor& w = (*out)[0];
  EXPECT_EQ(w.dtype, ir::DType::kU8);
  EXPECT_EQ(w.quant.kind, ir::QuantKind::kInt8GroupWise);
  EXPECT_EQ(w.quant.axis, 1);
  EXPECT_EQ(w.quant.group_size, 4);
  EXPECT_EQ((*out)[1].dims, (std::vector<int64_t>{8, 4}));
  ExpectCarries(*out, l, {});
}

// Act-order: g_idx groups a permutation of the rows.
Linear ActOrder(uint32_t seed, int64_t in, int64_t group) {
  Linear l = MakeLinear(4, in, 8, group, seed, 1);
  std::vector<int64_t> order(in);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  for (int64_t j = 0; j < in; ++j) l.g_idx[order[j]] = static_cast<int32_t>(j / group);
  return l;
}

TEST(PrequantizedGptqTest, ActOrderPermutesInputRowsSoGroupsAreContiguous) {
  const Linear l = ActOrder(9, 24, 8);
  const auto t = PackGptq(l, "m", true);
  auto out = UnpackLinear(Gptq(4, 8, true), Packed(t));
  ASSERT_THAT(out.status(), IsOk());
  ASSERT_EQ(out->size(), 4u);
  const ir::Tensor& perm_t = (*out)[3];
  EXPECT_EQ(perm_t.name, std::string("m.weight") + hf::kInputPermSuffix);
  ASSERT_EQ(perm_t.dtype, ir::DType::kI64);
  ASSERT_EQ(perm_t.dims, (std::vector<int64_t>{24}));
  std::vector<int64_t> perm(24);
  std::memcpy(perm.data(), perm_t.data.data(), 24 * 8);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t j = 0; j < 24; ++j) {
    ASSERT_EQ(sorted[j], j);                   // a permutation
    EXPECT_EQ(l.g_idx[perm[j]], j / 8) << j;  // position j is in group j / 8
    if (j > 0 && l.g_idx[perm[j]] == l.g_idx[perm[j - 1]]) {
      EXPECT_LT(perm[j - 1], perm[j]);  // stable: original order inside a group
    }
  }
  ExpectCarries(*out, l, perm);
  // The statement the graph relies on: column j of the imported weight is,
  // bit for bit, column perm[j] of the checkpoint's dequantized weight.
  auto deq = ir::DequantizeToF32((*out)[0], (*out)[1], &(*out)[2]);
  ASSERT_THAT(deq.status(), IsOk());
  for (int64_t o = 0; o < 8; ++o) {
    for (int64_t j = 0; j < 24; ++j) {
      const int64_t i = perm[j];
      const int64_t g = l.g_idx[i];
      const float want = static_cast<float>(static_cast<int32_t>(l.q[i][o]) -
                                            static_cast<int32_t>(l.z[g][o])) *
                         ir::F16ToF32(l.s[g][o]);
      ASSERT_EQ((*deq)[o * 24 + j], want) << o << "," << j;
    }
  }
}

TEST(PrequantizedGptqTest, ActOrderWithAShortLastGroup) {
  const Linear l = ActOrder(10, 24, 10);  // groups of 10, 10, 4
  const auto t = PackGptq(l, "m", true);
  auto out = UnpackLinear(Gptq(4, 10, true), Packed(t));
  ASSERT_THAT(out.status(), IsOk());
  ASSERT_EQ(out->size(), 4u);
  std::vector<int64_t> perm(24);
  std::memcpy(perm.data(), (*out)[3].data.data(), 24 * 8);
  ExpectCarries(*out, l, perm);
}

TEST(PrequantizedGptqTest, ActOrderGroupsOfUnequalSizeAreRefused) {
  Linear l = ActOrder(11, 16, 4);
  // Move one row from group 1 to group 0: 5 rows and 3 rows.
  for (int32_t& g : l.g_idx) {
    if (g == 1) {
      g = 0;
      break;
    }
  }
  const auto t = PackGptq(l, "m", true);
  EXPECT_THAT(UnpackLinear(Gptq(4, 4, true), Packed(t)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("m.g_idx"), HasSubstr("5 input rows in group 0"),
                                      HasSubstr("expected 4"))));
}

TEST(PrequantizedGptqTest, GIdxOutOfRangeIsRefused) {
  Linear l = MakeLinear(4, 16, 8, 4, 12, 1);
  l.g_idx[7] = 4;
  const auto t = PackGptq(l, "m", true);
  EXPECT_THAT(UnpackLinear(Gptq(4, 4, true), Packed(t)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("m.g_idx"), HasSubstr("g_idx[7] = 4"),
                                      HasSubstr("[0, 4)"))));
}

TEST(PrequantizedGptqTest, DescActWithoutGIdxIsRefused) {
  const Linear l = MakeLinear(4, 16, 8, 4, 13, 1);
  const auto t = PackGptq(l, "m", true);
  PrequantConfig c = Gptq(4, 4, true);
  c.desc_act = true;
  EXPECT_THAT(UnpackLinear(c, Packed(t, /*with_g_idx=*/false)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("m.g_idx")));
  c.desc_act = false;  // without act-order, no g_idx means i / group_size
  EXPECT_THAT(UnpackLinear(c, Packed(t, false)).status(), IsOk());
}

TEST(PrequantizedGptqTest, ZeroScaleIsRefusedNamingGroupAndOutput) {
  Linear l = MakeLinear(4, 16, 8, 4, 14, 1);
  l.s[3][6] = 0;
  const auto t = PackGptq(l, "m", true);
  EXPECT_THAT(UnpackLinear(Gptq(4, 4, true), Packed(t)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("m.scales"), HasSubstr("group 3, output 6"))));
}

TEST(PrequantizedGptqTest, BitsNotMatchingThePackingAreRefused) {
  // Packed as 8-bit, configured as 4-bit: qweight then implies twice the
  // rows and scales / qzeros disagree.
  const Linear l = MakeLinear(8, 16, 8, 16, 15, 1);
  const auto t = PackGptq(l, "m", true);
  EXPECT_THAT(UnpackLinear(Gptq(4, -1, true), Packed(t)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("m.qzeros"), HasSubstr("bits 4"))));
}

TEST(PrequantizedGptqTest, HugeGroupSizeIsOneGroupWithoutOverflow) {
  // A group_size beyond the input count (here the largest int64) is one
  // group; the group count must not overflow computing ceil(in / group).
  const Linear l = MakeLinear(4, 16, 8, 16, 28, 1);
  const auto t = PackGptq(l, "m", true);
  auto out = UnpackLinear(Gptq(4, std::numeric_limits<int64_t>::max(), true), Packed(t));
  ASSERT_THAT(out.status(), IsOk());
  EXPECT_EQ((*out)[0].quant.group_size, 16);  // stored as the input count
  ExpectCarries(*out, l, {});
}

TEST(PrequantizedGptqTest, WrongDtypeIsRefusedNamingTheTensor) {
  const Linear l = MakeLinear(4, 16, 8, 4, 16, 1);
  auto t = PackGptq(l, "m", true);
  t[0].dtype = ir::DType::kU32;
  EXPECT_THAT(UnpackLinear(Gptq(4, 4, true), Packed(t)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("m.qweight"), HasSubstr("dtype u32"))));
}

TEST(PrequantizedAwqTest, GemmOrderIsUndone) {
  const Linear l = MakeLinear(4, 16, 16, 4, 17);
  const auto t = PackAwq(l, "m");
  PrequantConfig c;
  c.method = PrequantMethod::kAwq;
  c.source = "quant_config.json";
  c.bits = 4;
  c.group_size = 4;
  auto out = UnpackLinear(c, Packed(t));
  ASSERT_THAT(out.status(), IsOk());
  EXPECT_EQ((*out)[0].quant.algorithm, "awq-checkpoint");
  ExpectCarries(*out, l, {});
}

PrequantConfig AwqGemv(int64_t group_size) {
  PrequantConfig c;
  c.method = PrequantMethod::kAwq;
  c.source = "quant_config.json";
  c.bits = 4;
  c.group_size = group_size;
  c.awq_gemv = true;
  return c;
}

// 18 groups of 32: ceil(18 / 8) = 3 words, rounded up to a multiple of 4.
TEST(PrequantizedAwqTest, GemvFieldsAreInOrderAndPaddingIsSkipped) {
  const Linear l = MakeLinear(4, 576, 8, 32, 21);
  auto out = UnpackLinear(AwqGemv(32), Packed(PackAwqGemv(l, "m", 4)));
  ASSERT_THAT(out.status(), IsOk());
  EXPECT_EQ((*out)[0].quant.algorithm, "awq-checkpoint");
  EXPECT_EQ((*out)[0].quant.group_size, 32);
  ExpectCarries(*out, l, {});
}

TEST(PrequantizedAwqTest, GemvGroupMinusOneIsOneGroupPerRow) {
  const Linear l = MakeLinear(4, 128, 16, 128, 22);
  auto out = UnpackLinear(AwqGemv(-1), Packed(PackAwqGemv(l, "m", 1)));
  ASSERT_THAT(out.status(), IsOk());
  EXPECT_EQ((*out)[0].quant.group_size, 128);
  ExpectCarries(*out, l, {});
}

TEST(PrequantizedAwqTest, GemvShapesOtherThanAutoAwqsAreRefused) {
  const Linear l = MakeLinear(4, 576, 8, 32, 23);
  // A zeros width AutoAWQ would not write (3 words, not rounded up to 4).
  EXPECT_THAT(UnpackLinear(AwqGemv(32), Packed(PackAwqGemv(l, "m", 3))).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("m.qzeros"), HasSubstr("shape [8,3], expected [8,4]"),
                                        HasSubstr("AWQ GEMV"))));
  // Per row over 96 inputs: a group of 96, which the GEMV layout cannot hold.
  const Linear narrow = MakeLinear(4, 96, 8, 96, 24);
  EXPECT_THAT(UnpackLinear(AwqGemv(-1), Packed(PackAwqGemv(narrow, "m", 1))).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("m.qweight"), HasSubstr("a group of 96"))));
  // GEMV tensors under a GEMM config are refused on their shapes, named.
  PrequantConfig gemm = AwqGemv(32);
  gemm.awq_gemv = false;
  EXPECT_THAT(UnpackLinear(gemm, Packed(PackAwqGemv(l, "m", 4))).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensor 'm.qweight': 8 input rows are not a multiple")));
}

TEST(PrequantizedAwqTest, InputsNotAMultipleOfTheGroupAreRefused) {
  const Linear l = MakeLinear(4, 16, 16, 4, 18);
  const auto t = PackAwq(l, "m");
  PrequantConfig c;
  c.method = PrequantMethod::kAwq;
  c.source = "config.json: quantization_config";
  c.bits = 4;
  c.group_size = 6;
  EXPECT_THAT(UnpackLinear(c, Packed(t)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("m.qweight"), HasSubstr("group_size 6"))));
}

// compressed-tensors pack-quantized: weight_packed along the inputs,
// weight_zero_point along the outputs, values stored as signed + 2^(bits-1)
// (`l.q` / `l.z` hold the stored values here).
std::vector<ir::Tensor> PackCompressed(const Linear& l, const std::string& p, bool sym) {
  const int64_t per = 32 / l.bits;
  const int64_t words_in = (l.in + per - 1) / per;
  std::vector<uint32_t> qw(static_cast<size_t>(l.out * words_in), 0);
  for (int64_t o = 0; o < l.out; ++o) {
    for (int64_t i = 0; i < l.in; ++i) qw[o * words_in + i / per] |= l.q[i][o] << (l.bits * (i % per));
  }
  std::vector<uint8_t> sc;
  for (int64_t o = 0; o < l.out; ++o) {
    for (int64_t k = 0; k < l.groups(); ++k) {
      sc.push_back(static_cast<uint8_t>(l.s[k][o] & 0xFF));
      sc.push_back(static_cast<uint8_t>(l.s[k][o] >> 8));
    }
  }
  std::vector<uint8_t> shape(16);
  const int64_t dims[2] = {l.out, l.in};
  std::memcpy(shape.data(), dims, 16);
  std::vector<ir::Tensor> t = {
      MakeTensor(p + ".weight_packed", ir::DType::kI32, {l.out, words_in}, Words(qw)),
      MakeTensor(p + ".weight_zero_point", ir::DType::kI32, {1}, std::vector<uint8_t>(4)),
      MakeTensor(p + ".weight_scale", ir::DType::kF16, {l.out, l.groups()}, sc),
      MakeTensor(p + ".weight_shape", ir::DType::kI64, {2}, shape)};
  if (!sym) {
    const int64_t words_out = (l.out + per - 1) / per;
    std::vector<uint32_t> qz(static_cast<size_t>(words_out * l.groups()), 0);
    for (int64_t o = 0; o < l.out; ++o) {
      for (int64_t k = 0; k < l.groups(); ++k) {
        qz[(o / per) * l.groups() + k] |= l.z[k][o] << (l.bits * (o % per));
      }
    }
    t[1] = MakeTensor(p + ".weight_zero_point", ir::DType::kI32, {words_out, l.groups()}, Words(qz));
  }
  return t;
}

PrequantConfig Compressed(int bits, int64_t group_size, bool sym) {
  PrequantConfig c;
  c.method = PrequantMethod::kCompressedTensors;
  c.source = "config.json: quantization_config";
  c.bits = bits;
  c.group_size = group_size;
  c.sym = sym;
  return c;
}

PackedLinear PackedCompressed(const std::vector<ir::Tensor>& t, bool sym) {
  PackedLinear p;
  p.prefix = "m";
  p.qweight = &t[0];
  p.qzeros = sym ? nullptr : &t[1];
  p.scales = &t[2];
  p.shape = &t[3];
  return p;
}

TEST(PrequantizedCompressedTensorsTest, AsymmetricGroupsCarryStoredCodesAndZeros) {
  // 20 inputs: the last packed word is padded; 12 outputs: so is the last
  // zero-point word.
  const Linear l = MakeLinear(4, 20, 12, 8, 22);
  const auto t = PackCompressed(l, "m", /*sym=*/false);
  auto out = UnpackLinear(Compressed(4, 8, false), PackedCompressed(t, false));
  ASSERT_THAT(out.status(), IsOk());
  EXPECT_EQ((*out)[0].dtype, ir::DType::kU4);
  EXPECT_EQ((*out)[0].quant.algorithm, "compressed-tensors-checkpoint");
  ExpectCarries(*out, l, {});
}

TEST(PrequantizedCompressedTensorsTest, SymmetricCodesBecomeSignedWithoutZeroPoint) {
  const Linear l = MakeLinear(4, 16, 8, 16, 23);
  const auto t = PackCompressed(l, "m", /*sym=*/true);
  auto out = UnpackLinear(Compressed(4, -1, true), PackedCompressed(t, true));
  ASSERT_THAT(out.status(), IsOk());
  ASSERT_EQ(out->size(), 2u);
  const ir::Tensor& w = (*out)[0];
  EXPECT_EQ(w.dtype, ir::DType::kI4);
  EXPECT_TRUE(w.quant.zero_point.empty());
  EXPECT_THAT(ir::ValidateQuantLayout(w, &(*out)[1], nullptr), IsOk());
  for (int64_t o = 0; o < l.out; ++o) {
    for (int64_t i = 0; i < l.in; ++i) {
      ASSERT_EQ(ir::IntAt<ir::DType::kI4>(w.data.data(), o * l.in + i),
                static_cast<int32_t>(l.q[i][o]) - 8);
    }
    EXPECT_EQ(HalfAt((*out)[1], o), l.s[0][o]);
  }
}

TEST(PrequantizedCompressedTensorsTest, EightBitSymmetricChannelIsI8PerChannel) {
  const Linear l = MakeLinear(8, 8, 4, 8, 24);
  const auto t = PackCompressed(l, "m", true);
  auto out = UnpackLinear(Compressed(8, -1, true), PackedCompressed(t, true));
  ASSERT_THAT(out.status(), IsOk());
  const ir::Tensor& w = (*out)[0];
  EXPECT_EQ(w.dtype, ir::DType::kI8);
  EXPECT_EQ(w.quant.kind, ir::QuantKind::kInt8PerChannel);
  for (int64_t o = 0; o < l.out; ++o) {
    for (int64_t i = 0; i < l.in; ++i) {
      ASSERT_EQ(static_cast<int8_t>(w.data.data()[o * l.in + i]),
                static_cast<int32_t>(l.q[i][o]) - 128);
    }
  }
}

TEST(PrequantizedCompressedTensorsTest, PackedWidthDisagreeingWithWeightShapeIsRefused) {
  const Linear l = MakeLinear(4, 16, 8, 8, 25);
  auto t = PackCompressed(l, "m", true);
  const int64_t dims[2] = {8, 24};  // weight_shape claims 24 inputs
  std::vector<uint8_t> shape(16);
  std::memcpy(shape.data(), dims, 16);
  t[3] = MakeTensor("m.weight_shape", ir::DType::kI64, {2}, shape);
  EXPECT_THAT(UnpackLinear(Compressed(4, 8, true), PackedCompressed(t, true)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("m.weight_packed"), HasSubstr("[8, 24]"))));
}

TEST(PrequantizedCompressedTensorsTest, AsymmetricWithoutZeroPointIsRefused) {
  const Linear l = MakeLinear(4, 16, 8, 8, 26);
  auto t = PackCompressed(l, "m", true);
  std::vector<ir::Tensor> tensors = {t[0], t[2], t[3]};
  EXPECT_THAT(ImportPrequantized(Compressed(4, 8, false), tensors),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("m.weight_zero_point"),
                                        HasSubstr("symmetric false"))));
}

absl::StatusOr<PrequantConfig> Parse(const std::string& text) {
  return ParsePrequantConfig(nlohmann::json::parse(text), "cfg");
}

TEST(PrequantConfigTest, GptqFieldsAndDefaults) {
  auto c = Parse(R"({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": true})");
  ASSERT_THAT(c.status(), IsOk());
  EXPECT_EQ(c->method, PrequantMethod::kGptq);
  EXPECT_EQ(c->bits, 4);
  EXPECT_EQ(c->group_size, 128);
  EXPECT_TRUE(c->desc_act);
  EXPECT_TRUE(c->sym);
  EXPECT_TRUE(c->zeros_minus_one);  // no checkpoint_format: v1
  c = Parse(R"({"quant_method": "gptq", "bits": 8, "group_size": -1,
                "checkpoint_format": "gptq_v2", "sym": false})");
  ASSERT_THAT(c.status(), IsOk());
  EXPECT_FALSE(c->zeros_minus_one);
  EXPECT_FALSE(c->sym);
  // Old AutoGPTQ quantize_config.json: no quant_method.
  c = Parse(R"({"bits": 4, "group_size": 32, "format": "gptq"})");
  ASSERT_THAT(c.status(), IsOk());
  EXPECT_TRUE(c->zeros_minus_one);
}

TEST(PrequantConfigTest, AwqBothSpellings) {
  auto c = Parse(R"({"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm",
                     "zero_point": true})");
  ASSERT_THAT(c.status(), IsOk());
  EXPECT_EQ(c->method, PrequantMethod::kAwq);
  c = Parse(R"({"w_bit": 4, "q_group_size": 64, "zero_point": true, "version": "GEMM"})");
  ASSERT_THAT(c.status(), IsOk());
  EXPECT_EQ(c->method, PrequantMethod::kAwq);
  EXPECT_EQ(c->group_size, 64);
  EXPECT_FALSE(c->awq_gemv);
  c = Parse(R"({"w_bit": 4, "q_group_size": -1, "zero_point": true, "version": "GEMV"})");
  ASSERT_THAT(c.status(), IsOk());
  EXPECT_TRUE(c->awq_gemv);
  EXPECT_EQ(c->group_size, -1);
}

TEST(PrequantConfigTest, CompressedTensorsScheme) {
  const std::string ok = R"({"quant_method": "compressed-tensors", "format": "pack-quantized",
      "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": null,
          "weights": {"num_bits": 4, "type": "int", "symmetric": false, "strategy": "group",
                      "group_size": 128, "dynamic": false}}},
      "ignore": ["lm_head"], "sparsity_config": {}})";
  auto c = Parse(ok);
  ASSERT_THAT(c.status(), IsOk());
  EXPECT_EQ(c->method, PrequantMethod::kCompressedTensors);
  EXPECT_EQ(c->bits, 4);
  EXPECT_EQ(c->group_size, 128);
  EXPECT_FALSE(c->sym);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = ok;
    t.replace(t.find(from), from.size(), to);
    return Parse(t).status();
  };
  using absl::StatusCode;
  EXPECT_THAT(with(R"("strategy": "group")", R"("strategy": "channel")"), IsOk());
  EXPECT_THAT(with(R"("format": "pack-quantized")", R"("format": "float-quantized")"),
              StatusIs(StatusCode::kUnimplemented, HasSubstr("format \"float-quantized\"")));
  EXPECT_THAT(with(R"("input_activations": null)",
                   R"("input_activations": {"num_bits": 8})"),
              StatusIs(StatusCode::kUnimplemented,
                       HasSubstr("config_groups.group_0.input_activations")));
  EXPECT_THAT(with(R"("type": "int")", R"("type": "float")"),
              StatusIs(StatusCode::kUnimplemented,
                       HasSubstr("config_groups.group_0.weights.type \"float\"")));
  EXPECT_THAT(with(R"("strategy": "group")", R"("strategy": "block")"),
              StatusIs(StatusCode::kUnimplemented, HasSubstr("strategy \"block\"")));
  EXPECT_THAT(with(R"("num_bits": 4)", R"("num_bits": 3)"),
              StatusIs(StatusCode::kUnimplemented, HasSubstr("num_bits 3")));
  EXPECT_THAT(with(R"("sparsity_config": {})", R"("sparsity_config": {"format": "sparse-24"})"),
              StatusIs(StatusCode::kUnimplemented, HasSubstr("sparsity_config")));
}

TEST(PrequantConfigTest, RefusalsNameTheFieldAndValue) {
  using absl::StatusCode;
  EXPECT_THAT(Parse(R"({"quant_method": "gptq", "bits": 5, "group_size": 128})").status(),
              StatusIs(StatusCode::kUnimplemented, HasSubstr("cfg: bits 5")));
  EXPECT_THAT(Parse(R"({"quant_method": "gptq", "bits": 4, "group_size": 0})").status(),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("cfg: group_size 0")));
  EXPECT_THAT(Parse(R"({"quant_method": "gptq", "bits": "4", "group_size": 128})").status(),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("bits must be an integer")));
  EXPECT_THAT(Parse(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
                        "checkpoint_format": "marlin"})").status(),
              StatusIs(StatusCode::kUnimplemented, HasSubstr("checkpoint_format \"marlin\"")));
  EXPECT_THAT(Parse(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
                        "is_marlin_format": true})").status(),
              StatusIs(StatusCode::kUnimplemented, HasSubstr("is_marlin_format")));
  EXPECT_THAT(Parse(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
                        "sym": "yes"})").status(),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("sym must be true or false")));
  EXPECT_THAT(Parse(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
                        "version": "gemv_fast"})").status(),
              StatusIs(StatusCode::kUnimplemented, HasSubstr("version \"gemv_fast\"")));
  EXPECT_THAT(Parse(R"({"w_bit": 4, "q_group_size": 48, "version": "GEMV"})").status(),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("q_group_size 48 is not a group size AutoAWQ's GEMV layout has")));
  EXPECT_THAT(Parse(R"({"quant_method": "awq", "bits": 4, "group_size": 0})").status(),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("group_size 0 must be >= 1, or -1")));
  EXPECT_THAT(Parse(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
                        "zero_point": false})").status(),
              StatusIs(StatusCode::kUnimplemented, HasSubstr("zero_point false")));
  EXPECT_THAT(Parse(R"({"quant_method": "bitsandbytes", "load_in_4bit": true})").status(),
              StatusIs(StatusCode::kUnimplemented, HasSubstr("quant_method \"bitsandbytes\"")));
  EXPECT_THAT(Parse(R"({"quant_method": "gptq", "group_size": 128})").status(),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("bits is missing")));
}

TEST(ImportPrequantizedTest, ReplacesPackedTensorsAndKeepsOthers) {
  const Linear l = MakeLinear(4, 16, 8, 4, 19, 1);
  std::vector<ir::Tensor> tensors = PackGptq(l, "model.layers.0.mlp.up_proj", true);
  tensors.push_back(MakeTensor("model.norm.weight", ir::DType::kF32, {2}, std::vector<uint8_t>(8)));
  ASSERT_THAT(ImportPrequantized(Gptq(4, 4, true), tensors), IsOk());
  std::vector<std::string> names;
  for (const ir::Tensor& t : tensors) names.push_back(t.name);
  EXPECT_THAT(names, ::testing::UnorderedElementsAre(
                         "model.norm.weight", "model.layers.0.mlp.up_proj.weight",
                         "model.layers.0.mlp.up_proj.weight.scale",
                         "model.layers.0.mlp.up_proj.weight.zero_point"));
}

TEST(ImportPrequantizedTest, IncompleteOrStrayPackedTensorsAreRefused) {
  const Linear l = MakeLinear(4, 16, 8, 4, 20, 1);
  std::vector<ir::Tensor> no_zeros = PackGptq(l, "p", true);
  no_zeros.erase(no_zeros.begin() + 1);
  EXPECT_THAT(ImportPrequantized(Gptq(4, 4, true), no_zeros),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("'p.qweight'"), HasSubstr("no 'p.qzeros'"))));
  std::vector<ir::Tensor> stray = PackGptq(l, "p", true);
  stray.push_back(MakeTensor("q.scales", ir::DType::kF16, {1}, std::vector<uint8_t>(2)));
  EXPECT_THAT(ImportPrequantized(Gptq(4, 4, true), stray),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("'q.scales'"), HasSubstr("no 'q.qweight'"))));
  std::vector<ir::Tensor> twice = PackGptq(l, "p", true);
  twice.push_back(MakeTensor("p.weight", ir::DType::kF32, {1}, std::vector<uint8_t>(4)));
  EXPECT_THAT(ImportPrequantized(Gptq(4, 4, true), twice),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'p.weight'")));
  std::vector<ir::Tensor> none = {
      MakeTensor("w", ir::DType::kF32, {1}, std::vector<uint8_t>(4))};
  EXPECT_THAT(ImportPrequantized(Gptq(4, 4, true), none),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no tensor is named")));
}

std::string Fixture(const std::string& name) {
  return std::string(SLIMPACK_SOURCE_DIR) + "/tests/testdata/prequant/" + name;
}

TEST(PrequantizedFixtureTest, ActOrderGptqImportsAndBuildsGathers) {
  auto m = ImportSafetensors(Fixture("gptq-4bit-g32-actorder"));
  ASSERT_THAT(m.status(), IsOk());
  for (const std::string& w : m->warnings) {
    EXPECT_THAT(w, ::testing::Not(HasSubstr("not recognised"))) << w;
  }
  const ir::Tensor* down = m->graph.FindInitializer("model.layers.2.mlp.down_proj.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->dtype, ir::DType::kU4);
  EXPECT_EQ(down->dims, (std::vector<int64_t>{128, 344}));
  EXPECT_EQ(down->quant.group_size, 32);
  EXPECT_EQ(down->role, ir::WeightRole::kDownProj);
  EXPECT_EQ(down->layer, 2);
  const ir::Tensor* perm =
      m->graph.FindInitializer(std::string("model.layers.2.mlp.down_proj.weight") +
                               hf::kInputPermSuffix);
  ASSERT_NE(perm, nullptr);
  EXPECT_EQ(perm->layer, 2);
  EXPECT_EQ(m->graph.FindInitializer("model.layers.2.mlp.down_proj.qweight"), nullptr);
  auto g = hf::BuildDecoderGraph(*m);
  ASSERT_THAT(g.status(), IsOk());
  int gathers = 0;
  for (const ir::Node& n : g->graph.nodes) {
    if (n.op_type == "Gather" && n.inputs.size() == 2 &&
        absl::EndsWith(n.inputs[1], hf::kInputPermSuffix)) {
      ++gathers;
    }
  }
  EXPECT_EQ(gathers, 4 * 7);  // every projection of every layer
}

TEST(PrequantizedFixtureTest, BrokenInputPermutationIsRefusedByTheGraphBuilder) {
  auto m = ImportSafetensors(Fixture("gptq-4bit-g32-actorder"));
  ASSERT_THAT(m.status(), IsOk());
  const std::string name =
      std::string("model.layers.0.self_attn.q_proj.weight") + hf::kInputPermSuffix;
  const ir::Tensor* perm = m->graph.FindInitializer(name);
  ASSERT_NE(perm, nullptr);
  std::vector<uint8_t> bytes(perm->data.data(), perm->data.data() + perm->data.size());
  std::memcpy(bytes.data() + 8, bytes.data(), 8);  // element 1 repeats element 0
  ir::Tensor bad = *perm;
  bad.data = ir::TensorData::Owned(std::move(bytes));
  ir::Model broken = *m;
  *broken.graph.FindMutableInitializer(name) = std::move(bad);
  EXPECT_THAT(hf::BuildDecoderGraph(broken).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr(name), HasSubstr("not a permutation"))));
}

TEST(PrequantizedFixtureTest, QuantizeConfigJsonIsReadAndRecorded) {
  auto m = ImportSafetensors(Fixture("gptq-4bit-perchannel-sym-v2"));
  ASSERT_THAT(m.status(), IsOk());
  EXPECT_THAT(m->input_files, ::testing::Contains(HasSubstr("quantize_config.json")));
  const ir::Tensor* q = m->graph.FindInitializer("model.layers.0.self_attn.q_proj.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->quant.group_size, 128);  // group_size -1 over 128 inputs
  EXPECT_EQ(m->graph.FindInitializer(std::string("model.layers.0.self_attn.q_proj.weight") +
                                     hf::kInputPermSuffix),
            nullptr);
}

TEST(PrequantizedFixtureTest, CompressedTensorsImportsSignedCodes) {
  auto m = ImportSafetensors(Fixture("compressed-tensors-4bit-g32-sym"));
  ASSERT_THAT(m.status(), IsOk());
  const ir::Tensor* up = m->graph.FindInitializer("model.layers.1.mlp.up_proj.weight");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->dtype, ir::DType::kI4);
  EXPECT_EQ(up->dims, (std::vector<int64_t>{344, 128}));
  EXPECT_EQ(m->graph.FindInitializer("model.layers.1.mlp.up_proj.weight_shape"), nullptr);
  EXPECT_THAT(hf::BuildDecoderGraph(*m).status(), IsOk());
}

TEST(PrequantizedFixtureTest, PackedTensorsWithoutAConfigAreRefused) {
  TempDir dir;
  const Linear l = MakeLinear(4, 16, 8, 4, 21, 1);
  ASSERT_THAT(WriteSafetensorsFile(dir.File("model.safetensors"), PackGptq(l, "p", true)), IsOk());
  EXPECT_THAT(ImportSafetensors(dir.path()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("'p.qweight'"), HasSubstr("quantization_config"))));
}

// FP8 (ImportFp8): E4M3 bytes as the safetensors reader marks them.
ir::Tensor Fp8Weight(const std::string& name, int64_t out, int64_t in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> q(static_cast<size_t>(out * in));
  for (uint8_t& c : q) {
    c = static_cast<uint8_t>(rng());
    if ((c & 0x7F) == 0x7F) c ^= 0x01;  // NaN codes are refused
  }
  ir::Tensor t = MakeTensor(name, ir::DType::kU8, {out, in}, std::move(q));
  t.quant.kind = ir::QuantKind::kFp8E4M3GroupWise;
  return t;
}

std::vector<uint8_t> Bf16Bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b;
  for (float f : v) {
    const uint16_t h = ir::F32ToBf16(f);
    b.push_back(static_cast<uint8_t>(h & 0xFF));
    b.push_back(static_cast<uint8_t>(h >> 8));
  }
  return b;
}

PrequantConfig Fp8Config(const std::string& suffix, int64_t rows, int64_t cols) {
  PrequantConfig c;
  c.method = PrequantMethod::kFp8;
  c.source = "config.json: quantization_config";
  c.bits = 8;
  c.fp8_scale_suffix = suffix;
  c.fp8_block_rows = rows;
  c.fp8_block_cols = cols;
  return c;
}

const ir::Tensor* Named(const std::vector<ir::Tensor>& ts, const std::string& name) {
  for (const ir::Tensor& t : ts) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// Each value is the E4M3 code times the scale of the block holding it.
void ExpectFp8Values(const ir::Tensor& w, const ir::Tensor& scale,
                     const std::vector<float>& block_scales, int64_t rows, int64_t cols) {
  auto x = ir::DequantizeToF32(w, scale, nullptr);
  ASSERT_THAT(x.status(), IsOk());
  const int64_t out = w.dims[0], in = w.dims[1];
  const int64_t gc = (in + cols - 1) / cols;
  for (int64_t r = 0; r < out; ++r) {
    for (int64_t c = 0; c < in; ++c) {
      const float want = ir::F8E4M3ToF32(w.data.data()[r * in + c]) *
                         block_scales[static_cast<size_t>((r / rows) * gc + c / cols)];
      ASSERT_EQ((*x)[static_cast<size_t>(r * in + c)], want) << r << "," << c;
    }
  }
}

TEST(PrequantizedFp8Test, ChannelScalesInBf16BecomeF32GroupsOfTheWholeRow) {
  std::vector<ir::Tensor> t = {Fp8Weight("m.weight", 5, 24, 1)};
  const std::vector<float> s = {0.5f, 0.0078125f, 3.0f, 1.5f, 0.25f};
  t.push_back(MakeTensor("m.weight_scale", ir::DType::kBF16, {5, 1}, Bf16Bytes(s)));
  t.push_back(MakeTensor("norm.weight", ir::DType::kF32, {2}, std::vector<uint8_t>(8)));
  const std::vector<uint8_t> codes(t[0].data.data(), t[0].data.data() + t[0].data.size());
  ASSERT_THAT(ImportFp8(Fp8Config(".weight_scale", 1, 0), t), IsOk());
  ASSERT_EQ(t.size(), 3u);
  const ir::Tensor* w = Named(t, "m.weight");
  const ir::Tensor* sc = Named(t, "m.weight.scale");
  ASSERT_NE(w, nullptr);
  ASSERT_NE(sc, nullptr);
  EXPECT_NE(Named(t, "norm.weight"), nullptr);
  EXPECT_EQ(Named(t, "m.weight_scale"), nullptr);
  EXPECT_EQ(w->dtype, ir::DType::kU8);
  EXPECT_EQ(w->quant.kind, ir::QuantKind::kFp8E4M3GroupWise);
  EXPECT_EQ(w->quant.axis, 1);
  EXPECT_EQ(w->quant.group_size, 24);
  EXPECT_EQ(w->quant.BlockRows(), 1);
  EXPECT_EQ(w->quant.scale, "m.weight.scale");
  EXPECT_EQ(w->quant.algorithm, "compressed-tensors-checkpoint");
  EXPECT_TRUE(std::equal(codes.begin(), codes.end(), w->data.data()));  // bytes carried
  EXPECT_EQ(sc->dtype, ir::DType::kF32);
  EXPECT_EQ(sc->dims, (std::vector<int64_t>{5, 1}));
  EXPECT_THAT(ir::ValidateQuantLayout(*w, sc, nullptr), IsOk());
  ExpectFp8Values(*w, *sc, s, 1, 24);
}

TEST(PrequantizedFp8Test, BlockScalesStayOnePerBlockAndF16StaysF16) {
  // [5, 7] in blocks of 2 x 3: 3 x 3 blocks, the last row and column short.
  std::vector<ir::Tensor> t = {Fp8Weight("m.weight", 5, 7, 2)};
  std::vector<float> s(9);
  std::vector<uint8_t> sb;
  for (int k = 0; k < 9; ++k) {
    s[k] = std::ldexp(1.0f + k / 8.0f, k - 4);
    const uint16_t h = ir::F32ToF16(s[k]);
    sb.push_back(static_cast<uint8_t>(h & 0xFF));
    sb.push_back(static_cast<uint8_t>(h >> 8));
  }
  t.push_back(MakeTensor("m.weight_scale_inv", ir::DType::kF16, {3, 3}, sb));
  ASSERT_THAT(ImportFp8(Fp8Config(".weight_scale_inv", 2, 3), t), IsOk());
  const ir::Tensor* w = Named(t, "m.weight");
  const ir::Tensor* sc = Named(t, "m.weight.scale");
  ASSERT_NE(w, nullptr);
  ASSERT_NE(sc, nullptr);
  EXPECT_EQ(w->quant.group_size, 3);
  EXPECT_EQ(w->quant.block_rows, 2);  // rows 0-1, 2-3, 4 share a scale row
  EXPECT_EQ(w->quant.algorithm, "fp8-checkpoint");
  EXPECT_EQ(sc->dtype, ir::DType::kF16);
  EXPECT_EQ(sc->dims, (std::vector<int64_t>{3, 3}));
  EXPECT_TRUE(std::equal(sb.begin(), sb.end(), sc->data.data()));  // the checkpoint's halves
  EXPECT_THAT(ir::ValidateQuantLayout(*w, sc, nullptr), IsOk());
  ExpectFp8Values(*w, *sc, s, 2, 3);
}

TEST(PrequantizedFp8Test, TensorStrategyTakesAScalarOrOneElementScale) {
  for (std::vector<int64_t> dims : {std::vector<int64_t>{}, std::vector<int64_t>{1}}) {
    std::vector<ir::Tensor> t = {Fp8Weight("m.weight", 3, 4, 3)};
    t.push_back(MakeTensor("m.weight_scale", ir::DType::kF32, dims,
                           std::vector<uint8_t>{0, 0, 0x80, 0x3E}));  // 0.25f
    ASSERT_THAT(ImportFp8(Fp8Config(".weight_scale", 0, 0), t), IsOk());
    EXPECT_EQ(Named(t, "m.weight")->quant.block_rows, 3);  // one scale for all 3 rows
    EXPECT_EQ(Named(t, "m.weight.scale")->dims, (std::vector<int64_t>{1, 1}));
    ExpectFp8Values(*Named(t, "m.weight"), *Named(t, "m.weight.scale"), {0.25f}, 3, 4);
  }
}

TEST(PrequantizedFp8Test, RefusalsNameTheTensorAndValue) {
  const PrequantConfig c = Fp8Config(".weight_scale", 1, 0);
  auto with_scale = [](ir::Tensor w, std::vector<float> s, std::vector<int64_t> dims) {
    std::vector<uint8_t> b(s.size() * 4);
    std::memcpy(b.data(), s.data(), b.size());
    const std::string prefix = w.name.substr(0, w.name.size() - 7);
    return std::vector<ir::Tensor>{
        w, MakeTensor(prefix + ".weight_scale", ir::DType::kF32, dims, b)};
  };
  using absl::StatusCode;
  auto t = with_scale(Fp8Weight("m.weight", 2, 4, 4), {1.0f, 0.0f}, {2, 1});
  EXPECT_THAT(ImportFp8(c, t),
              StatusIs(StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("tensor 'm.weight_scale'"),
                                        HasSubstr("scale 0.000000 at block (1, 0)"))));
  const float inf = std::numeric_limits<float>::infinity();
  t = with_scale(Fp8Weight("m.weight", 2, 4, 4), {1.0f, inf}, {2, 1});
  EXPECT_THAT(ImportFp8(c, t), StatusIs(StatusCode::kInvalidArgument, HasSubstr("scale inf")));
  t = with_scale(Fp8Weight("m.weight", 2, 4, 4), {1.0f, -2.0f}, {2, 1});
  EXPECT_THAT(ImportFp8(c, t), StatusIs(StatusCode::kInvalidArgument, HasSubstr("scale -2.0")));
  t = with_scale(Fp8Weight("m.weight", 2, 4, 4), {1.0f, 1.0f, 1.0f}, {3, 1});
  EXPECT_THAT(ImportFp8(c, t),
              StatusIs(StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("'m.weight_scale': shape [3,1], expected [2,1]"),
                                        HasSubstr("blocks of 1 x 4"))));
  ir::Tensor nan = Fp8Weight("m.weight", 2, 4, 4);
  std::vector<uint8_t> bytes(nan.data.data(), nan.data.data() + nan.data.size());
  bytes[6] = 0xFF;
  nan.data = ir::TensorData::Owned(bytes);
  t = with_scale(nan, {1.0f, 1.0f}, {2, 1});
  EXPECT_THAT(ImportFp8(c, t),
              StatusIs(StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("tensor 'm.weight'"),
                                        HasSubstr("NaN code 0xFF at [1, 2]"))));
  t = {Fp8Weight("m.weight", 2, 4, 4)};
  EXPECT_THAT(ImportFp8(c, t), StatusIs(StatusCode::kInvalidArgument,
                                        HasSubstr("has no 'm.weight_scale' beside it")));
  t = with_scale(Fp8Weight("m.weight", 2, 4, 4), {1.0f, 1.0f}, {2, 1});
  t.push_back(MakeTensor("k.weight_scale", ir::DType::kF32, {1}, std::vector<uint8_t>(4)));
  EXPECT_THAT(ImportFp8(c, t),
              StatusIs(StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("'k.weight_scale' is not read"),
                                        HasSubstr("no F8_E4M3 'k.weight'"))));
  t = {MakeTensor("m.weight", ir::DType::kF32, {1}, std::vector<uint8_t>(4))};
  EXPECT_THAT(ImportFp8(c, t), StatusIs(StatusCode::kInvalidArgument,
                                        HasSubstr("no tensor has dtype F8_E4M3")));
  ir::Tensor bias = Fp8Weight("m.weight", 2, 4, 4);
  bias.name = "m.bias";
  t = {bias};
  EXPECT_THAT(ImportFp8(c, t), StatusIs(StatusCode::kInvalidArgument,
                                        HasSubstr("not a '<module>.weight'")));
  ir::Tensor rank3 = Fp8Weight("m.weight", 2, 4, 4);
  rank3.dims = {2, 2, 2};
  t = with_scale(rank3, {1.0f, 1.0f}, {2, 1});
  EXPECT_THAT(ImportFp8(c, t), StatusIs(StatusCode::kInvalidArgument,
                                        HasSubstr("F8_E4M3 weight of shape [2,2,2]")));
}

TEST(PrequantConfigTest, Fp8Configs) {
  const std::string ct = R"({"quant_method": "compressed-tensors", "format": "float-quantized",
      "config_groups": {"group_0": {"targets": ["Linear"],
          "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
                                "dynamic": true, "symmetric": true},
          "weights": {"num_bits": 8, "type": "float", "symmetric": true, "strategy": "channel",
                      "dynamic": false}}},
      "ignore": ["lm_head"]})";
  auto c = Parse(ct);
  ASSERT_THAT(c.status(), IsOk());
  EXPECT_EQ(c->method, PrequantMethod::kFp8);
  EXPECT_EQ(c->fp8_scale_suffix, ".weight_scale");
  EXPECT_EQ(c->fp8_block_rows, 1);
  EXPECT_EQ(c->fp8_block_cols, 0);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = ct;
    t.replace(t.find(from), from.size(), to);
    return Parse(t);
  };
  auto block = with(R"("strategy": "channel")",
                    R"("strategy": "block", "block_structure": [128, 64])");
  ASSERT_THAT(block.status(), IsOk());
  EXPECT_EQ(block->fp8_block_rows, 128);
  EXPECT_EQ(block->fp8_block_cols, 64);
  auto tensor = with(R"("strategy": "channel")", R"("strategy": "tensor")");
  ASSERT_THAT(tensor.status(), IsOk());
  EXPECT_EQ(tensor->fp8_block_rows, 0);
  using absl::StatusCode;
  EXPECT_THAT(with(R"("dynamic": true)", R"("dynamic": false)").status(),
              StatusIs(StatusCode::kUnimplemented,
                       HasSubstr("config_groups.group_0.input_activations")));
  EXPECT_THAT(with(R"("strategy": "channel")", R"("strategy": "group")").status(),
              StatusIs(StatusCode::kUnimplemented, HasSubstr("strategy \"group\"")));
  EXPECT_THAT(with(R"("strategy": "channel")", R"("strategy": "block", "block_structure": [0, 8])")
                  .status(),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("block_structure must be two")));
  EXPECT_THAT(with(R"("num_bits": 8, "type": "float", "symmetric": true, "strategy": "channel")",
                   R"("num_bits": 4, "type": "float", "symmetric": true, "strategy": "channel")")
                  .status(),
              StatusIs(StatusCode::kUnimplemented, HasSubstr("num_bits 4")));

  auto hf = Parse(R"({"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                      "weight_block_size": [128, 128]})");
  ASSERT_THAT(hf.status(), IsOk());
  EXPECT_EQ(hf->method, PrequantMethod::kFp8);
  EXPECT_EQ(hf->fp8_scale_suffix, ".weight_scale_inv");
  EXPECT_EQ(hf->fp8_block_rows, 128);
  EXPECT_EQ(hf->fp8_block_cols, 128);
  EXPECT_THAT(Parse(R"({"quant_method": "fp8", "fmt": "e5m2", "weight_block_size": [128, 128]})")
                  .status(),
              StatusIs(StatusCode::kUnimplemented, HasSubstr("fmt \"e5m2\"")));
  EXPECT_THAT(Parse(R"({"quant_method": "fp8", "activation_scheme": "static",
                        "weight_block_size": [128, 128]})").status(),
              StatusIs(StatusCode::kUnimplemented, HasSubstr("activation_scheme \"static\"")));
  EXPECT_THAT(Parse(R"({"quant_method": "fp8"})").status(),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("weight_block_size is missing")));
}

}  // namespace
}  // namespace slimpack::safetensors
