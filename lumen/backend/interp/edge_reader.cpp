#include "lumen/backend/interp/edge_reader.h"

#include <string>

namespace lumen::interp {

EdgeReader::EdgeReader(const View& view, const Bindings& bindings) {
  View bound = view.bind(bindings);
  const auto& layers = bound.layers();
  if (layers.size() == 1 && layers[0].mask.empty() && layers[0].offset.is_const()) {
    strided_ = true;
    offset_ = layers[0].offset.value();
    for (const Expr& s : layers[0].strides) {
      if (!s.is_const()) {
        strided_ = false;
        break;
      }
      strides_.push_back(s.value());
    }
  }
  if (strided_) return;
  std::vector<std::string> slots;
  for (size_t d = 0; d < bound.rank(); ++d) slots.push_back("i" + std::to_string(d));
  View::Index ix = bound.index();
  index_ = ExprProgram(ix.index, slots, bindings);
  valid_ = ExprProgram(ix.valid, slots, bindings);
}

int64_t EdgeReader::source(const int64_t* idx) const {
  if (strided_) {
    int64_t pos = offset_;
    for (size_t d = 0; d < strides_.size(); ++d) pos += idx[d] * strides_[d];
    return pos;
  }
  if (valid_.run(idx) == 0) return -1;
  return index_.run(idx);
}

}  // namespace lumen::interp
