// Candidates for report tests, built in-process from a reference model:
// weights rounded to a few bits (uniform levels over each tensor's
// [min, max]), one of them "deliberately broken" at 2 bits.
#ifndef SLIMPACK_TESTS_REPORT_TEST_MODELS_H_
#define SLIMPACK_TESTS_REPORT_TEST_MODELS_H_

#include <map>
#include <string>

#include "ir/graph.h"

namespace slimpack::report::testing {

// Every f32 initializer of two or more elements rounded to `default_bits`
// levels (0: left alone), except those named in `bits`.
ir::Model RoundWeights(const ir::Model& reference, int default_bits,
                       const std::map<std::string, int>& bits);

// `name` replaced by symmetric int8 per-channel integers along axis 0 (an
// f32 scale tensor "<name>.scale" is added): what the quantizer stores.
ir::Model QuantizeInt8PerChannel(const ir::Model& reference, const std::string& name);

}  // namespace slimpack::report::testing

#endif  // SLIMPACK_TESTS_REPORT_TEST_MODELS_H_
