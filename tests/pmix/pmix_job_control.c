/* PMIx_Job_control across nodes, as 2 nodes x 2 ranks: rank 0 sends SIGUSR1 to rank 3 (which
 * reports it), asks for a checkpoint (refused at once), then kills rank 2. The job then ends
 * as for any killed rank: tlaunch exits 137 naming rank 2. Ranks that survive wait for that. */
#include <pmix.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t got_usr1 = 0;
static void onUsr1(int sig) { (void)sig; got_usr1 = 1; }

static pmix_status_t control(pmix_proc_t* target, const char* key, void* value, pmix_data_type_t type) {
  pmix_info_t dir;
  PMIX_INFO_LOAD(&dir, key, value, type);
  pmix_info_t* results = NULL;
  size_t nresults = 0;
  pmix_status_t rc = PMIx_Job_control(target, 1, &dir, 1, &results, &nresults);
  PMIX_INFO_DESTRUCT(&dir);
  if (results) PMIX_INFO_FREE(results, nresults);
  return rc;
}

int main(void) {
  signal(SIGUSR1, onUsr1);
  alarm(60);  // a watchdog: the job is expected to end well before
  pmix_proc_t me;
  if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) return 2;
  PMIx_Fence(NULL, 0, NULL, 0);  // every rank has its SIGUSR1 handler
  if (me.rank == 0) {
    pmix_proc_t target;
    PMIX_LOAD_PROCID(&target, me.nspace, 3);
    int sig = SIGUSR1;
    pmix_status_t rc = control(&target, PMIX_JOB_CTRL_SIGNAL, &sig, PMIX_INT);
    printf("job control signal -> %s\n", PMIx_Error_string(rc));
    rc = control(&target, PMIX_JOB_CTRL_CHECKPOINT, "ckpt1", PMIX_STRING);
    printf("job control checkpoint -> %s\n", PMIx_Error_string(rc));
    fflush(stdout);
  }
  if (me.rank == 3) {
    for (int i = 0; i < 200 && !got_usr1; i++) usleep(50000);
    printf("rank 3 %s SIGUSR1\n", got_usr1 ? "got" : "did not get");
    fflush(stdout);
  }
  PMIx_Fence(NULL, 0, NULL, 0);
  if (me.rank == 0) {
    pmix_proc_t target;
    PMIX_LOAD_PROCID(&target, me.nspace, 2);
    bool yes = true;
    pmix_status_t rc = control(&target, PMIX_JOB_CTRL_KILL, &yes, PMIX_BOOL);
    printf("job control kill -> %s\n", PMIx_Error_string(rc));
    fflush(stdout);
  }
  sleep(30);  // until tlaunch ends the job
  return 5;
}
