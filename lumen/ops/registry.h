// The op registry: every public op of lumen/ops (and module of lumen/nn)
// with its PyTorch counterpart.
// docs/ops.md is generated from it (scripts/gen_ops_doc.py) together with the
// results of the PyTorch comparison tests; an op without a passing test fails
// that check.
#pragma once

#include <vector>

namespace lumen::ops {

struct OpInfo {
  const char* name;      // as recorded by the tests
  const char* pytorch;   // the PyTorch function it is checked against
  const char* category;
};

const std::vector<OpInfo>& op_registry();

}  // namespace lumen::ops
