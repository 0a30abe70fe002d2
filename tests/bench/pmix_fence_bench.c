/* Time per PMIx_Fence, as Open MPI's barriers and modex use it, under a real PMIx server.
 * usage: pmix_fence_bench [ITERATIONS [BYTES...]]   (defaults: 200 iterations; 0, 64, 4096 bytes)
 * BYTES=0: PMIx_Fence without data (a barrier). BYTES>0: every rank PMIx_Put's a value of that
 * size, PMIx_Commit, then PMIx_Fence with PMIX_COLLECT_DATA (a modex). The key is the same in
 * every iteration: a collect fence carries everything a rank ever committed, so fresh keys would
 * make each fence bigger than the last.
 * Rank 0 prints one line per case with the mean over iterations (the slowest rank's mean). */
#include <pmix.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pmix_proc_t me;

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void die(const char* what, pmix_status_t rc) {
  fprintf(stderr, "pmix_fence_bench rank %u: %s: %s\n", me.rank, what, PMIx_Error_string(rc));
  exit(1);
}

static void fence(bool collect) {
  pmix_info_t info;
  PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
  pmix_status_t rc = PMIx_Fence(NULL, 0, &info, 1);
  PMIX_INFO_DESTRUCT(&info);
  if (rc != PMIX_SUCCESS) die("PMIx_Fence", rc);
}

static void put_bytes(const char* key, size_t n, int seed) {
  pmix_value_t v;
  char* buf = malloc(n);
  memset(buf, 'a' + seed % 26, n);
  pmix_byte_object_t bo = {buf, n};
  PMIX_VALUE_LOAD(&v, &bo, PMIX_BYTE_OBJECT);
  free(buf);
  pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &v);
  PMIX_VALUE_DESTRUCT(&v);
  if (rc != PMIX_SUCCESS) die("PMIx_Put", rc);
  if ((rc = PMIx_Commit()) != PMIX_SUCCESS) die("PMIx_Commit", rc);
}

/* Mean microseconds per fence on this rank. */
static double run_case(int iters, size_t bytes, int case_no) {
  char key[64];
  fence(false); /* start together */
  double t0 = now_us();
  for (int i = 0; i < iters; i++) {
    if (bytes) {
      snprintf(key, sizeof key, "bench.%d", case_no);
      put_bytes(key, bytes, i);
    }
    fence(bytes > 0);
  }
  return (now_us() - t0) / iters;
}

int main(int argc, char** argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 200;
  size_t default_sizes[] = {0, 64, 4096};
  size_t nsizes = argc > 2 ? (size_t)(argc - 2) : 3;
  pmix_status_t rc = PMIx_Init(&me, NULL, 0);
  if (rc != PMIX_SUCCESS) die("PMIx_Init", rc);
  pmix_proc_t wildcard;
  PMIX_LOAD_PROCID(&wildcard, me.nspace, PMIX_RANK_WILDCARD);
  pmix_value_t* v = NULL;
  if ((rc = PMIx_Get(&wildcard, PMIX_JOB_SIZE, NULL, 0, &v)) != PMIX_SUCCESS) die("PMIx_Get(job size)", rc);
  uint32_t size = v->data.uint32;
  PMIX_VALUE_RELEASE(v);

  for (size_t c = 0; c < nsizes; c++) {
    size_t bytes = argc > 2 ? (size_t)atol(argv[2 + c]) : default_sizes[c];
    double mean = run_case(iters, bytes, (int)c);
    /* Gather every rank's mean through PMIx itself. */
    char key[64];
    snprintf(key, sizeof key, "bench.result.%zu", c);
    pmix_value_t r;
    PMIX_VALUE_LOAD(&r, &mean, PMIX_DOUBLE);
    if ((rc = PMIx_Put(PMIX_GLOBAL, key, &r)) != PMIX_SUCCESS) die("PMIx_Put(result)", rc);
    if ((rc = PMIx_Commit()) != PMIX_SUCCESS) die("PMIx_Commit", rc);
    fence(true);
    if (me.rank == 0) {
      double worst = 0, sum = 0;
      for (uint32_t i = 0; i < size; i++) {
        pmix_proc_t p;
        PMIX_LOAD_PROCID(&p, me.nspace, i);
        if ((rc = PMIx_Get(&p, key, NULL, 0, &v)) != PMIX_SUCCESS) die("PMIx_Get(result)", rc);
        sum += v->data.dval;
        if (v->data.dval > worst) worst = v->data.dval;
        PMIX_VALUE_RELEASE(v);
      }
      printf("pmix_fence_bench ranks=%u bytes_per_rank=%zu %s iterations=%d us_per_fence mean=%.1f slowest_rank=%.1f\n",
             size, bytes, bytes ? "collect" : "barrier", iters, sum / size, worst);
      fflush(stdout);
    }
  }
  if ((rc = PMIx_Finalize(NULL, 0)) != PMIX_SUCCESS) die("PMIx_Finalize", rc);
  return 0;
}
