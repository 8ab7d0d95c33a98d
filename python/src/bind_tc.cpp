// Bindings for tensor comprehensions: lumen.tc(text) returns a callable on
// graph Tensors (and numbers for scalar parameters).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace lumen::python {

namespace {

std::vector<tc::Arg> args_from_python(const tc::Comprehension& fn, const nb::args& args) {
  std::vector<tc::Arg> out;
  for (size_t i = 0; i < args.size(); ++i) {
    nb::handle a = args[i];
    PyTensor* t = nullptr;
    double number = 0;
    if (nb::try_cast<PyTensor*>(a, t) && t != nullptr) {
      out.emplace_back(t->tensor);
    } else if (!PyBool_Check(a.ptr()) && !PyUnicode_Check(a.ptr()) && nb::try_cast<double>(a, number)) {
      out.emplace_back(std::in_place_index<1>, number);  // Python and NumPy numbers
    } else {
      fail("tc: ", fn.name(), ": argument ", i + 1, " is a ", nb::inst_name(a).c_str(),
           "; pass lumen Tensors (graph inputs or results) and numbers for scalar parameters");
    }
  }
  return out;
}

}  // namespace

void bind_tc(nb::module_& m) {
  nb::class_<tc::Comprehension>(m, "Comprehension", "A tensor comprehension; call it on Tensors (see docs/tc.md).")
      .def_prop_ro("name", &tc::Comprehension::name)
      .def_prop_ro("source", &tc::Comprehension::source)
      .def_prop_ro("outputs", [](const tc::Comprehension& fn) {
        std::vector<std::string> names;
        for (const tc::OutputDecl& o : fn.def().outputs) names.push_back(o.name);
        return names;
      })
      .def("__call__", [](const tc::Comprehension& fn, nb::args args) -> nb::object {
        std::vector<Tensor> outs = fn(args_from_python(fn, args));
        if (outs.size() == 1) return nb::cast(outs[0]);
        nb::list list;
        for (const Tensor& t : outs) list.append(nb::cast(t));
        return nb::tuple(list);
      })
      .def("__repr__", [](const tc::Comprehension& fn) { return "<lumen.Comprehension " + fn.name() + ">"; });
  m.def("tc", &tc::define, nb::arg("text"), nb::arg("name") = "",
        "Defines a tensor comprehension from `text` (one def, or pick one by `name`); returns a callable on Tensors.");
}

}  // namespace lumen::python
