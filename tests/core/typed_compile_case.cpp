// Compiled (syntax only) by CTest with one LUMEN_CASE_* defined. The bad
// cases must be rejected by static_assert with a readable message.
#include "lumen/core/typed.h"

using lumen::typed::Shape;

void build(lumen::Graph& g) {
  auto a = lumen::typed::input<Shape<3, 4>>(g, "a");
  auto b = lumen::typed::input<Shape<4, 2>>(g, "b");
#if defined(LUMEN_CASE_good)
  auto c = lumen::typed::matmul(a, b);
  auto d = c + lumen::typed::input<Shape<1, 2>>(g, "bias");
  auto e = d.reshape<Shape<6>>();
  (void)e;
#elif defined(LUMEN_CASE_bad_matmul)
  auto c = lumen::typed::matmul(a, a);  // [3, 4] x [3, 4]
  (void)c;
#elif defined(LUMEN_CASE_bad_broadcast)
  auto c = a + b;  // [3, 4] + [4, 2]
  (void)c;
#elif defined(LUMEN_CASE_bad_reshape)
  auto c = a.reshape<Shape<5, 2>>();
  (void)c;
#endif
}

int main() { return 0; }
