#include "lumen/kernel/slicing.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "lumen/core/debug_flags.h"
#include "lumen/core/error.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/linear_form.h"
#include "lumen/core/simplify.h"
#include "lumen/kernel/independent_axes.h"
#include "lumen/kernel/two_place_gather.h"

namespace lumen::kernel {

namespace {

// Bytes of a node's buffer when its shape is static; nothing otherwise.
std::optional<double> static_bytes(const Node& n) {
  double b = static_cast<double>(dtype_size(n.dtype));
  for (const Expr& d : n.shape) {
    if (!d.is_const()) return std::nullopt;
    b *= static_cast<double>(d.value());
  }
  return b;
}

int input_position(const Node& consumer, int dim) {
  if (dim < 0) return -1;
  if (is_reduce(consumer.op) && dim >= consumer.axis) return dim + 1;
  return dim;
}

// `v` as one strided layer when its index is linear in its coordinates and
// nothing is padding: analyses that look for contiguous or strided reads (the
// schedule space, fusion's epilogues) see through it.
View single_layer(const View& v) {
  if (v.layers().size() == 1) return v;
  std::vector<Expr> x = loop_indices(v.shape());
  View::Index vi = v.index(x);
  if (!vi.valid.is_const(1)) return v;
  std::optional<LinearForm> form = LinearForm::of(vi.index);
  if (!form) return v;
  std::vector<Expr> strides(x.size(), Expr(0));
  for (const auto& [term, coefficient] : form->terms) {
    auto it = std::find(x.begin(), x.end(), term);
    if (it == x.end()) return v;
    strides[static_cast<size_t>(it - x.begin())] = Expr(coefficient);
  }
  return View::strided(v.base_shape(), v.shape(), strides, Expr(form->constant));
}

// The chunked axes: group axis numbers, outermost first, the sliced one last.
struct Choice {
  std::vector<size_t> axes;
  int64_t chunk = 0;
};

class GroupFinder {
 public:
  GroupFinder(Graph& graph, std::vector<bool>& materialized, const std::vector<Edge>& roots,
              const std::vector<bool>& needed, const SliceOptions& options)
      : graph_(graph), materialized_(materialized), needed_(needed), options_(options) {
    readers_.resize(graph.size());
    for (size_t i = 0; i < graph.size(); ++i) {
      for (const Edge& e : graph.nodes()[i].inputs) readers_[static_cast<size_t>(e.node)].push_back(static_cast<NodeId>(i));
    }
    for (const Edge& e : roots) roots_.push_back(e.node);
  }

  std::optional<SliceGroup> try_group(const std::vector<NodeId>& members) {
    // A cheap bound first: the buffers that could be internal.
    double bound = 0;
    for (NodeId m : members) {
      if (m == members.back() || std::find(roots_.begin(), roots_.end(), m) != roots_.end()) continue;
      std::optional<double> b = static_bytes(graph_.node(m));
      if (!b) return std::nullopt;
      bound += *b;
    }
    if (bound == 0 || (!options_.always && bound < static_cast<double>(options_.min_internal_bytes))) return std::nullopt;
    GroupAxes axes = independent_axes(graph_, materialized_, members);
    if (!axes.why_not.empty()) {
      if (debug_enabled("slicing")) std::fprintf(stderr, "slicing: group ending at %d: %s\n", members.back(), axes.why_not.c_str());
      return std::nullopt;
    }
    std::vector<NodeId> outputs, internal;
    double internal_bytes = 0;
    for (NodeId m : members) {
      bool out = std::find(roots_.begin(), roots_.end(), m) != roots_.end() || m == members.back();
      for (NodeId r : readers_[static_cast<size_t>(m)]) {
        bool inside = std::binary_search(axes.closure.begin(), axes.closure.end(), r);
        out = out || (!inside && is_needed(r));
      }
      (out ? outputs : internal).push_back(m);
      if (!out) internal_bytes += static_bytes(graph_.node(m)).value_or(0);
    }
    if (internal.empty()) return std::nullopt;
    if (!options_.always && internal_bytes < static_cast<double>(options_.min_internal_bytes)) return std::nullopt;
    if (!outputs_read_only_outside(axes, members, outputs)) return std::nullopt;
    if (!find_relative(axes, members)) return std::nullopt;
    double io_bytes = 0;
    std::vector<NodeId> seen;
    for (const auto& ext : axes.external) {
      for (const auto& [node, c] : ext) {
        if (std::find(seen.begin(), seen.end(), node) != seen.end()) continue;
        seen.push_back(node);
        io_bytes += static_bytes(graph_.node(node)).value_or(0);
      }
    }
    for (NodeId o : outputs) io_bytes += static_bytes(graph_.node(o)).value_or(0);
    if (!options_.always && internal_bytes < 2 * io_bytes) return std::nullopt;
    std::optional<Choice> choice = choose_axes(axes, members, outputs, internal_bytes);
    if (!choice) return std::nullopt;
    SliceGroup g = build(axes, members, outputs, *choice);
    g.full_bytes = internal_bytes;
    if (debug_enabled("slicing")) std::fprintf(stderr, "slicing: %s\n", g.describe(graph_).c_str());
    return g;
  }

