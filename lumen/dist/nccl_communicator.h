// NcclCommunicator — the Communicator on NCCL, for ranks that each drive one
// GPU. It is compiled against the CUDA toolkit's nccl.h and
// cuda_runtime_api.h (the function types are checked against them) and
// loads libnccl.so.2 and libcudart at run time, so lumen builds and runs
// where neither exists; on a machine without a GPU, creating one is an Error
// saying so. Host buffers are staged through device memory on one stream per
// communicator; a request is an event on that stream. NCCL's unique id is
// exchanged over a bootstrap communicator (MPI).
//
// Built only when CMake finds the headers (LUMEN_HAVE_NCCL); tests compile it
// in `make test` and run it only where a GPU exists.
#pragma once

#include <memory>
#include <string>

#include "lumen/dist/communicator.h"

namespace lumen::dist {

// True if libnccl and libcudart load and a CUDA device exists; else why not in `why`.
bool nccl_available(std::string* why = nullptr);

// A communicator over the same ranks as `bootstrap`, rank r on CUDA device
// `device` (default: r modulo the visible devices). Collective over bootstrap.
std::unique_ptr<Communicator> nccl_communicator(Communicator& bootstrap, int device = -1);

}  // namespace lumen::dist
