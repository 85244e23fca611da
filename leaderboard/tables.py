"""The leaderboard's answers as tables, derived from the row serializers.

- CSV: one column per serializer field, in the serializer's order, but for a
  `DictField` (one column per key: the dimensions), an `IntervalField`
  (`<name>_low`, `<name>_high`) and a nested list (its item's columns, one CSV
  row per item); fields in the serializer's `Meta.csv_exclude` are left out.
- The page: the columns below, each naming the serializer fields it shows,
  plus a plain column for any field that none of them shows. So a field added
  to a serializer is in the JSON, the CSV and the page at once.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rest_framework import serializers

from .serializers import (
    IntervalDictField,
    IntervalField,
    LeaderboardRowSerializer,
    ObjectiveLeaderboardRowSerializer,
)


def _item_serializer(field: serializers.ListSerializer) -> serializers.Serializer:
    child = field.child
    if not isinstance(child, serializers.Serializer):
        raise TypeError(f"a nested list of {type(child).__name__} has no CSV columns")
    return child


def _csv_fields(serializer: serializers.Serializer) -> list[tuple[str, serializers.Field]]:
    excluded = getattr(getattr(serializer, "Meta", None), "csv_exclude", ())
    return [(name, field) for name, field in serializer.fields.items() if name not in excluded]


def csv_header(
    serializer: serializers.Serializer, *, keys: Mapping[str, Sequence[str]]
) -> list[str]:
    """The CSV columns of `serializer`'s rows; `keys` names the columns of each `DictField`."""
    header: list[str] = []
    for name, field in _csv_fields(serializer):
        if isinstance(field, serializers.ListSerializer):
            header += csv_header(_item_serializer(field), keys=keys)
        elif isinstance(field, IntervalField):
            header += [f"{name}_{suffix}" for suffix in field.csv_suffixes]
        elif isinstance(field, IntervalDictField):
            header += [f"{key}_{suffix}" for key in keys[name] for suffix in field.csv_suffixes]
        elif isinstance(field, serializers.DictField):
            header += list(keys[name])
        else:
            header.append(name)
    return header


def csv_rows(
    serializer: serializers.Serializer,
    row: Mapping[str, Any],
    *,
    keys: Mapping[str, Sequence[str]],
) -> list[list[object]]:
    """The CSV rows of one serialized row, in the columns of `csv_header`."""
    rows: list[list[object]] = [[]]
    for name, field in _csv_fields(serializer):
        value = row[name]
        if isinstance(field, serializers.ListSerializer):
            child = _item_serializer(field)
            items = [r for item in value for r in csv_rows(child, item, keys=keys)]
            rows = [done + item for done in rows for item in items]
            continue
        if isinstance(field, IntervalField):
            cells = list(value or [None] * len(field.csv_suffixes))
        elif isinstance(field, IntervalDictField):
            cells = [
                cell
                for key in keys[name]
                for cell in (value.get(key) or [None] * len(field.csv_suffixes))
            ]
        elif isinstance(field, serializers.DictField):
            cells = [value.get(key) for key in keys[name]]
        else:
            cells = [value]
        for done in rows:
            done += cells
    return rows


def leaderboard_table(answer: Mapping) -> tuple[list[str], list[list[object]]]:
    """A stage's answer as the CSV download: one row per agent, one column per dimension."""
    serializer = LeaderboardRowSerializer()
    dimension_keys = [d["key"] for d in answer["dimensions"]]
    keys = {"scores": dimension_keys, "scores_ci": dimension_keys}
    return csv_header(serializer, keys=keys), [
        line for row in answer["rows"] for line in csv_rows(serializer, row, keys=keys)
    ]


def objective_table(answer: Mapping) -> tuple[list[str], list[list[object]]]:
    """The objective answer as the CSV download: one row per agent and task."""
    serializer = ObjectiveLeaderboardRowSerializer()
    return csv_header(serializer, keys={}), [
        line for row in answer["rows"] for line in csv_rows(serializer, row, keys={})
    ]


