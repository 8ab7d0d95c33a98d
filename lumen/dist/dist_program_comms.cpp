// DistProgram's communication: starting a group of collectives (one packed
// all-reduce per bucket), transfers between pipeline stages, and turning
// finished operations into the arrays later segments read.
#include <cstring>

#include "lumen/core/error.h"
#include "lumen/core/stopwatch.h"
#include "lumen/dist/comm_buffers.h"
#include "lumen/dist/dist_program.h"

namespace lumen::dist {

namespace {

int peer_rank(const ParallelSpec& spec, int stage, int my_rank) { return stage * spec.shards + my_rank % spec.shards; }

}  // namespace

Array DistProgram::read_input_or_state(const std::string& name) const {
  auto owner = state_owner_.find(name);
  if (owner != state_owner_.end()) return segments_[owner->second]->state(name);
  auto it = inputs_.find(name);
  if (it == inputs_.end()) fail("dist: run: input '", name, "' was not set; set it before running");
  return it->second;
}

// The local value a comm sends or contributes.
Array DistProgram::source_value(const LocalComm& c) const {
  const Node& n = local_.graph.node(c.source);
  if (n.op == Op::Input) return read_input_or_state(n.name);
  auto it = values_.find(value_name(c.source));
  if (it == values_.end()) fail("dist: internal: ", c.name, " is communicated before it is computed");
  return it->second;
}

void DistProgram::post_receives(const Bindings& b) {
  for (size_t k = 0; k < local_.comms.size(); ++k) {
    const LocalComm& c = local_.comms[k];
    if (c.point.kind != CommKind::Transfer || c.result < 0) continue;
    Flight& f = *flights_[k];
    f.result = Array(c.dtype, concrete_shape(c.result_shape, b));
    int from = peer_rank(spec_, c.point.from_stage, rank_);
    f.receive = world_->recv(f.result.data(), static_cast<int64_t>(f.result.nbytes()), from, tag_base_ + c.index);
  }
}

void DistProgram::launch(size_t group) {
  const CommGroup& g = plan_.groups[group];
  const LocalComm& head = local_.comms[static_cast<size_t>(g.comms[0])];
  Communicator& comm = group_ ? *group_ : *world_;
  auto piece = std::make_unique<Piece>();
  piece->what = comm_kind_name(head.point.kind) + std::string(" of ") + head.name +
                (g.comms.size() > 1 ? " and " + std::to_string(g.comms.size() - 1) + " more" : "");
  switch (head.point.kind) {
    case CommKind::AllReduce: {
      int64_t total = 0;
      std::vector<Array> parts;
      for (int c : g.comms) {
        parts.push_back(source_value(local_.comms[static_cast<size_t>(c)]));
        total += parts.back().numel();
      }
      piece->buffer = Array(head.dtype, {total});
      auto* dst = static_cast<char*>(piece->buffer.data());
      for (const Array& a : parts) {
        std::memcpy(dst, a.data(), a.nbytes());
        dst += a.nbytes();
      }
      piece->request = comm.all_reduce(piece->buffer.data(), total, head.dtype, head.point.reduce);
      stats_.bytes_sent += static_cast<int64_t>(piece->buffer.nbytes());
      break;
    }
    case CommKind::AllGather: {
      piece->keep = source_value(head);
      piece->buffer = Array(head.dtype, {piece->keep.numel() * comm.size()});
      piece->request = comm.all_gather(piece->keep.data(), piece->buffer.data(), piece->keep.numel(), head.dtype);
      stats_.bytes_sent += static_cast<int64_t>(piece->keep.nbytes());
      break;
    }
    case CommKind::Transfer: {
      piece->keep = source_value(head);
      int to = peer_rank(spec_, head.point.to_stage, rank_);
      piece->request = world_->send(piece->keep.data(), static_cast<int64_t>(piece->keep.nbytes()), to, tag_base_ + head.index);
      stats_.bytes_sent += static_cast<int64_t>(piece->keep.nbytes());
      sends_.push_back(std::move(piece));
      return;
    }
  }
  group_flight_[group] = std::move(piece);
}

void DistProgram::complete_group(size_t group) {
  std::unique_ptr<Piece> piece = std::move(group_flight_[group]);
  if (!piece) return;
  auto start = std::chrono::steady_clock::now();
  world_->wait(*piece->request, piece->what);
  stats_.wait_seconds += seconds_since(start);
  const CommGroup& g = plan_.groups[group];
  const char* packed = static_cast<const char*>(piece->buffer.data());
  for (int c : g.comms) {
    const LocalComm& lc = local_.comms[static_cast<size_t>(c)];
    Flight& f = *flights_[static_cast<size_t>(c)];
    if (lc.point.kind == CommKind::AllGather) {
      f.result = assemble_chunks(piece->buffer, piece->keep.shape(), lc.point.axis, spec_.shards);
    } else if (g.comms.size() == 1) {
      f.result = Array::borrow(piece->buffer.data(), lc.dtype, concrete_shape(lc.source_shape, run_bindings_),
                               std::shared_ptr<void>(piece->buffer.data(), [keep = piece->buffer](void*) {}));
    } else {
      f.result = Array(lc.dtype, concrete_shape(lc.source_shape, run_bindings_));
      std::memcpy(f.result.data(), packed, f.result.nbytes());
      packed += f.result.nbytes();
    }
    f.ready = true;
  }
}

void DistProgram::settle(int comm) {
  Flight& f = *flights_[static_cast<size_t>(comm)];
  if (f.ready) return;
  const LocalComm& c = local_.comms[static_cast<size_t>(comm)];
  if (f.receive) {
    auto start = std::chrono::steady_clock::now();
    world_->wait(*f.receive, "a transfer of " + c.name + " from pipeline stage " + std::to_string(c.point.from_stage));
    stats_.wait_seconds += seconds_since(start);
    f.receive.reset();
    f.ready = true;
    return;
  }
  if (f.group < 0 || !group_flight_[static_cast<size_t>(f.group)]) {
    fail("dist: internal: the result of ", comm_kind_name(c.point.kind), " of ", c.name, " is read before it was started");
  }
  complete_group(static_cast<size_t>(f.group));
}

void DistProgram::reap_sends() {
  for (auto it = sends_.begin(); it != sends_.end();) {
    if ((*it)->request->wait_for(0)) {
      it = sends_.erase(it);
    } else {
      ++it;
    }
  }
  // A stage far ahead of the next one waits here rather than queueing without bound.
  while (sends_.size() > 64) {
    world_->wait(*sends_.front()->request, sends_.front()->what);
    sends_.erase(sends_.begin());
  }
}

}  // namespace lumen::dist
