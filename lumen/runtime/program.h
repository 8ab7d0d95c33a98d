// Program — a compiled graph, ready to run many times: set inputs by name,
// bind dynamic dims (or let input shapes bind them), run, read outputs.
//
// Threads: every method takes the program's lock, so calls from several
// threads never corrupt it, and different programs run concurrently. A
// sequence (set, run, get) is atomic only under lock(): hold it across the
// sequence when several threads share one program (Python's program(...)
// call does). Arrays returned by get() stay valid until the next run().
#pragma once

#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lumen/core/array.h"
#include "lumen/core/graph.h"
#include "lumen/core/tensor.h"
#include "lumen/runtime/executor.h"

namespace lumen {

class Program {
 public:
  Program(std::shared_ptr<const Graph> graph, std::vector<NamedOutput> outputs, std::unique_ptr<Executor> executor);

  // Sets an input. The Array's shape binds the input's dynamic dims.
  void set(const std::string& input, Array data);
  // Sets an f32/i32 input from values; the declared shape must be concrete
  // (or its dims already bound).
  void set(const std::string& input, const std::vector<float>& values);
  void set(const std::string& input, const std::vector<int32_t>& values);
  void set(const std::string& input, std::initializer_list<float> values) { set(input, std::vector<float>(values)); }
  void bind(const std::string& dim, int64_t value);
  bool has_dim(const std::string& dim) const;  // whether the program's graph declares this dynamic dim

  // Persistent state (Graph::state): zeroed at compile, updated in place by
  // each run. set() on a state name copies the data in; state() reads it.
  const Array& state(const std::string& name) const;
  void reset_state();  // zero every state buffer
  std::vector<std::string> state_names() const;
  // Makes this program's state buffers the same memory as `other`'s (same
  // names, shapes and dtypes), e.g. a prefill and a decode program sharing
  // one KV cache.
  void share_state(const Program& other);
  // The same for one state only (programs holding different sets of states).
  void share_state(const Program& other, const std::string& name);

  void run();

  const Array& get(const std::string& output) const;
  const Array& get(const Tensor& output) const;
  std::vector<std::string> output_names() const;
  const Graph& graph() const { return *graph_; }
  const char* backend_name() const { return executor_->backend_name(); }
  std::map<std::string, double> stats() const { return executor_->stats(); }
  std::string report() const { return executor_->report(); }
  std::vector<SearchTrace> search_trace() const { return executor_->search_trace(); }
  // Graphviz of what compilation made (kernels and buffers); the graph's own
  // DOT for backends that run the graph as it is.
  std::string kernels_dot() const {
    std::string d = executor_->kernels_dot();
    return d.empty() ? graph_->to_dot() : d;
  }
  double compile_seconds = 0;  // wall time compile() took

  // Held across a set/run/get sequence by a thread sharing this program.
  std::unique_lock<std::recursive_mutex> lock() const { return std::unique_lock<std::recursive_mutex>(*mutex_); }

 private:
  std::vector<int64_t> declared_shape(const std::string& input) const;
  const Node& input_node(const std::string& input) const;
  void point_at(const std::string& input, const Array& array);

  std::shared_ptr<const Graph> graph_;
  std::vector<NamedOutput> outputs_;
  std::unique_ptr<Executor> executor_;
  std::map<std::string, Array> inputs_;
  std::map<std::string, Array> states_;
  NodeArrays by_node_;  // inputs_ and states_ by the executor graph's node ids (map entries never move)
  Bindings bindings_;
  std::vector<Array> results_;
  std::shared_ptr<std::recursive_mutex> mutex_ = std::make_shared<std::recursive_mutex>();
};

}  // namespace lumen
