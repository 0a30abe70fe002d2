/* A fence given PMIX_TIMEOUT that completes after the timeout (libpmix 4.2.2 times such a fence
 * out by itself; an answer from the daemon after that corrupted libpmix and killed the daemon at
 * the next fence): rank 0 enters a fence of the whole job with a 1 s timeout, the last rank
 * enters it 2.5 s late. Rank 0 must get PMIX_ERR_TIMEOUT in about a second, the last rank the
 * fence's completion; then every rank passes a second fence (without timeout) and finalizes.
 * Prints "pmix_fence_timeout rank R first S second S" per rank; exits 1 on a wrong answer. */
#include <pmix.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

int main(void) {
  pmix_proc_t me;
  pmix_status_t rc = PMIx_Init(&me, NULL, 0);
  if (rc != PMIX_SUCCESS) {
    fprintf(stderr, "pmix_fence_timeout: PMIx_Init: %s\n", PMIx_Error_string(rc));
    return 2;
  }
  pmix_value_t* size = NULL;
  pmix_proc_t wild;
  PMIX_LOAD_PROCID(&wild, me.nspace, PMIX_RANK_WILDCARD);
  if (PMIx_Get(&wild, PMIX_JOB_SIZE, NULL, 0, &size) != PMIX_SUCCESS || size == NULL) return 2;
  const pmix_rank_t last = size->data.uint32 - 1;
  if (me.rank == last) usleep(2500 * 1000);
  pmix_info_t timeout;
  int one = 1;
  PMIX_INFO_LOAD(&timeout, PMIX_TIMEOUT, &one, PMIX_INT);
  const double t0 = now_s();
  pmix_status_t first = PMIx_Fence(NULL, 0, me.rank == 0 || me.rank == last ? &timeout : NULL,
                                   me.rank == 0 || me.rank == last ? 1 : 0);
  const double took = now_s() - t0;
  PMIX_INFO_DESTRUCT(&timeout);
  pmix_status_t second = PMIx_Fence(NULL, 0, NULL, 0);
  printf("pmix_fence_timeout rank %u first %s second %s\n", me.rank, PMIx_Error_string(first),
         PMIx_Error_string(second));
  fflush(stdout);
  int bad = 0;
  if (me.rank == 0 && (first != PMIX_ERR_TIMEOUT || took > 2.0)) bad = 1;
  if (me.rank == last && first != PMIX_SUCCESS) bad = 1;
  PMIx_Finalize(NULL, 0);
  return bad;
}
