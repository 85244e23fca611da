"""Planting one fabrication of a known type in a document's text, at a known place.

Pure functions of text and a seeded `random.Random`: the same text and seed
plant the same thing at the same place. Each returns a `Plant` (the new text,
the characters planted and what was there) or raises `NothingToAlter` with
the reason (a document without numbers, references or equations).

- faked experimental results: a number of a results table, or of a sentence that
  reports a result, changed to one that appears nowhere in the run's logs and
  results files (nor elsewhere in the document); the text around it stays.
- nonexistent citations: one entry of the references replaced by a made-up one
  (authors from invented syllables, a title of chance words, a real venue and
  year), checked against every paper the site holds so it never names a real one.
- hallucinated methodology: a sentence claiming an ablation, a dataset or a
  baseline that the code and the log never mention, added to a paragraph.
- mathematical errors: one display equation altered (a sign flipped, an exponent
  changed, a factor dropped), so it no longer follows from its neighbours.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .models import HallucinationType


class NothingToAlter(Exception):
    """The document has nothing a plant of this type could alter; the message says why."""


@dataclass(frozen=True)
class Plant:
    kind: str
    text: str  # the whole document after planting
    start: int  # the planted characters are text[start:end]
    end: int
    original: str  # what they replaced ("" for an inserted sentence)
    markers: list[str] = field(default_factory=list)
    description: str = ""

    @property
    def planted(self) -> str:
        return self.text[self.start : self.end]


def normalised(text: str) -> str:
    """Lower case without white space, for "does this finding quote the plant"."""
    return re.sub(r"\s+", "", text).lower()


def _replace(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


# --- faked experimental results ---------------------------------------------------

_NUMBER = re.compile(r"(?<![\w.$\\^_{])(\d{1,4}\.\d{1,4})(?![\w.}])")
_RESULT_WORDS = re.compile(
    r"accura|score|result|achiev|improv|outperform|reward|loss|error|precision|recall|f1|"
    r"bleu|rouge|perplexity|auc|rate|mean|%",
    re.IGNORECASE,
)


def _result_numbers(text: str) -> list[re.Match[str]]:
    """Decimal numbers of table rows and of prose lines that report a result (not
    inside an equation, where a change would be a mathematical error instead)."""
    found = []
    offset = 0
    in_display = False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("$$") or stripped.startswith("\\["):
            in_display = not (stripped.count("$$") >= 2 or stripped.endswith("\\]"))
        elif in_display:
            in_display = not (stripped.endswith("$$") or stripped.endswith("\\]"))
        elif stripped.startswith("|") or _RESULT_WORDS.search(stripped):
            inline_math = [m.span() for m in re.finditer(r"\$[^$\n]+\$", line)]
            for match in _NUMBER.finditer(line):
                if not any(a <= match.start() < b for a, b in inline_math):
                    found.append(_shifted(match, offset, text))
        offset += len(line)
    return found


def _shifted(match: re.Match[str], offset: int, text: str) -> re.Match[str]:
    shifted = _NUMBER.match(text, offset + match.start())
    assert shifted is not None  # the same characters, matched in the whole text
    return shifted


def _other_number(value: str, rng: random.Random) -> str:
    whole, _, decimals = value.partition(".")
    number = float(value)
    factor = rng.choice([-1, 1]) * rng.uniform(0.12, 0.35)
    changed = number * (1 + factor) if number else rng.uniform(0.1, 0.9)
    if (number < 1 <= changed) or (number <= 100 < changed):
        changed = number * (1 - abs(factor))  # a share stays a share, a percentage one
    return f"{changed:.{len(decimals)}f}"


def plant_faked_results(text: str, *, rng: random.Random, evidence: Iterable[str]) -> Plant:
    """Change one reported number to a value the logs and results never show."""
    candidates = _result_numbers(text)
    if not candidates:
        raise NothingToAlter("no reported number in a results table or sentence")
    evidence_text = "\n".join(evidence)
    rng.shuffle(candidates)
    for match in candidates[:25]:
        for _attempt in range(8):
            new = _other_number(match.group(1), rng)
            if new != match.group(1) and new not in evidence_text and new not in text:
                return Plant(
                    kind=HallucinationType.FAKED_EXPERIMENTAL_RESULTS,
                    text=_replace(text, match.start(), match.end(), new),
                    start=match.start(),
                    end=match.start() + len(new),
                    original=match.group(1),
                    markers=[new],
                    description=(
                        f"the reported {match.group(1)} changed to {new}, a number "
                        "the logs and results files never show"
                    ),
                )
    raise NothingToAlter("every reported number's alternatives appear in the logs or results")


# --- nonexistent citations ----------------------------------------------------------

# A markdown heading, or a line of its own ("References", "**References**").
_REFERENCES_HEADING = re.compile(
    r"^(?:#{1,6}\s*(?:\d+\.?\s*)?(?:references|bibliography|works cited)\b.*"
    r"|\**(?:references|bibliography)\**:?[ \t]*)$",
    re.IGNORECASE | re.MULTILINE,
)
_ENTRY_PREFIX = re.compile(r"^(\s*(?:\[\d+\]|\d+\.|[-*])\s+)")
_SYLLABLES_A = (
    "Vor", "Quel", "Brin", "Tal", "Dov", "Kess", "Lun", "Zam", "Rav", "Pel", "Sorv", "Jent",
    "Marv", "Ost", "Fenn", "Yarl", "Trov", "Gald", "Wex", "Nim",
)  # fmt: skip
_SYLLABLES_B = (
    "emark", "ovian", "abrand", "esquo", "inthal", "overa", "adine", "ulvik", "enthor",
    "ascu", "iqon", "ostrel", "umbri", "ekkan", "aroth", "izzle",
)  # fmt: skip
_TITLE_A = (
    "Calibrated", "Recursive", "Sparse", "Contrastive", "Hierarchical", "Latent",
    "Adaptive", "Counterfactual", "Federated", "Spectral", "Causal", "Stochastic",
)  # fmt: skip
_TITLE_B = (
    "Preference Lattices", "Reward Manifolds", "Value Transport", "Feedback Kernels",
    "Alignment Operators", "Policy Sheaves", "Consensus Fields", "Utility Graphs",
)  # fmt: skip
_TITLE_C = (
    "Pluralistic Agents", "Co-Adaptive Assistants", "Dynamic Human Values",
    "Interactive Oversight", "Long-Horizon Deliberation", "Open-Ended Collaboration",
)  # fmt: skip
_VENUES = (
    "Advances in Neural Information Processing Systems",
    "International Conference on Machine Learning",
    "International Conference on Learning Representations",
    "Transactions on Machine Learning Research",
    "Proceedings of the AAAI Conference on Artificial Intelligence",
)


def _reference_entries(text: str) -> list[tuple[int, int]]:
    """(start, end) of each non-empty line of the references section."""
    # The last such heading: the section at the end of the paper.
    headings = list(_REFERENCES_HEADING.finditer(text))
    if not headings:
        return []
    heading = headings[-1]
    entries = []
    position = heading.end() + 1
    for line in text[position:].splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("#"):
            break
        if len(stripped) >= 20:
            entries.append((position, position + len(line.rstrip("\r\n"))))
        position += len(line)
    return entries


def _made_up_reference(rng: random.Random) -> tuple[str, str, str]:
    """(the reference, its first author's surname, its title)."""
    surnames = [
        rng.choice(_SYLLABLES_A) + rng.choice(_SYLLABLES_B) for _ in range(rng.randint(2, 3))
    ]
    authors = ", ".join(f"{name}, {rng.choice('ABCDEFGHJKLMNPRST')}." for name in surnames)
    title = f"{rng.choice(_TITLE_A)} {rng.choice(_TITLE_B)} for {rng.choice(_TITLE_C)}"
    year = rng.randint(2019, 2024)
    return f"{authors} ({year}). {title}. {rng.choice(_VENUES)}.", surnames[0], title


def plant_citation(
    text: str, *, rng: random.Random, known: Callable[[str], bool] = lambda _s: False
) -> Plant:
    """Replace one reference with a made-up one that `known` (is this string in any
    paper the site holds?) says appears nowhere."""
    entries = _reference_entries(text)
    if not entries:
        raise NothingToAlter("no references section with entries to replace")
    start, end = rng.choice(entries)
    line = text[start:end]
    prefix = _ENTRY_PREFIX.match(line)
    keep = prefix.group(1) if prefix else ""
    for _attempt in range(20):
        reference, surname, title = _made_up_reference(rng)
        if not (known(surname) or known(title)) and normalised(title) not in normalised(text):
            new = keep + reference
            return Plant(
                kind=HallucinationType.NONEXISTENT_CITATIONS,
                text=_replace(text, start, end, new),
                start=start + len(keep),
                end=start + len(new),
                original=line[len(keep) :],
                markers=[surname, title],
                description=f"a reference replaced by a made-up one: {reference}",
            )
    raise NothingToAlter("no made-up reference unlike every paper's could be found")


# --- hallucinated methodology -------------------------------------------------------

_DATASETS = (
    "ImageNet-21k", "WikiText-103", "SQuAD 2.0", "MS MARCO", "CIFAR-100", "TriviaQA",
    "HellaSwag", "OpenWebText", "COCO Captions", "Natural Questions",
)  # fmt: skip
_BASELINES = ("a PPO baseline", "a DPO baseline", "BM25", "Llama-2-13B", "T5-XXL", "XGBoost")
_COMPONENTS = ("the attention module", "the reward model", "the memory buffer", "the curriculum")
_CLAIMS: tuple[tuple[str, str], ...] = (
    (
        "ablation",
        "We additionally ran an ablation on {dataset}, removing {component} while keeping "
        "every other setting fixed, and the ranking of the methods did not change.",
    ),
    (
        "dataset",
        "To test generalisation, every method was also trained and evaluated on {dataset} "
        "with five random seeds.",
    ),
    (
        "baseline",
        "We further compared against {baseline}, tuned with the same budget, which the "
        "proposed method outperformed in every setting.",
    ),
)
_METHOD_HEADING = re.compile(
    r"^#{1,6}.*(method|experiment|setup|evaluation|approach|implementation)", re.IGNORECASE
)


def _prose_paragraphs(text: str) -> list[tuple[int, int, bool]]:
    """(start, end, under a method or experiments heading) of each prose line."""
    found = []
    position = 0
    under_method = False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("#"):
            under_method = bool(_METHOD_HEADING.match(stripped))
        elif len(stripped) >= 80 and stripped[0].isalpha() and stripped.endswith("."):
            found.append((position, position + len(line.rstrip("\r\n")), under_method))
        position += len(line)
    return found


def plant_methodology(text: str, *, rng: random.Random, run_text: str) -> Plant:
    """Add a sentence claiming a step the run (`run_text`: its code and logs) never took."""
    paragraphs = _prose_paragraphs(text)
    if not paragraphs:
        raise NothingToAlter("no prose paragraph to add a claimed step to")
    preferred = [p for p in paragraphs if p[2]] or paragraphs
    _start, end, _under = rng.choice(preferred)
    seen = (run_text + "\n" + text).lower()
    datasets = [d for d in _DATASETS if d.lower() not in seen]
    baselines = [
        b for b in _BASELINES if b.split()[-2 if b.startswith("a ") else -1].lower() not in seen
    ]
    claims = [c for c in _CLAIMS if (datasets if c[0] != "baseline" else baselines)]
    if not claims:
        raise NothingToAlter("every dataset and baseline the plant could name is in the run")
    what, template = rng.choice(claims)
    name = rng.choice(baselines) if what == "baseline" else rng.choice(datasets)
    sentence = template.format(dataset=name, baseline=name, component=rng.choice(_COMPONENTS))
    new_text = text[:end] + " " + sentence + text[end:]
    return Plant(
        kind=HallucinationType.HALLUCINATED_METHODOLOGY,
        text=new_text,
        start=end + 1,
        end=end + 1 + len(sentence),
        original="",
        markers=[name.removeprefix("a ")],
        description=f"a claimed {what} that the code and log never ran: {sentence}",
    )


# --- mathematical errors -----------------------------------------------------------

_DISPLAY = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]", re.DOTALL)
_EDITS: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (
        "a sign flipped",
        re.compile(r"(?<=[\w})\]] )\+(?= )|(?<=[\w})\]])\+(?=[\w\\({])"),
        lambda m: "-",
    ),
    (
        "a sign flipped",
        re.compile(r"(?<=[\w})\]] )-(?= )|(?<=[\w})\]])-(?=[\w\\({])"),
        lambda m: "+",
    ),
    ("an exponent changed", re.compile(r"\^\{?(\d)\}?"), lambda m: f"^{{{int(m.group(1)) + 1}}}"),
    (
        "a factor dropped",
        re.compile(
            r"(?<=[=+\- ])(?:\d+(?=[A-Za-z(])|\\(?:alpha|beta|gamma|lambda|eta|mu|tau|kappa|"
            r"rho|omega|epsilon)\b ?(?=\\[A-Za-z]|[A-Za-z(]))"
        ),
        lambda m: "",
    ),
)


