#include "lumen/nn/parameter_source.h"

namespace lumen::nn {

namespace {
thread_local ParameterSource* installed = nullptr;
}

ScopedParameterSource::ScopedParameterSource(ParameterSource& source) : previous_(installed) { installed = &source; }

ScopedParameterSource::~ScopedParameterSource() { installed = previous_; }

ParameterSource* current_parameter_source() { return installed; }

}  // namespace lumen::nn
