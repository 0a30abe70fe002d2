/* A spawned process fails while the job's ranks are inside a fence of the whole job: with
 * --keep-going that fence, and the next, still complete (the spawned process is not one of the
 * job's ranks). usage: pmix_spawn_fence
 * Rank 0 spawns one `sh -c 'sleep 1; exit 1'`; rank 1 enters the fence 3 s late, so the fence
 * is open when the child fails. Every rank prints "fence 1 ok" / "fence 2 ok" or the error. */
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void) {
  pmix_proc_t me;
  pmix_status_t rc = PMIx_Init(&me, NULL, 0);
  if (rc != PMIX_SUCCESS) {
    fprintf(stderr, "pmix_spawn_fence: PMIx_Init: %s\n", PMIx_Error_string(rc));
    return 1;
  }
  if (me.rank == 0) {
    pmix_app_t app;
    PMIX_APP_CONSTRUCT(&app);
    app.cmd = strdup("/bin/sh");
    char* argv[] = {"/bin/sh", "-c", "sleep 1; exit 1", NULL};
    PMIX_ARGV_COPY(app.argv, argv);
    app.maxprocs = 1;
    pmix_nspace_t child;
    rc = PMIx_Spawn(NULL, 0, &app, 1, child);
    PMIX_APP_DESTRUCT(&app);
    printf("pmix_spawn_fence rank 0 spawn: %s\n", PMIx_Error_string(rc));
    fflush(stdout);
  }
  if (me.rank == 1) sleep(3);
  for (int i = 1; i <= 2; ++i) {
    rc = PMIx_Fence(NULL, 0, NULL, 0);
    printf("pmix_spawn_fence rank %u fence %d %s\n", me.rank, i, rc == PMIX_SUCCESS ? "ok" : PMIx_Error_string(rc));
    fflush(stdout);
  }
  PMIx_Finalize(NULL, 0);
  return 0;
}
