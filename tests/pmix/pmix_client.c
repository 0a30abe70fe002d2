/* Raw PMIx client: checks what the server registered, then exchanges a value across nodes.
 * usage: pmix_client NODES RANKS_PER_NODE [cyclic] [direct] [topology] [getdead]
 * cyclic: rank r runs on node r % NODES (default: blocks of RANKS_PER_NODE).
 * direct: read the other node's value without a fence first (direct modex), then fence.
 * topology: the job info holds this node's hwloc topology as XML (PMIX_HWLOC_XML_V2, which
 *   Open MPI loads instead of discovering the machine in every rank).
 * getdead: rank 0 exits 3 a second after PMIx_Init without committing anything; the others ask
 *   for its value at once (direct modex, no timeout): PMIx_Get must fail, not wait forever.
 * Node n is named "node" + ('A' + n), as in pmix_harness. */
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int errors = 0;
static pmix_proc_t me;

#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "pmix_client rank %u: ", me.rank);  \
      fprintf(stderr, __VA_ARGS__);                       \
      fprintf(stderr, "\n");                              \
      errors++;                                           \
    }                                                     \
  } while (0)

static pmix_value_t* get(const pmix_proc_t* proc, const char* key) {
  pmix_value_t* v = NULL;
  pmix_status_t rc = PMIx_Get(proc, key, NULL, 0, &v);
  CHECK(rc == PMIX_SUCCESS, "PMIx_Get(rank %u, %s): %s", proc->rank, key, PMIx_Error_string(rc));
  return rc == PMIX_SUCCESS ? v : NULL;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: pmix_client NODES RANKS_PER_NODE [cyclic] [direct]\n");
    return 64;
  }
  int nodes = atoi(argv[1]), ppn = atoi(argv[2]), cyclic = 0, direct = 0, topology = 0, getdead = 0;
  for (int i = 3; i < argc; i++) {
    getdead |= strcmp(argv[i], "getdead") == 0;
    cyclic |= strcmp(argv[i], "cyclic") == 0;
    direct |= strcmp(argv[i], "direct") == 0;
    topology |= strcmp(argv[i], "topology") == 0;
  }
  int size = nodes * ppn;
  pmix_status_t rc = PMIx_Init(&me, NULL, 0);
  if (rc != PMIX_SUCCESS) {
    fprintf(stderr, "pmix_client: PMIx_Init: %s\n", PMIx_Error_string(rc));
    return 2;
  }
  int r = (int)me.rank;
  if (getdead) {
    if (r == 0) {
      sleep(1);
      _exit(3);
    }
    pmix_proc_t dead;
    pmix_value_t* got = NULL;
    PMIX_LOAD_PROCID(&dead, me.nspace, 0);
    rc = PMIx_Get(&dead, "tlaunch.test.never", NULL, 0, &got);
    printf("pmix_client rank %d: get of rank 0, which died: %s\n", r,
           rc == PMIX_SUCCESS ? "succeeded?" : "failed as it must");
    fflush(stdout);
    PMIx_Finalize(NULL, 0);
    return rc == PMIX_SUCCESS ? 1 : 0;
  }
  int node = cyclic ? r % nodes : r / ppn;
  int lrank = cyclic ? r / nodes : r % ppn;
  char want_host[16], want_peers[256] = "", other_host[16];
  snprintf(want_host, sizeof want_host, "node%c", 'A' + node);
  for (int i = 0; i < size; i++) {
    if ((cyclic ? i % nodes : i / ppn) != node) continue;
    char num[16];
    snprintf(num, sizeof num, "%s%d", want_peers[0] ? "," : "", i);
    strcat(want_peers, num);
  }

  pmix_proc_t wildcard;
  PMIX_LOAD_PROCID(&wildcard, me.nspace, PMIX_RANK_WILDCARD);
  pmix_value_t* v;
  if ((v = get(&wildcard, PMIX_JOB_SIZE))) {
    CHECK(v->data.uint32 == (uint32_t)size, "job size %u, want %d", v->data.uint32, size);
    PMIX_VALUE_RELEASE(v);
  }
  if ((v = get(&me, PMIX_LOCAL_RANK))) {
    CHECK(v->data.uint16 == lrank, "local rank %u, want %d", v->data.uint16, lrank);
    PMIX_VALUE_RELEASE(v);
  }
  if ((v = get(&me, PMIX_NODE_RANK))) {
    CHECK(v->data.uint16 == lrank, "node rank %u, want %d", v->data.uint16, lrank);
    PMIX_VALUE_RELEASE(v);
  }
  if ((v = get(&wildcard, PMIX_LOCAL_PEERS))) {
    CHECK(v->type == PMIX_STRING && strcmp(v->data.string, want_peers) == 0, "local peers '%s', want '%s'",
          v->type == PMIX_STRING ? v->data.string : "?", want_peers);
    PMIX_VALUE_RELEASE(v);
  }
  if (topology && (v = get(&wildcard, PMIX_HWLOC_XML_V2))) {
    const char* xml = v->type == PMIX_STRING && v->data.string ? v->data.string : "";
    CHECK(strncmp(xml, "<?xml", 5) == 0 && strstr(xml, "<topology") && strstr(xml, "type=\"PU\""),
          "PMIX_HWLOC_XML_V2 is not an hwloc topology with PUs: '%.80s'", xml);
    PMIX_VALUE_RELEASE(v);
  }
  if ((v = get(&me, PMIX_HOSTNAME))) {
    CHECK(v->type == PMIX_STRING && strcmp(v->data.string, want_host) == 0, "hostname '%s', want '%s'",
          v->type == PMIX_STRING ? v->data.string : "?", want_host);
    PMIX_VALUE_RELEASE(v);
  }

  /* A value from a rank on the next node (the same rank when there is one node). */
  int peer = cyclic ? (r + 1) % size : (r + ppn) % size;
  int peer_node = cyclic ? peer % nodes : peer / ppn;
  snprintf(other_host, sizeof other_host, "node%c", 'A' + peer_node);
  char mine[64], want[64];
  snprintf(mine, sizeof mine, "hello from rank %d", r);
  snprintf(want, sizeof want, "hello from rank %d", peer);
  pmix_value_t put;
  PMIX_VALUE_LOAD(&put, mine, PMIX_STRING);
  rc = PMIx_Put(PMIX_GLOBAL, "tlaunch.test.greeting", &put);
  CHECK(rc == PMIX_SUCCESS, "PMIx_Put: %s", PMIx_Error_string(rc));
  PMIX_VALUE_DESTRUCT(&put);
  rc = PMIx_Commit();
  CHECK(rc == PMIX_SUCCESS, "PMIx_Commit: %s", PMIx_Error_string(rc));
  pmix_info_t collect;
  bool yes = !direct;
  PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
  if (!direct) {
    rc = PMIx_Fence(NULL, 0, &collect, 1);
    CHECK(rc == PMIX_SUCCESS, "PMIx_Fence: %s", PMIx_Error_string(rc));
  }

  pmix_proc_t other;
  PMIX_LOAD_PROCID(&other, me.nspace, (pmix_rank_t)peer);
  if ((v = get(&other, "tlaunch.test.greeting"))) {
    CHECK(v->type == PMIX_STRING && strcmp(v->data.string, want) == 0, "rank %d's greeting '%s', want '%s'", peer,
          v->type == PMIX_STRING ? v->data.string : "?", want);
    PMIX_VALUE_RELEASE(v);
  }
  if ((v = get(&other, PMIX_HOSTNAME))) {
    CHECK(v->type == PMIX_STRING && strcmp(v->data.string, other_host) == 0, "rank %d's hostname '%s', want '%s'",
          peer, v->type == PMIX_STRING ? v->data.string : "?", other_host);
    PMIX_VALUE_RELEASE(v);
  }

  if (direct) { /* nobody may finalize while a peer still fetches its data */
    rc = PMIx_Fence(NULL, 0, &collect, 1);
    CHECK(rc == PMIX_SUCCESS, "PMIx_Fence: %s", PMIx_Error_string(rc));
  }
  PMIX_INFO_DESTRUCT(&collect);

  printf("pmix_client rank %d on %s: %s\n", r, want_host, errors ? "FAILED" : "ok");
  fflush(stdout);
  rc = PMIx_Finalize(NULL, 0);
  CHECK(rc == PMIX_SUCCESS, "PMIx_Finalize: %s", PMIx_Error_string(rc));
  return errors ? 1 : 0;
}
