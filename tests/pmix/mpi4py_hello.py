# mpi4py under tlaunch's PMIx server. usage: mpi4py_hello.py EXPECTED_SIZE EXPECTED_RANKS_PER_NODE
import sys
from mpi4py import MPI

want_size, want_local = int(sys.argv[1]), int(sys.argv[2])
c = MPI.COMM_WORLD
total = c.allreduce(c.rank)
local = c.Split_type(MPI.COMM_TYPE_SHARED).size
got = (c.size, total, local)
want = (want_size, want_size * (want_size - 1) // 2, want_local)
print("mpi4py rank", c.rank, "size/sum/local", got, "ok" if got == want else "want %s" % (want,), flush=True)
sys.exit(0 if got == want else 1)
