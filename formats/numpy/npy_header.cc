// A strict recursive-descent reader for the header dict. NumPy evaluates it
// with ast.literal_eval; we accept only the subset numpy itself writes.
#include "formats/numpy/npy_header.h"

#include <limits>

#include "absl/status/status.h"

namespace slimpack::numpy {
namespace {

class DictReader {
 public:
  explicit DictReader(std::string_view text) : text_(text) {}

  absl::Status Error(const std::string& what) const {
    return absl::InvalidArgumentError("header dict at offset " +
                                      std::to_string(pos_) + ": " + what);
  }
  void SkipSpaces() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  bool Consume(char c) {
    SkipSpaces();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  char Peek() {
    SkipSpaces();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  absl::StatusOr<std::string> String() {
    SkipSpaces();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      return Error("expected a quoted string");
    }
    const char quote = text_[pos_++];
    const size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') return Error("escape sequences are not supported");
      ++pos_;
    }
    if (pos_ >= text_.size()) return Error("unterminated string");
    std::string s(text_.substr(start, pos_ - start));
    ++pos_;
    return s;
  }
  absl::StatusOr<bool> Bool() {
    SkipSpaces();
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const std::string_view w(word);
      if (text_.substr(pos_, w.size()) == w) {
        pos_ += w.size();
        return value;
      }
    }
    return Error("'fortran_order' must be True or False");
  }
  absl::StatusOr<int64_t> Int() {
    SkipSpaces();
    if (pos_ < text_.size() && text_[pos_] == '-') {
      return Error("'shape' has a negative dimension");
    }
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') {
      return Error("'shape' must be a tuple of non-negative integers");
    }
    uint64_t v = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      v = v * 10 + static_cast<uint64_t>(text_[pos_++] - '0');
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Error("'shape' dimension exceeds int64");
      }
    }
    return static_cast<int64_t>(v);
  }
  // "()", "(3,)", "(2, 3)", "(2, 3,)"; "(3)" is an int in Python, not a tuple.
  absl::StatusOr<std::vector<int64_t>> Tuple() {
    if (!Consume('(')) return Error("'shape' must be a tuple");
    std::vector<int64_t> dims;
    bool trailing_comma = false;
    while (!Consume(')')) {
      if (!dims.empty() && !trailing_comma) return Error("expected ',' or ')' in 'shape'");
      if (dims.size() >= 64) return Error("'shape' has more than 64 dimensions");
      auto d = Int();
      if (!d.ok()) return d.status();
      dims.push_back(*d);
      trailing_comma = Consume(',');
    }
    if (dims.size() == 1 && !trailing_comma) {
      return Error("'shape' (n) is not a tuple; numpy writes (n,)");
    }
    return dims;
  }
  bool AtEnd() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t')) {
      ++pos_;
    }
    return pos_ == text_.size();
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<NpyHeader> ParseNpyHeaderDict(std::string_view text) {
  DictReader r(text);
  if (!r.Consume('{')) return r.Error("expected '{'");
  NpyHeader h;
  bool seen_descr = false, seen_fortran = false, seen_shape = false;
  while (!r.Consume('}')) {
    auto key = r.String();
    if (!key.ok()) return key.status();
    if (!r.Consume(':')) return r.Error("expected ':' after '" + *key + "'");
    bool* seen = nullptr;
    if (*key == "descr") {
      seen = &seen_descr;
      if (r.Peek() == '[') {
        return absl::UnimplementedError(
            "structured dtypes (a list 'descr') are not supported");
      }
      auto v = r.String();
      if (!v.ok()) return v.status();
      h.descr = *v;
    } else if (*key == "fortran_order") {
      seen = &seen_fortran;
      auto v = r.Bool();
      if (!v.ok()) return v.status();
      h.fortran_order = *v;
    } else if (*key == "shape") {
      seen = &seen_shape;
      auto v = r.Tuple();
      if (!v.ok()) return v.status();
      h.shape = *v;
    } else {
      return r.Error("unknown key '" + *key +
                     "' (expected descr, fortran_order, shape)");
    }
    if (*seen) return r.Error("duplicate key '" + *key + "'");
    *seen = true;
    if (!r.Consume(',')) {
      if (r.Peek() != '}') return r.Error("expected ',' or '}'");
    }
  }
  if (!r.AtEnd()) return r.Error("unexpected bytes after '}'");
  for (auto [seen, name] : {std::pair{seen_descr, "descr"},
                            std::pair{seen_fortran, "fortran_order"},
                            std::pair{seen_shape, "shape"}}) {
    if (!seen) {
      return absl::InvalidArgumentError(std::string("header dict lacks key '") +
                                        name + "'");
    }
  }
  return h;
}

std::string FormatNpyHeaderDict(const NpyHeader& header) {
  std::string shape = "(";
  for (size_t i = 0; i < header.shape.size(); ++i) {
    if (i > 0) shape += ", ";
    shape += std::to_string(header.shape[i]);
  }
  if (header.shape.size() == 1) shape += ",";
  shape += ")";
  return "{'descr': '" + header.descr + "', 'fortran_order': " +
         (header.fortran_order ? "True" : "False") + ", 'shape': " + shape +
         ", }";
}

}  // namespace slimpack::numpy
