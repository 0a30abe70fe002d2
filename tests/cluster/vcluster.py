"""Virtual clusters for tests: nodes made of Linux namespaces, with real sshd and Slurm.

A thin wrapper around contrib/vcluster (see contrib/vcluster.md). Standard library only.

    from vcluster import VirtualCluster, skip_unless_possible

    skip_unless_possible()                    # exits 77 (ctest SKIP_RETURN_CODE) when it cannot work
    with VirtualCluster(n=4) as vc:
        vc.exec("node1", ["ssh", "node2", "hostname"], capture_output=True, text=True)
        subprocess.run(["srun", "-N4", "hostname"], env={**os.environ, **vc.env()})

The cluster is always taken down: on normal exit, on exceptions, on SIGTERM/SIGHUP/SIGINT, and
(through the watchdog that `up --owner` starts) even when this process is killed with SIGKILL.
"""

import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

SKIP_RETURN_CODE = 77
SCRIPT = Path(__file__).resolve().parents[2] / "contrib" / "vcluster"


class VClusterError(RuntimeError):
    pass


def skip_unless_possible(*, slurm=True, ssh=True, script=SCRIPT):
    """Exit with SKIP_RETURN_CODE and a reason unless a virtual cluster can be built here."""
    if not Path(script).is_file():
        _skip(f"{script} is missing")
    if os.geteuid() != 0:
        _skip("needs root (network namespaces, daemons, /etc/hosts)")
    args = [str(script), "check"]
    if not slurm:
        args.append("--no-slurm")
    if not ssh:
        args.append("--no-ssh")
    probe = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if probe.returncode != 0:
        _skip(probe.stdout.strip())


def _skip(reason):
    print(f"SKIP: virtual cluster not possible here: {reason}", flush=True)
    sys.exit(SKIP_RETURN_CODE)


class VirtualCluster:
    """Context manager: `up` on enter, `down` on exit. Attributes: nodes, n, up_seconds, down_seconds."""

    def __init__(self, n=4, slurm=True, *, ssh=True, cpus=None, timeout=None, script=SCRIPT):
        self.n = n
        self.slurm = slurm
        self.ssh = ssh
        self.nodes = [f"node{i}" for i in range(1, n + 1)]
        self.up_seconds = None
        self.down_seconds = None
        self._script = str(script)
        self._cpus = cpus
        self._timeout = timeout
        self._saved_handlers = {}
        self._env = None

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self):
        self._install_signal_handlers()
        args = [self._script, "up", "-n", str(self.n), "--owner", str(os.getpid())]
        if not self.slurm:
            args.append("--no-slurm")
        if not self.ssh:
            args.append("--no-ssh")
        if self._cpus is not None:
            args += ["--cpus", str(self._cpus)]
        if self._timeout is not None:
            args += ["--timeout", str(self._timeout)]
        start = time.monotonic()
        owned = False  # a failed `up` cleans up itself; `down` then could hit another test's cluster
        try:
            up = subprocess.Popen(args, stdin=subprocess.DEVNULL)
            try:
                rc = up.wait()
            except BaseException:
                up.terminate()  # `up` cleans up after itself on SIGTERM
                up.wait()
                raise
            if rc != 0:
                raise VClusterError(f"'vcluster up' failed with exit status {rc}; its messages are above")
            owned = True
            self.up_seconds = time.monotonic() - start
            self._env = self._read_env()
        except BaseException:
            try:
                if owned:
                    self._down()
            except VClusterError as e:
                print(f"vcluster.py: {e}", file=sys.stderr)
            finally:
                self._restore_signal_handlers()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self._down()
        finally:
            self._restore_signal_handlers()
        return False

    def down(self):
        """Take the cluster down now (also done on exit); returns the seconds it took."""
        self._down()
        return self.down_seconds

    def _down(self):
        start = time.monotonic()
        # Ignore further signals until the cleanup is done; `down` itself ignores them too.
        blocked = self._ignore_signals()
        try:
            rc = subprocess.run([self._script, "down"], stdin=subprocess.DEVNULL).returncode
        finally:
            for sig, handler in blocked.items():
                signal.signal(sig, handler)
        self.down_seconds = time.monotonic() - start
        if rc != 0:
            raise VClusterError(f"'vcluster down' failed with exit status {rc}; its messages are above")

    # -- use ---------------------------------------------------------------------------------

    def exec_argv(self, node, argv):
        """The command line that runs argv (a list, or a string for /bin/sh -c) inside node."""
        if isinstance(argv, str):
            argv = ["/bin/sh", "-c", argv]
        return [self._script, "exec", str(node), "--", *map(str, argv)]

    def exec(self, node, argv, **kw):
        """subprocess.run(argv) inside node (its network, hostname, /tmp); kw go to subprocess.run."""
        return subprocess.run(self.exec_argv(node, argv), **kw)

    def popen(self, node, argv, **kw):
        """subprocess.Popen(argv) inside node, for daemons; `down` kills whatever still runs in nodes."""
        return subprocess.Popen(self.exec_argv(node, argv), **kw)

    def env(self):
        """Variables for commands run on the host: SLURM_CONF (with slurm), VCLUSTER_NODES, ..."""
        return dict(self._env or {})

    def environ(self, base=None):
        """A full environment for host commands: base (default os.environ) without SLURM_* (a test run
        inside a real Slurm job must not leak its job into this cluster), plus env()."""
        base = os.environ if base is None else base
        return {**{k: v for k, v in base.items() if not k.startswith("SLURM_")}, **self.env()}

    def mgmt_ip(self, node):
        return f"198.18.0.{10 + self._index(node)}"

    def fabric_ip(self, node):
        return f"198.19.0.{10 + self._index(node)}"

    def _index(self, node):
        name = str(node)
        i = int(name[4:] if name.startswith("node") else name)
        if not 1 <= i <= self.n:
            raise ValueError(f"{node}: this cluster has node1..node{self.n}")
        return i

    def _read_env(self):
        out = subprocess.run([self._script, "env"], stdout=subprocess.PIPE, text=True, check=True).stdout
        env = {}
        for line in out.splitlines():
            words = shlex.split(line)
            if len(words) == 2 and words[0] == "export" and "=" in words[1]:
                key, value = words[1].split("=", 1)
                env[key] = value
        return env

    # -- signals -----------------------------------------------------------------------------

    _SIGNALS = (signal.SIGTERM, signal.SIGHUP)

    def _install_signal_handlers(self):
        if threading.current_thread() is not threading.main_thread():
            return

        def terminate(signum, frame):
            raise SystemExit(128 + signum)

        for sig in self._SIGNALS:
            self._saved_handlers[sig] = signal.signal(sig, terminate)

    def _restore_signal_handlers(self):
        for sig, handler in self._saved_handlers.items():
            signal.signal(sig, handler)
        self._saved_handlers = {}

    def _ignore_signals(self):
        if threading.current_thread() is not threading.main_thread():
            return {}
        return {sig: signal.signal(sig, signal.SIG_IGN) for sig in (*self._SIGNALS, signal.SIGINT)}
