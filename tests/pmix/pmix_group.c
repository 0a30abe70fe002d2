/* PMIx groups across nodes (Open MPI 5's MPI_Comm_create_from_group and sessions build on them;
 * Debian's Open MPI 4.1 does not, so a raw client tests them). Every rank:
 *   1. puts "tl.rank" and commits (no fence);
 *   2. constructs group "tl-all" of the whole job (wildcard) with a context id, then reads the
 *      next rank's "tl.rank" (the group's endpoint data, or direct modex, delivers it);
 *   3. ranks 0 and N-1 only construct "tl-pair" (a subset spanning the first and last node)
 *      with a context id, which must differ from the first;
 *   4. a group with a member of an unknown namespace fails at once (never hangs);
 *   5. destructs its groups and finalizes.
 * Prints "pmix_group rank R all CID pair CID|-" for the test to compare across ranks. */
#include <pmix.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static size_t contextIdOf(pmix_info_t* results, size_t n) {
  size_t id = SIZE_MAX;
  pmix_status_t rc = PMIX_ERR_NOT_FOUND;
  for (size_t i = 0; i < n; i++)
    if (PMIX_CHECK_KEY(&results[i], PMIX_GROUP_CONTEXT_ID)) PMIX_VALUE_GET_NUMBER(rc, &results[i].value, id, size_t);
  return rc == PMIX_SUCCESS ? id : SIZE_MAX;
}

static pmix_status_t construct(const char* name, pmix_proc_t* procs, size_t n, size_t* id) {
  pmix_info_t assign;
  bool yes = true;
  PMIX_INFO_LOAD(&assign, PMIX_GROUP_ASSIGN_CONTEXT_ID, &yes, PMIX_BOOL);
  pmix_info_t* results = NULL;
  size_t nresults = 0;
  pmix_status_t rc = PMIx_Group_construct(name, procs, n, &assign, 1, &results, &nresults);
  *id = contextIdOf(results, nresults);
  if (results) PMIX_INFO_FREE(results, nresults);
  PMIX_INFO_DESTRUCT(&assign);
  return rc;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(void) {
  alarm(60); /* a hang is a failure */
  pmix_proc_t me;
  if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) return 2;
  pmix_proc_t wildcard;
  PMIX_LOAD_PROCID(&wildcard, me.nspace, PMIX_RANK_WILDCARD);
  pmix_value_t* v = NULL;
  if (PMIx_Get(&wildcard, PMIX_JOB_SIZE, NULL, 0, &v) != PMIX_SUCCESS) return 3;
  const uint32_t size = v->data.uint32;
  PMIX_VALUE_RELEASE(v);

  pmix_value_t mine;
  PMIX_VALUE_LOAD(&mine, &me.rank, PMIX_UINT32);
  PMIx_Put(PMIX_GLOBAL, "tl.rank", &mine);
  PMIX_VALUE_DESTRUCT(&mine);
  PMIx_Commit();

  size_t all_id = SIZE_MAX;
  pmix_status_t rc = construct("tl-all", &wildcard, 1, &all_id);
  if (rc != PMIX_SUCCESS || all_id == SIZE_MAX) {
    fprintf(stderr, "rank %u: construct tl-all -> %s, context id %zu\n", me.rank, PMIx_Error_string(rc), all_id);
    return 4;
  }
  pmix_proc_t next;
  PMIX_LOAD_PROCID(&next, me.nspace, (me.rank + 1) % size);
  if (PMIx_Get(&next, "tl.rank", NULL, 0, &v) != PMIX_SUCCESS || v->data.uint32 != next.rank) {
    fprintf(stderr, "rank %u: no tl.rank of rank %u after the group\n", me.rank, next.rank);
    return 5;
  }
  PMIX_VALUE_RELEASE(v);

  size_t pair_id = SIZE_MAX;
  const int in_pair = me.rank == 0 || me.rank == size - 1;
  if (in_pair) {
    pmix_proc_t pair[2];
    PMIX_LOAD_PROCID(&pair[0], me.nspace, 0);
    PMIX_LOAD_PROCID(&pair[1], me.nspace, size - 1);
    rc = construct("tl-pair", pair, 2, &pair_id);
    if (rc != PMIX_SUCCESS || pair_id == SIZE_MAX || pair_id == all_id) {
      fprintf(stderr, "rank %u: construct tl-pair -> %s, context id %zu (tl-all: %zu)\n", me.rank,
              PMIx_Error_string(rc), pair_id, all_id);
      return 6;
    }
  }

  pmix_proc_t stranger[2];
  PMIX_LOAD_PROCID(&stranger[0], "no.such.namespace", 0);
  PMIX_LOAD_PROCID(&stranger[1], me.nspace, me.rank);
  size_t ignored;
  const double t0 = now();
  char name[32];
  snprintf(name, sizeof name, "tl-bad-%u", me.rank);
  rc = construct(name, stranger, 2, &ignored);
  if (rc == PMIX_SUCCESS || now() - t0 > 5) {
    fprintf(stderr, "rank %u: a group with an unknown namespace -> %s after %.1f s\n", me.rank,
            PMIx_Error_string(rc), now() - t0);
    return 7;
  }

  if (in_pair && (rc = PMIx_Group_destruct("tl-pair", NULL, 0)) != PMIX_SUCCESS) {
    fprintf(stderr, "rank %u: destruct tl-pair -> %s\n", me.rank, PMIx_Error_string(rc));
    return 8;
  }
  if ((rc = PMIx_Group_destruct("tl-all", NULL, 0)) != PMIX_SUCCESS) {
    fprintf(stderr, "rank %u: destruct tl-all -> %s\n", me.rank, PMIx_Error_string(rc));
    return 9;
  }
  if (in_pair) printf("pmix_group rank %u all %zu pair %zu\n", me.rank, all_id, pair_id);
  else printf("pmix_group rank %u all %zu pair -\n", me.rank, all_id);
  fflush(stdout);
  return PMIx_Finalize(NULL, 0) == PMIX_SUCCESS ? 0 : 10;
}
