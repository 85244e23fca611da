from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from benchmark.models import Task

pytestmark = pytest.mark.django_db


def run_import(*args: str) -> str:
    out = StringIO()
    call_command("import_mlrbench", *args, stdout=out, stderr=out)
    return out.getvalue()


def test_import_mlrbench_loads_the_tasks_and_is_idempotent(mlrbench_data):
    first = run_import(str(mlrbench_data))
    assert "tasks: 201 created, 0 updated, 0 unchanged" in first
    assert Task.objects.count() == 201

    second = run_import(str(mlrbench_data))
    assert "tasks: 0 created, 0 updated, 201 unchanged" in second
    assert "done: nothing new" in second


def test_import_mlrbench_refuses_a_folder_that_is_not_a_clone(tmp_path):
    with pytest.raises(CommandError, match="not a clone of the MLR-Bench repository"):
        run_import(str(tmp_path))


def test_import_mlrbench_lists_a_bad_task_file_and_imports_the_rest(tmp_path):
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks/iclr2025_good.md").write_text("# Good")
    (tmp_path / "tasks/iclr2025_bad.md").write_bytes(b"\xff\xfe")

    output = run_import(str(tmp_path))

    assert "could not import" in output and "iclr2025_bad.md" in output
    assert list(Task.objects.values_list("slug", flat=True)) == ["iclr2025_good"]
