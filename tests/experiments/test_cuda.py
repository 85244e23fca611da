"""On a host with NVIDIA GPUs: each job sees only its own GPU and runs a small
CUDA computation in the sandbox (a PTX kernel through the driver API, so no
CUDA toolkit or torch is needed). Skipped where `nvidia-smi` is absent."""

import contextlib
import os
import re
import shutil
import subprocess

import pytest

from experiments.models import ExperimentRun, ExperimentStatus
from experiments.queue import experiment_queue
from tests.experiments.factories import submission_with_files
from tests.support.waiting import WaitTimeout, wait_until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.backends,
    pytest.mark.skipif(shutil.which("nvidia-smi") is None, reason="no nvidia-smi: no GPU here"),
]

PTX = r"""
.version 7.0
.target sm_50
.address_size 64
.visible .entry affine(.param .u64 data, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [data];
  ld.param.u32 %r2, [n];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r1, %r3, %r4, %r5;
  setp.ge.u32 %p1, %r1, %r2;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  fma.rn.f32 %f2, %f1, 0f40000000, 0f3F800000;
  st.global.f32 [%rd4], %f2;
DONE:
  ret;
}
"""

PROGRAM = """
import ctypes, sys
cuda = ctypes.CDLL(LIBCUDA)

def check(result, what):
    if result != 0:
        print(what, "failed with CUDA error", result)
        sys.exit(3)

check(cuda.cuInit(0), "cuInit")
count = ctypes.c_int()
check(cuda.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
device = ctypes.c_int()
check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
pci = ctypes.create_string_buffer(64)
check(cuda.cuDeviceGetPCIBusId(pci, 64, device), "cuDeviceGetPCIBusId")
context = ctypes.c_void_p()
check(cuda.cuCtxCreate_v2(ctypes.byref(context), 0, device), "cuCtxCreate")
module = ctypes.c_void_p()
check(cuda.cuModuleLoadData(ctypes.byref(module), PTX.encode() + b"\\0"), "cuModuleLoadData")
function = ctypes.c_void_p()
check(cuda.cuModuleGetFunction(ctypes.byref(function), module, b"affine"), "cuModuleGetFunction")
n = 1 << 16
host = (ctypes.c_float * n)(*range(n))
memory = ctypes.c_uint64()
check(cuda.cuMemAlloc_v2(ctypes.byref(memory), n * 4), "cuMemAlloc")
check(cuda.cuMemcpyHtoD_v2(memory, host, n * 4), "cuMemcpyHtoD")
size = ctypes.c_uint32(n)
params = (ctypes.c_void_p * 2)(
    ctypes.cast(ctypes.byref(memory), ctypes.c_void_p),
    ctypes.cast(ctypes.byref(size), ctypes.c_void_p),
)
check(cuda.cuLaunchKernel(function, n // 256, 1, 1, 256, 1, 1, 0, None, params, None), "launch")
check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
check(cuda.cuMemcpyDtoH_v2(host, memory, n * 4), "cuMemcpyDtoH")
ok = all(host[i] == 2 * i + 1 for i in range(n))
print(f"devices={count.value} pci={pci.value.decode()} kernel_ok={ok}")
"""


def libcuda_path() -> str:
    listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    match = re.search(r"libcuda\.so\.1 \(.*?\) => (\S+)", listing)
    if not match:
        pytest.skip("nvidia-smi is here but libcuda.so.1 is not")
    return os.path.realpath(match.group(1))


def bus_ids() -> list[str]:
    listing = subprocess.run(
        ["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.strip()[-7:].lower() for line in listing.splitlines() if line.strip()]


def test_each_job_sees_only_its_own_gpu_and_computes_on_it(
    experiment_settings, celery_worker_process
):
    library = libcuda_path()
    gpus = bus_ids()
    jobs = min(len(gpus), 2)
    env = {**experiment_settings.worker_env, "SANDBOX_MEMORY_BYTES": str(8 * 1024**3)}
    if not library.startswith("/usr/"):
        env["SANDBOX_RO_PATHS"] = os.path.dirname(library)
    celery_worker_process("gpu", concurrency=jobs, env=env)
    code = PROGRAM.replace("LIBCUDA", repr(library)).replace("PTX.encode()", f"{PTX!r}.encode()")
    runs = [
        experiment_queue(
            submission=submission_with_files({"run.sh": "exec python3 cuda.py\n", "cuda.py": code}),
            phase="repro",
            gpu_count=1,
        )
        for _ in range(jobs)
    ]

    def all_ended() -> bool:
        for run in runs:
            run.refresh_from_db()
        return all(run.is_finished for run in runs)

    # A run still going at the deadline fails below, with its log.
    with contextlib.suppress(WaitTimeout):
        wait_until(all_ended, timeout=240, interval=0.5)
    for run in ExperimentRun.objects.filter(pk__in=[r.pk for r in runs]):
        log = run.log.read().decode()
        assert run.status == ExperimentStatus.SUCCEEDED, log
        found = re.search(r"devices=(\d+) pci=(\S+) kernel_ok=(\w+)", log)
        assert found, log
        assert found.group(1) == "1"  # only its own GPU
        assert found.group(3) == "True"  # the kernel computed 2x+1 on the GPU
        (index,) = run.gpus
        assert found.group(2)[-7:].lower() == gpus[index]
