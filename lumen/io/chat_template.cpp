#include "lumen/io/chat_template.h"

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <mutex>
#include <nlohmann/json.hpp>

#include "lumen/core/error.h"

namespace lumen::io {

namespace {

// The Jinja environment of Hugging Face's apply_chat_template.
constexpr const char* kRenderer = R"PY(
import datetime, json
try:
    import jinja2
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError as e:
    raise RuntimeError("chat templates need Jinja2: pip install Jinja2") from e

def _raise(message):
    raise jinja2.exceptions.TemplateError(message)

def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

_env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
_env.filters["tojson"] = _tojson
_env.globals["raise_exception"] = _raise
_env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)

def compile_template(source):
    return _env.from_string(source)

def render(template, messages, add_generation_prompt, bos_token, eos_token):
    return template.render(messages=json.loads(messages), add_generation_prompt=bool(add_generation_prompt),
                           bos_token=bos_token, eos_token=eos_token)
)PY";

// Holds the GIL for its scope (any thread; the interpreter started if needed).
class Gil {
 public:
  Gil() {
    static std::once_flag started;
    std::call_once(started, [] {
      if (!Py_IsInitialized()) {
        Py_InitializeEx(0);
        PyEval_SaveThread();  // other threads take the GIL through PyGILState_Ensure
      }
    });
    state_ = PyGILState_Ensure();
  }
  ~Gil() { PyGILState_Release(state_); }
  Gil(const Gil&) = delete;
  Gil& operator=(const Gil&) = delete;

 private:
  PyGILState_STATE state_;
};

// The pending Python exception as text (and cleared).
std::string python_error() {
  PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
  PyErr_Fetch(&type, &value, &trace);
  std::string text = "unknown error";
  if (value) {
    if (PyObject* s = PyObject_Str(value)) {
      if (const char* c = PyUnicode_AsUTF8(s)) text = c;
      Py_DECREF(s);
    }
  }
  PyErr_Clear();
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(trace);
  return text;
}

// The renderer's functions (under the GIL); created once, never freed.
PyObject* renderer_function(const char* name) {
  static PyObject* globals = nullptr;
  if (!globals) {
    PyObject* g = PyDict_New();
    PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins());
    PyObject* result = PyRun_String(kRenderer, Py_file_input, g, g);
    if (!result) {
      std::string why = python_error();
      Py_DECREF(g);
      fail("chat template: cannot start the Jinja2 renderer: ", why);
    }
    Py_DECREF(result);
    globals = g;
  }
  return PyDict_GetItemString(globals, name);  // borrowed
}

std::string as_string(PyObject* text) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text, &size);
  if (!data) fail("chat template: the template did not render to text: ", python_error());
  return std::string(data, static_cast<size_t>(size));
}

}  // namespace

ChatTemplate::ChatTemplate(std::string source, std::string bos_token, std::string eos_token)
    : source_(std::move(source)), bos_(std::move(bos_token)), eos_(std::move(eos_token)) {
  Gil gil;
  PyObject* text = PyUnicode_DecodeUTF8(source_.data(), static_cast<Py_ssize_t>(source_.size()), "replace");
  PyObject* compiled = text ? PyObject_CallOneArg(renderer_function("compile_template"), text) : nullptr;
  Py_XDECREF(text);
  if (!compiled) fail("chat template: the template does not parse: ", python_error());
  compiled_ = compiled;
}

ChatTemplate::~ChatTemplate() {
  if (!compiled_ || !Py_IsInitialized()) return;
  Gil gil;
  Py_DECREF(static_cast<PyObject*>(compiled_));
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  nlohmann::json list = nlohmann::json::array();
  for (const ChatMessage& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
  std::string json = list.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  Gil gil;
  PyObject* out = PyObject_CallFunction(renderer_function("render"), "Osiss", static_cast<PyObject*>(compiled_),
                                        json.c_str(), add_generation_prompt ? 1 : 0, bos_.c_str(), eos_.c_str());
  if (!out) fail("chat template: rendering failed: ", python_error());
  std::string text = as_string(out);
  Py_DECREF(out);
  return text;
}

}  // namespace lumen::io
