#include "formats/shard/writer/tensor_encoder.h"

#include "ir/float_convert.h"

namespace slimpack::shard_writer {

TensorEncoder FloatCastEncoder(std::optional<ir::DType> target) {
  TensorEncoder encoder;
  if (!target) return encoder;
  const ir::DType to = *target;
  encoder.output_dtype = [to](const ir::Tensor& t) {
    return ir::IsConvertibleFloat(t.dtype) ? to : t.dtype;
  };
  encoder.convert = ir::ConvertFloats;
  return encoder;
}

}  // namespace slimpack::shard_writer
