/* Rank 1 calls MPI_Abort(MPI_COMM_WORLD, status) (argv[1], default 7); the others wait in a
   barrier until killed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int status = argc > 1 ? atoi(argv[1]) : 7;
  if (rank == 1) {
    fprintf(stderr, "mpi_abort: rank 1 aborting with %d\n", status);
    MPI_Abort(MPI_COMM_WORLD, status);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  fprintf(stderr, "mpi_abort: rank %d passed a barrier that rank 1 never entered\n", rank);
  MPI_Finalize();
  return 1;
}
