"""MPI_Comm_spawn from mpi4py under tlaunch (run with Debian's /usr/bin/python3):
  futures N      rank 0 maps x*x over 10 items with mpi4py.futures' MPIPoolExecutor (N workers);
                 prints "futures squares [...] workers [...] hosts [...]"
  multiple       rank 0 starts 2 + 1 copies of this script as two apps (MPI_Comm_spawn_multiple);
                 each child prints "multiple child R of N app A arg X yield Y" (Y: its
                 OMPI_MCA_mpi_yield_when_idle)
  missing        every rank spawns a program that does not exist; prints "spawn failed: ..."
  loop N         rank 0 spawns one short-lived child N times (as a job that starts workers again
                 and again); prints "loop parent COMM grew KIB KiB over N spawns" for the process
                 that started rank 0 (its tlaunchd), after 5 spawns that warm everything up, and
                 "loop frontend holds D more descriptors" for tlaunchd's parent (--launcher local)
  sleeper MARK   rank 0 spawns `/bin/sleep MARK`, which never joins MPI: the parent then waits in
                 MPI_Comm_spawn until the job is ended (a teardown test)
"""
import os
import socket
import sys

from mpi4py import MPI


def work(x):
    return x * x, MPI.COMM_WORLD.Get_rank(), socket.gethostname()


def futures(workers):
    from mpi4py.futures import MPIPoolExecutor
    if MPI.COMM_WORLD.Get_rank() == 0:
        with MPIPoolExecutor(max_workers=workers) as ex:
            results = list(ex.map(work, range(10)))
        print("futures squares", [r[0] for r in results], "workers", sorted({r[1] for r in results}),
              "hosts", sorted({r[2] for r in results}), flush=True)
    MPI.COMM_WORLD.Barrier()


def multiple():
    parent = MPI.Comm.Get_parent()
    if parent != MPI.COMM_NULL:
        w = MPI.COMM_WORLD
        print(f"multiple child {w.Get_rank()} of {w.Get_size()} app {w.Get_attr(MPI.APPNUM)} arg {sys.argv[2]} "
              f"yield {os.environ.get('OMPI_MCA_mpi_yield_when_idle', 'unset')}", flush=True)
        parent.Disconnect()
        return
    if MPI.COMM_WORLD.Get_rank() == 0:
        inter = MPI.COMM_SELF.Spawn_multiple([sys.executable] * 2, [[__file__, "multiple", "a"],
                                                                    [__file__, "multiple", "b"]], [2, 1])
        inter.Disconnect()
    MPI.COMM_WORLD.Barrier()


def missing():
    MPI.COMM_SELF.Set_errhandler(MPI.ERRORS_RETURN)
    try:
        MPI.COMM_SELF.Spawn("/no/such/tlaunch-test-program", [], 2)
        print("spawned a program that does not exist", flush=True)
    except MPI.Exception as e:
        print("spawn failed:", e.Get_error_string(), flush=True)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(line.split()[1] for line in f if line.startswith("VmRSS:")))


def loop(n):
    if MPI.COMM_WORLD.Get_rank() == 0:
        import os
        child = ["-c", "from mpi4py import MPI; MPI.Comm.Get_parent().Disconnect()"]
        spawn = lambda: MPI.COMM_SELF.Spawn(sys.executable, child, 1).Disconnect()  # noqa: E731
        for _ in range(5):
            spawn()
        daemon = os.getppid()
        with open(f"/proc/{daemon}/comm") as f:
            comm = f.read().strip()
        with open(f"/proc/{daemon}/stat") as f:
            frontend = int(f.read().rsplit(")", 1)[1].split()[1])  # --launcher local: tlaunch
        before = rss_kib(daemon)
        fds_before = len(os.listdir(f"/proc/{frontend}/fd"))
        for _ in range(n):
            spawn()
        print(f"loop parent {comm} grew {rss_kib(daemon) - before} KiB over {n} spawns", flush=True)
        print(f"loop frontend holds {len(os.listdir(f'/proc/{frontend}/fd')) - fds_before} more descriptors", flush=True)
    MPI.COMM_WORLD.Barrier()


def sleeper(mark):
    if MPI.COMM_WORLD.Get_rank() == 0:
        print("spawning", flush=True)
        MPI.COMM_SELF.Spawn("/bin/sleep", [mark], 1)
    MPI.COMM_WORLD.Barrier()


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "futures":
        futures(int(sys.argv[2]))
    elif mode == "multiple":
        multiple()
    elif mode == "missing":
        missing()
    elif mode == "loop":
        loop(int(sys.argv[2]))
    else:
        sleeper(sys.argv[2])
