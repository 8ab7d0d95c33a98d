// The lumen._lumen extension module.
#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <typeinfo>

#include "bindings.h"

namespace {

namespace nb = nanobind;

// "std::bad_variant_access" rather than "St18bad_variant_access".
std::string exception_type(const std::exception& e) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : typeid(e).name();
}

// Every C++ standard exception that reaches Python becomes lumen.Error (a
// ValueError) naming its type, never a bare RuntimeError; nanobind's own
// exceptions (a pending Python error, TypeError / IndexError / StopIteration
// it raises on purpose, failed casts) keep their meaning. Registered after
// lumen.Error's own translator, so it is tried first.
void translate_std_exception(const std::exception_ptr& p, void* error_type) {
  try {
    std::rethrow_exception(p);
  } catch (const nb::python_error&) {
    throw;
  } catch (const nb::builtin_exception&) {
    throw;
  } catch (const std::bad_cast&) {  // nanobind::cast_error
    throw;
  } catch (const lumen::Error& e) {
    PyErr_SetString(static_cast<PyObject*>(error_type), e.what());
  } catch (const std::bad_alloc&) {
    PyErr_SetString(static_cast<PyObject*>(error_type), "out of memory (std::bad_alloc): the data does not fit in memory");
  } catch (const std::exception& e) {
    std::string message = "unexpected error (" + exception_type(e) + "): " + e.what();
    PyErr_SetString(static_cast<PyObject*>(error_type), message.c_str());
  }
}

}  // namespace

NB_MODULE(_lumen, m) {
  m.doc() = "lumen: a deep learning compiler whose optimizer is search (C++ core)";
  lumen::python::bind_core(m);
  lumen::python::bind_ops(m);
  lumen::python::bind_runtime(m);
  lumen::python::bind_nn(m);
  lumen::python::bind_models(m);
  lumen::python::bind_io(m);
  lumen::python::bind_onnx(m);
  lumen::python::bind_chat(m);
  lumen::python::bind_train(m);
#ifdef LUMEN_HAVE_DIST
  lumen::python::bind_dist(m);
#endif
  lumen::python::bind_tc(m);
  // Programs end up held by other extensions' caches (torch.compile's) that are torn down after this
  // module at interpreter exit; nanobind would report them as leaks.
  nanobind::set_leak_warnings(false);
  nanobind::object error = m.attr("Error");
  nanobind::register_exception_translator(translate_std_exception, error.release().ptr());  // the module keeps it alive
}
