/* Rank 1 calls MPI_Abort(MPI_COMM_WORLD, 7); the others wait in a barrier until killed. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 1) {
    fprintf(stderr, "mpi_abort: rank 1 aborting with 7\n");
    MPI_Abort(MPI_COMM_WORLD, 7);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  fprintf(stderr, "mpi_abort: rank %d passed a barrier that rank 1 never entered\n", rank);
  MPI_Finalize();
  return 1;
}
