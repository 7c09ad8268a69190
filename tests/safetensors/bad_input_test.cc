// Corruption table: one handmade bad input per failure mode (framing, JSON,
// tensor entries, tiling, sharded indexes, config.json), each imported
// through ImportSafetensors and expected to fail with a specific code and a
// message naming the file and tensor/field.
#include <functional>

#include "formats/safetensors/checkpoint_importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/safetensors/test_files.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::safetensors {
namespace {

using ::slimpack::safetensors::testing::IndexJson;
using ::slimpack::safetensors::testing::RawSafetensors;
using ::slimpack::safetensors::testing::RawWithLength;
using ::slimpack::safetensors::testing::TempDir;
using ::slimpack::safetensors::testing::WriteFile;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

// Builds the bad input inside `dir`; returns the path to import.
using Setup = std::function<std::string(const TempDir& dir)>;

struct BadInputCase {
  std::string name;
  Setup setup;
  Code code;
  std::vector<std::string> substrings;   // besides the file name
  std::string file = "bad.safetensors";  // must appear in the message
};

// A single bad.safetensors made of raw bytes.
Setup Bytes(std::string bytes) {
  return [bytes](const TempDir& dir) {
    WriteFile(dir.File("bad.safetensors"), bytes);
    return dir.File("bad.safetensors");
  };
}

// A single bad.safetensors with this header and `data_bytes` zero bytes.
Setup Header(std::string header, size_t data_bytes) {
  return Bytes(RawSafetensors(header, std::string(data_bytes, '\0')));
}

// F32 [2] entry at [begin, end).
std::string F32x2(const std::string& name, int begin, int end) {
  return "\"" + name + R"(":{"dtype":"F32","shape":[2],"data_offsets":[)" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

// A valid two-shard checkpoint: a.safetensors {w}, b.safetensors {x}; then
// `index` (a weight_map as JSON text) as model.safetensors.index.json.
Setup Sharded(std::string weight_map_json) {
  return [weight_map_json](const TempDir& dir) {
    WriteFile(
        dir.File("a.safetensors"),
        RawSafetensors("{" + F32x2("w", 0, 8) + "}", std::string(8, '\0')));
    WriteFile(
        dir.File("b.safetensors"),
        RawSafetensors("{" + F32x2("x", 0, 8) + "}", std::string(8, '\0')));
    const std::string index = dir.File("model.safetensors.index.json");
    WriteFile(index, R"({"metadata":{"total_size":16},"weight_map":)" +
                         weight_map_json + "}");
    return dir.path();
  };
}

// A valid model.safetensors with one llama q_proj of shape `q_dims` plus a
// config.json.
Setup WithConfig(std::string config, std::string tensor_name = "w",
                 std::string dims = "[2]", int bytes = 8) {
  return [=](const TempDir& dir) {
    const std::string header =
        "{\"" + tensor_name + R"(":{"dtype":"F32","shape":)" + dims +
        R"(,"data_offsets":[0,)" + std::to_string(bytes) + "]}}";
    WriteFile(dir.File("model.safetensors"),
              RawSafetensors(header, std::string(bytes, '\0')));
    WriteFile(dir.File("config.json"), config);
    return dir.path();
  };
}

const char kLlama[] =
    R"({"model_type":"llama","num_hidden_layers":2,"num_attention_heads":2,)"
    R"("num_key_value_heads":1,"hidden_size":8,"intermediate_size":16,)"
    R"("vocab_size":32)";

std::vector<BadInputCase> Cases() {
  const std::string ok_w = F32x2("w", 0, 8);
  return {
      // Framing.
      {"EmptyFile", Bytes(""), Code::kOutOfRange, {"is 0 bytes", "8-byte"}},
      {"SevenBytes",
       Bytes(std::string("\x07\0\0\0\0\0\0", 7)),
       Code::kOutOfRange,
       {"is 7 bytes"}},
      {"HeaderLengthOverLimit",
       Bytes(RawWithLength(100000001, "{}")),
       Code::kInvalidArgument,
       {"header length 100000001", "100000000-byte limit"}},
      {"HeaderPastEof",
       Bytes(RawWithLength(100, std::string(20, ' '))),
       Code::kOutOfRange,
       {"header length 100 runs past end of file", "file has 28"}},
      {"HugeHeaderLengthDoesNotWrap",
       Bytes(RawWithLength(~0ull, "{}")),
       Code::kInvalidArgument,
       {"header length 18446744073709551615"}},
      // Header text.
      {"NotJson",
       Header(R"({"w": nope})", 0),
       Code::kInvalidArgument,
       {"header: not valid JSON"}},
      {"JsonArray",
       Header("[1,2]", 0),
       Code::kInvalidArgument,
       {"not a JSON object", "found '['"}},
      {"LeadingWhitespace",
       Header(" {}", 0),
       Code::kInvalidArgument,
       {"must start with '{'"}},
      {"EmptyHeader",
       Header("", 0),
       Code::kInvalidArgument,
       {"an empty header"}},
      {"InvalidUtf8",
       Header("{\"w\xc3\x28\":{}}", 0),
       Code::kInvalidArgument,
       {"header is not valid UTF-8 at header byte 3 (file offset 11)"}},
      {"DuplicateTensor",
       Header("{" + ok_w + "," + F32x2("w", 8, 16) + "}", 16),
       Code::kInvalidArgument,
       {"duplicate key 'w'"}},
      {"NestingBomb",
       Header(R"({"w":)" + std::string(100000, '[') + std::string(100000, ']') +
                  "}",
              0),
       Code::kInvalidArgument,
       {"nested deeper than 16 levels"}},
      // __metadata__.
      {"MetadataNotStrings",
       Header(R"({"__metadata__":{"format":1}})", 0),
       Code::kInvalidArgument,
       {"__metadata__ value for key 'format'", "number 1"}},
      {"MetadataNotObject",
       Header(R"({"__metadata__":"pt"})", 0),
       Code::kInvalidArgument,
       {"__metadata__ must be an object", "string \"pt\""}},
      {"TensorNamedMetadata",
       Header("{" + F32x2("__metadata__", 0, 8) + "}", 8),
       Code::kInvalidArgument,
       {"tensor named '__metadata__'", "reserved"}},
      // Tensor entries.
      {"UnknownDType",
       Header(R"({"w":{"dtype":"Q4_K","shape":[2],"data_offsets":[0,8]}})", 8),
       Code::kInvalidArgument,
       {"tensor 'w'", "unknown dtype 'Q4_K'", "supported: BF16"}},
      {"Float8E5M2Unsupported",
       Header(R"({"w":{"dtype":"F8_E5M2","shape":[2],"data_offsets":[0,2]}})",
              2),
       Code::kUnimplemented,
       {"tensor 'w'", "'F8_E5M2' is not supported", "F32"}},
      // E4M3 bytes are codes an FP8 quantization_config scales.
      {"Float8E4M3WithoutQuantizationConfig",
       Header(R"({"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})",
              2),
       Code::kInvalidArgument,
       {"tensor 'w' has dtype F8_E4M3", "no quantization_config", "float-quantized"}},
      {"EntryNotObject",
       Header(R"({"w":[1,2]})", 0),
       Code::kInvalidArgument,
       {"tensor 'w' must be an object", "found array"}},
      {"MissingShape",
       Header(R"({"w":{"dtype":"F32","data_offsets":[0,0]}})", 0),
       Code::kInvalidArgument,
       {"tensor 'w' has no 'shape'"}},
      {"NegativeDim",
       Header(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", 0),
       Code::kInvalidArgument,
       {"tensor 'w' shape[0]", "number -1"}},
      {"NegativeOffset",
       Header(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", 4),
       Code::kInvalidArgument,
       {"tensor 'w' data_offsets[0]", "number -4"}},
      {"FloatOffset",
       Header(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4.0]}})", 4),
       Code::kInvalidArgument,
       {"tensor 'w' data_offsets[1]", "number 4.0"}},
      {"ThreeOffsets",
       Header(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", 4),
       Code::kInvalidArgument,
       {"tensor 'w' data_offsets must be two", "array of 3"}},
      {"ReversedOffsets",
       Header(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})", 4),
       Code::kInvalidArgument,
       {"tensor 'w' data_offsets [4, 0) end before"}},
      {"SizeMismatch",
       Header(R"({"w":{"dtype":"F32","shape":[1000000],"data_offsets":[0,4]}})",
              4),
       Code::kInvalidArgument,
       {"tensor 'w' data_offsets [0, 4) hold 4 bytes but F32 [1000000] needs "
        "4000000"}},
      {"ShapeOverflow",
       Header(R"({"w":{"dtype":"U8","shape":[4194305,4194305,211106198978564],)"
              R"("data_offsets":[0,4]}})",
              4),
       Code::kInvalidArgument,
       {"tensor 'w' shape [4194305,4194305,211106198978564] has more than "
        "2^64"}},
      {"ByteSizeOverflow",
       Header(R"({"w":{"dtype":"F64","shape":[4611686018427387904],)"
              R"("data_offsets":[0,8]}})",
              8),
       Code::kInvalidArgument,
       {"tensor 'w'", "byte size overflows"}},
      // Tiling of the data buffer.
      {"Overlap",
       Header("{" + F32x2("a", 0, 8) + "," + F32x2("b", 4, 12) + "}", 12),
       Code::kInvalidArgument,
       {"tensor 'b' data_offsets [4, 12) overlap tensor 'a' [0, 8)"}},
      {"Aliasing",
       Header("{" + F32x2("a", 0, 8) + "," + F32x2("b", 0, 8) + "}", 8),
       Code::kInvalidArgument,
       {"tensor 'b'", "overlap tensor 'a'"}},
      {"Hole",
       Header("{" + F32x2("a", 0, 8) + "," + F32x2("b", 12, 20) + "}", 20),
       Code::kInvalidArgument,
       {"tensor 'b'", "hole of 4 bytes at data offset 8"}},
      {"TrailingBytes",
       Header("{" + ok_w + "}", 12),
       Code::kInvalidArgument,
       {"4 trailing bytes after the last tensor", "data size 12"}},
      {"DataPastEof",
       Header("{" + ok_w + "}", 4),
       Code::kOutOfRange,
       {"tensor 'w' data_offsets [0, 8) exceed data size 4"}},
      {"NoTensorsButData",
       Header("{}", 3),
       Code::kInvalidArgument,
       {"3 trailing bytes"}},
      // Sharded checkpoints.
      {"IndexParentShard",
       Sharded(R"({"w":"../a.safetensors"})"),
       Code::kInvalidArgument,
       {"weight_map tensor 'w'", "contains '..'"},
       "model.safetensors.index.json"},
      {"IndexAbsoluteShard",
       Sharded(R"({"w":"/etc/passwd"})"),
       Code::kInvalidArgument,
       {"tensor 'w'", "not a plain file name"},
       "model.safetensors.index.json"},
      {"IndexSubdirShard",
       Sharded(R"({"w":"sub/a.safetensors"})"),
       Code::kInvalidArgument,
       {"tensor 'w'", "not a plain file name"},
       "model.safetensors.index.json"},
      {"IndexTensorMissingFromShard",
       Sharded(
           R"({"w":"a.safetensors","x":"b.safetensors","y":"a.safetensors"})"),
       Code::kInvalidArgument,
       {"weight_map puts tensor 'y' in shard 'a.safetensors', which does not "
        "contain it"},
       "model.safetensors.index.json"},
      {"ShardTensorNotInIndex",
       Sharded(R"({"w":"a.safetensors","z":"b.safetensors"})"),
       Code::kInvalidArgument,
       {"tensor 'x' is not in the weight_map"},
       "b.safetensors"},
      {"ShardTensorUnderOtherShard",
       Sharded(R"({"w":"b.safetensors","x":"a.safetensors"})"),
       Code::kInvalidArgument,
       {"tensor 'w' is listed under shard 'b.safetensors'"},
       "a.safetensors"},
      {"TensorInTwoShards",
       [](const TempDir& dir) {
         Sharded(R"({"w":"a.safetensors","x":"b.safetensors"})")(dir);
         WriteFile(dir.File("b.safetensors"),
                   RawSafetensors(
                       "{" + F32x2("w", 0, 8) + "," + F32x2("x", 8, 16) + "}",
                       std::string(16, '\0')));
         return dir.path();
       },
       Code::kInvalidArgument,
       {"tensor 'w' is also in shard 'a.safetensors'"},
       "b.safetensors"},
      {"MissingShardFile",
       Sharded(R"({"w":"a.safetensors","x":"c.safetensors"})"),
       Code::kNotFound,
       {"shard 'c.safetensors'"},
       "model.safetensors.index.json"},
      {"IndexWithoutWeightMap",
       [](const TempDir& dir) {
         WriteFile(dir.File("model.safetensors.index.json"),
                   R"({"metadata":{}})");
         return dir.File("model.safetensors.index.json");
       },
       Code::kInvalidArgument,
       {"has no 'weight_map'"},
       "model.safetensors.index.json"},
      {"IndexDuplicateKey",
       Sharded(R"({"w":"a.safetensors","w":"b.safetensors"})"),
       Code::kInvalidArgument,
       {"duplicate key 'w'"},
       "model.safetensors.index.json"},
      {"ShardIsCorrupt",
       [](const TempDir& dir) {
         Sharded(R"({"w":"a.safetensors","x":"b.safetensors"})")(dir);
         WriteFile(dir.File("b.safetensors"), std::string("\x01\0\0", 3));
         return dir.path();
       },
       Code::kOutOfRange,
       {"is 3 bytes"},
       "b.safetensors"},
      // config.json.
      {"ConfigHeadsDoNotDivideHidden",
       WithConfig(
           R"({"model_type":"llama","num_hidden_layers":2,"num_attention_heads":3,)"
           R"("hidden_size":8,"intermediate_size":16,"vocab_size":32})"),
       Code::kInvalidArgument,
       {"field 'hidden_size' (8) must be divisible by 'num_attention_heads' "
        "(3)"},
       "config.json"},
      {"ConfigKvHeadsDoNotDivideHeads",
       WithConfig(
           R"({"model_type":"qwen2","num_hidden_layers":2,"num_attention_heads":4,)"
           R"("num_key_value_heads":3,"hidden_size":8,"intermediate_size":16,)"
           R"("vocab_size":32})"),
       Code::kInvalidArgument,
       {"'num_attention_heads' (4) must be a multiple of 'num_key_value_heads' "
        "(3)"},
       "config.json"},
      {"ConfigFieldWrongType",
       WithConfig(std::string(kLlama) + R"(,"rms_norm_eps":"1e-5"})"),
       Code::kInvalidArgument,
       {"field 'rms_norm_eps'", "string \"1e-5\""},
       "config.json"},
      {"ConfigNegativeLayers",
       WithConfig(R"({"model_type":"mistral","num_hidden_layers":-2})"),
       Code::kInvalidArgument,
       {"field 'num_hidden_layers'", "number -2"},
       "config.json"},
      {"ConfigMissingRequiredField",
       WithConfig(R"({"model_type":"llama","num_hidden_layers":2})"),
       Code::kInvalidArgument,
       {"llama config has no field 'num_attention_heads'"},
       "config.json"},
      {"ConfigNotObject",
       WithConfig("[]"),
       Code::kInvalidArgument,
       {"must be a JSON object"},
       "config.json"},
      {"QProjWrongShape",
       WithConfig(std::string(kLlama) + "}",
                  "model.layers.0.self_attn.q_proj.weight", "[4,8]", 128),
       Code::kInvalidArgument,
       {"tensor 'model.layers.0.self_attn.q_proj.weight' (q_proj, layer 0) has "
        "shape "
        "[4,8], expected [8,8]",
        "num_attention_heads*head_dim, hidden_size", "config.json"},
       "model.safetensors"},
      {"LayerIndexPastConfig",
       WithConfig(std::string(kLlama) + "}",
                  "model.layers.2.input_layernorm.weight", "[8]", 32),
       Code::kInvalidArgument,
       {"tensor 'model.layers.2.input_layernorm.weight' has layer index 2",
        "num_hidden_layers is 2"},
       "model.safetensors"},
      // Paths.
      {"MissingPath",
       [](const TempDir& dir) { return dir.File("nope.safetensors"); },
       Code::kNotFound,
       {},
       "nope.safetensors"},
      {"EmptyDirectory",
       [](const TempDir& dir) { return dir.path(); },
       Code::kNotFound,
       {"no model.safetensors.index.json"},
       "slimpack_test."},
  };
}

class BadInputTest : public ::testing::TestWithParam<BadInputCase> {};

TEST_P(BadInputTest, IsRejectedWithSpecificCodeAndMessage) {
  const BadInputCase& c = GetParam();
  TempDir dir;
  const std::string path = c.setup(dir);
  std::vector<::testing::Matcher<std::string>> parts = {HasSubstr(c.file)};
  for (const std::string& s : c.substrings) parts.push_back(HasSubstr(s));
  EXPECT_THAT(ImportSafetensors(path),
              StatusIs(c.code, ::testing::AllOfArray(parts)));
}

INSTANTIATE_TEST_SUITE_P(
    Corruptions, BadInputTest, ::testing::ValuesIn(Cases()),
    [](const ::testing::TestParamInfo<BadInputCase>& info) {
      return info.param.name;
    });

}  // namespace
}  // namespace slimpack::safetensors
