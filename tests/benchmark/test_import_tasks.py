from collections import Counter
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from benchmark.models import Task

pytestmark = pytest.mark.django_db


def run_import(*args: str) -> str:
    out = StringIO()
    call_command("import_tasks", *args, stdout=out, stderr=out)
    return out.getvalue()


def test_import_of_the_published_tasks_matches_the_file_names(mlrbench_data):
    output = run_import(str(mlrbench_data / "tasks"))

    files = sorted(p.stem for p in (mlrbench_data / "tasks").glob("*.md"))
    assert len(files) == 201
    assert "201 created" in output
    assert Task.objects.count() == 201
    assert sorted(Task.objects.values_list("slug", flat=True)) == files

    expected_years = Counter(int(slug.split("_")[0][-4:]) for slug in files)
    expected_conferences = Counter(slug.split("_")[0][:-4] for slug in files)
    assert Counter(Task.objects.values_list("year", flat=True)) == expected_years
    assert Counter(Task.objects.values_list("conference", flat=True)) == expected_conferences
    assert expected_years == {2023: 73, 2024: 91, 2025: 37}

    task = Task.objects.get(slug="iclr2025_bi_align")
    assert task.conference == "iclr" and task.year == 2025
    assert task.title == (mlrbench_data / "tasks/iclr2025_bi_align.md").read_text().split("\n")[
        0
    ].removeprefix("# ")


def test_second_import_of_a_repository_clone_changes_nothing(mlrbench_data):
    run_import(str(mlrbench_data))
    before = list(Task.objects.order_by("slug").values_list("slug", "updated_at"))

    output = run_import(str(mlrbench_data))

    assert "0 created, 0 updated, 201 unchanged" in output
    assert list(Task.objects.order_by("slug").values_list("slug", "updated_at")) == before


def test_a_changed_file_is_updated_in_place(write_task_file):
    path = write_task_file("icml2024_demo.md", "# Demo\n\nFirst text.")
    run_import(str(write_task_file.folder))
    path.write_text("# Demo renamed\n\nSecond text.")

    output = run_import(str(write_task_file.folder))

    assert "0 created, 1 updated, 0 unchanged" in output
    task = Task.objects.get()
    assert task.title == "Demo renamed" and "Second text" in task.description


MALFORMED = {
    "iclr2025_noheading.md": ("Just prose, no heading at all.", "no markdown heading"),
    "neurips2024_latin1.md": ("# Caf\xe9\n".encode("latin-1"), "not UTF-8"),
    "icml2023_empty.md": ("   \n\n", "empty"),
    "aaai2024_wrongconf.md": ("# Wrong conference", "file name"),
    "iclr25_shortyear.md": ("# Short year", "file name"),
}


def test_malformed_files_are_each_named_and_nothing_is_written(write_task_file):
    write_task_file("iclr2025_good.md", "# A good task\n\nText.")
    for name, (content, _reason) in MALFORMED.items():
        write_task_file(name, content)

    with pytest.raises(CommandError) as excinfo:
        run_import(str(write_task_file.folder))

    message = str(excinfo.value)
    for name, (_content, reason) in MALFORMED.items():
        line = next(line for line in message.splitlines() if name in line)
        assert reason in line
    assert "iclr2025_good.md" not in message
    assert Task.objects.count() == 0


def test_skip_invalid_imports_the_good_files_and_lists_the_bad(write_task_file):
    write_task_file("iclr2025_good.md", "# A good task\n\nText.")
    for name, (content, _reason) in MALFORMED.items():
        write_task_file(name, content)

    output = run_import(str(write_task_file.folder), "--skip-invalid")

    assert list(Task.objects.values_list("slug", flat=True)) == ["iclr2025_good"]
    for name in MALFORMED:
        assert f"skipped {write_task_file.folder / name}" in output
    assert f"{len(MALFORMED)} skipped" in output


def test_a_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(CommandError, match="not a folder"):
        run_import(str(tmp_path / "nowhere"))


def test_topics_csv_sets_topics_by_label_or_key(write_task_file, tmp_path):
    write_task_file("iclr2025_one.md", "# One")
    write_task_file("iclr2025_two.md", "# Two")
    topics = tmp_path / "topics.csv"
    topics.write_text("slug,topic\niclr2025_one,ML Theory\niclr2025_two,reinforcement_learning\n")

    run_import(str(write_task_file.folder), "--topics", str(topics))

    assert dict(Task.objects.values_list("slug", "topic")) == {
        "iclr2025_one": "ml_theory",
        "iclr2025_two": "reinforcement_learning",
    }
    assert "0 created, 0 updated, 2 unchanged" in run_import(
        str(write_task_file.folder), "--topics", str(topics)
    )


def test_a_bad_topics_csv_writes_nothing(write_task_file, tmp_path):
    write_task_file("iclr2025_one.md", "# One")
    topics = tmp_path / "topics.csv"
    topics.write_text("iclr2025_one,Astrology\niclr2025_missing,ML Theory\n")

    with pytest.raises(CommandError) as excinfo:
        run_import(str(write_task_file.folder), "--topics", str(topics))

    assert "unknown topic 'Astrology'" in str(excinfo.value)
    assert "iclr2025_missing" in str(excinfo.value)
    assert Task.objects.count() == 0