def plant_math_error(text: str, *, rng: random.Random) -> Plant:
    """Alter one display equation: a sign, an exponent or a factor."""
    options = []
    for equation in _DISPLAY.finditer(text):
        body_group = 1 if equation.group(1) is not None else 2
        body_start = equation.start(body_group)
        body = equation.group(body_group)
        if "=" not in body and "\\propto" not in body:
            continue
        for what, pattern, edit in _EDITS:
            for match in pattern.finditer(body):
                options.append((equation, body_start, what, match, edit))
    if not options:
        raise NothingToAlter("no display equation with a sign, exponent or factor to alter")
    equation, body_start, what, match, edit = rng.choice(options)
    new = edit(match)
    start, end = body_start + match.start(), body_start + match.end()
    new_text = _replace(text, start, end, new)
    equation_new = new_text[equation.start() : equation.end() + len(new) - (end - start)]
    # An insertion of nothing (a dropped factor) is still a place: mark the equation.
    span_start, span_end = (
        (start, start + len(new))
        if new
        else (equation.start(), equation.start() + len(equation_new))
    )
    return Plant(
        kind=HallucinationType.MATHEMATICAL_ERRORS,
        text=new_text,
        start=span_start,
        end=span_end,
        original=text[start:end] if new else equation.group(0),
        markers=[equation_new.strip("$").strip("\\[]").strip()],
        description=f"an equation altered ({what}): {equation.group(0).strip()} became "
        f"{equation_new.strip()}",
    )
