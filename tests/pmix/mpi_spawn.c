/* MPI_Comm_spawn with Open MPI under tlaunch: every rank of the job calls MPI_Comm_spawn
 * (root 0) for N copies of this program, optionally on the hosts given ("host" info). The
 * parent broadcasts a token over the intercommunicator, the children sum their ranks among
 * themselves, both sides merge the intercommunicator and count its members, then disconnect.
 *   mpi_spawn N [HOSTS] [exit CODE]
 * With "exit CODE", child 0 exits with CODE after the disconnect (a failed spawned process).
 * Prints "mpi_spawn parent R ok merged M" and "mpi_spawn child R of N token T sum S merged M host H". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int child(MPI_Comm parent, int argc, char** argv) {
  int rank, size, token = 0, sum = 0, merged_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Bcast(&token, 1, MPI_INT, 0, parent);
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Comm merged;
  MPI_Intercomm_merge(parent, 1, &merged);
  int one = 1;
  MPI_Allreduce(&one, &merged_size, 1, MPI_INT, MPI_SUM, merged);
  MPI_Comm_free(&merged);
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  printf("mpi_spawn child %d of %d token %d sum %d merged %d host %s\n", rank, size, token, sum, merged_size, host);
  fflush(stdout);
  MPI_Comm_disconnect(&parent);
  MPI_Finalize();
  if (argc > 2 && strcmp(argv[1], "child-exit") == 0 && rank == 0) return atoi(argv[2]);
  return 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm parent;
  MPI_Comm_get_parent(&parent);
  if (parent != MPI_COMM_NULL) return child(parent, argc, argv);

  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = argc > 1 ? atoi(argv[1]) : 2;
  MPI_Info info = MPI_INFO_NULL;
  if (argc > 2 && strcmp(argv[2], "-") != 0) {
    MPI_Info_create(&info);
    MPI_Info_set(info, "host", argv[2]);
  }
  char* child_argv[3] = {"child", NULL, NULL};
  if (argc > 4 && strcmp(argv[3], "exit") == 0) {
    child_argv[0] = "child-exit";
    child_argv[1] = argv[4];
  }
  MPI_Comm inter;
  int* codes = calloc((size_t)n, sizeof(int));
  MPI_Comm_spawn(argv[0], child_argv, n, info, 0, MPI_COMM_WORLD, &inter, codes);
  int token = 4242;
  MPI_Bcast(&token, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
  MPI_Comm merged;
  MPI_Intercomm_merge(inter, 0, &merged);
  int one = 1, merged_size = 0;
  MPI_Allreduce(&one, &merged_size, 1, MPI_INT, MPI_SUM, merged);
  MPI_Comm_free(&merged);
  printf("mpi_spawn parent %d ok merged %d\n", rank, merged_size);
  fflush(stdout);
  MPI_Comm_disconnect(&inter);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  free(codes);
  MPI_Finalize();
  return 0;
}
