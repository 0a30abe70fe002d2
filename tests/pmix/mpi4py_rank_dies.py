# Ranks 0 and 1 (nodeA) enter MPI_Finalize, whose PMIx fence cannot complete: rank 2 (nodeB)
# hangs and rank 3 (nodeB) then dies with exit code 3. The launcher must end the job with
# code 3, fail nodeA's pending fence, and tear down anyway.
import os
import time
from mpi4py import MPI

c = MPI.COMM_WORLD
c.Barrier()
if c.rank == 2:
    time.sleep(3600)
if c.rank == 3:
    time.sleep(1)
    os._exit(3)
MPI.Finalize()
print("mpi4py_rank_dies: rank", c.rank, "finalized although ranks 2 and 3 never did", flush=True)
