/* Calls every PMIx 4.2 client API that tlaunch's server does not implement and checks that
 * each returns an error promptly (never hangs, never crashes the client). Prints one line per
 * call: "unsupported <api> -> <status> in <ms> ms". A call that does not return within
 * PER_CALL_S seconds ends the program with status 3 ("HANG in <api>").
 * usage: pmix_unsupported [API...]   (default: all)
 * Every rank runs the same calls; collective ones (group construct) include only itself. */
#include <pmix.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PER_CALL_S 10

static pmix_proc_t me;
static const char* current = "PMIx_Init";
static int failures = 0;

static void onAlarm(int sig) {
  (void)sig;
  char line[160];
  int n = snprintf(line, sizeof line, "pmix_unsupported rank %u: HANG in %s\n", me.rank, current);
  if (write(2, line, (size_t)n) < 0) _exit(4);
  _exit(3);
}

static double nowMs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int selected(int argc, char** argv, const char* api) {
  if (argc < 2) return 1;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], api) == 0) return 1;
  return 0;
}

/* Starts the watchdog for one call. */
static double begin(const char* api) {
  current = api;
  alarm(PER_CALL_S);
  return nowMs();
}

/* An unsupported call must fail, cleanly: any error status but success. Calls that libpmix
 * answers by itself (may_succeed) only have to be prompt. */
static void report(const char* api, double t0, pmix_status_t rc, int may_succeed) {
  alarm(0);
  double ms = nowMs() - t0;
  printf("unsupported %s -> %s in %.0f ms\n", api, PMIx_Error_string(rc), ms);
  fflush(stdout);
  if (!may_succeed && (rc == PMIX_SUCCESS || rc == PMIX_OPERATION_SUCCEEDED)) {
    fprintf(stderr, "pmix_unsupported rank %u: %s succeeded, expected an error\n", me.rank, api);
    failures++;
  }
}

#define CALL_(api, expr, may_succeed)       \
  do {                                      \
    if (selected(argc, argv, api)) {        \
      double t0_ = begin(api);              \
      pmix_status_t rc_ = (expr);           \
      report(api, t0_, rc_, may_succeed);   \
    }                                       \
  } while (0)
#define CALL(api, expr) CALL_(api, expr, 0)
#define CALL_PROMPT(api, expr) CALL_(api, expr, 1)

