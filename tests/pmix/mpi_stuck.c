/* `tlaunch stacks` test: rank STUCK_RANK sleeps SECONDS in a uniquely named function while the
 * others wait for it in MPI_Barrier; then all finish.
 * usage: mpi_stuck STUCK_RANK SECONDS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) static void tlaunch_test_rank_sleeps_here(int seconds) {
  for (int i = 0; i < seconds; ++i) sleep(1);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: mpi_stuck STUCK_RANK SECONDS\n");
    return 64;
  }
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  printf("rank %d ready\n", rank);
  fflush(stdout);
  if (rank == atoi(argv[1])) tlaunch_test_rank_sleeps_here(atoi(argv[2]));
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
