/* What Open MPI took from the rank's environment, as the rank sees it: the effective
 * mpi_yield_when_idle and pml parameters (MPI_T control variables), and whether the PMIx server
 * marked the node oversubscribed (PMIX_NODE_OVERSUBSCRIBED, which Open MPI 5 reads).
 * Prints one line per rank: "mpi_settings rank R yield=Y pml=P oversubscribed=O" (pml "" when
 * unset). usage: mpi_settings */
#include <mpi.h>
#include <pmix.h>
#include <stdio.h>
#include <string.h>

/* The value of Open MPI's control variable `want` as text; "?" when it has none by that name. */
static void cvar(const char* want, char* out, size_t size) {
  snprintf(out, size, "?");
  int n = 0;
  if (MPI_T_cvar_get_num(&n) != MPI_SUCCESS) return;
  for (int i = 0; i < n; ++i) {
    char name[256];
    int len = sizeof name, verbosity, bind, scope;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    if (MPI_T_cvar_get_info(i, name, &len, &verbosity, &type, &enumtype, NULL, NULL, &bind, &scope) != MPI_SUCCESS ||
        strcmp(name, want) != 0)
      continue;
    MPI_T_cvar_handle handle;
    int count = 0;
    if (MPI_T_cvar_handle_alloc(i, NULL, &handle, &count) != MPI_SUCCESS) return;
    if (type == MPI_CHAR) {
      char text[4096] = "";
      if (count < (int)sizeof text) MPI_T_cvar_read(handle, text);
      snprintf(out, size, "%s", text);
    } else {
      int value = 0; /* an int, or a one-byte bool read into its low byte (x86, little-endian) */
      MPI_T_cvar_read(handle, &value);
      snprintf(out, size, "%d", value);
    }
    MPI_T_cvar_handle_free(&handle);
    return;
  }
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init(&argc, &argv);
  MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char yield[64], pml[256];
  cvar("mpi_yield_when_idle", yield, sizeof yield);
  cvar("pml", pml, sizeof pml);

  pmix_proc_t me, node;
  int oversubscribed = -1; /* -1: PMIx not reachable */
  if (PMIx_Init(&me, NULL, 0) == PMIX_SUCCESS) {
    PMIX_LOAD_PROCID(&node, me.nspace, PMIX_RANK_WILDCARD);
    pmix_info_t optional;
    PMIX_INFO_LOAD(&optional, PMIX_OPTIONAL, NULL, PMIX_BOOL);
    pmix_value_t* v = NULL;
    oversubscribed = PMIx_Get(&node, PMIX_NODE_OVERSUBSCRIBED, &optional, 1, &v) == PMIX_SUCCESS;
    if (v) PMIX_VALUE_RELEASE(v);
    PMIX_INFO_DESTRUCT(&optional);
    PMIx_Finalize(NULL, 0);
  }
  printf("mpi_settings rank %d yield=%s pml=%s oversubscribed=%d\n", rank, yield, pml, oversubscribed);
  fflush(stdout);
  MPI_T_finalize();
  MPI_Finalize();
  return 0;
}
