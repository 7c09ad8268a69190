// Textual form of the IR, used by --print-ir-after and by pass tests that
// compare whole graphs. Deterministic: attributes are printed sorted;
// initializers are printed by name, dtype and shape (plus a content hash so
// two graphs with different weights never print the same).
#ifndef SLIMPACK_IR_PRINTER_H_
#define SLIMPACK_IR_PRINTER_H_

#include <string>

#include "ir/graph.h"

namespace slimpack::ir {

std::string PrintGraph(const Graph& graph);

}  // namespace slimpack::ir

#endif  // SLIMPACK_IR_PRINTER_H_
