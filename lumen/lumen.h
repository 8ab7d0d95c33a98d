// lumen — the public C++ API in one include.
#pragma once

#include "lumen/compile.h"
#include "lumen/core/array.h"
#include "lumen/core/dtype.h"
#include "lumen/core/error.h"
#include "lumen/core/expr.h"
#include "lumen/core/graph.h"
#include "lumen/core/tensor.h"
#include "lumen/core/typed.h"
#include "lumen/ops/ops.h"
#include "lumen/passes/autodiff.h"
#include "lumen/runtime/program.h"
#include "lumen/tc/comprehension.h"
