#include "lumen/kernel/schedule.h"

#include <algorithm>
#include <sstream>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"

namespace lumen::kernel {

namespace {

const char* action_name(ActionKind k) {
  switch (k) {
    case ActionKind::Split: return "split";
    case ActionKind::Reorder: return "reorder";
    case ActionKind::Kind: return "kind";
    case ActionKind::ReduceLanes: return "reduce_lanes";
    case ActionKind::ReduceUnroll: return "reduce_unroll";
    case ActionKind::ReduceSplit: return "reduce_split";
    case ActionKind::Pack: return "pack";
    case ActionKind::PackInline: return "pack_inline";
    case ActionKind::Prefetch: return "prefetch";
    case ActionKind::Rfactor: return "rfactor";
    case ActionKind::Gpu: return "gpu";
    case ActionKind::PairDot: return "pair_dot";
  }
  return "?";
}

}  // namespace

std::string to_string(const Action& a) {
  std::ostringstream out;
  out << action_name(a.kind) << '(';
  switch (a.kind) {
    case ActionKind::Split:
    case ActionKind::Reorder:
    case ActionKind::Pack:
    case ActionKind::Gpu: out << a.loop << ',' << a.value; break;
    case ActionKind::Kind: out << a.loop << ',' << loop_kind_name(static_cast<LoopKind>(a.value)); break;
    case ActionKind::PackInline:
    case ActionKind::PairDot: out << a.loop; break;
    default: out << a.value; break;
  }
  out << ')';
  return out.str();
}

std::string to_string(const std::vector<Action>& actions) {
  std::string s;
  for (size_t i = 0; i < actions.size(); ++i) s += (i ? " " : "") + to_string(actions[i]);
  return s;
}

std::vector<Action> parse_actions(const std::string& text) {
  std::vector<Action> out;
  std::istringstream in(text);
  std::string token;
  while (in >> token) {
    auto open = token.find('('), close = token.rfind(')');
    if (open == std::string::npos || close != token.size() - 1) fail("schedule: malformed action '", token, "'");
    std::string name = token.substr(0, open), args = token.substr(open + 1, close - open - 1);
    auto comma = args.find(',');
    auto number = [&](const std::string& s) -> int64_t {
      try {
        size_t used = 0;
        int64_t v = std::stoll(s, &used);
        if (used != s.size()) throw std::invalid_argument(s);
        return v;
      } catch (const std::exception&) {
        fail("schedule: '", s, "' in action '", token, "' is not a number");
      }
    };
    if (name == "split" || name == "reorder" || name == "kind" || name == "pack") {
      if (comma == std::string::npos) fail("schedule: action '", token, "' needs two arguments");
      int loop = static_cast<int>(number(args.substr(0, comma)));
      std::string second = args.substr(comma + 1);
      if (name == "kind") {
        int64_t k = -1;
        for (LoopKind lk : {LoopKind::Serial, LoopKind::Parallel, LoopKind::Unroll, LoopKind::Vector}) {
          if (second == loop_kind_name(lk)) k = static_cast<int64_t>(lk);
        }
        if (k < 0) fail("schedule: unknown loop kind '", second, "'");
        out.push_back(Action::set_kind(loop, static_cast<LoopKind>(k)));
      } else {
        ActionKind k = name == "split" ? ActionKind::Split : name == "pack" ? ActionKind::Pack : ActionKind::Reorder;
        out.push_back({k, loop, number(second)});
      }
    } else if (name == "reduce_lanes") {
      out.push_back(Action::reduce_lanes(number(args)));
    } else if (name == "reduce_unroll") {
      out.push_back(Action::reduce_unroll(number(args)));
    } else if (name == "reduce_split") {
      out.push_back(Action::reduce_split(number(args)));
    } else if (name == "pack_inline") {
      out.push_back(Action::pack_inline(static_cast<int>(number(args))));
    } else if (name == "pair_dot") {
      out.push_back(Action::pair_dot(static_cast<int>(number(args))));
    } else if (name == "prefetch") {
      out.push_back(Action::prefetch(number(args)));
    } else if (name == "rfactor") {
      out.push_back(Action::rfactor(number(args)));
    } else if (name == "gpu") {
      if (comma == std::string::npos) fail("schedule: gpu(mode, size) needs two numbers, got '", args, "'");
      out.push_back(Action::gpu(static_cast<int>(number(args.substr(0, comma))), number(args.substr(comma + 1))));
    } else {
      fail("schedule: unknown action '", name, "'");
    }
  }
  return out;
}

Schedule::Schedule(const Shape& shape) : shape_(shape) {
  for (size_t d = 0; d < shape.size(); ++d) loops_.push_back({static_cast<int>(d), shape[d], 1, LoopKind::Serial});
}

Schedule Schedule::from_actions(const Shape& shape, const std::vector<Action>& actions) {
  Schedule s(shape);
  for (const Action& a : actions) s.apply(a);
  return s;
}

void Schedule::check_loop(int loop, const char* action) const {
  if (loop < 0 || static_cast<size_t>(loop) >= loops_.size()) {
    fail("schedule: ", action, " names loop ", loop, " but there are ", loops_.size());
  }
}

void Schedule::apply(const Action& a) {
  switch (a.kind) {
    case ActionKind::Split: {
      check_loop(a.loop, "split");
      LoopDef& l = loops_[static_cast<size_t>(a.loop)];
      if (a.value < 2) fail("schedule: split factor must be >= 2, got ", a.value);
      int64_t factor = known_factor(l.extent);  // dynamic extents split when a multiple (e.g. 16*blocks)
      bool divides = factor != 0 && factor % a.value == 0;
      // A dim's only loop may split unevenly: the last tile overhangs and the
      // lowering clamps its coordinates to the last point (computed twice,
      // stored twice with the same value by the same iteration; SIMD lanes past
      // the end are masked instead). A dynamic dim (a row of past + 1
      // positions) splits so too, into ceil(extent / factor) tiles; a static one
      // shorter than the factor into one tile (14 positions in a vector of 16).
      bool first_split = l.step == 1 && (!l.extent.is_const() || l.extent.value() != a.value) &&
                         std::count_if(loops_.begin(), loops_.end(), [&](const LoopDef& o) { return o.dim == l.dim; }) == 1;
      if (!divides && !first_split) {
        fail("schedule: split(", a.loop, ", ", a.value, ") does not divide the loop's extent ", l.extent,
             " (only a dim's first split may leave a remainder)");
      }
      LoopDef inner{l.dim, Expr(a.value), l.step, LoopKind::Serial};
      l.extent = divides ? simplify(l.extent / a.value) : simplify((l.extent + (a.value - 1)) / a.value);
      l.step *= a.value;
      loops_.insert(loops_.begin() + a.loop + 1, inner);
      break;
    }
    case ActionKind::Reorder: {
      check_loop(a.loop, "reorder");
      if (a.value < 0 || static_cast<size_t>(a.value) >= loops_.size()) fail("schedule: reorder target ", a.value, " is out of range");
      LoopDef l = loops_[static_cast<size_t>(a.loop)];
      loops_.erase(loops_.begin() + a.loop);
      loops_.insert(loops_.begin() + a.value, l);
      break;
    }
    case ActionKind::Kind: {
      check_loop(a.loop, "kind");
      if (a.value < 0 || a.value > static_cast<int64_t>(LoopKind::Vector)) fail("schedule: unknown loop kind ", a.value);
      LoopDef& l = loops_[static_cast<size_t>(a.loop)];
      auto k = static_cast<LoopKind>(a.value);
      if (is_lane(k) && (!l.extent.is_const() || l.extent.value() > 256)) {
        fail("schedule: only static loops of at most 256 iterations can be ", loop_kind_name(k), ", loop ", a.loop,
             " has extent ", l.extent);
      }
      l.kind = k;
      break;
    }
    case ActionKind::ReduceLanes:
      if (a.value < 1 || a.value > 64) fail("schedule: reduce_lanes must be in [1, 64], got ", a.value);
      reduce_lanes_ = a.value;
      break;
    case ActionKind::ReduceUnroll:
      if (a.value < 1 || a.value > 32) fail("schedule: reduce_unroll must be in [1, 32], got ", a.value);
      reduce_unroll_ = a.value;
      break;
    case ActionKind::Pack:
      if (a.loop < 0 || a.loop > 1) fail("schedule: pack names operand ", a.loop, " of a product (0 or 1)");
      if (a.value < 1 || a.value > 256) fail("schedule: pack panel width must be in [1, 256], got ", a.value);
      for (const auto& [operand, width] : packs_) {
        if (operand == a.loop) fail("schedule: operand ", a.loop, " is packed twice");
      }
      packs_.emplace_back(a.loop, a.value);
      break;
    case ActionKind::ReduceSplit:
      if (a.value < 2 || a.value > kMaxReduceSplit) {
        fail("schedule: reduce_split must be in [2, ", kMaxReduceSplit, "], got ", a.value);
      }
      reduce_split_ = a.value;
      break;
    case ActionKind::PackInline:
      if (std::none_of(packs_.begin(), packs_.end(), [&](const auto& p) { return p.first == a.loop; })) {
        fail("schedule: pack_inline(", a.loop, ") needs a pack of operand ", a.loop, " first");
      }
      if (pack_inline(a.loop)) fail("schedule: pack_inline(", a.loop, ") given twice");
      inline_packs_.push_back(a.loop);
      break;
    case ActionKind::PairDot:
      if (std::none_of(packs_.begin(), packs_.end(), [&](const auto& p) { return p.first == a.loop; })) {
        fail("schedule: pair_dot(", a.loop, ") needs a pack of operand ", a.loop, " first");
      }
      if (pair_dot_ >= 0) fail("schedule: pair_dot given twice");
      pair_dot_ = a.loop;
      break;
    case ActionKind::Prefetch:
      if (a.value < 0 || a.value > 8) fail("schedule: prefetch distance must be in [0, 8], got ", a.value);
      prefetch_ = a.value;
      break;
    case ActionKind::Rfactor:
      if (a.value < 2 || a.value > kMaxRfactor) fail("schedule: rfactor must be in [2, ", kMaxRfactor, "], got ", a.value);
      rfactor_ = a.value;
      break;
    case ActionKind::Gpu:
      if (a.loop < -1 || a.loop > 2) fail("schedule: gpu mode must be -1, 0, 1 or 2, got ", a.loop);
      if (a.value != 0 && (a.value < 32 || a.value > 1024 || (a.value & (a.value - 1)) != 0)) {
        fail("schedule: gpu work-group size must be 0 or a power of two in [32, 1024], got ", a.value);
      }
      gpu_reduce_ = a.loop;
      gpu_group_ = a.value;
      break;
  }
  validate_kinds();
  actions_.push_back(a);
}

bool Schedule::pack_inline(int operand) const {
  return std::find(inline_packs_.begin(), inline_packs_.end(), operand) != inline_packs_.end();
}

// Only the outermost loop may be parallel (the runtime splits it across
// threads); lane loops must be innermost (all loops inside a lane loop are lanes).
void Schedule::validate_kinds() const {
  bool seen_lane = false;
  for (size_t i = 0; i < loops_.size(); ++i) {
    LoopKind k = loops_[i].kind;
    if (k == LoopKind::Parallel && i != 0) fail("schedule: only the outermost loop can be parallel, not loop ", i);
    if (is_lane(k)) {
      seen_lane = true;
    } else if (seen_lane) {
      fail("schedule: loop ", i, " (", loop_kind_name(k), ") is inside an unrolled or vector loop");
    }
  }
}

}  // namespace lumen::kernel