  bool is_needed(NodeId n) const { return static_cast<size_t>(n) >= needed_.size() || needed_[static_cast<size_t>(n)]; }

 private:
  // An inlined node of the group read by a kernel outside it would be
  // computed there from buffers that hold one chunk: not allowed.
  bool outputs_read_only_outside(const GroupAxes& axes, const std::vector<NodeId>& members,
                                 const std::vector<NodeId>& /*outputs*/) const {
    for (NodeId n : axes.closure) {
      if (materialized_[static_cast<size_t>(n)]) continue;
      for (NodeId r : readers_[static_cast<size_t>(n)]) {
        bool inside = std::binary_search(axes.closure.begin(), axes.closure.end(), r);
        if (!inside && is_needed(r)) {
          if (debug_enabled("slicing")) std::fprintf(stderr, "slicing: group ending at %d: node %d is also read outside\n", members.back(), n);
          return false;
        }
      }
    }
    return true;
  }

  // The constants giving two-place gathers (where) their index's position and
  // offset: chunk copies compute them at chunk-relative coordinates, since the
  // gather's table is read from chunk buffers (chunk_copy). Nothing else may
  // read them.
  bool find_relative(const GroupAxes& axes, const std::vector<NodeId>& members) {
    relative_.clear();
    std::vector<NodeId> index_tops;
    for (NodeId n : axes.closure) {
      if (graph_.node(n).op != Op::Gather) continue;
      index_tops.push_back(graph_.node(n).inputs[1].node);
      for (NodeId k : two_place_index_constants(graph_, n, materialized_)) relative_.push_back(k);
    }
    for (NodeId k : relative_) {
      for (NodeId r : readers_[static_cast<size_t>(k)]) {
        bool top = std::find(index_tops.begin(), index_tops.end(), r) != index_tops.end();
        bool scaled = graph_.node(r).op == Op::Mul && std::any_of(index_tops.begin(), index_tops.end(), [&](NodeId t) {
          const auto& in = graph_.node(t).inputs;
          return std::any_of(in.begin(), in.end(), [&](const Edge& e) { return e.node == r; });
        });
        if ((top || scaled) || !is_needed(r)) continue;
        if (debug_enabled("slicing")) std::fprintf(stderr, "slicing: group ending at %d: a where's index constant %d is read elsewhere\n", members.back(), k);
        return false;
      }
    }
    return true;
  }

