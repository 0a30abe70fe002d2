/* MPI smoke test for direct launch under tlaunch's PMIx server.
 * usage: mpi_hello EXPECTED_SIZE EXPECTED_RANKS_PER_NODE
 * Checks size, node-local communicator size (PMIx locality), Allreduce, a ring Send/Recv and a
 * Barrier; exits non-zero on any wrong result. With MPI_HELLO_TIMES set it also prints, on
 * stderr, how long each step took in this rank (for tests/bench/mpi_bench.py). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: mpi_hello EXPECTED_SIZE EXPECTED_RANKS_PER_NODE\n");
    return 64;
  }
  int want_size = atoi(argv[1]), want_local = atoi(argv[2]);
  double at[7];
  at[0] = now_ms();
  MPI_Init(&argc, &argv);
  at[1] = now_ms();
  int rank, size, errors = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != want_size) {
    fprintf(stderr, "rank %d: size %d, want %d\n", rank, size, want_size);
    errors++;
  }

  MPI_Comm local;
  int local_size = -1;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  MPI_Comm_size(local, &local_size);
  MPI_Comm_free(&local);
  at[2] = now_ms();
  if (local_size != want_local) {
    fprintf(stderr, "rank %d: %d ranks share my node, want %d\n", rank, local_size, want_local);
    errors++;
  }

  long sum = 0, mine = rank;
  MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  at[3] = now_ms();
  if (sum != (long)size * (size - 1) / 2) {
    fprintf(stderr, "rank %d: allreduce sum %ld, want %ld\n", rank, sum, (long)size * (size - 1) / 2);
    errors++;
  }

  int next = (rank + 1) % size, prev = (rank + size - 1) % size, got = -1;
  MPI_Sendrecv(&rank, 1, MPI_INT, next, 7, &got, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  at[4] = now_ms();
  if (got != prev) {
    fprintf(stderr, "rank %d: ring received %d, want %d\n", rank, got, prev);
    errors++;
  }

  MPI_Barrier(MPI_COMM_WORLD);
  at[5] = now_ms();
  char host[MPI_MAX_PROCESSOR_NAME];
  int len;
  MPI_Get_processor_name(host, &len);
  printf("mpi_hello rank %d/%d on %s: local=%d sum=%ld ring=%d %s\n", rank, size, host, local_size, sum, got,
         errors ? "FAILED" : "ok");
  fflush(stdout);
  MPI_Finalize();
  at[6] = now_ms();
  if (getenv("MPI_HELLO_TIMES"))
    fprintf(stderr, "mpi_hello times rank %d: init %.1f split %.1f allreduce %.1f ring %.1f barrier %.1f finalize %.1f ms\n",
            rank, at[1] - at[0], at[2] - at[1], at[3] - at[2], at[4] - at[3], at[5] - at[4], at[6] - at[5]);
  return errors ? 1 : 0;
}
