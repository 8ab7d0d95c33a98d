// MpiCommunicator — the Communicator on MPI (OpenMPI from Debian's
// libopenmpi-dev), for ranks on CPU hosts.
//
// One engine thread per process owns every MPI call (MPI is initialised on it
// with MPI_THREAD_FUNNELED): it starts the non-blocking operations callers
// submit and polls them, so collectives progress while the caller's thread
// runs kernels — MPI implementations only progress inside MPI calls. Errors
// are returned (MPI_ERRORS_RETURN) and become lumen::Errors; a wait that
// times out marks the job failed, and the process then ends with MPI_Abort
// instead of MPI_Finalize so mpirun stops the other ranks too.
#pragma once

#include <memory>

#include "lumen/dist/communicator.h"

namespace lumen::dist {

// The world communicator (every rank mpirun started; one rank without mpirun).
Communicator& mpi_world();

// The references a benchmark compares lumen's all-reduce with: `repeats`
// MPI_Allreduce calls on the world in a plain loop (run on MPI's thread), in
// seconds per call; `nonblocking`: MPI_Iallreduce + MPI_Wait each (the MPI
// operation lumen's all-reduce starts). Collective.
double plain_mpi_allreduce_seconds(float* data, int64_t count, int repeats, bool nonblocking = false);

}  // namespace lumen::dist