  // The sliced axis: the innermost independent axis every member carries such
  // that in every output only chunked axes (or dims of size 1) come before it.
  std::optional<Choice> choose_axes(const GroupAxes& axes, const std::vector<NodeId>& members,
                                    const std::vector<NodeId>& outputs, double internal_bytes) const {
    size_t rank = axes.extents.size();
    std::vector<bool> usable(rank, false);
    for (size_t a = 0; a < rank; ++a) {
      usable[a] = axes.independent[a];
      for (NodeId m : members) usable[a] = usable[a] && axes.dims.at(m)[a] >= 0;
    }
    for (size_t s = rank; s-- > 0;) {
      bool linear = true;  // a chunk of several rows: every outside read must move linearly along it
      for (const auto& reads : axes.external) {
        for (const auto& [node, read] : reads) linear = linear && read.linear[s];
      }
      if (!usable[s] || !linear) continue;
      std::vector<bool> outer(rank, false);
      bool ok = true;
      for (NodeId o : outputs) {
        const std::vector<int>& dims = axes.dims.at(o);
        const Node& node = graph_.node(o);
        for (int d = 0; d < dims[s]; ++d) {
          if (node.shape[static_cast<size_t>(d)].is_const(1)) continue;
          auto it = std::find(dims.begin(), dims.end(), d);
          size_t a = static_cast<size_t>(it - dims.begin());
          if (it == dims.end() || !usable[a]) ok = false;
          if (ok) outer[a] = true;
        }
      }
      for (NodeId o : outputs) {  // an outer axis after the sliced one would make a chunk's block strided
        const std::vector<int>& dims = axes.dims.at(o);
        for (size_t a = 0; a < rank; ++a) ok = ok && (!outer[a] || (dims[a] >= 0 && dims[a] < dims[s]));
      }
      if (!ok) continue;
      Choice c;
      double rows = 1;
      for (size_t a = 0; a < rank; ++a) {
        if (outer[a]) {
          c.axes.push_back(a);
          rows *= static_cast<double>(axes.extents[a].value());
        }
      }
      c.axes.push_back(s);
      int64_t extent = axes.extents[s].value();
      rows *= static_cast<double>(extent);
      c.chunk = options_.chunk > 0 ? options_.chunk : chunk_rows(internal_bytes / rows);
      c.chunk = std::min(c.chunk, extent);
      if (c.axes.size() == 1 && c.chunk >= extent) return std::nullopt;  // one chunk: nothing gained
      return c;
    }
    return std::nullopt;
  }

  int64_t chunk_rows(double bytes_per_row) const {
    int64_t budget = options_.chunk_bytes > 0 ? options_.chunk_bytes : int64_t{4} << 20;
    auto rows = static_cast<int64_t>(static_cast<double>(budget) / std::max(bytes_per_row, 1.0));
    if (rows >= 16) rows = rows / 8 * 8;  // whole register tiles
    return std::max(rows, options_.min_rows);
  }

  SliceGroup build(const GroupAxes& axes, const std::vector<NodeId>& members, const std::vector<NodeId>& outputs,
                   const Choice& choice) {
    SliceGroup g;
    g.members = members;
    for (size_t i = 0; i < choice.axes.size(); ++i) {
      SliceAxis s;
      s.extent = axes.extents[choice.axes[i]];
      s.chunk = i + 1 == choice.axes.size() ? choice.chunk : 1;
      g.axes.push_back(s);
    }
    std::map<NodeId, NodeId> copy_of;
    for (NodeId n : axes.closure) {
      const std::vector<int>& dims = axes.dims.at(n);
      bool chunked = std::any_of(choice.axes.begin(), choice.axes.end(), [&](size_t a) { return dims[a] >= 0; });
      if (!chunked) continue;
      NodeId id = graph_.add(chunk_copy(n, dims, choice, copy_of, g));
      copy_of[n] = id;
      bool member = std::find(members.begin(), members.end(), n) != members.end();
      materialized_.push_back(member);
      readers_.emplace_back();
      for (const Edge& e : graph_.node(id).inputs) readers_[static_cast<size_t>(e.node)].push_back(id);
    }
    for (size_t m = 0; m < members.size(); ++m) {
      g.chunk_members.push_back(copy_of.at(members[m]));
      std::map<NodeId, ChunkMove> moves;
      for (const auto& [node, read] : axes.external[m]) {
        ChunkMove mv;
        for (size_t i = 0; i < choice.axes.size(); ++i) {
          size_t a = choice.axes[i];
          std::unordered_map<Expr, Expr, ExprHash> at{{axis_origin(a, axes.extents[a]), origin_var(g, i)}};
          mv.offsets.push_back(simplify(substitute(read.offsets[a], at)));
        }
        moves[node] = mv;
      }
      g.moves.push_back(moves);
    }
    double chunk_bytes = 0;
    for (NodeId m : members) {
      const Node& copy = graph_.node(copy_of.at(m));
      if (std::find(outputs.begin(), outputs.end(), m) != outputs.end()) {
        g.output_of[copy_of.at(m)] = m;
        continue;
      }
      chunk_bytes += static_bytes(copy).value_or(0);
    }
    for (NodeId o : outputs) {  // an output's chunk is the block at the chunk's origin
      std::vector<Expr> strides = contiguous_strides(graph_.node(o).shape);
      ChunkMove mv;
      for (size_t i = 0; i < choice.axes.size(); ++i) {
        mv.offsets.push_back(simplify(strides[static_cast<size_t>(axes.dims.at(o)[choice.axes[i]])] * origin_var(g, i)));
      }
      g.output_moves[o] = mv;
    }
    g.chunk_bytes = chunk_bytes;
    return g;
  }

