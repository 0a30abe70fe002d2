/* Many PMIx_Spawn requests at once from every rank (ranks that each start a helper, or
 * PMIx_Spawn_nb in a loop): each asks for one /bin/true; every request must be answered.
 *   pmix_spawn_many K
 * Prints "spawn_many rank R ok O failed F" once all K answers are in; exits 3 when they are
 * not within 60 s. */
#include <pmix.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_int answered;
static atomic_int succeeded;

static void onSpawned(pmix_status_t status, pmix_nspace_t nspace, void* cbdata) {
  (void)nspace;
  (void)cbdata;
  if (status == PMIX_SUCCESS) atomic_fetch_add(&succeeded, 1);
  atomic_fetch_add(&answered, 1);
}

int main(int argc, char** argv) {
  const int k = argc > 1 ? atoi(argv[1]) : 12;
  pmix_proc_t me;
  if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) return 2;
  pmix_app_t app;
  PMIX_APP_CONSTRUCT(&app);
  app.cmd = strdup("/bin/true");
  app.argv = calloc(2, sizeof(char*));
  app.argv[0] = strdup("/bin/true");
  app.maxprocs = 1;
  for (int i = 0; i < k; i++)
    if (PMIx_Spawn_nb(NULL, 0, &app, 1, onSpawned, NULL) != PMIX_SUCCESS) atomic_fetch_add(&answered, 1);
  for (int waited_ms = 0; atomic_load(&answered) < k; waited_ms += 10) {
    if (waited_ms > 60000) {
      fprintf(stderr, "spawn_many rank %u: %d of %d answers\n", me.rank, atomic_load(&answered), k);
      return 3;
    }
    usleep(10000);
  }
  PMIX_APP_DESTRUCT(&app);
  printf("spawn_many rank %u ok %d failed %d\n", me.rank, atomic_load(&succeeded), k - atomic_load(&succeeded));
  fflush(stdout);
  PMIx_Finalize(NULL, 0);
  return 0;
}
