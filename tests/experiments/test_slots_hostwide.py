"""The lock that guards a sandbox uid is host-wide (issue 20, finding 6):
two workers with different work roots never get the same uid at once."""

from experiments.slots import slots_acquire


def test_two_work_roots_never_hold_the_same_uid(settings, tmp_path):
    settings.SANDBOX_UID_LOCK_DIR = tmp_path / "uid-locks"
    settings.GPU_COUNT = 0
    settings.EXPERIMENT_WORK_ROOT = tmp_path / "worker-a"
    first = slots_acquire(gpus=0)
    settings.EXPERIMENT_WORK_ROOT = tmp_path / "worker-b"
    try:
        with slots_acquire(gpus=0) as second:
            assert second.uid != first.uid
    finally:
        first.release()
    with slots_acquire(gpus=0) as again:
        assert again.uid == first.uid  # released: free for the next job
