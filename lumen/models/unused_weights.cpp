#include "lumen/models/unused_weights.h"

#include <sstream>

#include "lumen/core/error.h"

namespace lumen::models {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::vector<std::string> unused_weights(const io::WeightStore& store) {
  std::vector<std::string> out;
  for (const std::string& name : store.names()) {  // names() is sorted (a std::map)
    // A quantized weight enters the graph as name.q and name.scales.
    if (!store.inputs().count(name) && !store.inputs().count(name + ".q")) out.push_back(name);
  }
  return out;
}

void refuse_unused_weights(const io::WeightStore& store, const std::vector<std::string>& known_unneeded,
                           const std::string& model) {
  std::vector<std::string> bad;
  for (const std::string& name : unused_weights(store)) {
    bool known = false;
    for (const std::string& tail : known_unneeded) known = known || ends_with(name, tail);
    if (!known) bad.push_back(name);
  }
  if (bad.empty()) return;
  std::ostringstream names;
  for (size_t i = 0; i < bad.size() && i < 8; ++i) names << (i ? ", " : "") << "'" << bad[i] << "'";
  if (bad.size() > 8) names << " and " << bad.size() - 8 << " more";
  fail(model, ": '", store.origin, "' holds ", bad.size(), " tensor(s) the model built from its config does not use: ",
       names.str(), " (the config and the weights disagree: check the config, e.g. attention_bias, mlp_bias, "
       "num_hidden_layers, tie_word_embeddings)");
}

}  // namespace lumen::models