  // Node n with the chunked dims at the chunk's extents, reading chunk copies
  // of its producers where they exist.
  Node chunk_copy(NodeId n, const std::vector<int>& dims, const Choice& choice, const std::map<NodeId, NodeId>& copy_of,
                  SliceGroup& g) {
    const Node& original = graph_.node(n);
    Node c = original;
    for (size_t i = 0; i < choice.axes.size(); ++i) {
      int d = dims[choice.axes[i]];
      if (d >= 0) c.shape[static_cast<size_t>(d)] = Expr(g.axes[i].chunk);
    }
    bool relative = std::find(relative_.begin(), relative_.end(), n) != relative_.end();
    if (c.op == Op::Constant && c.pattern.defined()) {
      std::unordered_map<Expr, Expr, ExprHash> at;
      for (size_t d = 0; d < c.shape.size(); ++d) at[loop_index(original.shape, d)] = loop_index(c.shape, d);
      for (size_t i = 0; i < choice.axes.size(); ++i) {
        int d = dims[choice.axes[i]];
        if (d < 0 || relative) continue;
        auto dd = static_cast<size_t>(d);
        at[loop_index(original.shape, dd)] = loop_index(c.shape, dd) + origin_dim(g, i);
      }
      c.pattern = simplify(substitute(original.pattern, at));
    }
    for (size_t k = 0; k < c.inputs.size(); ++k) {
      Edge& e = c.inputs[k];
      View v = e.view;
      // A two-place gather reads its (flat) table at chunk-relative places.
      for (size_t i = 0; i < choice.axes.size() && !(c.op == Op::Gather && k == 0); ++i) {
        int at = input_position(original, dims[choice.axes[i]]);
        if (at >= 0) v = v.slice(at, Expr(0), Expr(g.axes[i].chunk));
      }
      auto it = copy_of.find(e.node);
      if (it != copy_of.end()) {
        // The producer's chunk buffer read as if it were the whole buffer: the
        // coordinates a chunk reads are those of the chunk's own block.
        const Shape& full = graph_.node(e.node).shape;
        const Shape& part = graph_.node(it->second).shape;
        v = single_layer(View::strided(part, full, contiguous_strides(part)).then(v));
        e.node = it->second;
      }
      e.view = v;
    }
    return c;
  }

  static Expr origin_var(const SliceGroup& g, size_t axis) {
    const Expr& extent = g.axes[axis].extent;
    return Expr::var(chunk_origin_name(axis), 0, extent.is_const() ? std::max<int64_t>(extent.value() - 1, 0) : kMaxDim);
  }

