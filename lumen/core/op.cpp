#include "lumen/core/op.h"

namespace lumen {

const char* op_name(Op op) {
  switch (op) {
    case Op::Input: return "Input";
    case Op::Constant: return "Constant";
    case Op::Cast: return "Cast";
    case Op::Log2: return "Log2";
    case Op::Exp2: return "Exp2";
    case Op::Sin: return "Sin";
    case Op::Sqrt: return "Sqrt";
    case Op::Recip: return "Recip";
    case Op::Add: return "Add";
    case Op::Mul: return "Mul";
    case Op::Mod: return "Mod";
    case Op::LessThan: return "LessThan";
    case Op::SumReduce: return "SumReduce";
    case Op::MaxReduce: return "MaxReduce";
    case Op::Gather: return "Gather";
    case Op::Contiguous: return "Contiguous";
  }
  return "?";
}

bool is_unary(Op op) {
  return op == Op::Log2 || op == Op::Exp2 || op == Op::Sin || op == Op::Sqrt || op == Op::Recip;
}

bool is_binary(Op op) { return op == Op::Add || op == Op::Mul || op == Op::Mod || op == Op::LessThan; }

bool is_reduce(Op op) { return op == Op::SumReduce || op == Op::MaxReduce; }

bool is_elementwise(Op op) { return is_unary(op) || is_binary(op) || op == Op::Cast; }

}  // namespace lumen
