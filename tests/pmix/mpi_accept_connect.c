/* MPI_Publish_name / MPI_Lookup_name and MPI_Comm_accept / MPI_Comm_connect between rank 0 and
 * the last rank (on another node when run as 2 nodes x 2 ranks): rank 0 opens a port and
 * publishes it, the last rank looks it up and connects, rank 0 sends 42 over the
 * intercommunicator, both disconnect, rank 0 unpublishes; then the last rank's lookup fails.
 * Prints "mpi_accept_connect rank N ok". */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define SERVICE "tlaunch-test-service"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size, errors = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  const int client = size - 1;
  char port[MPI_MAX_PORT_NAME] = "";

  if (rank == 0) {
    MPI_Open_port(MPI_INFO_NULL, port);
    int rc = MPI_Publish_name(SERVICE, MPI_INFO_NULL, port);
    if (rc != MPI_SUCCESS) {
      fprintf(stderr, "mpi_accept_connect rank 0: MPI_Publish_name failed (%d)\n", rc);
      errors++;
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);  // published before anyone looks

  if (rank == 0 && !errors) {
    MPI_Comm inter;
    int rc = MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter);
    if (rc != MPI_SUCCESS) {
      fprintf(stderr, "mpi_accept_connect rank 0: MPI_Comm_accept failed (%d)\n", rc);
      errors++;
    } else {
      int value = 42;
      MPI_Send(&value, 1, MPI_INT, 0, 7, inter);
      MPI_Comm_disconnect(&inter);
    }
  } else if (rank == client) {
    char found[MPI_MAX_PORT_NAME] = "";
    int rc = MPI_Lookup_name(SERVICE, MPI_INFO_NULL, found);
    if (rc != MPI_SUCCESS) {
      fprintf(stderr, "mpi_accept_connect rank %d: MPI_Lookup_name failed (%d)\n", rank, rc);
      errors++;
    } else {
      MPI_Comm inter;
      rc = MPI_Comm_connect(found, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter);
      if (rc != MPI_SUCCESS) {
        fprintf(stderr, "mpi_accept_connect rank %d: MPI_Comm_connect failed (%d)\n", rank, rc);
        errors++;
      } else {
        int value = 0;
        MPI_Recv(&value, 1, MPI_INT, 0, 7, inter, MPI_STATUS_IGNORE);
        if (value != 42) {
          fprintf(stderr, "mpi_accept_connect rank %d: received %d, want 42\n", rank, value);
          errors++;
        }
        MPI_Comm_disconnect(&inter);
      }
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);

  if (rank == 0) {
    if (MPI_Unpublish_name(SERVICE, MPI_INFO_NULL, port) != MPI_SUCCESS) {
      fprintf(stderr, "mpi_accept_connect rank 0: MPI_Unpublish_name failed\n");
      errors++;
    }
    MPI_Close_port(port);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == client) {
    char found[MPI_MAX_PORT_NAME] = "";
    if (MPI_Lookup_name(SERVICE, MPI_INFO_NULL, found) == MPI_SUCCESS) {
      fprintf(stderr, "mpi_accept_connect rank %d: the name is still there after unpublish\n", rank);
      errors++;
    }
  }
  int all = 0;
  MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (!errors) printf("mpi_accept_connect rank %d ok\n", rank);
  MPI_Finalize();
  return all ? 1 : 0;
}
