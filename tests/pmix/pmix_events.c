/* Events about a failed rank, as 2 nodes x 2 ranks (or any layout): every rank registers one
 * handler for PMIX_ERR_PROC_ABORTED and PMIX_PROC_TERMINATED, then rank 1 fails as argv[1]
 * says: "abort" (abort(), SIGABRT), "exit" (exit(3)) or "pmix-abort" (PMIx_Abort(5)). The
 * others print the event they got:
 *   rank R event PROC-ABORTED|PROC-TERMINATED for rank F exit code C
 * With argv[2] == "fences" (run under --keep-going) they then enter a fence of the whole job
 * and a fence over ranks 0..3 listed one by one, each bounded by PMIX_TIMEOUT 20 s, and print
 *   rank R fence all|listed -> STATUS in MS ms
 * and exit 0. A rank that gets no event within 20 s says so and exits 4. */
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile int event_status = 0;  /* 0: none yet */
static volatile int event_rank = -1;
static volatile int event_exit_code = -1;

static void onEvent(size_t id, pmix_status_t status, const pmix_proc_t* source, pmix_info_t info[], size_t ninfo,
                    pmix_info_t results[], size_t nresults, pmix_event_notification_cbfunc_fn_t cbfunc,
                    void* cbdata) {
  (void)id, (void)source, (void)results, (void)nresults;
  for (size_t i = 0; i < ninfo; i++) {
    if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC) && info[i].value.type == PMIX_PROC)
      event_rank = (int)info[i].value.data.proc->rank;
    if (PMIX_CHECK_KEY(&info[i], PMIX_EXIT_CODE) && info[i].value.type == PMIX_INT)
      event_exit_code = info[i].value.data.integer;
  }
  event_status = status;
  if (cbfunc) cbfunc(PMIX_EVENT_ACTION_COMPLETE, NULL, 0, NULL, NULL, cbdata);
}

static long nowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void fence(const pmix_proc_t* me, const char* what, pmix_proc_t* procs, size_t nprocs) {
  pmix_info_t timeout;
  int seconds = 20;
  PMIX_INFO_LOAD(&timeout, PMIX_TIMEOUT, &seconds, PMIX_INT);
  long t0 = nowMs();
  pmix_status_t rc = PMIx_Fence(procs, nprocs, &timeout, 1);
  printf("rank %u fence %s -> %s in %ld ms\n", me->rank, what, PMIx_Error_string(rc), nowMs() - t0);
  fflush(stdout);
  PMIX_INFO_DESTRUCT(&timeout);
}

int main(int argc, char** argv) {
  const char* how = argc > 1 ? argv[1] : "exit";
  const int fences = argc > 2 && strcmp(argv[2], "fences") == 0;
  alarm(90); /* a watchdog: the job is expected to end well before */
  pmix_proc_t me;
  if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) return 2;
  pmix_status_t codes[] = {PMIX_ERR_PROC_ABORTED, PMIX_PROC_TERMINATED};
  pmix_status_t rc = PMIx_Register_event_handler(codes, 2, NULL, 0, onEvent, NULL, NULL);
  if (rc < 0) {
    printf("rank %u: PMIx_Register_event_handler -> %s\n", me.rank, PMIx_Error_string(rc));
    return 3;
  }
  PMIx_Fence(NULL, 0, NULL, 0); /* every rank has its handler */
  if (me.rank == 1) {
    if (strcmp(how, "abort") == 0) abort();
    if (strcmp(how, "pmix-abort") == 0) {
      PMIx_Abort(5, "rank 1 gives up", NULL, 0);
      exit(5); /* as MPI_Abort does once the server has taken the request */
    }
    exit(3);
  }
  for (int i = 0; i < 400 && !event_status; i++) usleep(50000);
  if (!event_status) {
    printf("rank %u got no event\n", me.rank);
    fflush(stdout);
    return 4;
  }
  printf("rank %u event %s for rank %d exit code %d\n", me.rank, PMIx_Error_string(event_status), event_rank,
         event_exit_code);
  fflush(stdout);
  if (fences) {
    fence(&me, "all", NULL, 0);
    pmix_proc_t listed[4];
    for (int r = 0; r < 4; r++) PMIX_LOAD_PROCID(&listed[r], me.nspace, (pmix_rank_t)r);
    fence(&me, "listed", listed, 4);
  }
  PMIx_Finalize(NULL, 0);
  return 0;
}
