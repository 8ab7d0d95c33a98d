// The lumen._lumen extension module.
#include "bindings.h"

NB_MODULE(_lumen, m) {
  m.doc() = "lumen: a deep learning compiler whose optimizer is search (C++ core)";
  lumen::python::bind_core(m);
  lumen::python::bind_ops(m);
  lumen::python::bind_runtime(m);
  lumen::python::bind_nn(m);
  lumen::python::bind_models(m);
  lumen::python::bind_io(m);
  lumen::python::bind_chat(m);
}
