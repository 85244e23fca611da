"""The loopback server playing MLR-Agent's model: plain answers for the idea,
literature review and proposal; in the coding loop (a request with tools) it
writes a script, runs it and finishes; then it writes a paper whose table cites
the number the log printed (or, for a fabricating twin, a number of its own).

Stateless: each answer follows from the request (the stage's prompt, and how
many assistant turns the coding loop's messages already hold), so a resumed or
repeated stage gets the same answers."""

from __future__ import annotations

import re
from collections.abc import Callable

from common.llm import CHECK_PROMPT
from tests.support.fake_llm import Behaviour, answer, tool_call

SCRIPT = (
    "import random\n"
    "random.seed(0)\n"
    "scores = [0.8731 for _ in range(3)]\n"
    "print(f'accuracy: {sum(scores) / len(scores):.4f}')\n"
)
PRINTED = "0.8731"


def user_text(body: dict) -> str:
    parts = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [p.get("text", "") for p in content if isinstance(p, dict)]
    return "\n".join(parts)


def coding_steps() -> list[Behaviour]:
    return [
        tool_call("write_file", {"path": "code/experiment.py", "content": SCRIPT}),
        tool_call("run", {"command": "python3 code/experiment.py"}),
        tool_call("finish", {"summary": "ran the experiment: accuracy printed in the log"}),
    ]


# A run laid out as a model may lay it out: the entry point at the workspace's top,
# a helper module in a subfolder, a parameter file beside them (a kind the site
# does not classify), and an output folder its command makes.
ROOT_FILES = {
    "main.py": (
        "import os\n"
        "from helpers.stats import mean\n"
        "repeats = int(open('params.txt').read())\n"
        "scores = [0.8731 for _ in range(repeats)]\n"
        "os.makedirs('outputs', exist_ok=True)\n"
        "open('outputs/summary.txt', 'w').write(f'runs: {repeats}\\n')\n"
        "print(f'accuracy: {mean(scores):.4f}')\n"
    ),
    "helpers/stats.py": "def mean(values):\n    return sum(values) / len(values)\n",
    "params.txt": "3\n",
}


def root_coding_steps() -> list[Behaviour]:
    return [
        *(tool_call("write_file", {"path": p, "content": c}) for p, c in ROOT_FILES.items()),
        tool_call("run", {"command": "python3 main.py"}),
        tool_call("finish", {"summary": "ran main.py: accuracy printed in the log"}),
    ]


def paper(score: str) -> str:
    return (
        "# A Scripted Study\n\n## Abstract\n\nWe ran one experiment.\n\n## Results\n\n"
        f"| Method | Accuracy |\n| --- | --- |\n| Ours | {score} |\n\n## Conclusion\n\nDone.\n"
    )


def scripted_agent(
    *,
    claim: str | None = None,
    coding: list[Behaviour] | None = None,
    slow: dict[str, float] | None = None,
) -> Callable[[dict], Behaviour]:
    """`claim`: the number the paper reports (None: what the log printed);
    `coding`: the coding loop's answers in order (default: write, run, finish);
    `slow`: seconds a stage's answer waits (`proposal`: 30), to hold a stage open."""
    steps = coding if coding is not None else coding_steps()
    slow = dict(slow or {})

    def delayed(stage: str, behaviour: Behaviour) -> Behaviour:
        behaviour.delay = slow.pop(stage, 0.0)  # once: a resumed stage answers at once
        return behaviour

    def behave(body: dict) -> Behaviour:
        if body.get("tools"):
            turns = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
            return delayed("experiment", steps[min(turns, len(steps) - 1)])
        text = user_text(body)
        if CHECK_PROMPT in text:  # the check before queueing: no stage's answer
            return answer("ok")
        if "Write the paper" in text:
            printed = re.search(r"accuracy: ([0-9.]+)", text)
            return delayed("paper", answer(paper(claim or (printed.group(1) if printed else "?"))))
        if "research proposal" in text:
            return delayed("proposal", answer("# Proposal\n\nWe measure accuracy.\n"))
        if "Search the literature" in text:
            return delayed("lit", answer("# Related work\n\n- A. Author (2024), A paper.\n"))
        return delayed("idea", answer("# Idea\n\nA simple baseline, measured honestly.\n"))

    return behave