int main(int argc, char** argv) {
  signal(SIGALRM, onAlarm);
  alarm(PER_CALL_S);
  pmix_status_t rc = PMIx_Init(&me, NULL, 0);
  alarm(0);
  if (rc != PMIX_SUCCESS) {
    fprintf(stderr, "pmix_unsupported: PMIx_Init: %s\n", PMIx_Error_string(rc));
    return 2;
  }
  pmix_info_t* results = NULL;
  size_t nresults = 0;

  /* Spawn one copy of /bin/true (supported now: it must answer promptly too). */
  pmix_app_t app;
  PMIX_APP_CONSTRUCT(&app);
  app.cmd = strdup("/bin/true");
  app.argv = calloc(2, sizeof(char*));
  app.argv[0] = strdup("/bin/true");
  app.maxprocs = 1;
  pmix_nspace_t child;
  CALL_PROMPT("PMIx_Spawn", PMIx_Spawn(NULL, 0, &app, 1, child)); /* supported: starts at once */
  PMIX_APP_DESTRUCT(&app);

  /* Connect to a namespace that is not this job's. */
  pmix_proc_t stranger[2];
  PMIX_LOAD_PROCID(&stranger[0], me.nspace, me.rank);
  PMIX_LOAD_PROCID(&stranger[1], "no.such.nspace", 0);
  CALL("PMIx_Connect_foreign", PMIx_Connect(stranger, 2, NULL, 0));
  CALL("PMIx_Disconnect_foreign", PMIx_Disconnect(stranger, 2, NULL, 0));

  pmix_info_t alloc[1];
  uint64_t nodes = 1;
  PMIX_INFO_LOAD(&alloc[0], PMIX_ALLOC_NUM_NODES, &nodes, PMIX_UINT64);
  CALL("PMIx_Allocation_request", PMIx_Allocation_request(PMIX_ALLOC_EXTEND, alloc, 1, &results, &nresults));
  PMIX_INFO_DESTRUCT(&alloc[0]);

  /* Signal, kill, terminate, pause and resume are supported; checkpoints are not. */
  pmix_info_t ctrl[1];
  PMIX_INFO_LOAD(&ctrl[0], PMIX_JOB_CTRL_CHECKPOINT, "ckpt1", PMIX_STRING);
  CALL("PMIx_Job_control_checkpoint", PMIx_Job_control(&me, 1, ctrl, 1, &results, &nresults));
  PMIX_INFO_DESTRUCT(&ctrl[0]);

  pmix_info_t mon[1];
  PMIX_INFO_LOAD(&mon[0], PMIX_MONITOR_FILE, "/tmp/tlaunch-no-such-file", PMIX_STRING);
  CALL("PMIx_Process_monitor", PMIx_Process_monitor(&mon[0], PMIX_MONITOR_FILE_ALERT, NULL, 0, &results, &nresults));
  PMIX_INFO_DESTRUCT(&mon[0]);

  pmix_byte_object_t cred;
  PMIX_BYTE_OBJECT_CONSTRUCT(&cred);
  CALL("PMIx_Get_credential", PMIx_Get_credential(NULL, 0, &cred));
  pmix_byte_object_t fake = {.bytes = "xyz", .size = 3};
  CALL("PMIx_Validate_credential", PMIx_Validate_credential(&fake, NULL, 0, &results, &nresults));

  /* Email is the host's job (stderr/stdout/syslog libpmix writes itself, and succeeds). */
  pmix_info_t logdata[1];
  PMIX_INFO_LOAD(&logdata[0], PMIX_LOG_EMAIL, "pmix_unsupported: log line", PMIX_STRING);
  pmix_info_t logdir[1];
  PMIX_INFO_LOAD(&logdir[0], PMIX_LOG_GENERATE_TIMESTAMP, NULL, PMIX_BOOL);
  CALL("PMIx_Log", PMIx_Log(logdata, 1, logdir, 1));
  PMIX_INFO_DESTRUCT(&logdata[0]);
  PMIX_INFO_DESTRUCT(&logdir[0]);

  pmix_query_t q;
  PMIX_QUERY_CONSTRUCT(&q);
  PMIX_ARGV_APPEND(rc, q.keys, PMIX_QUERY_ALLOC_STATUS);
  CALL("PMIx_Query_info", PMIx_Query_info(&q, 1, &results, &nresults));
  PMIX_QUERY_DESTRUCT(&q);

  /* Not here: PMIx_Group_construct / destruct (supported: tests/pmix/pmix_group.c);
   * PMIx_Group_invite (the client library waits for the invitees' events, even past
   * PMIX_TIMEOUT; see README); PMIx_Group_join (only notifies the leader: succeeds). */
  CALL("PMIx_Group_destruct_unknown", PMIx_Group_destruct("tl.no.such.group", NULL, 0));
  CALL("PMIx_Group_leave", PMIx_Group_leave("tl.no.such.group", NULL, 0));

  pmix_fabric_t fabric;
  PMIX_FABRIC_CONSTRUCT(&fabric);
  CALL_PROMPT("PMIx_Fabric_register", PMIx_Fabric_register(&fabric, NULL, 0));  // libpmix answers

  /* Delivered to this node's clients by libpmix; not passed on to other nodes (events: later). */
  CALL_PROMPT("PMIx_Notify_event", PMIx_Notify_event(PMIX_ERR_BAD_PARAM, &me, PMIX_RANGE_NAMESPACE, NULL, 0, NULL, NULL));

  /* Node information tlaunch does not register (srun hangs here): NOT-FOUND, at once. */
  pmix_proc_t wildcard;
  PMIX_LOAD_PROCID(&wildcard, me.nspace, PMIX_RANK_WILDCARD);
  pmix_value_t* val = NULL;
  CALL("PMIx_Get_fabric_coordinates", PMIx_Get(&wildcard, PMIX_FABRIC_COORDINATES, NULL, 0, &val));

  alarm(PER_CALL_S);
  current = "PMIx_Finalize";
  rc = PMIx_Finalize(NULL, 0);
  alarm(0);
  if (rc != PMIX_SUCCESS) {
    fprintf(stderr, "pmix_unsupported: PMIx_Finalize: %s\n", PMIx_Error_string(rc));
    return 2;
  }
  return failures ? 1 : 0;
}
