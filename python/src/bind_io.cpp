// Bindings for lumen.io: tokenizers and weight files.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "lumen/io/gguf.h"
#include "lumen/io/safetensors.h"
#include "lumen/io/tokenizer/tokenizer.h"

namespace lumen::python {

void bind_io(nb::module_& m) {
  nb::module_ io = m.def_submodule("io", "Weight files and tokenizers");
  nb::class_<io::Tokenizer>(io, "Tokenizer", "Text <-> token ids (tokenizer.json or a GGUF vocabulary).")
      .def_static("from_file", &io::load_tokenizer_json, nb::arg("path"), "Loads a Hugging Face tokenizer.json.")
      .def_static("from_str", &io::parse_tokenizer_json, nb::arg("json"), nb::arg("origin") = "tokenizer.json")
      .def_static("from_gguf", [](const std::string& path) { return io::tokenizer_from_gguf(io::GgufFile::open(path)); },
                  nb::arg("path"), "The vocabulary stored in a GGUF file.")
      .def("encode", &io::Tokenizer::encode, nb::arg("text"), nb::arg("add_special_tokens") = true,
           nb::arg("parse_special") = true,
           nb::call_guard<nb::gil_scoped_release>())
      .def("decode", &io::Tokenizer::decode, nb::arg("ids"), nb::arg("skip_special_tokens") = true,
           "Text for ids; ids outside the tokenizer's vocabulary (a padded model vocabulary) are skipped.")
      .def("decode_strict", &io::Tokenizer::decode_strict, nb::arg("ids"), nb::arg("skip_special_tokens") = true,
           "As decode, but an id outside the vocabulary raises lumen.Error.")
      .def("token_to_id", &io::Tokenizer::token_to_id, nb::arg("token"))
      .def("id_to_token", &io::Tokenizer::id_to_token, nb::arg("id"))
      .def_prop_ro("vocab_size", &io::Tokenizer::vocab_size)
      .def_prop_ro("pad_id", &io::Tokenizer::pad_id)
      .def_prop_rw("max_length", &io::Tokenizer::max_length, &io::Tokenizer::set_max_length,
                   "Truncation length when special tokens are added (None: no truncation).");

  io.def("load_safetensors", [](const std::string& path) {
    io::SafetensorsFile f = io::SafetensorsFile::open(path);
    nb::dict d;
    for (const auto& e : f.entries()) d[nb::str(e.name.c_str())] = array_to_python(f.get(e.name));
    return d;
  }, nb::arg("path"), "Every tensor of a safetensors file, as numpy arrays (borrowed from the memory map).");
}

}  // namespace lumen::python
