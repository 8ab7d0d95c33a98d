// Random valid comprehensions (affine reads, a random elementwise body, a
// random reduction, sometimes a second statement over the first) compiled
// for the CPU must equal the reference interpreter. Seeded: each case prints
// its source when it fails.
#include <random>
#include <sstream>

#include "tests/tc/exercise.h"
#include "tests/tc/tc_test_util.h"

namespace lumen::tc::testing {
namespace {

struct RandomTc {
  std::string source;
  std::vector<TcInput> inputs;
};

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  RandomTc make() {
    int out_vars = pick(1, 2), red_vars = pick(0, 2);
    for (int v = 0; v < out_vars + red_vars; ++v) {
      vars_.push_back(std::string(1, static_cast<char>('i' + v)));
      extent_.push_back(pick(1, 5));
    }
    // T0 reads every variable plainly (so each has a range); others read affine mixes.
    std::vector<std::string> reads = {tensor_read(true)};
    int more = pick(0, 2);
    for (int t = 0; t < more; ++t) reads.push_back(tensor_read(false));
    std::string body = expression(reads, 3);
    if (body.find("T0(") == std::string::npos) body = "(" + body + " * " + reads[0] + ")";  // T0 gives every range
    static const char* kOps[] = {"+=!", "max=!", "min=!", "*=!"};
    int reduce_elems = 1;
    for (int v = out_vars; v < out_vars + red_vars; ++v) reduce_elems *= extent_[static_cast<size_t>(v)];
    std::string op = kOps[pick(0, reduce_elems <= 6 ? 3 : 2)];
    if (op == "*=!") body = "(1.0 + 0.25 * tanh(" + body + "))";
    std::string lhs = "O(" + join(0, out_vars) + ")";
    std::ostringstream src;
    src << "def random(" << params() << ") -> (" << (pick(0, 1) ? "O" : "P") << ") {\n  " << lhs << " " << op << " " << body << "\n";
    src << "  P(" << join(0, out_vars) << ") = " << "max(O(" << join(0, out_vars) << "), " << reads[0] << " * 0.5)\n}\n";
    // P reads T0 with every variable: only valid without reductions in T0's dims.
    std::string text = src.str();
    if (red_vars > 0) text = "def random(" + params() + ") -> (O) {\n  " + lhs + " " + op + " " + body + "\n}\n";
    return {text, inputs_};
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  std::string join(int from, int to) const {
    std::string out;
    for (int v = from; v < to; ++v) out += (out.empty() ? "" : ",") + vars_[static_cast<size_t>(v)];
    return out;
  }

  // Adds an input and returns a read of it.
  std::string tensor_read(bool plain) {
    std::string name = "T" + std::to_string(inputs_.size());
    std::vector<std::string> index;
    std::vector<int64_t> shape;
    if (plain) {
      for (size_t v = 0; v < vars_.size(); ++v) {
        index.push_back(vars_[v]);
        shape.push_back(extent_[v]);
      }
    } else {
      int rank = pick(1, 3);
      for (int d = 0; d < rank; ++d) {
        size_t a = static_cast<size_t>(pick(0, static_cast<int>(vars_.size()) - 1));
        size_t b = static_cast<size_t>(pick(0, static_cast<int>(vars_.size()) - 1));
        int ca = pick(1, 2), cb = pick(0, 1), c = pick(0, 2);
        std::string e = (ca == 1 ? "" : std::to_string(ca) + "*") + vars_[a];
        int64_t top = ca * (extent_[a] - 1) + c;
        if (cb && b != a) {
          e += " + " + vars_[b];
          top += extent_[b] - 1;
        }
        if (c) e += " + " + std::to_string(c);
        index.push_back(e);
        shape.push_back(top + 1 + pick(0, 1));
      }
    }
    inputs_.push_back({name, DType::F32, shape});
    std::string dims;
    for (size_t d = 0; d < shape.size(); ++d) dims += (d ? "," : "") + name + "d" + std::to_string(d);
    params_.push_back("float(" + dims + ") " + name);
    std::string out = name + "(";
    for (size_t d = 0; d < index.size(); ++d) out += (d ? ", " : "") + index[d];
    return out + ")";
  }

  std::string params() const {
    std::string out;
    for (const std::string& p : params_) out += (out.empty() ? "" : ", ") + p;
    return out;
  }

  std::string expression(const std::vector<std::string>& reads, int depth) {
    if (depth == 0 || pick(0, 3) == 0) {
      return pick(0, 5) ? reads[static_cast<size_t>(pick(0, static_cast<int>(reads.size()) - 1))] : std::to_string(pick(1, 3)) + ".5";
    }
    std::string a = expression(reads, depth - 1), b = expression(reads, depth - 1);
    switch (pick(0, 8)) {
      case 0: return "(" + a + " + " + b + ")";
      case 1: return "(" + a + " - " + b + ")";
      case 2: return "(" + a + " * " + b + ")";
      case 3: return "max(" + a + ", " + b + ")";
      case 4: return "min(" + a + ", " + b + ")";
      case 5: return "tanh(" + a + ")";
      case 6: return "abs(" + a + ")";
      case 7: return "(" + a + " < " + b + " ? " + a + " : -" + b + ")";
      default: return "exp(tanh(" + a + "))";
    }
  }

  std::mt19937 rng_;
  std::vector<std::string> vars_;
  std::vector<int64_t> extent_;
  std::vector<TcInput> inputs_;
  std::vector<std::string> params_;
};

TEST(TcRandom, CompiledMatchesInterpreter) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    RandomTc c = Generator(seed).make();
    SCOPED_TRACE(c.source);
    std::vector<Array> want = run_tc(c.source, c.inputs, {}, Backend::Interp, seed);
    std::vector<Array> got = run_tc(c.source, c.inputs, {}, Backend::Cpu, seed);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) expect_close(got[i], want[i], 1e-4);
  }
}

// The fuzzers' routine on byte mutations of valid texts: never anything but
// success or lumen::Error (the libFuzzer target runs it under sanitizers).
TEST(TcRandom, MutatedTextsFailCleanly) {
  std::mt19937 rng(7);
  const std::string seeds[] = {
      "def matmul(float(M,K) A, float(K,N) B) -> (C) { C(m,n) +=! A(m,k) * B(k,n) }",
      "def c(float(N,C,H,W) I, float(O,C,KH,KW) W1, int s) -> (O1) { O1(n,o,h,w) +=! I(n,c,h*s+kh,w*s+kw) * W1(o,c,kh,kw) }",
      "def p(float(N,H) X, int K) -> (M, A) { M(n,h) max=! X(n, h*2 + k) where k in 0:K\n A(n,h) = M(n,h) > 0.0 ? M(n,h) : -M(n,h) }",
      "def e(int(T) Ids, float(V,D) E) -> (O) { O(t,d) = E(Ids(t), d) }",
  };
  const char kBytes[] = "()+-*/%<>=!?:,;{}#.0123456789 ijkABCwhere in max min def float int -> \n";
  int applied = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text = seeds[round % 4];
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      size_t at = rng() % text.size();
      char c = kBytes[rng() % (sizeof(kBytes) - 1)];
      switch (rng() % 3) {
        case 0: text[at] = c; break;
        case 1: text.insert(at, 1, c); break;
        default: text.erase(at, 1); break;
      }
    }
    applied += exercise(text);
  }
  EXPECT_GT(applied, 100);  // many mutations stay valid, so lowering is exercised too
}

}  // namespace
}  // namespace lumen::tc::testing
