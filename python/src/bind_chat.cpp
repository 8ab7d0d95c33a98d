// Bindings for chat: lumen.io.ChatTemplate (a model's Jinja chat template)
// and lumen.models.ChatSession (a conversation with a Llama-family model).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "lumen/models/chat_session.h"

namespace lumen::python {

namespace {

// [{"role": ..., "content": ...}, ...] from Python.
std::vector<io::ChatMessage> messages_from_python(nb::handle list) {
  std::vector<io::ChatMessage> out;
  for (nb::handle item : list) {
    if (!nb::isinstance<nb::dict>(item)) fail("chat: each message must be a dict with 'role' and 'content'");
    nb::dict d = nb::borrow<nb::dict>(item);
    if (!d.contains("role") || !d.contains("content")) fail("chat: a message lacks 'role' or 'content'");
    out.push_back({nb::cast<std::string>(nb::str(d["role"])), nb::cast<std::string>(nb::str(d["content"]))});
  }
  return out;
}

nb::dict stats_to_python(const models::ChatReply& r) {
  nb::dict s;
  s["prompt_tokens"] = r.stats.prompt_tokens;
  s["generated_tokens"] = static_cast<int64_t>(r.tokens.size());
  s["prefill_tokens_per_second"] = r.stats.prefill_tokens_per_second();
  s["decode_tokens_per_second"] = r.stats.decode_tokens_per_second();
  s["prefill_seconds"] = r.stats.prefill_seconds;
  s["decode_seconds"] = r.stats.decode_seconds;
  s["stop_reason"] = r.ended_turn ? "end_of_turn" : "length";
  s["tokens"] = r.tokens;
  return s;
}

// A session with the model's own tokenizer and format (kept beside it) and a
// reference to the Python Llama it runs, visible to the garbage collector
// (a Llama may hold its session: the cycle must be collectable).
struct PyChatSession {
  nb::object llm;
  models::ChatAssets assets;
  std::unique_ptr<models::ChatSession> session;
};

int session_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  Py_VISIT(nb::inst_ptr<PyChatSession>(self)->llm.ptr());
  return 0;
}

int session_clear(PyObject* self) {
  PyChatSession* s = nb::inst_ptr<PyChatSession>(self);
  s->session.reset();  // it refers to the runner the reference keeps alive
  s->llm.reset();
  return 0;
}

PyType_Slot session_slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(session_traverse)},
                               {Py_tp_clear, reinterpret_cast<void*>(session_clear)},
                               {0, nullptr}};

models::ChatSession& live(PyChatSession& s) {
  if (!s.session) fail("chat: this session was cleared");
  return *s.session;
}

template <typename Call>
nb::object reply_with(PyChatSession& s, int64_t max_new, double temperature, int64_t top_k, double top_p, uint64_t seed,
                      const Call& call) {
  models::Sampler sampler({temperature, top_k, top_p, seed});
  models::ChatReply r;
  {
    nb::gil_scoped_release release;
    r = call(live(s), sampler);
  }
  (void)max_new;
  return nb::make_tuple(r.text, stats_to_python(r));
}

}  // namespace

void bind_chat(nb::module_& m) {
  nb::module_ io = nb::borrow<nb::module_>(m.attr("io"));
  nb::class_<io::ChatTemplate>(io, "ChatTemplate", "A chat template rendered by Jinja2 as Hugging Face does.")
      .def(nb::init<std::string, std::string, std::string>(), nb::arg("source"), nb::arg("bos_token") = "",
           nb::arg("eos_token") = "")
      .def("render",
           [](const io::ChatTemplate& t, nb::handle messages, bool add_generation_prompt) {
             return t.render(messages_from_python(messages), add_generation_prompt);
           },
           nb::arg("messages"), nb::arg("add_generation_prompt") = true);

  nb::module_ models = nb::borrow<nb::module_>(m.attr("models"));
  nb::class_<PyChatSession>(models, "ChatSession",
                            "A conversation with a Llama model through its own chat template (from the model file).",
                            nb::type_slots(session_slots))
      .def("__init__",
           [](PyChatSession* self, nb::handle llm, const std::string& path) {
             models::LlamaRunner& runner = nb::cast<models::LlamaRunner&>(llm);
             new (self) PyChatSession();
             self->llm = nb::borrow(llm);
             self->assets = models::chat_assets(path);
             self->session = std::make_unique<models::ChatSession>(runner, *self->assets.tokenizer, self->assets.format);
           },
           nb::arg("llm"), nb::arg("path"))
      .def("respond",
           [](PyChatSession& s, nb::handle messages, int64_t max_new, double temperature, int64_t top_k, double top_p,
              uint64_t seed) {
             auto list = messages_from_python(messages);
             return reply_with(s, max_new, temperature, top_k, top_p, seed, [&](models::ChatSession& c, models::Sampler& sm) {
               return c.respond(list, max_new, sm);
             });
           },
           nb::arg("messages"), nb::arg("max_new_tokens") = 256, nb::arg("temperature") = 0.0, nb::arg("top_k") = 0,
           nb::arg("top_p") = 1.0, nb::arg("seed") = 0,
           "The reply to a conversation [{'role', 'content'}, ...]: (text, stats).")
      .def("reply",
           [](PyChatSession& s, const std::string& message, int64_t max_new, double temperature, int64_t top_k,
              double top_p, uint64_t seed) {
             return reply_with(s, max_new, temperature, top_k, top_p, seed, [&](models::ChatSession& c, models::Sampler& sm) {
               return c.reply(message, max_new, sm);
             });
           },
           nb::arg("message"), nb::arg("max_new_tokens") = 256, nb::arg("temperature") = 0.0, nb::arg("top_k") = 0,
           nb::arg("top_p") = 1.0, nb::arg("seed") = 0, "Adds a user message to the history and returns (reply, stats).")
      .def("reset", [](PyChatSession& s) { live(s).reset(); }, "Forgets the history.")
      .def("set_system", [](PyChatSession& s, const std::string& text) { live(s).set_system(text); })
      .def_prop_ro("prompt", [](PyChatSession& s) { return live(s).prompt(); },
                   "The text the template makes of the history, ready for the reply.")
      .def_prop_ro("end_of_turn", [](const PyChatSession& s) {
        return std::vector<int32_t>(s.assets.format.end_of_turn.begin(), s.assets.format.end_of_turn.end());
      });
}

}  // namespace lumen::python