  Expr origin_dim(SliceGroup& g, size_t axis) {
    SliceAxis& s = g.axes[axis];
    // Named by the group's last kernel: variants of one group share it, groups do not.
    if (s.origin_dim.empty()) s.origin_dim = "slice" + std::to_string(g.members.back()) + "_origin" + std::to_string(axis);
    graph_.dim(s.origin_dim);
    // Bounded as the runtime binds it (the last chunk is shifted back to end
    // at the extent), so mask analysis can prove where a chunk's rows lie.
    int64_t last = s.extent.is_const() ? std::max<int64_t>(s.extent.value() - s.chunk, 0) : kMaxDim;
    return Expr::var(s.origin_dim, 0, last);
  }

  Graph& graph_;
  std::vector<bool>& materialized_;
  const std::vector<bool>& needed_;
  const SliceOptions& options_;
  std::vector<std::vector<NodeId>> readers_;
  std::vector<NodeId> roots_;
  std::vector<NodeId> relative_;  // find_relative
};

}  // namespace

std::string chunk_origin_name(size_t axis) { return "chunk_origin" + std::to_string(axis); }

int64_t SliceGroup::chunks(const Bindings& bindings) const {
  int64_t n = 1;
  for (const SliceAxis& a : axes) {
    int64_t e = evaluate(a.extent, bindings);
    n *= (e + a.chunk - 1) / a.chunk;
  }
  return n;
}

std::vector<int64_t> SliceGroup::origin(int64_t c, const Bindings& bindings) const {
  std::vector<int64_t> at(axes.size());
  for (size_t i = axes.size(); i-- > 0;) {
    int64_t e = evaluate(axes[i].extent, bindings);
    int64_t count = (e + axes[i].chunk - 1) / axes[i].chunk;
    at[i] = std::min((c % count) * axes[i].chunk, e - axes[i].chunk);  // the last chunk ends at the extent
    c /= count;
  }
  return at;
}

std::string SliceGroup::describe(const Graph& graph) const {
  std::ostringstream out;
  out << "sliced group of " << members.size() << " kernels (";
  for (size_t i = 0; i < members.size(); ++i) {
    out << (i ? " " : "") << op_name(graph.node(members[i]).op) << "_" << members[i];
  }
  out << "), chunk";
  for (const SliceAxis& a : axes) out << " " << a.chunk << "/" << a.extent;
  out << ", internal " << full_bytes / (1 << 20) << " MiB -> " << chunk_bytes / (1 << 20) << " MiB";
  return out.str();
}

std::optional<SliceGroup> rechunk(Graph& graph, std::vector<bool>& materialized, const SliceGroup& group,
                                  int64_t chunk, const std::vector<Edge>& roots, const std::vector<bool>& needed) {
  SliceOptions options;
  options.always = true;
  options.chunk = chunk;
  options.min_rows = 1;
  GroupFinder finder(graph, materialized, roots, needed, options);
  std::optional<SliceGroup> g = finder.try_group(group.members);
  if (g && g->axes.size() == group.axes.size() && g->axes.back().chunk == chunk) {
    g->full_bytes = group.full_bytes;
    return g;
  }
  return std::nullopt;
}

std::vector<SliceGroup> slice_groups(Graph& graph, std::vector<bool>& materialized, const std::vector<NodeId>& kernels,
                                     const std::vector<Edge>& roots, const std::vector<bool>& needed,
                                     const SliceOptions& options) {
  std::vector<SliceGroup> groups;
  if (!options.enabled || kernels.size() < 2) return groups;
  GroupFinder finder(graph, materialized, roots, needed, options);
  // From the last kernel back, the longest group ending at each kernel.
  auto end = static_cast<int64_t>(kernels.size()) - 1;
  while (end >= 1) {
    bool found = false;
    for (int64_t len = std::min<int64_t>(options.max_members, end + 1); len >= 2 && !found; --len) {
      std::vector<NodeId> members(kernels.begin() + (end - len + 1), kernels.begin() + end + 1);
      std::optional<SliceGroup> g = finder.try_group(members);
      if (!g) continue;
      groups.insert(groups.begin(), std::move(*g));
      end -= len;
      found = true;
    }
    if (!found) --end;
  }
  return groups;
}

}  // namespace lumen::kernel
