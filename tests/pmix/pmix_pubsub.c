/* PMIx publish / lookup / unpublish, connect / disconnect and a subset fence across nodes.
 * Run as 2 nodes x 2 ranks (ranks 0,1 on one node, 2,3 on the other):
 *   1. rank 3 looks up "tl.key" and waits; rank 0 publishes it a second later, with
 *      "tl.first" (first-read persistence) and "tl.local" (node-local range).
 *   2. rank 2 reads "tl.first"; rank 1 sees "tl.local", rank 2 does not; rank 1 cannot publish
 *      "tl.key" again (duplicate); rank 3 waits for a key nobody publishes and times out in 1 s.
 *   3. "tl.first" is gone for rank 1; rank 0 unpublishes "tl.key".
 *   4. rank 3 no longer finds "tl.key"; ranks 0 and 3 connect and disconnect; ranks 1 and 2 fence.
 *   5. rank 1 connects to rank 2, which never does: PMIX_TIMEOUT of 1 s ends it.
 * Phases are separated by job-wide fences. Every call runs under a 30 s watchdog.
 * Prints "pmix_pubsub rank N ok" at the end; exits 1 on any wrong answer. */
#include <pmix.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pmix_proc_t me;
static int errors = 0;
static const char* current = "PMIx_Init";

#define CHECK(cond, ...)                                 \
  do {                                                   \
    if (!(cond)) {                                       \
      fprintf(stderr, "pmix_pubsub rank %u: ", me.rank); \
      fprintf(stderr, __VA_ARGS__);                      \
      fprintf(stderr, "\n");                             \
      errors++;                                          \
    }                                                    \
  } while (0)

static void onAlarm(int sig) {
  (void)sig;
  char line[128];
  int n = snprintf(line, sizeof line, "pmix_pubsub rank %u: HANG in %s\n", me.rank, current);
  if (write(2, line, (size_t)n) < 0) _exit(4);
  _exit(3);
}

static void step(const char* what) {
  current = what;
  alarm(30);
}

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void fenceAll(const char* what) {
  step(what);
  pmix_status_t rc = PMIx_Fence(NULL, 0, NULL, 0);
  CHECK(rc == PMIX_SUCCESS, "%s: %s", what, PMIx_Error_string(rc));
}

static pmix_status_t publish(const char* key, const char* value, int range, int persist) {
  pmix_info_t info[3];
  pmix_data_range_t r = (pmix_data_range_t)range;
  pmix_persistence_t p = (pmix_persistence_t)persist;
  PMIX_INFO_LOAD(&info[0], key, value, PMIX_STRING);
  PMIX_INFO_LOAD(&info[1], PMIX_RANGE, &r, PMIX_DATA_RANGE);
  PMIX_INFO_LOAD(&info[2], PMIX_PERSISTENCE, &p, PMIX_PERSIST);
  step("PMIx_Publish");
  pmix_status_t rc = PMIx_Publish(info, 3);
  for (int i = 0; i < 3; i++) PMIX_INFO_DESTRUCT(&info[i]);
  return rc;
}

/* Looks up one key; wait_s < 0: no wait. On success copies the string value into `out`. */
static pmix_status_t lookup(const char* key, int wait_s, char* out, size_t n, pmix_rank_t* publisher) {
  pmix_pdata_t pdata;
  PMIX_PDATA_CONSTRUCT(&pdata);
  PMIX_LOAD_KEY(pdata.key, key);
  pmix_info_t info[2];
  size_t ninfo = 0;
  if (wait_s >= 0) {
    int all = 0;
    PMIX_INFO_LOAD(&info[ninfo++], PMIX_WAIT, &all, PMIX_INT);
    if (wait_s > 0) PMIX_INFO_LOAD(&info[ninfo++], PMIX_TIMEOUT, &wait_s, PMIX_INT);
  }
  step("PMIx_Lookup");
  pmix_status_t rc = PMIx_Lookup(&pdata, 1, ninfo ? info : NULL, ninfo);
  if (rc == PMIX_SUCCESS) {
    if (pdata.value.type == PMIX_STRING && out) snprintf(out, n, "%s", pdata.value.data.string);
    if (publisher) *publisher = pdata.proc.rank;
  }
  PMIX_PDATA_DESTRUCT(&pdata);
  for (size_t i = 0; i < ninfo; i++) PMIX_INFO_DESTRUCT(&info[i]);
  return rc;
}

