#include "lumen/egraph/enode.h"

#include <cstring>

#include "lumen/core/simplify.h"

namespace lumen::egraph {

namespace {

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

bool ENode::operator==(const ENode& o) const {
  return kind == o.kind && op == o.op && dtype == o.dtype && axis == o.axis && same_bits(number, o.number) &&
         pattern == o.pattern && leaf == o.leaf && children == o.children;
}

size_t ENodeHash::operator()(const ENode& n) const {
  size_t h = mix(static_cast<size_t>(n.kind), static_cast<size_t>(n.op));
  h = mix(h, static_cast<size_t>(n.dtype));
  h = mix(h, static_cast<size_t>(n.axis + 1));
  uint64_t bits = 0;
  std::memcpy(&bits, &n.number, sizeof bits);
  h = mix(h, bits);
  h = mix(h, ExprHash()(n.pattern));
  h = mix(h, static_cast<size_t>(n.leaf + 1));
  for (const EChild& c : n.children) h = mix(mix(h, static_cast<size_t>(c.cls)), static_cast<size_t>(c.view));
  return h;
}

std::string view_key(const View& view) { return to_string(view.base_shape()) + view.to_string(); }

bool same_shape(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d) {
    if (a[d] != b[d] && simplify(a[d]) != simplify(b[d])) return false;
  }
  return true;
}

ViewId ViewTable::intern(const View& view) {
  std::string key = view_key(view);
  auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  auto id = static_cast<ViewId>(views_.size());
  views_.push_back(view);
  identity_.push_back(view.is_contiguous() && same_shape(view.shape(), view.base_shape()));
  ids_.emplace(std::move(key), id);
  return id;
}

}  // namespace lumen::egraph
