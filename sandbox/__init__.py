"""Run untrusted submission code in a bubblewrap sandbox, with limits.

A package with no Django and no app of the site (the layout test holds it so):
the callers (experiments' runner, agent runs' coding loop) pass every limit and
setting in. `sandbox_run` takes a `SandboxSpec` and returns a `SandboxResult`.
The modules, one concern each: `spec` (what a run is asked and answers),
`bwrap` (the command line and the preflight), `cgroups`, `processes` (/proc,
sweeps and the watchdog), `workdisk` (the bytes written) and `run` (one run,
start to end). What it does, layer by layer:

* `bwrap` gives the code its own user, pid, network, IPC, UTS and cgroup
  namespaces: no network but a private loopback, no view of the host's
  processes, and a file system made of read-only system folders (`/usr`), a
  fresh copy of the code at `/work` (the only writable host folder),
  explicitly mounted read-only data, and small size-limited tmpfs for `/tmp`
  and `/dev/shm`. Capabilities are dropped and nested user namespaces are
  refused (`--disable-userns`).
* When the worker runs as root, the whole chain runs as a dedicated
  unprivileged uid per job slot (`setpriv`), so the kernel's per-user process
  limit (RLIMIT_NPROC) applies and any process still owned by that uid after
  the run is, by construction, a leftover of this run and is killed.
* The environment is built from an allow-list; the worker's own variables
  (database URL, secret key, API keys) never reach the sandbox, not even
  bwrap's pid 1, whose `/proc/1/environ` the code can read.
* Limits: wall time (the whole tree is killed, outcome `timed_out`);
  memory through a cgroup (v2 when a delegated subtree with the memory
  controller is writable, else v1), and only when no cgroup is writable,
  RLIMIT_DATA plus a watchdog on the summed RSS of the process tree (never
  RLIMIT_AS: CUDA reserves far more address space than it uses); processes
  and threads through RLIMIT_NPROC, the pids cgroup and a watchdog; bytes
  written: `/work` is a tmpfs of the disk limit's size, mounted by the
  worker (root) for the run, so the kernel counts every byte whatever the
  path and a write past the limit fails (ENOSPC); the code is copied in
  before and the folder copied back after the run, however it ended. `/tmp`
  and `/dev/shm` are tmpfs of the same size. Without root (a development
  machine) the limit falls back to RLIMIT_FSIZE per file plus a watchdog.
* Nothing outlives the run: bwrap's init is pid 1 of the run's pid namespace
  (its death kills every process in it), `--die-with-parent` ties the sandbox
  to the worker, and after the run the cgroup and the slot's uid are swept.
"""

from sandbox.bwrap import host_gpu_devices, path_reachable_problem, sandbox_env, sandbox_problem
from sandbox.processes import processes_of_uid, uid_sweep
from sandbox.run import sandbox_run
from sandbox.spec import (
    INSIDE_GID,
    INSIDE_UID,
    INSIDE_WORKDIR,
    SANDBOX_PATH,
    Limit,
    Limits,
    LogSink,
    Mount,
    Outcome,
    SandboxError,
    SandboxResult,
    SandboxSpec,
)
from sandbox.workdisk import WorkDisk, WorkDiskUnavailable

__all__ = [
    "INSIDE_GID",
    "INSIDE_UID",
    "INSIDE_WORKDIR",
    "SANDBOX_PATH",
    "Limit",
    "Limits",
    "LogSink",
    "Mount",
    "Outcome",
    "SandboxError",
    "SandboxResult",
    "SandboxSpec",
    "WorkDisk",
    "WorkDiskUnavailable",
    "host_gpu_devices",
    "path_reachable_problem",
    "processes_of_uid",
    "sandbox_env",
    "sandbox_problem",
    "sandbox_run",
    "uid_sweep",
]
