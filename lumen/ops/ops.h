// The op library: every high-level op, composed only from primitives.
#pragma once

#include "lumen/ops/attention.h"
#include "lumen/ops/conv.h"
#include "lumen/ops/creation.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/indexing.h"
#include "lumen/ops/linalg.h"
#include "lumen/ops/loss.h"
#include "lumen/ops/math.h"
#include "lumen/ops/movement.h"
#include "lumen/ops/normalization.h"
#include "lumen/ops/reduce.h"
#include "lumen/ops/registry.h"