int main(void) {
  signal(SIGALRM, onAlarm);
  alarm(30);
  pmix_status_t rc = PMIx_Init(&me, NULL, 0);
  if (rc != PMIX_SUCCESS) {
    fprintf(stderr, "pmix_pubsub: PMIx_Init: %s\n", PMIx_Error_string(rc));
    return 2;
  }
  char value[256] = "";
  pmix_rank_t publisher = PMIX_RANK_UNDEF;

  /* 1. wait-for-key across nodes */
  if (me.rank == 0) {
    sleep(1);
    rc = publish("tl.key", "hello from rank 0", PMIX_RANGE_SESSION, PMIX_PERSIST_SESSION);
    CHECK(rc == PMIX_SUCCESS, "publish tl.key: %s", PMIx_Error_string(rc));
    rc = publish("tl.first", "read me once", PMIX_RANGE_NAMESPACE, PMIX_PERSIST_FIRST_READ);
    CHECK(rc == PMIX_SUCCESS, "publish tl.first: %s", PMIx_Error_string(rc));
    rc = publish("tl.local", "node local", PMIX_RANGE_LOCAL, PMIX_PERSIST_SESSION);
    CHECK(rc == PMIX_SUCCESS, "publish tl.local: %s", PMIx_Error_string(rc));
  } else if (me.rank == 3) {
    rc = lookup("tl.key", 20, value, sizeof value, &publisher);
    CHECK(rc == PMIX_SUCCESS, "lookup tl.key with wait: %s", PMIx_Error_string(rc));
    CHECK(strcmp(value, "hello from rank 0") == 0 && publisher == 0, "tl.key = '%s' from %u", value, publisher);
  }
  fenceAll("fence 1");

  /* 2. first read, node-local range, duplicate, lookup timeout */
  if (me.rank == 2) {
    rc = lookup("tl.first", -1, value, sizeof value, NULL);
    CHECK(rc == PMIX_SUCCESS && strcmp(value, "read me once") == 0, "lookup tl.first: %s '%s'",
          PMIx_Error_string(rc), value);
    rc = lookup("tl.local", -1, value, sizeof value, NULL);
    CHECK(rc == PMIX_ERR_NOT_FOUND, "tl.local from the other node: %s, want NOT-FOUND", PMIx_Error_string(rc));
  } else if (me.rank == 1) {
    rc = lookup("tl.local", -1, value, sizeof value, NULL);
    CHECK(rc == PMIX_SUCCESS && strcmp(value, "node local") == 0, "tl.local on its node: %s", PMIx_Error_string(rc));
    rc = publish("tl.key", "again", PMIX_RANGE_SESSION, PMIX_PERSIST_SESSION);
    CHECK(rc != PMIX_SUCCESS, "publishing tl.key twice succeeded");
  } else if (me.rank == 3) {
    double t0 = seconds();
    rc = lookup("tl.never", 1, value, sizeof value, NULL);
    double took = seconds() - t0;
    CHECK(rc == PMIX_ERR_TIMEOUT, "lookup tl.never: %s, want TIMEOUT", PMIx_Error_string(rc));
    CHECK(took > 0.5 && took < 5, "lookup timeout of 1 s took %.1f s", took);
  }
  fenceAll("fence 2");

  /* 3. first-read entries are gone; unpublish */
  if (me.rank == 1) {
    rc = lookup("tl.first", -1, value, sizeof value, NULL);
    CHECK(rc == PMIX_ERR_NOT_FOUND, "tl.first read twice: %s", PMIx_Error_string(rc));
  } else if (me.rank == 0) {
    char* keys[] = {"tl.key", NULL};
    step("PMIx_Unpublish");
    rc = PMIx_Unpublish(keys, NULL, 0);
    CHECK(rc == PMIX_SUCCESS, "unpublish tl.key: %s", PMIx_Error_string(rc));
  }
  fenceAll("fence 3");

  /* 4. unpublished; connect / disconnect across nodes; a fence of two ranks */
  if (me.rank == 3) {
    rc = lookup("tl.key", -1, value, sizeof value, NULL);
    CHECK(rc == PMIX_ERR_NOT_FOUND, "tl.key after unpublish: %s", PMIx_Error_string(rc));
  }
  if (me.rank == 0 || me.rank == 3) {
    pmix_proc_t pair[2];
    PMIX_LOAD_PROCID(&pair[0], me.nspace, 0);
    PMIX_LOAD_PROCID(&pair[1], me.nspace, 3);
    step("PMIx_Connect");
    rc = PMIx_Connect(pair, 2, NULL, 0);
    CHECK(rc == PMIX_SUCCESS, "connect 0,3: %s", PMIx_Error_string(rc));
    step("PMIx_Disconnect");
    rc = PMIx_Disconnect(pair, 2, NULL, 0);
    CHECK(rc == PMIX_SUCCESS, "disconnect 0,3: %s", PMIx_Error_string(rc));
  } else {
    pmix_proc_t pair[2];
    PMIX_LOAD_PROCID(&pair[0], me.nspace, 1);
    PMIX_LOAD_PROCID(&pair[1], me.nspace, 2);
    step("PMIx_Fence(1,2)");
    rc = PMIx_Fence(pair, 2, NULL, 0);
    CHECK(rc == PMIX_SUCCESS, "fence 1,2: %s", PMIx_Error_string(rc));
  }
  fenceAll("fence 4");

  /* 5. a connect its peer never joins ends with its timeout */
  if (me.rank == 1) {
    pmix_proc_t pair[2];
    PMIX_LOAD_PROCID(&pair[0], me.nspace, 1);
    PMIX_LOAD_PROCID(&pair[1], me.nspace, 2);
    pmix_info_t timeout;
    int one = 1;
    PMIX_INFO_LOAD(&timeout, PMIX_TIMEOUT, &one, PMIX_INT);
    step("PMIx_Connect with timeout");
    double t0 = seconds();
    rc = PMIx_Connect(pair, 2, &timeout, 1);
    double took = seconds() - t0;
    CHECK(rc == PMIX_ERR_TIMEOUT, "connect to a rank that never joins: %s, want TIMEOUT", PMIx_Error_string(rc));
    CHECK(took > 0.5 && took < 5, "connect timeout of 1 s took %.1f s", took);
    PMIX_INFO_DESTRUCT(&timeout);
  }
  fenceAll("fence 5");

  step("PMIx_Finalize");
  rc = PMIx_Finalize(NULL, 0);
  CHECK(rc == PMIX_SUCCESS, "finalize: %s", PMIx_Error_string(rc));
  alarm(0);
  if (!errors) printf("pmix_pubsub rank %u ok\n", me.rank);
  return errors ? 1 : 0;
}
