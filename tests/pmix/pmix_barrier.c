/* Is PMIx_Fence without data a barrier of the whole job? Rank 0 enters each fence DELAY_MS late;
 * every other rank times how long its fence took, and one that returned before rank 0 could
 * have entered says so and exits 1 (PMIx: a fence over the wildcard rank completes only once
 * every process of the namespace has called it, with or without data).
 * usage: pmix_barrier DELAY_MS [FENCES]   (default 3 fences)
 * Prints per rank and fence: "pmix_barrier rank R host H fence K waited_ms W", and
 * "pmix_barrier rank R host H ok" at the end if every fence waited. */
#include <pmix.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pmix_proc_t me;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void die(const char* what, pmix_status_t rc) {
  fprintf(stderr, "pmix_barrier rank %u: %s: %s\n", me.rank, what, PMIx_Error_string(rc));
  exit(2);
}

static void empty_fence(void) {
  pmix_status_t rc = PMIx_Fence(NULL, 0, NULL, 0);
  if (rc != PMIX_SUCCESS) die("PMIx_Fence", rc);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: pmix_barrier DELAY_MS [FENCES]\n");
    return 64;
  }
  const int delay_ms = atoi(argv[1]);
  const int fences = argc > 2 ? atoi(argv[2]) : 3;
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  pmix_status_t rc = PMIx_Init(&me, NULL, 0);
  if (rc != PMIX_SUCCESS) die("PMIx_Init", rc);

  empty_fence(); /* everyone is up */
  int early = 0;
  for (int k = 0; k < fences; k++) {
    if (me.rank == 0) usleep((useconds_t)delay_ms * 1000);
    const double t0 = now_ms();
    empty_fence();
    const double waited = now_ms() - t0;
    printf("pmix_barrier rank %u host %s fence %d waited_ms %.1f\n", me.rank, host, k, waited);
    /* Half the delay: rank 0's own start-up jitter cannot make a real barrier look early. */
    if (me.rank != 0 && waited < delay_ms / 2.0) {
      fprintf(stderr,
              "pmix_barrier rank %u on %s: fence %d returned after %.1f ms although rank 0 entered it %d ms "
              "late: it is not a barrier of the whole job\n",
              me.rank, host, k, waited, delay_ms);
      early++;
    }
  }
  if (!early) printf("pmix_barrier rank %u host %s ok\n", me.rank, host);
  fflush(stdout);
  if ((rc = PMIx_Finalize(NULL, 0)) != PMIX_SUCCESS) die("PMIx_Finalize", rc);
  return early ? 1 : 0;
}