# --- the page's tables ---------------------------------------------------------------


@dataclass(frozen=True)
class PageColumn:
    """A column of a page's table. `key` is its cells' `data-column` (and its
    sort key where it can be sorted by); `fields` the serializer fields it shows."""

    key: str
    label: str
    fields: tuple[str, ...]
    numeric: bool = True
    # The board flag that says whether any row has a value for it.
    shown_if: str = ""
    sortable: bool = True
    ascending_first: bool = False
    note: str = ""


STAGE_COLUMNS = (
    PageColumn(
        "rank",
        "Rank",
        ("rank", "rank_strict", "n_better"),
        numeric=False,
        ascending_first=True,
        note="ties shared",
    ),
    PageColumn(
        "agent",
        "Agent",
        (
            "agent",
            "display_name",
            "url",
            "same_family_judge",
            "model_family",
            "base_model",
            "coding_agent",
            "scaffold",
        ),
        numeric=False,
        ascending_first=True,
    ),
    # One column per dimension; the first (Overall) shows the interval too, and
    # names the panel whose judges' mean the scores are.
    PageColumn("scores", "", ("scores", "overall_ci", "scores_ci", "panel")),
    PageColumn("n_tasks", "Tasks", ("n_tasks",)),
    PageColumn(
        "cost",
        "Cost / task",
        ("cost_usd_per_task", "cost_unpriced_steps", "pareto_optimal"),
        shown_if="has_cost",
    ),
    PageColumn(
        "fabrication",
        "Fabrication",
        ("fabrication_rate", "fabrication_rule", "human_fabrication_rate"),
        shown_if="has_fabrication",
        note="judges · experts",
    ),
    PageColumn("human", "Human Overall", ("human_overall",), shown_if="has_human"),
    PageColumn(
        "reproduced",
        "Reproduced",
        ("reproduced_rate", "not_reproduced_rate", "reproduction_checked"),
        shown_if="has_reproduction",
        note="not reproduced · checked",
    ),
)

OBJECTIVE_COLUMNS = (
    PageColumn("rank", "Rank", ("rank",), numeric=False),
    PageColumn("agent", "Agent", ("agent", "display_name", "url"), numeric=False),
    PageColumn(
        "relative_improvement",
        "Relative improvement",
        ("mean_relative_improvement",),
        note="mean over tasks",
    ),
    PageColumn("n_tasks", "Tasks", ("n_tasks",)),
    # One group of columns per task (below).
    PageColumn("tasks", "", ("tasks",)),
)
# Within each task's group; the group's heading shows the task and its title,
# the score's heading the metric and its direction.
OBJECTIVE_TASK_COLUMNS = (
    PageColumn("score", "", ("task", "title", "metric", "higher_is_better", "score")),
    # MLRC-Bench's configuration; the tab's `idea_source` filter keeps one.
    PageColumn("idea_source", "Configuration", ("idea_source",), numeric=False, note="idea source"),
    PageColumn("task_relative_improvement", "Relative improvement", ("relative_improvement",)),
    PageColumn("runtime", "Runtime", ("runtime_seconds",)),
    PageColumn("lloc", "Logical lines", ("lloc",)),
)
# Data for clients, not for the page.
# scoring_forgeable: a mark on the score cell, not a column.
OBJECTIVE_TASK_HIDDEN = frozenset({"submission", "scoring_forgeable"})


def page_columns(
    serializer: serializers.Serializer,
    columns: Sequence[PageColumn],
    *,
    hidden: frozenset[str] = frozenset(),
) -> list[PageColumn]:
    """`columns`, then a plain column for each field of `serializer` that none
    of them shows (and that is not `hidden`)."""
    shown = {name for column in columns for name in column.fields} | hidden
    return [
        *columns,
        *(
            PageColumn(name, str(field.label or name), (name,), sortable=False)
            for name, field in serializer.fields.items()
            if name not in shown
        ),
    ]
